"""Every command's happy path, in text and in `--format json` (in-process runner), on the
file store and on PostgreSQL (`store_kind`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    CliResult,
    forget_private,
    ledger_bytes,
    project_store,
    replace_ledger,
    run_cli,
)

G = "demo"
pytestmark = pytest.mark.usefixtures("store_kind")


def loopx(root: Path, *args: str, fmt: str | None = None, **env: str) -> CliResult:
    argv = [*args, "--root", str(root)]
    if fmt:
        argv += ["--format", fmt]
    return run_cli(argv, env=env or None)


def ok(result: CliResult) -> CliResult:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result


def both(root: Path, *args: str) -> tuple[str, Any]:
    """Run a read command in text and in JSON; return the text and the parsed JSON."""
    text = ok(loopx(root, *args)).stdout
    data = ok(loopx(root, *args, fmt="json")).json()
    return text, data


def write(root: Path, *args: str) -> dict[str, Any]:
    """Run a write in JSON mode; return its result (status, receipt)."""
    out: dict[str, Any] = ok(loopx(root, *args, fmt="json")).json()
    assert out["status"] == "applied"
    return out


def events(root: Path, goal: str = G) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = project_store(root).read(goal).events
    return found


@pytest.fixture
def busy(project: Path) -> Path:
    """`project` with todos, a claim, a gate, evidence and a run."""
    root = project
    write(root, "todo", "add", "--goal-id", G, "--title", "Build", "--todo-id", "build")
    write(
        root,
        "todo",
        "add",
        "--goal-id",
        G,
        "--title",
        "Ship",
        "--todo-id",
        "ship",
        "--depends-on",
        "build",
        "--priority",
        "1",
    )
    write(root, "todo", "add", "--goal-id", G, "--title", "Pick name", "--role", "user")
    write(root, "todo", "claim", "--goal-id", G, "--todo-id", "build", "--agent-id", "agent-a")
    write(
        root,
        "gate",
        "open",
        "--goal-id",
        G,
        "--question",
        "Ship it?",
        "--authority",
        "maintainer",
        "--blocks",
        "ship",
        "--gate-id",
        "ship-ok",
    )
    write(
        root,
        "evidence",
        "add",
        "--goal-id",
        G,
        "--kind",
        "test",
        "--summary",
        "All green",
        "--todo-id",
        "build",
        "--revision",
        "abc1234",
        "--visibility",
        "team",
    )
    write(
        root,
        "run",
        "record",
        "--goal-id",
        G,
        "--outcome",
        "progress",
        "--todo-id",
        "build",
        "--agent-id",
        "agent-a",
        "--session-id",
        "s1",
        "--summary",
        "Half way",
    )
    return root


# -- setup ------------------------------------------------------------------------------------


@pytest.mark.files_only("the file store's layout, and the demo (written in files)")
def test_init_creates_the_layout_and_is_safe_twice(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    first = ok(loopx(root, "init"))
    assert "initialised" in first.stdout
    for sub in ("goals", "private/blobs", "cache"):
        assert (root / ".loopx" / sub).is_dir()
    ignore = (root / ".loopx" / ".gitignore").read_text()
    assert "private/" in ignore.splitlines() and "cache/" in ignore.splitlines()
    again = ok(loopx(root, "init", fmt="json")).json()
    assert again == {"created": False, "root": str(root.resolve())}


@pytest.mark.files_only("the file store's layout, and the demo (written in files)")
def test_demo_text_and_json(tmp_path: Path) -> None:
    text = ok(run_cli(["demo", str(tmp_path / "d1")])).stdout
    assert "launch" in text and "next: loopx status" in text
    data = ok(run_cli(["demo", str(tmp_path / "d2"), "--format", "json"])).json()
    assert {g["goal_id"] for g in data["goals"]} >= {"launch", "prototype", "docs"}
    assert all(g["events"] > 0 for g in data["goals"])


@pytest.mark.files_only("the file store's layout, and the demo (written in files)")
def test_demo_goes_into_root_when_no_directory_is_given(tmp_path: Path) -> None:
    there = tmp_path / "via-root"
    data = ok(run_cli(["demo", "--root", str(there), "--format", "json"], cwd=tmp_path)).json()
    assert (there / ".loopx/goals/launch/ledger.jsonl").is_file()
    assert not (tmp_path / "loopx-demo").exists() and data["goals"]
    both = run_cli(["demo", str(tmp_path / "x"), "--root", str(there)], cwd=tmp_path)
    assert both.exit_code == 2 and "usage_error" in both.stderr
    assert not (tmp_path / "x").exists()
    # LOOPX_ROOT names a project to work in, not a place for the demo: the default stands.
    env = {"LOOPX_ROOT": str(tmp_path / "project")}
    ok(run_cli(["demo"], env=env, cwd=tmp_path))
    assert (tmp_path / "loopx-demo/.loopx").is_dir() and not (tmp_path / "project").exists()


# -- goals ------------------------------------------------------------------------------------


def test_goal_create_show_list_close(tmp_path: Path) -> None:
    root = tmp_path
    ok(loopx(root, "init"))
    text = ok(
        loopx(
            root,
            "goal",
            "create",
            "--goal-id",
            "alpha",
            "--title",
            "Alpha",
            "--objective",
            "Do alpha",
            "--acceptance",
            "It works",
            "--acceptance",
            "It is fast",
            "--repository",
            "https://example.com/a.git",
            "--lease-seconds",
            "900",
            "--quota",
            "12",
            "--visibility",
            "public",
        )
    ).stdout
    assert text.startswith("goal alpha recorded at revision 1 (goal alpha, operation op-")
    shown, data = both(root, "goal", "show", "--goal-id", "alpha")
    assert "Alpha" in shown and "It is fast" in shown
    assert data["acceptance"] == ["It works", "It is fast"]
    assert data["policy"]["lease_seconds"] == 900 and data["quota"]["budget"] == 12
    assert data["visibility"] == "public" and data["counts"]["total"] == 0
    write(
        root,
        "goal",
        "create",
        "--goal-id",
        "beta",
        "--title",
        "Beta",
        "--objective",
        "B",
        "--predecessor",
        "alpha",
    )
    listed, rows = both(root, "goal", "list")
    assert [r["goal_id"] for r in rows["goals"]] == ["alpha", "beta"]
    assert "Alpha" in listed and "Beta" in listed
    closed = write(
        root,
        "goal",
        "close",
        "--goal-id",
        "alpha",
        "--outcome",
        "abandoned",
        "--reason",
        "Superseded by beta",
    )
    assert closed["receipt"]["revision"] == 2
    assert ok(loopx(root, "goal", "show", "--goal-id", "alpha", fmt="json")).json()["status"] == (
        "abandoned"
    )


def test_agent_register_quota_set_note_add(project: Path) -> None:
    out = ok(
        loopx(
            project,
            "agent",
            "register",
            "--goal-id",
            G,
            "--agent-id",
            "agent-b",
            "--name",
            "Codex",
            "--kind",
            "coding-agent",
        )
    )
    assert "agent agent-b" in out.stdout
    write(project, "quota", "set", "--goal-id", G, "--budget", "5", "--unit", "turns")
    quota = ok(loopx(project, "goal", "show", "--goal-id", G, fmt="json")).json()["quota"]
    assert quota == {"budget": 5, "exhausted": False, "remaining": 5, "spent": 0, "unit": "turns"}
    note = write(project, "note", "add", "--goal-id", G, "--text", "Pause GC", "--kind", "lesson")
    assert note["receipt"]["subject"] == "note-1"
    last = events(project)[-1]
    assert last["type"] == "note.added" and last["visibility"] == "private"
    assert "blob" in last["data"]["text"]


# -- todos ------------------------------------------------------------------------------------


def test_todo_lifecycle_in_text_mode(project: Path) -> None:
    def run(*args: str) -> str:
        return ok(loopx(project, "todo", *args, "--goal-id", G, "--agent-id", "agent-a")).stdout

    assert "todo t1 recorded at revision 2" in run("add", "--title", "T1", "--todo-id", "t1")
    assert "recorded" in run("update", "--todo-id", "t1", "--priority", "0", "--title", "T-one")
    assert "claim on t1 recorded" in run("claim", "--todo-id", "t1", "--lease-seconds", "60")
    assert "lease on t1" in run("renew", "--todo-id", "t1")
    assert "block of t1" in run("block", "--todo-id", "t1", "--reason", "CI down")
    assert "unblock of t1" in run("unblock", "--todo-id", "t1")
    assert "release of t1" in run("release", "--todo-id", "t1")
    assert "completion of t1" in run("complete", "--todo-id", "t1", "--summary", "Done")
    assert "reopen of t1" in run("reopen", "--todo-id", "t1", "--reason", "Flaky")
    assert "cancel of t1" in run("cancel", "--todo-id", "t1")
    types = [e["type"] for e in events(project)][1:]
    assert types == [
        "todo.added",
        "todo.updated",
        "todo.claimed",
        "todo.renewed",
        "todo.blocked",
        "todo.unblocked",
        "todo.released",
        "todo.completed",
        "todo.reopened",
        "todo.cancelled",
    ]


def test_todo_writes_in_json_mode_return_receipts(project: Path) -> None:
    add = write(project, "todo", "add", "--goal-id", G, "--title", "A", "--operation-id", "op-a")
    r = add["receipt"]
    assert r["operation_id"] == "op-a" and r["subject"] == "todo-1" and r["seq_first"] == 2
    assert r["event_ids"] == [events(project)[-1]["event_id"]]
    again = ok(
        loopx(
            project,
            "todo",
            "add",
            "--goal-id",
            G,
            "--title",
            "A",
            "--operation-id",
            "op-a",
            fmt="json",
        )
    ).json()
    assert again == {"status": "replayed", "receipt": r}
    replayed_text = ok(
        loopx(project, "todo", "add", "--goal-id", G, "--title", "A", "--operation-id", "op-a")
    ).stdout
    assert "already recorded (replayed)" in replayed_text
    claim = write(
        project, "todo", "claim", "--goal-id", G, "--todo-id", "todo-1", "--expected-revision", "2"
    )
    assert claim["receipt"]["revision"] == 3


def test_depends_on_accepts_repeats_and_commas(project: Path) -> None:
    for name in ("a", "b", "c"):
        write(project, "todo", "add", "--goal-id", G, "--title", name, "--todo-id", name)
    write(
        project,
        "todo",
        "add",
        "--goal-id",
        G,
        "--title",
        "d",
        "--todo-id",
        "d",
        "--depends-on",
        "a,b",
        "--depends-on",
        "c",
    )
    shown = ok(loopx(project, "todo", "show", "--goal-id", G, "--todo-id", "d", fmt="json")).json()
    assert shown["depends_on"] == ["a", "b", "c"]
    write(project, "todo", "update", "--goal-id", G, "--todo-id", "d", "--no-depends")
    shown = ok(loopx(project, "todo", "show", "--goal-id", G, "--todo-id", "d", fmt="json")).json()
    assert shown["depends_on"] == []


def test_todo_list_and_show(busy: Path) -> None:
    text, data = both(busy, "todo", "list", "--goal-id", G)
    assert [t["todo_id"] for t in data["todos"]] == ["build", "ship", "todo-3"]
    assert data["total"] == 3 and "Pick name" in text and "@agent-a" in text
    _, active = both(busy, "todo", "list", "--goal-id", G, "--status", "active")
    assert [t["todo_id"] for t in active["todos"]] == ["build"]
    _, users = both(busy, "todo", "list", "--goal-id", G, "--role", "user")
    assert [t["todo_id"] for t in users["todos"]] == ["todo-3"]
    short, limited = both(busy, "todo", "list", "--goal-id", G, "--limit", "1")
    assert limited["shown"] == 1 and limited["total"] == 3 and "2 more not shown" in short
    text, item = both(busy, "todo", "show", "--goal-id", G, "--todo-id", "build")
    assert item["claim"]["agent_id"] == "agent-a" and item["claim"]["live"] is True
    assert [e["evidence_id"] for e in item["evidence"]] == ["ev-1"]
    assert [r["run_id"] for r in item["runs"]] == ["run-1"]
    assert "claimed by agent-a" in text and "evidence ev-1" in text
    _, ship = both(busy, "todo", "show", "--goal-id", G, "--todo-id", "ship")
    assert [g["gate_id"] for g in ship["gates"]] == ["ship-ok"]


# -- gates, evidence, runs ----------------------------------------------------------------------


def test_gate_open_resolve_list(busy: Path) -> None:
    text, data = both(busy, "gate", "list", "--goal-id", G)
    assert [g["gate_id"] for g in data["gates"]] == ["ship-ok"] and "Ship it?" in text
    out = ok(
        loopx(
            busy,
            "gate",
            "resolve",
            "--goal-id",
            G,
            "--gate-id",
            "ship-ok",
            "--resolution",
            "approve",
            "--by",
            "maintainer",
            "--rationale",
            "Good",
        )
    )
    assert "gate approve" in out.stdout
    _, pending = both(busy, "gate", "list", "--goal-id", G, "--status", "pending")
    assert pending["gates"] == []
    _, approved = both(busy, "gate", "list", "--goal-id", G, "--status", "approved")
    assert approved["gates"][0]["resolved_by"] == "maintainer"
    whole = write(
        busy,
        "gate",
        "open",
        "--goal-id",
        G,
        "--question",
        "Freeze?",
        "--authority",
        "maintainer",
        "--blocks-goal",
    )
    assert whole["receipt"]["subject"] == "gate-2"


def test_evidence_add_with_a_file_and_list(busy: Path, tmp_path: Path) -> None:
    body = tmp_path / "pytest.log"
    body.write_text("212 passed in 8.31s\n")
    out = write(
        busy,
        "evidence",
        "add",
        "--goal-id",
        G,
        "--kind",
        "log",
        "--summary",
        "Full log",
        "--file",
        str(body),
        "--ref",
        "https://ci.example/1",
        "--ref",
        "sha256:" + "0" * 64,
        "--workspace",
        str(tmp_path),
    )
    ev_id = out["receipt"]["subject"]
    text, data = both(busy, "evidence", "list", "--goal-id", G, "--workspace", str(tmp_path))
    row = next(e for e in data["evidence"] if e["evidence_id"] == ev_id)
    assert row["body_bytes"] == len("212 passed in 8.31s\n")
    assert row["refs"] == ["https://ci.example/1", "sha256:" + "0" * 64]
    assert row["freshness"] == "unbound" and row["visibility"] == "private"
    assert row["summary"] == "Full log", "this host has the private summary"
    assert b"212 passed" not in ledger_bytes(busy, G)
    assert "ev-1" in text and "bound" in text  # bound to abc1234; tmp_path is no checkout
    _, only = both(busy, "evidence", "list", "--goal-id", G, "--todo-id", "build")
    assert [e["evidence_id"] for e in only["evidence"]] == ["ev-1"]


def test_run_record_and_list(busy: Path) -> None:
    write(
        busy,
        "run",
        "record",
        "--goal-id",
        G,
        "--outcome",
        "waiting",
        "--wait",
        "Review",
        "--agent-id",
        "agent-b",
        "--quota-spent",
        "0",
        "--evidence-id",
        "ev-1",
    )
    text, data = both(busy, "run", "list", "--goal-id", G)
    assert [r["run_id"] for r in data["runs"]] == ["run-1", "run-2"]
    assert data["runs"][1]["wait"] == "Review" and "Half way" in text
    _, mine = both(busy, "run", "list", "--goal-id", G, "--agent-id", "agent-b")
    assert [r["run_id"] for r in mine["runs"]] == ["run-2"]


# -- reads ------------------------------------------------------------------------------------


def test_status_for_one_goal_and_all(busy: Path) -> None:
    text, data = both(busy, "status", "--goal-id", G)
    goal = data["goals"][0]
    assert data["now"] == "2026-03-01T12:00:00Z"
    assert goal["attention"]["state"] == "needs_user"
    assert goal["attention"]["gate_ids"] == ["ship-ok"]
    assert [t["todo_id"] for t in goal["frontier"]] == ["todo-3"]
    assert goal["leases"][0]["todo_id"] == "build" and goal["health"] == {"state": "ok"}
    assert "attention: needs_user" in text and "gate ship-ok" in text and "lease build" in text
    write(busy, "goal", "create", "--goal-id", "zeta", "--title", "Zeta", "--objective", "Z")
    _, everything = both(busy, "status")
    assert [g["goal_id"] for g in everything["goals"]] == [G, "zeta"]


def test_next_with_explain(busy: Path) -> None:
    text, data = both(busy, "next", "--goal-id", G, "--explain")
    assert [t["todo_id"] for t in data["frontier"]] == ["todo-3"]
    reasons = {n["todo_id"]: [r["code"] for r in n["reasons"]] for n in data["not_ready"]}
    assert reasons == {"ship": ["dependency_open", "gate_pending"], "build": ["claimed"]}
    assert "waits for build" in text and "held by gate ship-ok" in text
    assert "claimed by agent-a" in text
    _, agent = both(busy, "next", "--goal-id", G, "--agent-id", "agent-a")
    assert [t["todo_id"] for t in agent["frontier"]] == ["build"]


def test_log_lists_events_with_filters(busy: Path) -> None:
    text, data = both(busy, "log", "--goal-id", G)
    assert [e["seq"] for e in data["events"]] == list(range(1, 9))
    assert "goal.created" in text and "run.recorded" in text
    _, since = both(busy, "log", "--goal-id", G, "--since", "6", "--limit", "1")
    assert [e["seq"] for e in since["events"]] == [7]
    _, typed = both(busy, "log", "--goal-id", G, "--type", "todo.added", "--type", "gate.opened")
    assert [e["type"] for e in typed["events"]] == ["todo.added"] * 3 + ["gate.opened"]


def test_verify_reports_every_ledger(busy: Path) -> None:
    text, data = both(busy, "verify")
    report = data["ledgers"][0]
    assert data["ok"] is True and report["goal_id"] == G and report["events"] == 8
    assert report["size"] == len(ledger_bytes(busy, G))
    assert report["head"] in text and "ok" in text
    _, one = both(busy, "verify", "--goal-id", G)
    assert one["ledgers"] == data["ledgers"]


def test_verify_exits_5_and_names_the_damage(busy: Path) -> None:
    data = bytearray(ledger_bytes(busy, G))
    data[40] ^= 0x01
    replace_ledger(busy, G, bytes(data))
    out = loopx(busy, "verify")
    assert out.exit_code == 5 and "DAMAGED" in out.stdout and "damage at byte 0" in out.stdout
    report = loopx(busy, "verify", fmt="json")
    assert report.exit_code == 5 and report.json()["ok"] is False
    # status reads only what changed since its snapshot; without one it replays and sees it.
    import shutil

    shutil.rmtree(busy / ".loopx" / "cache")
    status = ok(loopx(busy, "status", fmt="json")).json()["goals"][0]
    assert status["health"]["state"] == "corrupt" and status["health"]["code"] == "ledger_corrupt"
    assert status["health"]["details"]["offset"] == 0
    assert "LEDGER CORRUPT" in ok(loopx(busy, "status")).stdout
    listed = ok(loopx(busy, "goal", "list", fmt="json")).json()["goals"][0]
    assert listed["health"] == "corrupt"
    write_refused = loopx(busy, "todo", "add", "--goal-id", G, "--title", "x", fmt="json")
    assert write_refused.exit_code == 5
    assert write_refused.json()["error"]["code"] == "ledger_corrupt"
    assert ledger_bytes(busy, G) == bytes(data), "earlier damage is never cut"


def test_a_torn_tail_shows_in_status_and_is_repaired_by_the_next_write(
    busy: Path, store_kind: str
) -> None:
    good = ledger_bytes(busy, G)
    replace_ledger(busy, G, good + b'{"half":')
    status = ok(loopx(busy, "status", "--goal-id", G, fmt="json")).json()["goals"][0]
    assert status["health"]["state"] == "tail_damaged"
    assert status["health"]["damage"]["offset"] == len(good)
    assert "tail_damaged" in ok(loopx(busy, "status", "--goal-id", G)).stdout
    out = ok(loopx(busy, "todo", "add", "--goal-id", G, "--title", "After", fmt="json")).json()
    assert out["repair"]["offset"] == len(good) and out["repair"]["length"] == 8
    text = ok(loopx(busy, "todo", "add", "--goal-id", G, "--title", "More")).stdout
    assert "repaired" not in text
    assert json.loads(ok(loopx(busy, "verify", fmt="json")).stdout)["ok"] is True
    size = len(ledger_bytes(busy, G))
    replace_ledger(busy, G, ledger_bytes(busy, G) + b'{"torn')
    text = ok(loopx(busy, "todo", "add", "--goal-id", G, "--title", "Again")).stdout
    kept = ".loopx/" if store_kind == "file" else "postgresql:loopx_quarantine/"
    assert f"repaired a damaged ledger tail: 6 bytes at offset {size} moved to {kept}" in text


def test_private_text_is_shown_on_this_host_and_missing_elsewhere(project: Path) -> None:
    write(project, "note", "add", "--goal-id", G, "--text", "Rotate the key on Friday")
    write(
        project,
        "todo",
        "add",
        "--goal-id",
        G,
        "--title",
        "Secret plan",
        "--visibility",
        "private",
        "--todo-id",
        "p",
    )
    shown = ok(loopx(project, "todo", "show", "--goal-id", G, "--todo-id", "p")).stdout
    assert "Secret plan" in shown
    forget_private(project)
    shown = ok(loopx(project, "todo", "show", "--goal-id", G, "--todo-id", "p")).stdout
    assert "private content not on this host" in shown and "Secret plan" not in shown


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["agent", "register", "--agent-id", "agent-z"], "agent agent-z recorded at"),
        (["quota", "set", "--budget", "3"], "quota recorded at revision"),
        (["note", "add", "--text", "Remember", "--kind", "decision"], "decision note-1 recorded"),
        (["gate", "open", "--question", "Go?", "--authority", "boss"], "gate gate-1 recorded"),
        (["evidence", "add", "--kind", "ci", "--summary", "Green"], "evidence ev-1 recorded"),
        (["run", "record", "--outcome", "no_op"], "run run-1 recorded"),
        (["goal", "close", "--outcome", "abandoned"], "goal demo abandoned recorded"),
    ],
)
def test_every_write_in_text_and_json(project: Path, args: list[str], says: str) -> None:
    group, command, *rest = args
    text = ok(loopx(project, group, command, "--goal-id", G, *rest, "--operation-id", "op-x"))
    assert says in text.stdout and "(goal demo, operation op-x)" in text.stdout
    again = ok(
        loopx(project, group, command, "--goal-id", G, *rest, "--operation-id", "op-x", fmt="json")
    ).json()
    assert again["status"] == "replayed" and again["receipt"]["operation_id"] == "op-x"
    assert again["receipt"]["revision"] == 2 and len(events(project)) == 2
