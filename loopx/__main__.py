from loopx.cli.main import run

run()
