from loopx.cli.main import main

main()
