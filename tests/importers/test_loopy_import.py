"""`loopx import loopy-loop`: real 0.12.0 sessions and the documented layout become goals."""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from loopy_builder import HOME, SessionBuilder, copy_012, documented_project

from loopx.build.validate import problems
from loopx.engine.core import load_state
from loopx.importers.loopy_loop import ImportReport, import_path
from loopx.projections.handoff import handoff_digest
from loopx.state.entities import GoalState
from loopx.state.frontier import attention
from loopx.store.filestore import FileStore
from tests.conftest import run_cli

NOW = "2027-01-01T00:00:00Z"
GOAL_012 = "001_write-file-hello-txt-containing-word"
PARENT = "20260115_101500_ab12cd34_9f8e7d6c"
CHILD = "20260115_103000_cd34ef56_1a2b3c4d"


def _store(tmp_path: Path, name: str = "loopx") -> FileStore:
    store = FileStore(tmp_path / name)
    store.init()
    return store


def _state(store: FileStore, goal_id: str) -> GoalState:
    state = load_state(store, goal_id, cache=False).state
    assert state is not None
    return state


def _ledgers(store: FileStore) -> dict[str, bytes]:
    return {g: store.raw(g) for g in store.goal_ids()}


def _todos(state: GoalState) -> dict[str, tuple[str, str]]:
    return {t.todo_id: (t.status, t.role) for t in state.todos.values()}


def _blob(store: FileStore, value: Any) -> str:
    assert isinstance(value, dict), "private text must be a blob reference"
    data = store.get_blob(value["blob"])
    assert data is not None
    return data.decode()


def _problems(report: ImportReport, severity: str | None = None) -> list[str]:
    return [
        f"{p.path}: {p.message}"
        for p in report.problems
        if severity is None or p.severity == severity
    ]


# -- the real loopy-loop 0.12.0 sessions --------------------------------------------------


def test_running_session_without_iterations(tmp_path: Path) -> None:
    store = _store(tmp_path)
    report = import_path(store, copy_012("coordinator-only", tmp_path))
    assert report.ok and report.problems == []
    goal = "001_ship-minimal-working-landing-page"
    state = _state(store, goal)
    assert (state.status, state.visibility) == ("active", "team")
    assert state.title == state.objective == "Ship a minimal working landing page"
    assert _todos(state) == {"loopy-session": ("open", "agent")}
    assert state.runs == {} and state.evidence == {}
    assert attention(state, NOW) == {
        "state": "ready_for_agent",
        "reason": "work is ready",
        "todo_ids": ["loopy-session"],
        "reasons": [{"state": "ready_for_agent", "count": 1}],
    }
    assert state.policy["quota"] == 20
    assert state.created_at == "2026-11-29T09:35:13Z"  # the source's clock, not the wall's


def test_session_stopped_at_max_turns_needs_the_user(tmp_path: Path) -> None:
    store = _store(tmp_path)
    report = import_path(store, copy_012("noop-max-turns", tmp_path))
    assert report.ok
    state = _state(store, GOAL_012)
    assert state.status == "active"  # stopping short is not achieving, nor a decision to quit
    assert _todos(state) == {
        "loopy-session": ("blocked", "agent"),
        "decide-after-stop": ("open", "user"),
    }
    assert attention(state, NOW)["state"] == "needs_user"
    assert attention(state, NOW)["todo_ids"] == ["decide-after-stop"]
    assert "max_turns" in _blob_or_text(store, state.todos["decide-after-stop"].title)
    # every iteration is a run: the harness call returned, so "progress", never "completed"
    assert [(r.run_id, r.agent_id, r.outcome) for r in state.runs.values()] == [
        ("iter-0001", "loopy-eval_reviewer", "progress"),
        ("iter-0002", "loopy-outer", "progress"),
        ("iter-0003", "loopy-inner", "progress"),
        ("iter-0004", "loopy-outer", "progress"),
        ("iter-0005", "loopy-inner", "progress"),
        ("iter-0006", "loopy-outer", "progress"),
    ]
    run = state.runs["iter-0002"]
    assert run.session_id == GOAL_012 and run.todo_id == "loopy-session"
    assert run.evidence_ids == ["it-0002-prompt", "it-0002-result"]
    assert (state.quota_spent, state.policy["quota"]) == (6, 6)
    assert set(state.agents) == {"loopy-loop", "loopy-eval_reviewer", "loopy-outer", "loopy-inner"}
    failures = {k: e for k, e in state.evidence.items() if k.startswith("pf-")}
    assert sorted(failures) == [
        "pf-handoff-currency-0624ee9e640d",
        "pf-handoff-currency-1b87a423a807",
        "pf-handoff-currency-8d2222d319b6",
    ]
    for item in failures.values():
        assert (item.kind, item.visibility) == ("log", "private")
        summary = _blob(store, item.summary)  # from the failure's own file, nothing else
        assert summary.startswith("loopy-loop stale handoff after attempt "), summary
        assert summary.endswith(" (outer) (protocol_failures/" + item.evidence_id[3:] + ".json)")
    prompt = state.evidence["it-0002-prompt"]
    assert (prompt.kind, prompt.visibility) == ("log", "private")
    assert "/home/dev/hello-project" in _blob(store, prompt.body)  # kept, but only privately
    assert prompt.revision == "b798ad1f3f99ae0e82148c8656055e9d284fdff3"  # HEAD before the turn
    outcome = state.evidence["outcome"]
    assert "stopped before meeting the goal (max_turns)" in outcome.summary


def _blob_or_text(store: FileStore, value: Any) -> str:
    return _blob(store, value) if isinstance(value, dict) else str(value)


def test_goal_met_with_evidence_is_achieved(tmp_path: Path) -> None:
    store = _store(tmp_path)
    report = import_path(store, copy_012("goal-met", tmp_path))
    assert report.ok and report.sessions[0].stop_state == "achieved"
    state = _state(store, GOAL_012)
    assert state.status == "achieved"
    assert state.outcome_reason == (
        "hello.txt exists at the repo root and contains hello; T001 accepted."
    )
    assert state.closed_at == "2026-11-29T09:36:52Z"
    assert attention(state, NOW)["state"] == "done"
    assert _todos(state) == {"loopy-session": ("done", "agent"), "fin-001": ("done", "agent")}
    finished = state.todos["fin-001"]
    assert finished.title.startswith("T001 accepted by outer attempt c7315b7bdd13")
    assert finished.evidence_ids == ["fin-001-accepted"]
    accepted = state.evidence["fin-001-accepted"]
    assert (accepted.kind, accepted.visibility, accepted.refs) == (
        "review",
        "team",
        ["repo:/hello.txt"],
    )
    outcome = state.evidence["outcome"]
    assert outcome.refs == ["repo:/hello.txt", "session:/project_state/finished.md"]
    assert outcome.revision == "422b00e6c149b20be4370ae9695b28c551990b58"
    assert state.todos["loopy-session"].evidence_ids == ["outcome"]
    commit = state.evidence["it-0003-commit"]  # the inner turn committed hello.txt
    assert (commit.kind, commit.revision) == ("commit", "422b00e6c149b20be4370ae9695b28c551990b58")
    assert [r.outcome for r in state.runs.values()] == ["progress"] * 4
    # the outer role's project_state/handoff.json (revision 2) is the session todo's handoff note
    (note,) = state.handoffs.values()
    assert (note.source_agent_id, note.git_revision, note.workspace_dirty) == (
        "loopy-outer",
        "422b00e6c149b20be4370ae9695b28c551990b58",
        False,
    )
    assert note.note["work_summary"] == "Goal met: hello.txt written and accepted"
    assert note.note["approaches_tried"] == [
        {"approach": "T001: hello.txt contains hello", "outcome": "accepted"}
    ]
    assert note.note["source_refs"] == ["repo:/hello.txt", "session:/project_state/finished.md"]
    digest = handoff_digest(
        state, "loopy-session", audience="team", read_blob=None, workspace_facts=None
    )
    assert problems("loopx.handoff/v1", digest) == []
    assert [e["evidence_id"] for e in digest["evidence"]] == ["outcome", "it-0003-commit"]


@pytest.mark.parametrize("name", ["coordinator-only", "noop-max-turns", "goal-met", "documented"])
def test_reimport_changes_nothing_and_is_deterministic(tmp_path: Path, name: str) -> None:
    if name == "documented":
        source = tmp_path / "proj"
        documented_project(source)
    else:
        source = copy_012(name, tmp_path)
    store = _store(tmp_path)
    first = import_path(store, source)
    before = _ledgers(store)
    again = import_path(store, source)
    assert again.applied == 0 and again.replayed > 0 and again.ok
    assert _ledgers(store) == before  # byte for byte
    elsewhere = _store(tmp_path, "other")
    import_path(elsewhere, source)
    assert _ledgers(elsewhere) == before  # same source, same ledger: no wall clock inside
    assert first.applied == sum(len(b.splitlines()) for b in before.values())


@pytest.mark.parametrize("name", ["coordinator-only", "noop-max-turns", "goal-met", "documented"])
def test_no_local_path_reaches_the_ledger(tmp_path: Path, name: str) -> None:
    if name == "documented":
        source = tmp_path / "proj"
        documented_project(source)
        planted = HOME.encode()
    else:
        source = copy_012(name, tmp_path)
        planted = b"/home/dev"
    store = _store(tmp_path)
    import_path(store, source)
    for goal_id, ledger in _ledgers(store).items():
        assert b"/home/" not in ledger, goal_id
    blobs = [p.read_bytes() for p in (store.state_dir / "private").rglob("*") if p.is_file()]
    if name != "coordinator-only":  # no prompt yet in a session that never ran
        assert any(planted in blob for blob in blobs)


# -- the documented layout ------------------------------------------------------------------


def test_documented_layout_parent_and_child(tmp_path: Path) -> None:
    source = tmp_path / "proj"
    documented_project(source)
    store = _store(tmp_path)
    report = import_path(store, source)
    assert _problems(report, "error") == []
    assert _problems(report) == [
        f".loopy_loop/sessions/{PARENT}/events.jsonl: the final line is incomplete "
        "(a torn write); ignored"
    ]
    by_session = {s.session_id: s for s in report.sessions}
    assert by_session[PARENT].events_duplicates == 1
    assert by_session[PARENT].events_read == 5  # start + 2 × (dispatched, finished)

    parent = _state(store, PARENT)
    assert parent.status == "active" and parent.title == "Add a login page"
    update = next(t for t in parent.todos if t.startswith("user-update-"))
    todos = _todos(parent)
    assert todos == {
        "loopy-session": ("open", "agent"),
        update: ("open", "user"),
        "fin-001": ("done", "agent"),
        f"child-{CHILD}": ("done", "agent"),
    }
    assert parent.todos[update].title == (
        "Update from the user for loopy-loop: Please also support dark mode."
    )
    assert attention(parent, NOW) == {  # the session can go on: ready work ranks first
        "state": "ready_for_agent",
        "reason": "work is ready",
        "todo_ids": ["loopy-session"],
        "reasons": [{"state": "ready_for_agent", "count": 1}, {"state": "needs_user", "count": 1}],
    }
    assert [(r.run_id, r.agent_id, r.outcome) for r in parent.runs.values()] == [
        ("iter-0001", "loopy-planner", "progress"),
        ("iter-0002", "loopy-goal_check", "progress"),
    ]
    check = parent.evidence["it-0002-check"]
    assert (check.kind, check.visibility) == ("review", "team")
    assert check.summary == "Goal check after iteration 2 (goal_check): goal not met"
    assert HOME in _blob(store, check.body)  # the judge's reason stays private
    assert "it-0002-check" in parent.runs["iter-0002"].evidence_ids

    fin = parent.todos["fin-001"]
    assert fin.title == "T001 Add the login form"
    assert fin.evidence_ids == [
        "fin-001-accepted",
        "fin-001-pr-1",
        "fin-001-branch-1",
        "fin-001-commit-1",
        "fin-001-ci-1",
    ]
    ev = parent.evidence
    assert ev["fin-001-pr-1"].refs == ["https://github.com/acme/app/pull/42"]
    assert (ev["fin-001-pr-1"].kind, ev["fin-001-pr-1"].revision) == ("pr", "9f8e7d6c5b4a3210")
    assert ev["fin-001-branch-1"].summary == "Branch feat/login"
    assert (ev["fin-001-commit-1"].kind, ev["fin-001-commit-1"].summary) == (
        "commit",
        "Merge commit 9f8e7d6c5b4a3210",
    )
    assert (ev["fin-001-ci-1"].kind, ev["fin-001-ci-1"].summary) == ("ci", "Checks: passed")
    assert ev["eval-eb-001"].kind == "test"
    assert ev["eval-eb-001"].summary == "eval-banana run eb-001: failed (1/2 checks)"

    met = parent.evidence[f"child-{CHILD}-met"]
    assert (met.kind, met.refs) == ("goal", [f"loopx:goal/{CHILD}"])
    child = _state(store, CHILD)
    assert child.status == "achieved"  # goal_met, backed by a passing goal check
    assert child.notes["parent-link"].text == (
        f"Child of goal {PARENT} (loopy-loop session {PARENT})."
    )
    assert child.todos["loopy-session"].evidence_ids == ["outcome", "it-0001-check"]


def test_nested_child_session_is_found_and_linked(tmp_path: Path) -> None:
    sessions = tmp_path / "proj" / ".loopy_loop" / "sessions"
    parent = SessionBuilder(sessions, "001_parent", "Parent goal")
    child = SessionBuilder(parent.dir / "children", "002_child", "Child goal")
    child.iteration("executor")
    store = _store(tmp_path)
    report = import_path(store, tmp_path / "proj")
    assert report.ok
    assert [s.goal_id for s in report.sessions] == ["001_parent", "002_child"]
    assert _todos(_state(store, "001_parent"))["child-002_child"] == ("open", "agent")
    assert (
        _state(store, "002_child").notes["parent-link"].text.startswith("Child of goal 001_parent")
    )


def _one_session(tmp_path: Path, session_id: str = "s1") -> SessionBuilder:
    return SessionBuilder(tmp_path / "proj" / ".loopy_loop" / "sessions", session_id)


def test_secrets_and_local_paths_in_shared_text_stay_private(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "a1B2c3D4e5F6g7H8i9J0" * 3
    goal = f"Deploy with key {key} from {HOME}/deploy"
    s = SessionBuilder(tmp_path / "proj" / ".loopy_loop" / "sessions", "s1", goal)
    store = _store(tmp_path)
    assert import_path(store, s.dir).ok
    state = _state(store, "s1")
    assert state.objective == "Deploy with key [redacted:anthropic-api-key] from [local path]"
    assert _blob(store, state.evidence["goal-text"].body) == goal  # the original, privately
    ledger = store.raw("s1")
    assert key.encode() not in ledger and HOME.encode() not in ledger


def test_operator_stop_abandons_the_goal(tmp_path: Path) -> None:
    s = _one_session(tmp_path)
    s.iteration("executor")
    s.stop("stopped", "stop_requested", "2026-01-15T11:00:00Z", stop_requested=True)
    store = _store(tmp_path)
    import_path(store, s.dir)
    state = _state(store, "s1")
    assert (state.status, state.closed_at) == ("abandoned", "2026-01-15T11:00:00Z")
    assert _todos(state)["loopy-session"] == ("cancelled", "agent")
    assert attention(state, NOW)["state"] == "done"


def test_goal_met_without_evidence_stays_active(tmp_path: Path) -> None:
    s = _one_session(tmp_path)
    s.iteration("executor")
    s.control({"state": "stopped", "reason": "done, trust me", "stop_reason": "goal_met"})
    s.stop("goal_met", "goal_met", "2026-01-15T11:00:00Z", goal_met=True)
    store = _store(tmp_path)
    report = import_path(store, s.dir)
    assert report.sessions[0].stop_state == "unevidenced"
    state = _state(store, "s1")
    assert state.status == "active"
    assert _todos(state) == {
        "loopy-session": ("blocked", "agent"),
        "confirm-goal-met": ("open", "user"),
    }
    assert attention(state, NOW)["todo_ids"] == ["confirm-goal-met"]


def test_goal_met_with_open_user_todo_waits_for_the_user(tmp_path: Path) -> None:
    s = _one_session(tmp_path)
    s.iteration("goal_check", goal_check={"goal_met": True, "reason": "all good"})
    s.updates("One more thing: add a logout button.")
    s.control({"state": "stopped", "reason": "goal met", "stop_reason": "goal_met"})
    s.stop("goal_met", "goal_met", "2026-01-15T11:00:00Z", goal_met=True)
    store = _store(tmp_path)
    import_path(store, s.dir)
    state = _state(store, "s1")
    assert state.status == "active"
    assert _todos(state)["loopy-session"] == ("done", "agent")
    assert _todos(state)["confirm-goal-met"] == ("open", "user")
    before = store.raw("s1")
    again = import_path(store, s.dir)
    assert (again.applied, again.problems) == (0, [])
    assert store.raw("s1") == before


def test_unresolvable_error_asks_the_user_and_harness_failure_is_a_failed_run(
    tmp_path: Path,
) -> None:
    s = _one_session(tmp_path)
    s.iteration("executor", success=False)
    s.control(
        {
            "state": "stopped",
            "reason": "the API key is revoked",
            "stop_reason": "unresolvable_error",
        }
    )
    s.stop("failed", "unresolvable_error", "2026-01-15T11:00:00Z", unresolvable_error=True)
    store = _store(tmp_path)
    import_path(store, s.dir)
    state = _state(store, "s1")
    assert state.runs["iter-0001"].outcome == "failed"
    assert state.status == "active"
    assert _todos(state)["resolve-blocker"] == ("open", "user")
    assert state.todos["resolve-blocker"].title.endswith(": the API key is revoked")


def test_user_update_cleared_later_completes_its_todo(tmp_path: Path) -> None:
    s = _one_session(tmp_path)
    s.updates("Use PostgreSQL, not SQLite.")
    store = _store(tmp_path)
    import_path(store, s.dir)
    update = next(t for t in _state(store, "s1").todos if t.startswith("user-update-"))
    s.updates("")  # the outer workflow reflected it into project_state/ and cleared the file
    import_path(store, s.dir)
    assert _todos(_state(store, "s1"))[update] == ("done", "user")


def test_without_state_json_the_status_comes_from_control_and_events(tmp_path: Path) -> None:
    s = _one_session(tmp_path)
    s.iteration("executor", goal_check={"goal_met": True, "reason": "tests pass"})
    s.iteration("executor", success=False)
    s.control({"state": "stopped", "reason": "verified", "stop_reason": "goal_met"})
    (s.dir / "state.json").unlink()
    (s.dir / "iterations" / "0002_executor" / "result.json").unlink()  # only its event is left
    store = _store(tmp_path)
    report = import_path(store, s.dir)
    assert _problems(report) == [
        "s1/state.json: state.json is missing; the status is taken from control.json and "
        "events.jsonl"
    ]
    state = _state(store, "s1")
    assert [(r.run_id, r.outcome) for r in state.runs.values()] == [
        ("iter-0001", "progress"),
        ("iter-0002", "failed"),
    ]
    assert state.status == "achieved"  # control v1 goal_met, backed by a passing goal check


# -- idempotent and incremental -------------------------------------------------------------


def test_incremental_import_appends_only_what_is_new(tmp_path: Path) -> None:
    s = _one_session(tmp_path)
    s.iteration("planner")
    store = _store(tmp_path)
    import_path(store, s.dir)
    before = store.raw("s1")
    s.iteration("executor")
    s.iteration("executor", success=False)
    report = import_path(store, s.dir)
    after = store.raw("s1")
    assert after.startswith(before)
    new = [json.loads(line) for line in after[len(before) :].splitlines()]
    assert report.applied == len(new)
    subjects = [
        e["data"].get("run_id") or e["data"].get("evidence_id") or e["data"]["agent_id"]
        for e in new
    ]
    assert subjects == [
        "loopy-executor",
        "it-0002-prompt",
        "it-0002-result",
        "iter-0002",
        "it-0003-prompt",
        "it-0003-result",
        "iter-0003",
    ]
    assert import_path(store, s.dir).applied == 0
    assert store.raw("s1") == after


def test_running_iteration_waits_until_recorded(tmp_path: Path) -> None:
    s = _one_session(tmp_path)
    s.iteration("planner")
    s.iteration("executor", record=False)  # result.json written, /finished not yet processed
    s.save_state(current_task={"iteration": 2, "workflow_id": "executor"})
    store = _store(tmp_path)
    report = import_path(store, s.dir)
    assert report.sessions[0].pending_iterations == [2]
    assert list(_state(store, "s1").runs) == ["iter-0001"]


def test_changed_source_keeps_the_imported_version(tmp_path: Path) -> None:
    s = _one_session(tmp_path)
    s.finished("- T001 first version of the entry\n")
    store = _store(tmp_path)
    import_path(store, s.dir)
    before = store.raw("s1")
    s.finished("- T001 an agent rewrote this entry\n")
    report = import_path(store, s.dir)
    assert store.raw("s1") == before
    assert any("changed in the source since it was imported" in p for p in _problems(report))
    assert report.ok  # a warning: nothing new was lost


# -- problems, reported per file ------------------------------------------------------------


def _two_sessions(tmp_path: Path) -> tuple[SessionBuilder, SessionBuilder]:
    sessions = tmp_path / "proj" / ".loopy_loop" / "sessions"
    good = SessionBuilder(sessions, "a_good")
    good.iteration("planner")
    bad = SessionBuilder(sessions, "b_bad")
    bad.iteration("planner")
    return good, bad


def _break_state_json(bad: SessionBuilder) -> str:
    (bad.dir / "state.json").write_text('{"status": "running", "history": [')
    return "state.json is not valid JSON (line 1, column 35)"


def _break_control_version(bad: SessionBuilder) -> str:
    bad.control({"schema_version": 9, "state": "running", "reason": "x", "stop_reason": None})
    (bad.dir / "control.json").write_text(
        json.dumps({"schema_version": 9, "state": "running", "reason": "x"})
    )
    return (
        "control.json has schema_version 9, which this importer does not read (it reads 1, 2, "
        "3); is it from a newer loopy-loop?"
    )


def _break_goal(bad: SessionBuilder) -> str:
    (bad.dir / "goal.md").unlink()
    bad.goal = ""
    bad.save_state()
    return "no goal: goal.md is missing or empty"


@pytest.mark.parametrize(
    ("breaker", "where"),
    [
        (_break_state_json, "state.json"),
        (_break_control_version, "control.json"),
        (_break_goal, "goal.md"),
    ],
)
def test_an_unreadable_session_is_reported_and_the_rest_imported(
    tmp_path: Path, breaker: Any, where: str
) -> None:
    good, bad = _two_sessions(tmp_path)
    message = breaker(bad)
    store = _store(tmp_path)
    report = import_path(store, tmp_path / "proj")
    assert not report.ok
    errors = _problems(report, "error")
    assert errors[0].startswith(f".loopy_loop/sessions/b_bad/{where}: {message}")
    assert errors[-1] == (
        ".loopy_loop/sessions/b_bad: the session was not imported (see the problems above)"
    )
    assert not store.exists("b_bad")  # nothing half-written
    assert _state(store, "a_good").runs["iter-0001"].outcome == "progress"
    cli = run_cli(
        [
            "import",
            "loopy-loop",
            str(tmp_path / "proj"),
            "--root",
            str(store.root),
            "--format",
            "json",
        ]
    )
    assert cli.exit_code == 2
    data = cli.json()
    assert data["ok"] is False and data["applied"] == 0
    assert any(p["path"].endswith(where) and p["severity"] == "error" for p in data["problems"])


def test_a_bad_item_leaves_out_only_that_item(tmp_path: Path) -> None:
    s = _one_session(tmp_path)
    folder = s.iteration("goal_check", goal_check={"goal_met": False, "reason": "no"})
    (folder / "goal_check.json").write_text("{truncated")
    (folder / "notes-from-the-agent.bin").write_bytes(b"\x00\x01")  # unknown files: ignored
    (s.dir / "scratch.txt").write_text("anything")
    s.write_events(extra=b"not json at all\n")
    (s.dir / "control.json").unlink()
    store = _store(tmp_path)
    report = import_path(store, s.dir)
    assert _problems(report) == [
        "s1/control.json: control.json is missing; the stop state comes from state.json",
        "s1/events.jsonl: line 4 is not a JSON object; skipped",
        "s1/iterations/0001_goal_check/goal_check.json: goal_check.json is not valid JSON "
        "(line 1, column 2)",
    ]
    state = _state(store, "s1")
    assert "iter-0001" in state.runs and "it-0001-check" not in state.evidence


def test_an_unreadable_project_goal_file_is_reported_by_its_relative_path(
    tmp_path: Path,
) -> None:
    s = _one_session(tmp_path)
    (s.dir / "goal.md").unlink()
    s.goal = ""
    s.save_state()
    (tmp_path / "proj" / "loopy_loop_goal.txt").write_bytes(b"\xff\xfe not UTF-8")
    store = _store(tmp_path)
    report = import_path(store, tmp_path / "proj")
    assert _problems(report) == [
        "loopy_loop_goal.txt: is not UTF-8 text",
        ".loopy_loop/sessions/s1/goal.md: no goal: goal.md is missing or empty and neither "
        "goal_contract.json nor state.json names one; the session was not imported",
        ".loopy_loop/sessions/s1: the session was not imported (see the problems above)",
    ]
    assert store.goal_ids() == []


def test_a_malformed_session_uuid_still_gives_valid_operation_ids(tmp_path: Path) -> None:
    s = _one_session(tmp_path)
    s.iteration("planner")
    manifest = json.loads((s.dir / "session.json").read_text())
    (s.dir / "session.json").write_text(json.dumps({**manifest, "session_uuid": "not a/uuid"}))
    store = _store(tmp_path)
    report = import_path(store, s.dir)
    assert report.problems == [] and "iter-0001" in _state(store, "s1").runs
    uuid = "3F2A1B4C-5D6E-4F70-8192-A3B4C5D6E7F8"
    (s.dir / "session.json").write_text(json.dumps({**manifest, "session_uuid": uuid}))
    other = _store(tmp_path, "other")
    assert import_path(other, s.dir).problems == []
    assert "loopy:3f2a1b4c-5d6:goal:create" in _state(other, "s1").operations


def test_an_oversized_prompt_is_cut_not_lost(tmp_path: Path) -> None:
    s = _one_session(tmp_path)
    folder = s.iteration("planner")
    (folder / "prompt.txt").write_bytes(b"x" * (6 * 1024 * 1024))
    store = _store(tmp_path)
    assert import_path(store, s.dir).ok
    state = _state(store, "s1")
    assert state.evidence["it-0001-prompt"].body_bytes == 5 * 1024 * 1024
    assert state.runs["iter-0001"].evidence_ids == ["it-0001-prompt", "it-0001-result"]


def test_goal_id_collision_and_override(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert import_path(store, copy_012("goal-met", tmp_path)).ok
    other = copy_012("noop-max-turns", tmp_path)
    clash = import_path(store, other)
    assert _problems(clash, "error")[0].endswith(
        f"goal {GOAL_012} already exists and was not imported from this session; import it "
        "under another id with --goal-id"
    )
    assert _state(store, GOAL_012).status == "achieved"  # untouched
    assert import_path(store, other, goal_id="noop").ok
    assert _state(store, "noop").status == "active"
    cli = run_cli(
        [
            "import",
            "loopy-loop",
            str(tmp_path / "proj"),
            "--root",
            str(store.root),
            "--goal-id",
            "x",
        ]
    )
    assert cli.exit_code == 3  # no such path: not found


def test_goal_id_needs_a_single_session(tmp_path: Path) -> None:
    _two_sessions(tmp_path)
    store = _store(tmp_path)
    cli = run_cli(
        [
            "import",
            "loopy-loop",
            str(tmp_path / "proj"),
            "--root",
            str(store.root),
            "--goal-id",
            "mine",
        ]
    )
    assert cli.exit_code == 2
    assert "--goal-id names one goal, but the path holds 2 sessions" in cli.stderr
    assert store.goal_ids() == []


def test_cli_text_output(tmp_path: Path) -> None:
    source = copy_012("goal-met", tmp_path)
    store = _store(tmp_path)
    cli = run_cli(["import", "loopy-loop", str(source), "--root", str(store.root)])
    assert cli.exit_code == 0, cli.stderr
    assert cli.stdout == (
        f"{GOAL_012} -> goal {GOAL_012} [achieved, attention done]: 28 new, 0 already "
        "imported; 4 runs\n"
    )


# -- watch ----------------------------------------------------------------------------------


def test_watch_imports_new_iterations(tmp_path: Path) -> None:
    from loopx.importers.loopy_watch import watch

    s = _one_session(tmp_path)
    s.iteration("planner")
    store = _store(tmp_path)
    reports: queue.Queue[ImportReport] = queue.Queue()
    stop = threading.Event()
    thread = threading.Thread(
        target=watch,
        args=(store, tmp_path / "proj", reports.put),
        kwargs={"debounce": 0.1, "stop": stop},
        daemon=True,
    )
    thread.start()
    try:
        first = reports.get(timeout=10)
        assert first.applied > 0
        s.iteration("executor")
        deadline = time.monotonic() + 10
        while "iter-0002" not in _state(store, "s1").runs:
            assert time.monotonic() < deadline, "the watch did not import the new iteration"
            with contextlib.suppress(queue.Empty):
                reports.get(timeout=0.2)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()
    assert _state(store, "s1").runs["iter-0002"].agent_id == "loopy-executor"


def test_watch_observes_what_the_import_reads(tmp_path: Path) -> None:
    from loopx.importers.loopy_watch import watch_root

    documented_project(tmp_path / "proj")
    sessions = tmp_path / "proj" / ".loopy_loop" / "sessions"
    assert watch_root(tmp_path / "proj") == tmp_path / "proj" / ".loopy_loop"
    assert watch_root(sessions / CHILD) == sessions / CHILD
    assert watch_root(sessions / PARENT) == sessions  # its child sits beside it


# -- projections ----------------------------------------------------------------------------


def test_imported_goals_build_and_validate(tmp_path: Path) -> None:
    import hashlib

    from loopx.build.pipeline import build, check

    store = _store(tmp_path)
    for name in ("coordinator-only", "goal-met"):
        assert import_path(store, copy_012(name, tmp_path)).ok
    assert import_path(store, copy_012("noop-max-turns", tmp_path), goal_id="noop").ok
    documented_project(tmp_path / "documented")
    assert import_path(store, tmp_path / "documented").ok
    out = tmp_path / "site"
    build(store.root, out, audiences=("public", "team", "private"), head=None)
    manifest = json.loads((out / "manifest.json").read_text())
    assert problems("loopx.manifest/v1", manifest) == []
    schemas: set[str] = set()
    for path, meta in manifest["files"].items():
        data = (out / path).read_bytes()
        assert meta["sha256"] == hashlib.sha256(data).hexdigest()
        assert b"/home/" not in data, path  # no local path in any audience's output
        if meta["schema"]:
            assert problems(meta["schema"], json.loads(data)) == [], path
            schemas.add(meta["schema"])
    assert {"loopx.status/v2", "loopx.graph/v1", "loopx.handoff/v1"} <= schemas
    team = out / "team" / "goals"
    assert (team / GOAL_012 / "handoffs" / "loopy-session.json").is_file()
    for goal in (GOAL_012, "noop", PARENT, CHILD, "001_ship-minimal-working-landing-page"):
        assert (team / goal / "workbench.md").is_file(), goal
        assert (team / goal / "graph.json").is_file(), goal
    status = json.loads((team / "noop" / "status.json").read_text())
    assert status["attention"]["state"] == "needs_user"
    assert check(store.root, out, audiences=("public", "team", "private"), head=None).ok
