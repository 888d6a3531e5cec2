"""The README's "Several hosts" section, run as written: three agents on three "hosts" (project
folders) sharing one PostgreSQL database claim, hand off, complete and build, and get exactly
the site the file store gives for the same commands."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from tests.conftest import CliResult, project_store, run_cli
from tests.test_postgres_cli import tree as site

README = Path(__file__).resolve().parent.parent / "README.md"
README_URL = "postgresql://loopx@db.example.internal:5432/loopx_team"


def several_hosts() -> tuple[list[list[str]], list[tuple[str, list[str]]]]:
    """The README block's set-up commands (before the first host) and then each command with
    the host it runs on (the `# host: …` comment above it)."""
    section = README.read_text().split("\n## Several hosts\n", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    setup: list[list[str]] = []
    steps: list[tuple[str, list[str]]] = []
    host = ""
    for line in block.splitlines():
        line = line.strip()
        if line.startswith("#"):
            label = line[1:].split(":", 1)[0].strip()
            host = label if label in ("laptop", "CI runner", "cloud agent") else host
        elif line:
            (steps.append((host, shlex.split(line))) if host else setup.append(shlex.split(line)))
    return setup, steps


def ok(result: CliResult) -> CliResult:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def test_the_readme_shows_three_hosts_in_commands_that_work(tmp_path: Path, pg_empty: str) -> None:
    setup, steps = several_hosts()
    assert [args[:2] for args in setup] == [["createdb", "-h"], ["loopx", "init"]]
    assert setup[1] == ["loopx", "init", "--store", README_URL]
    assert {host for host, _ in steps} == {"laptop", "CI runner", "cloud agent"}
    assert [args[1:3] for _, args in steps][-1] == ["build", "--out"]

    hosts = {name: tmp_path / name.replace(" ", "-") for name, _ in steps}
    for folder in hosts.values():  # `createdb` is the test's own scratch database
        folder.mkdir()
        ok(run_cli(["init", "--store", pg_empty], cwd=folder))
    alone = tmp_path / "file-store"
    alone.mkdir()
    ok(run_cli(["init"], cwd=alone))
    for host, args in steps:
        assert args[0] == "loopx", args
        ok(run_cli(args[1:], cwd=hosts[host]))
        ok(run_cli(args[1:], cwd=alone))

    # The same events (random operation ids aside) as in one folder with the file store …
    shared, files = project_store(hosts["laptop"]), project_store(alone)
    assert [shape(e) for e in shared.read("launch").events] == [
        shape(e) for e in files.read("launch").events
    ]
    # … and exactly the file store's projections of the very same events (an export of the
    # database is a file-store project holding them byte for byte).
    built = site(hosts["cloud agent"] / "site")
    assert "team/goals/launch/todos/docs.html" in built
    exported = tmp_path / "exported"
    ok(run_cli(["store", "export", "--to", str(exported)], cwd=hosts["CI runner"]))
    ok(run_cli(["build", "--out", "site"], cwd=exported))
    assert site(exported / "site") == built
    ok(run_cli(["build", "--out", "site"], cwd=hosts["laptop"]))
    assert site(hosts["laptop"] / "site") == built, "every host builds the same site"
    shown = run_cli(
        ["todo", "show", "--goal-id", "launch", "--todo-id", "docs", "--json"], cwd=hosts["laptop"]
    )
    assert ok(shown).json()["status"] == "done"


def shape(event: dict[str, Any]) -> tuple[Any, ...]:
    """An event without what differs between two runs of one command: its operation id and
    what is derived from it (checksums, the chain)."""
    return (event["type"], event["actor"], event["seq"], event["data"])
