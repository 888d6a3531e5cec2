"""Choosing the PostgreSQL store from the CLI, and moving a project between stores.

`loopx init --store`, `LOOPX_STORE`, `loopx store export/import`, and what a user sees when
the database is down or the URL carries a password.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopx.engine.demo import create_demo
from loopx.store.filestore import FileStore
from loopx.store.postgres import PostgresStore
from tests.conftest import T0, CliResult, run_cli

DOWN = "postgresql://postgres@127.0.0.1:1/nowhere"


def loopx(root: Path, *args: str, fmt: str | None = None, **env: str) -> CliResult:
    argv = [*args, "--root", str(root)]
    if fmt:
        argv += ["--format", fmt]
    return run_cli(argv, env=env or None)


def ok(result: CliResult) -> CliResult:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def file_ledgers(root: Path) -> dict[str, bytes]:
    store = FileStore(root)
    return {g: store.raw(g) for g in store.goal_ids()}


def pg_ledgers(url: str) -> dict[str, bytes]:
    with PostgresStore(url) as store:
        return {g: store.raw(g) for g in store.goal_ids()}


def test_init_records_the_database_and_writes_go_there(tmp_path: Path, pg_empty: str) -> None:
    root = tmp_path / "proj"
    created = ok(loopx(root, "init", "--store", pg_empty, fmt="json")).json()
    assert created["store"] == "postgresql"
    assert json.loads((root / ".loopx" / "store.json").read_text()) == {"store": pg_empty}
    ok(loopx(root, "goal", "create", "--goal-id", "g", "--title", "T", "--objective", "O"))
    ok(loopx(root, "todo", "add", "--goal-id", "g", "--title", "first", "--todo-id", "first"))
    assert not (root / ".loopx" / "goals" / "g").exists(), "no ledger file for a database goal"
    ledgers = pg_ledgers(pg_empty)
    assert list(ledgers) == ["g"] and ledgers["g"].count(b"\n") == 2
    status = ok(loopx(root, "status", "--goal-id", "g", fmt="json")).json()
    assert "first" in json.dumps(status)


def test_a_url_with_a_password_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    for url in (
        "postgresql://postgres:hunter2secret@127.0.0.1/db",
        "postgresql://postgres@127.0.0.1/db?password=hunter2secret",
    ):
        result = loopx(root, "init", "--store", url)
        assert result.exit_code == 2
        assert "store_url_password" in result.stderr
        assert "hunter2secret" not in result.stderr + result.stdout
        assert not root.exists()
    bad = loopx(root, "init", "--store", "mysql://hunter2secret@h/db")
    assert bad.exit_code == 2 and "invalid_store" in bad.stderr
    assert "hunter2secret" not in bad.stderr
    ok(loopx(root, "init"))
    env = {"LOOPX_STORE": "postgresql://u:hunter2secret@127.0.0.1/db"}
    refused = loopx(root, "status", **env)
    assert refused.exit_code == 2 and "hunter2secret" not in refused.stderr


def test_loopx_store_overrides_the_project_config(tmp_path: Path, pg_empty: str) -> None:
    root = tmp_path / "proj"
    ok(loopx(root, "init"))
    ok(loopx(root, "goal", "create", "--goal-id", "f", "--title", "T", "--objective", "O"))
    ok(
        loopx(
            root,
            *("goal", "create", "--goal-id", "p", "--title", "T", "--objective", "O"),
            LOOPX_STORE=pg_empty,
        )
    )
    assert list(file_ledgers(root)) == ["f"]
    assert list(pg_ledgers(pg_empty)) == ["p"]
    listed = ok(loopx(root, "goal", "list", fmt="json", LOOPX_STORE=pg_empty)).json()
    assert "p" in json.dumps(listed) and '"f"' not in json.dumps(listed)


def test_a_database_that_is_down_is_store_unavailable(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    result = loopx(root, "init", "--store", DOWN)
    assert result.exit_code == 8
    assert result.stderr.startswith("loopx: error [store_unavailable]")
    assert "Traceback" not in result.stderr and "127.0.0.1" not in result.stderr
    assert not (root / ".loopx").exists(), "a failed init writes nothing"
    ok(loopx(root, "init"))
    for args in (("status",), ("goal", "list"), ("todo", "add", "--goal-id", "g", "--title", "x")):
        down = loopx(root, *args, fmt="json", LOOPX_STORE=DOWN)
        assert down.exit_code == 8, args
        assert json.loads(down.stdout)["error"]["code"] == "store_unavailable"
        assert down.stderr == ""


def test_export_and_import_move_a_project_byte_for_byte(tmp_path: Path, pg_empty: str) -> None:
    demo = tmp_path / "demo"
    create_demo(demo)
    original = file_ledgers(demo)
    blobs = sorted(p.name for p in (demo / ".loopx/private/blobs/sha256").rglob("*") if p.is_file())
    assert original and blobs, "the demo has goals and private blobs"

    shared = tmp_path / "shared"
    ok(loopx(shared, "init", "--store", pg_empty))
    imported = ok(loopx(shared, "store", "import", "--from", str(demo), fmt="json")).json()
    assert sorted(g["goal_id"] for g in imported["goals"]) == sorted(original)
    assert imported["blobs"] == len(blobs)
    assert pg_ledgers(pg_empty) == original

    out = tmp_path / "exported"
    ok(loopx(shared, "store", "export", "--to", str(out)))
    assert file_ledgers(out) == original
    exported = (out / ".loopx/private/blobs/sha256").rglob("*")
    assert sorted(p.name for p in exported if p.is_file()) == blobs

    # The same reads from either store (these go through the store, with blobs resolved).
    for args in (("status",), ("goal", "list"), ("log", "--goal-id", "launch")):
        assert loopx(shared, *args, fmt="json").stdout == loopx(out, *args, fmt="json").stdout

    again = ok(loopx(shared, "store", "import", "--from", str(demo), fmt="json")).json()
    assert all(g.get("skipped") for g in again["goals"]), "a repeated import changes nothing"
    assert pg_ledgers(pg_empty) == original

    refused = loopx(shared, "store", "export", "--to", str(out))
    assert refused.exit_code == 2 and "export_not_empty" in refused.stderr


def test_import_refuses_a_goal_the_database_holds_with_other_events(
    tmp_path: Path, pg_empty: str
) -> None:
    other = tmp_path / "other"
    ok(loopx(other, "init"))
    ok(loopx(other, "goal", "create", "--goal-id", "launch", "--title", "X", "--objective", "Y"))
    shared = tmp_path / "shared"
    ok(loopx(shared, "init", "--store", pg_empty))
    ok(loopx(shared, "store", "import", "--from", str(other)))
    demo = tmp_path / "demo"
    create_demo(demo)
    before = pg_ledgers(pg_empty)
    refused = loopx(shared, "store", "import", "--from", str(demo), fmt="json")
    assert refused.exit_code == 4
    assert json.loads(refused.stdout)["error"]["code"] == "goal_exists"
    assert pg_ledgers(pg_empty) == before, "a refused import writes nothing"


def _process(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LOOPX_NOW": T0, "LOOPX_ROOT": str(root)}
    return subprocess.run(
        [sys.executable, "-m", "loopx", *args, "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_two_hosts_claim_the_same_todo_through_one_database(tmp_path: Path, pg_empty: str) -> None:
    """Separate project folders, separate processes, one database: one claim wins."""
    hosts = [tmp_path / "laptop", tmp_path / "runner"]
    for host in hosts:
        ok(loopx(host, "init", "--store", pg_empty))
    first = _process(
        hosts[0], "goal", "create", "--goal-id", "g", "--title", "T", "--objective", "O"
    )
    assert first.returncode == 0, first.stderr
    added = _process(hosts[1], "todo", "add", "--goal-id", "g", "--title", "x", "--todo-id", "x")
    assert added.returncode == 0, added.stderr
    claims: list[Any] = [
        subprocess.Popen(
            [sys.executable, "-m", "loopx", "todo", "claim", "--goal-id", "g", "--todo-id", "x"],
            env={**os.environ, "LOOPX_NOW": T0, "LOOPX_ROOT": str(host), "LOOPX_AGENT_ID": name},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for host, name in zip(hosts, ("agent-a", "agent-b"), strict=True)
    ]
    codes = sorted(p.wait() for p in claims)
    for p in claims:
        assert p.stdout is not None and p.stderr is not None
        p.stdout.close()
        p.stderr.close()
    assert codes == [0, 4], "exactly one host wins the claim; the other gets a conflict"
    ledger = pg_ledgers(pg_empty)["g"]
    assert ledger.count(b'"todo.claimed"') == 1


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def twins(tmp_path: Path, pg_empty: str) -> tuple[Path, Path]:
    """The demo project twice: in files, and imported into PostgreSQL (another folder)."""
    files = tmp_path / "files"
    create_demo(files)
    (files / ".loopx" / "names").write_text("# hashed names\n" + "ab" * 32 + "\n")
    shared = tmp_path / "shared"
    ok(loopx(shared, "init", "--store", pg_empty))
    # The project files (loopx.toml: titles, links; .loopx/names) come along with the store.
    moved = ok(loopx(shared, "store", "import", "--from", str(files), fmt="json")).json()
    assert moved["project_files"] == {".loopx/names": "copied", "loopx.toml": "copied"}
    return files, shared


def test_builds_from_either_store_and_an_export_are_byte_identical(
    twins: tuple[Path, Path], tmp_path: Path
) -> None:
    files, shared = twins
    exported = tmp_path / "exported"
    moved = ok(loopx(shared, "store", "export", "--to", str(exported), fmt="json")).json()
    assert moved["project_files"] == {".loopx/names": "copied", "loopx.toml": "copied"}
    for name in ("loopx.toml", ".loopx/names"):
        assert (exported / name).read_bytes() == (files / name).read_bytes()
    assert not (exported / ".loopx" / "store.json").exists(), "the export is a file store"
    outs = []
    for root in (files, shared, exported):
        out = root.parent / f"site-{root.name}"
        ok(loopx(root, "build", "--out", str(out), "--head", "none", "--audience", "public,team"))
        outs.append(tree(out))
    assert len(outs[0]) > 20
    assert outs[0] == outs[1] == outs[2]


def test_import_keeps_the_projects_own_configuration(tmp_path: Path, pg_empty: str) -> None:
    demo = tmp_path / "demo"
    create_demo(demo)
    shared = tmp_path / "shared"
    ok(loopx(shared, "init", "--store", pg_empty))
    ours = '[site]\ntitle = "Ours"\n'
    (shared / "loopx.toml").write_text(ours)
    moved = ok(loopx(shared, "store", "import", "--from", str(demo)))
    assert "loopx.toml: this project's own kept" in moved.stdout
    assert (shared / "loopx.toml").read_text() == ours
    again = ok(loopx(shared, "store", "import", "--from", str(shared), fmt="json")).json()
    assert again["project_files"] == {"loopx.toml": "same"}

    # A configuration in pyproject.toml travels as that file, and never replaces one.
    source = tmp_path / "source"
    ok(loopx(source, "init"))
    (source / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[tool.loopx.site]\ntitle = "T"\n'
    )
    plain = '[project]\nname = "plain"\n'
    for name, pyproject, expect in (("fresh", None, "copied"), ("plain", plain, "kept")):
        target = tmp_path / name
        ok(loopx(target, "init"))
        if pyproject is not None:
            (target / "pyproject.toml").write_text(pyproject)
        done = ok(loopx(target, "store", "import", "--from", str(source), fmt="json")).json()
        assert done["project_files"] == {"pyproject.toml": expect}
        kept = (target / "pyproject.toml").read_text()
        assert kept == (pyproject or (source / "pyproject.toml").read_text())


def test_export_refuses_a_names_file_that_is_a_link(tmp_path: Path, pg_empty: str) -> None:
    shared = tmp_path / "shared"
    ok(loopx(shared, "init", "--store", pg_empty))
    (tmp_path / "elsewhere").write_text("ab" * 32 + "\n")
    (shared / ".loopx" / "names").symlink_to(tmp_path / "elsewhere")
    refused = loopx(shared, "store", "export", "--to", str(tmp_path / "out"))
    assert refused.exit_code == 2 and "invalid_names_file" in refused.stderr
    assert not (tmp_path / "out").exists()


def test_diff_and_scan_read_through_the_store(twins: tuple[Path, Path], tmp_path: Path) -> None:
    files, shared = twins
    for args in (("diff", "--goal-id", "launch", "2", "9"),):
        a, b = loopx(files, *args, fmt="json"), loopx(shared, *args, fmt="json")
        assert a.exit_code == 0 and a.stdout == b.stdout and json.loads(a.stdout)
    # A file quoting a private goal's title is flagged when the ledger is in the database too.
    from loopx.engine.core import load_state

    store = FileStore(files)
    states = [load_state(store, g).state for g in store.goal_ids()]
    private = [s.title for s in states if s is not None and s.visibility == "private"]
    assert private
    leak = tmp_path / "leak.txt"
    leak.write_text(f"see {private[0]}\n")
    found = [loopx(root, "scan", str(leak), "--no-machine", fmt="json") for root in twins]
    assert [r.exit_code for r in found] == [7, 7]
    assert found[0].stdout == found[1].stdout


def test_the_build_cache_follows_the_database_head(pg_empty: str, tmp_path: Path) -> None:
    from loopx.store.select import change_token

    shared = tmp_path / "shared"
    ok(loopx(shared, "init", "--store", pg_empty))
    ok(loopx(shared, "goal", "create", "--goal-id", "g", "--title", "T", "--objective", "O"))
    with PostgresStore(pg_empty) as store:
        before = change_token(store, "g")
        assert change_token(store, "g") == before
        ok(loopx(shared, "todo", "add", "--goal-id", "g", "--title", "x"))
        after = change_token(store, "g")
        assert after != before and after[1] == 2


def test_serve_rebuilds_when_another_host_appends(pg_empty: str, tmp_path: Path) -> None:
    import threading
    import time

    from loopx.build.serve import Builder, watch

    shared, other = tmp_path / "shared", tmp_path / "other"
    for root in (shared, other):
        ok(loopx(root, "init", "--store", pg_empty))
    ok(loopx(other, "goal", "create", "--goal-id", "g", "--title", "T", "--objective", "O"))
    logs: list[str] = []
    builder = Builder(shared, tmp_path / "out", logs.append, audiences=("team",), head=None)
    assert builder.rebuild()
    stop = threading.Event()
    observer = watch(builder, 0.05, stop)
    try:
        deadline = time.monotonic() + 5
        while builder.number < 2 and time.monotonic() < deadline:  # the listener's first call
            time.sleep(0.05)
        first = builder.number
        ok(loopx(other, "todo", "add", "--goal-id", "g", "--title", "from another host"))
        while builder.number == first and time.monotonic() < deadline + 10:
            time.sleep(0.05)
        assert builder.number > first, logs
        assert b"from another host" in b"".join(tree(tmp_path / "out").values())
    finally:
        stop.set()
        observer.stop()
        observer.join(timeout=2)


def test_the_demo_written_into_postgresql_is_the_file_demo_byte_for_byte(
    tmp_path: Path, pg_empty: str
) -> None:
    create_demo(tmp_path / "files")
    with PostgresStore(pg_empty) as store:
        summary = create_demo(tmp_path / "unused", store)
        assert len(summary["goals"]) == len(file_ledgers(tmp_path / "files"))
        again = create_demo(tmp_path / "unused", store)  # fixed operation ids: a replay
        assert again == summary
    assert pg_ledgers(pg_empty) == file_ledgers(tmp_path / "files")


READS = [
    ("status", "--format", "json"),
    ("next", "--goal-id", "launch", "--explain", "--format", "json"),
    ("log", "--goal-id", "launch", "--format", "json"),
    ("verify", "--format", "json"),
    ("verify", "--goal-id", "launch", "--format", "json"),
    ("goal", "show", "--goal-id", "launch", "--format", "json"),
    ("goal", "list", "--format", "json"),
    ("todo", "list", "--goal-id", "launch", "--format", "json"),
    ("gate", "list", "--goal-id", "launch", "--format", "json"),
    ("evidence", "list", "--goal-id", "launch", "--format", "json"),
    ("run", "list", "--goal-id", "launch", "--format", "json"),
    ("handoff", "list", "--format", "json"),
    ("workbench", "--goal-id", "launch", "--head", "none"),
    ("review", "--goal-id", "launch", "--head", "none"),
    ("graph", "--goal-id", "launch", "--format", "mermaid"),
    ("handoff", "inspect", "--goal-id", "launch", "--todo-id", "handoff", "--format", "digest"),
    ("handoff", "inspect", "--goal-id", "launch", "--todo-id", "handoff", "--format", "digest"),
]


def test_every_read_command_prints_the_same_from_either_store(twins: tuple[Path, Path]) -> None:
    files, shared = twins
    for args in READS:
        a = run_cli([*args, "--root", str(files)])
        b = run_cli([*args, "--root", str(shared)])
        assert a.exit_code == 0, (args, a.stderr)
        assert (b.exit_code, b.stdout, b.stderr) == (0, a.stdout, a.stderr), args
    # The rendered digest is cached on this host, as with the file store.
    assert list((shared / ".loopx").glob("**/cache/handoff/launch/handoff.digest.full.md"))


def test_the_store_choice_stays_out_of_git_and_file_goals_are_pointed_out(
    tmp_path: Path, pg_empty: str
) -> None:
    root = tmp_path / "proj"
    ok(loopx(root, "init"))
    ok(loopx(root, "goal", "create", "--goal-id", "old", "--title", "T", "--objective", "O"))
    switched = ok(loopx(root, "init", "--store", pg_empty))
    assert "loopx store import --from" in switched.stdout
    ignore = (root / ".loopx" / ".gitignore").read_text().splitlines()
    assert "store.json" in ignore and "private/" in ignore and "cache/" in ignore
    ok(loopx(root, "init", "--store", pg_empty))  # again: the line is not repeated
    assert (root / ".loopx" / ".gitignore").read_text().splitlines().count("store.json") == 1
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    listed = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ".loopx/goals/old/ledger.jsonl" in listed and "store.json" not in listed
    ok(loopx(root, "store", "import", "--from", str(root)))
    assert list(pg_ledgers(pg_empty)) == ["old"]


def test_a_bad_store_choice_file_is_refused_in_one_line(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    ok(loopx(root, "init"))
    config = root / ".loopx" / "store.json"
    target = tmp_path / "elsewhere.json"
    target.write_text('{"store": "file"}')
    for make in (
        lambda: config.write_text("not json"),
        lambda: config.write_text('{"store": 5}'),
        lambda: config.write_text('{"store": "' + "x" * 5000 + '"}'),
        lambda: config.write_text('{"store": "postgresql://u:hunter2secret@h/db"}'),
        lambda: config.symlink_to(target),
    ):
        config.unlink(missing_ok=True)
        make()
        result = loopx(root, "status")
        assert result.exit_code == 2, result.stderr
        assert result.stderr.startswith("loopx: error [")
        assert "invalid_store" in result.stderr or "store_url_password" in result.stderr
        assert "hunter2secret" not in result.stderr and "Traceback" not in result.stderr
