"""Build loopy-loop sessions in the older documented layout, file by file, for the tests.

`goal.md`, `session.json`, `state.json` (v1: no schema_version), `events.jsonl`,
`control.json` (v1), `updates_from_user.md`, `children.json`, `project_state/finished.md`,
`iterations/<NNNN>_<workflow>/{prompt.txt,result.json,result_text.txt,harness_run_id.txt,
goal_check.json}` and `eval_results/<run>/report.json`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

FIXTURES_012 = Path("/work/shared/fixtures/loopy-loop-0.12")
HOME = "/home/tester/work/app"  # a local path planted in prompts and results


def copy_012(name: str, dest: Path) -> Path:
    """A writable copy of one real loopy-loop 0.12.0 fixture project."""
    target = dest / name
    shutil.copytree(FIXTURES_012 / name, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


def _write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    elif isinstance(data, str):
        path.write_text(data)
    else:
        path.write_text(json.dumps(data, indent=2))


class SessionBuilder:
    """One session folder in the documented layout, grown iteration by iteration."""

    def __init__(
        self,
        sessions: Path,
        session_id: str,
        goal: str = "Add a login page",
        *,
        parent: str | None = None,
        max_turns: int = 10,
        created_at: str = "2026-01-15T10:15:00Z",
    ):
        self.dir = sessions / session_id
        self.session_id = session_id
        self.created_at = created_at
        self.history: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.state_extra: dict[str, Any] = {}
        self.max_turns = max_turns
        self.goal = goal
        _write(self.dir / "goal.md", goal + "\n")
        _write(
            self.dir / "session.json",
            {
                "session_id": session_id,
                "goal_hash": "ab12cd34",
                "workflow_set": "planner_executor",
                "parent_session_id": parent,
                "created_at": created_at,
            },
        )
        self.parent = parent
        self.control({"state": "running", "reason": "session active", "stop_reason": None})
        _write(self.dir / "updates_from_user.md", "")
        _write(self.dir / "children.json", {"schema_version": 1, "children": []})
        _write(self.dir / "project_state" / "finished.md", "# Finished Work\n")
        self.event("session_started", {"max_turns": max_turns}, created_at)
        self.save_state()

    # -- files ----------------------------------------------------------------------

    def control(self, data: dict[str, Any]) -> None:
        _write(self.dir / "control.json", {"schema_version": 1, **data})

    def event(self, kind: str, payload: dict[str, Any], ts: str) -> dict[str, Any]:
        event = {
            "event_id": f"e{len(self.events):04d}",
            "schema_version": 1,
            "ts": ts,
            "session_id": self.session_id,
            "type": kind,
            "payload": payload,
        }
        self.events.append(event)
        self.write_events()
        return event

    def write_events(self, extra: bytes = b"") -> None:
        lines = b"".join(json.dumps(e).encode() + b"\n" for e in self.events)
        _write(self.dir / "events.jsonl", lines + extra)

    def save_state(self, status: str = "running", **extra: Any) -> None:
        self.state_extra.update(extra)
        _write(
            self.dir / "state.json",
            {
                "status": status,
                "goal_hash": "ab12cd34",
                "workflow_set": "planner_executor",
                "parent_session_id": self.parent,
                "max_turns": self.max_turns,
                "active_session_id": self.session_id,
                "goal_met": status == "goal_met",
                "stop_requested": False,
                "stop_reason": None,
                "iteration_count": len(self.history),
                "current_task": None,
                "history": self.history,
                "config_snapshot": {"goal": self.goal, "workflow_set": "planner_executor"},
                **self.state_extra,
            },
        )

    def iteration(
        self,
        workflow: str,
        *,
        success: bool = True,
        at: str | None = None,
        goal_check: dict[str, Any] | None = None,
        text: str = "Did the step; see the diff.",
        record: bool = True,
    ) -> Path:
        """Add iteration N: its folder and (when `record`) its history entry and events."""
        number = len(self.history) + 1
        at = at or f"2026-01-15T10:{20 + number:02d}:00Z"
        folder = self.dir / "iterations" / f"{number:04d}_{workflow}"
        run_id = f"run-{number}"
        _write(
            folder / "prompt.txt",
            f"Iteration {number} ({workflow}). Work in {HOME}; the goal: {self.goal}\n",
        )
        _write(
            folder / "result.json",
            {
                "success": success,
                "text": text,
                "error": None if success else "harness crashed",
                "harness_run_id": run_id,
                "harness_output_dir": f"{HOME}/.loopy_loop/sessions/x/harness_outputs/{run_id}",
            },
        )
        _write(folder / "result_text.txt", text if success else "")
        _write(folder / "harness_run_id.txt", run_id)
        if goal_check is not None:
            _write(folder / "goal_check.json", {"schema_version": 1, **goal_check})
        if record:
            self.history.append(
                {
                    "iteration": number,
                    "workflow_set": "planner_executor",
                    "workflow_id": workflow,
                    "session_id": self.session_id,
                    "success": success,
                    "error": None if success else "harness crashed",
                    "started_at": at,
                    "finished_at": at,
                    "harness_run_id": run_id,
                }
            )
            self.event("task_dispatched", {"workflow_id": workflow, "iteration": number}, at)
            self.event(
                "task_finished",
                {"workflow_id": workflow, "iteration": number, "success": success},
                at,
            )
            self.save_state()
        return folder

    def finished(self, text: str) -> None:
        _write(self.dir / "project_state" / "finished.md", "# Finished Work\n\n" + text)

    def updates(self, text: str) -> None:
        _write(self.dir / "updates_from_user.md", text)

    def children(self, records: list[dict[str, Any]]) -> None:
        _write(self.dir / "children.json", {"schema_version": 1, "children": records})

    def eval_report(self, run: str, report: dict[str, Any]) -> None:
        _write(self.dir / "eval_results" / run / "report.json", report)

    def stop(self, status: str, stop_reason: str, at: str, **state: Any) -> None:
        """Stop the session the way the coordinator does: state, event, control."""
        self.event("session_stopped", {"status": status, "stop_reason": stop_reason}, at)
        self.save_state(status, stop_reason=stop_reason, terminal_at=at, **state)


def documented_project(root: Path) -> dict[str, SessionBuilder]:
    """A project with a running parent session and its finished child, documented layout.

    The parent: two iterations (a planner step and a goal check that says "not met"), a
    finished ledger entry with delivery evidence, a pending user update, a duplicate event and
    a torn final events line, an eval-banana report. The child: one iteration, a passing goal
    check, stopped with goal_met by control v1.
    """
    sessions = root / ".loopy_loop" / "sessions"
    parent = SessionBuilder(sessions, "20260115_101500_ab12cd34_9f8e7d6c")
    parent.iteration("planner")
    parent.iteration(
        "goal_check",
        goal_check={"goal_met": False, "reason": f"login form missing in {HOME}/web"},
    )
    parent.finished(
        "- 2026-01-15T10:40:00Z T001 Add the login form\n"
        "  - branch `feat/login`, PR https://github.com/acme/app/pull/42\n"
        "  - merged as merge commit 9f8e7d6c5b4a3210, checks: passed\n"
        f"  - worked in {HOME}/web\n"
    )
    parent.updates("Please also support dark mode.\nThe brand colours are in the wiki.\n")
    parent.eval_report(
        "eb-001",
        {"run_passed": False, "checks": [{"id": "a", "status": "passed"}, {"id": "b"}]},
    )
    child_id = "20260115_103000_cd34ef56_1a2b3c4d"
    parent.children(
        [
            {
                "session_id": child_id,
                "workflow_set": "planner_executor",
                "goal_hash": "cd34ef56",
                "status": "goal_met",
                "created_at": "2026-01-15T10:30:00Z",
                "completed_at": "2026-01-15T10:35:00Z",
            }
        ]
    )
    parent.events.append(dict(parent.events[1]))  # a duplicate event (same event_id)
    parent.write_events(extra=b'{"event_id":"torn","ts":"2026-01-15T10:5')  # torn final line
    child = SessionBuilder(
        sessions,
        child_id,
        "Write the login form's validation",
        parent=parent.session_id,
        created_at="2026-01-15T10:30:00Z",
    )
    child.iteration(
        "executor", goal_check={"goal_met": True, "reason": "validation covered by tests"}
    )
    child.control(
        {
            "state": "stopped",
            "reason": "Accepted evidence satisfies the goal.",
            "stop_reason": "goal_met",
        }
    )
    child.stop("goal_met", "goal_met", "2026-01-15T10:35:00Z", goal_met=True)
    return {"parent": parent, "child": child}


# -- named sources, each with the problems a first import must report (and no others) --------

GOAL_MET_SESSION = "001_write-file-hello-txt-containing-word"


def _sessions(root: Path) -> Path:
    return root / "proj" / ".loopy_loop" / "sessions"


def _documented(root: Path) -> tuple[Path, list[str]]:
    documented_project(root / "proj")
    parent = "20260115_101500_ab12cd34_9f8e7d6c"
    torn = (
        f".loopy_loop/sessions/{parent}/events.jsonl: the final line is incomplete "
        "(a torn write); ignored"
    )
    return root / "proj", [torn]


def _operator_stop(root: Path) -> tuple[Path, list[str]]:
    s = SessionBuilder(_sessions(root), "s1")
    s.iteration("executor")
    s.stop("stopped", "stop_requested", "2026-01-15T11:00:00Z", stop_requested=True)
    return s.dir, []


def _unevidenced(root: Path) -> tuple[Path, list[str]]:
    s = SessionBuilder(_sessions(root), "s1")
    s.iteration("executor")
    s.control({"state": "stopped", "reason": "done, trust me", "stop_reason": "goal_met"})
    s.stop("goal_met", "goal_met", "2026-01-15T11:00:00Z", goal_met=True)
    return s.dir, []


def _met_with_open_update(root: Path) -> tuple[Path, list[str]]:
    s = SessionBuilder(_sessions(root), "s1")
    s.iteration("goal_check", goal_check={"goal_met": True, "reason": "all good"})
    s.updates("One more thing: add a logout button.")
    s.control({"state": "stopped", "reason": "goal met", "stop_reason": "goal_met"})
    s.stop("goal_met", "goal_met", "2026-01-15T11:00:00Z", goal_met=True)
    return s.dir, []


def _blocker(root: Path) -> tuple[Path, list[str]]:
    s = SessionBuilder(_sessions(root), "s1")
    s.iteration("executor", success=False)
    s.control(
        {
            "state": "stopped",
            "reason": "the API key is revoked",
            "stop_reason": "unresolvable_error",
        }
    )
    s.stop("failed", "unresolvable_error", "2026-01-15T11:00:00Z", unresolvable_error=True)
    return s.dir, []


def _max_turns(root: Path) -> tuple[Path, list[str]]:
    s = SessionBuilder(_sessions(root), "s1", max_turns=2)
    s.iteration("planner")
    s.iteration("executor")
    s.control({"state": "stopped", "reason": "turn budget spent", "stop_reason": "max_turns"})
    s.stop("max_turns", "max_turns", "2026-01-15T11:00:00Z")
    return s.dir, []


def _nested_child(root: Path) -> tuple[Path, list[str]]:
    parent = SessionBuilder(_sessions(root), "001_parent", "Parent goal")
    child = SessionBuilder(parent.dir / "children", "002_child", "Child goal")
    child.iteration("executor")
    return root / "proj", []


def _no_state_json(root: Path) -> tuple[Path, list[str]]:
    s = SessionBuilder(_sessions(root), "s1")
    s.iteration("executor", goal_check={"goal_met": True, "reason": "tests pass"})
    s.control({"state": "stopped", "reason": "verified", "stop_reason": "goal_met"})
    (s.dir / "state.json").unlink()
    missing = (
        "s1/state.json: state.json is missing; the status is taken from control.json and "
        "events.jsonl"
    )
    return s.dir, [missing]


def _many_files(root: Path) -> tuple[Path, list[str]]:
    """Several files of each kind the reader lists from a folder: eval reports, protocol
    failures, rejected controls, iterations."""
    s = SessionBuilder(_sessions(root), "s1")
    for workflow in ("planner", "executor", "executor"):
        s.iteration(workflow)
    for run, passed in (("eb-003", True), ("eb-001", False), ("eb-002", True)):
        s.eval_report(run, {"run_passed": passed, "checks": [{"id": "a", "status": "passed"}]})
    for n in (3, 1, 2):
        failure = {
            "schema_version": 1,
            "failure_id": f"handoff-currency-{n}",
            "kind": "stale_handoff",
            "finishing_attempt": {"workflow_id": "outer", "attempt_id": f"attempt-{n}"},
            "created_at": f"2026-01-15T10:4{n}:00Z",
        }
        _write(s.dir / "protocol_failures" / f"handoff-currency-{n}.json", failure)
        _write(s.dir / "control_rejected" / f"control-{n}.json", {"state": "stopped"})
    return s.dir, []


def _real(name: str) -> Any:
    def make(root: Path) -> tuple[Path, list[str]]:
        return copy_012(name, root), []

    return make


def _goal_met_at_iteration_2(root: Path) -> tuple[Path, list[str]]:
    return rewind_goal_met(copy_012("goal-met", root)), []


# name → builder(root) → (the path to import, the problems its first import reports)
SOURCES: dict[str, Any] = {
    "coordinator-only": _real("coordinator-only"),
    "noop-max-turns": _real("noop-max-turns"),
    "goal-met": _real("goal-met"),
    "goal-met-at-iteration-2": _goal_met_at_iteration_2,
    "documented": _documented,
    "operator-stop": _operator_stop,
    "unevidenced": _unevidenced,
    "met-with-open-update": _met_with_open_update,
    "blocker": _blocker,
    "max-turns": _max_turns,
    "nested-child": _nested_child,
    "many-files": _many_files,
    "no-state-json": _no_state_json,
}


def rewind_goal_met(project: Path) -> Path:
    """Turn a copy of the real `goal-met` project back into the session as it stood after
    iteration 2: running, handoff revision 1 published by the outer role, nothing finished.
    Returns the project; copying the real files back over it replays the session's growth."""
    session = project / ".loopy_loop" / "sessions" / GOAL_MET_SESSION
    state = json.loads((session / "state.json").read_text())
    state.update(
        status="running",
        goal_met=False,
        stop_reason=None,
        iteration_count=2,
        history=state["history"][:2],
    )
    state.pop("terminal_at", None)
    _write(session / "state.json", state)
    _write(
        session / "control.json",
        {"schema_version": 1, "state": "running", "reason": "session active", "stop_reason": None},
    )
    (session / "session_outcome.json").unlink()
    events = (session / "events.jsonl").read_bytes().splitlines(keepends=True)
    _write(session / "events.jsonl", b"".join(events[:8]))
    for number in (3, 4):
        for path in [
            *session.glob(f"iterations/{number:04d}_*"),
            *session.glob(f"receipts/{number:04d}_*"),
        ]:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    _write(session / "project_state" / "finished.md", "# Finished Work\n")
    handoff = json.loads((session / "project_state" / "handoff.json").read_text())
    handoff.update(
        revision=1,
        producer={"workflow_id": "outer", "attempt_id": "12c1c268f509"},
        summary="Planned T001: write hello.txt containing hello",
        accepted_outcomes=[],
        open_work=["T001: write hello.txt containing hello"],
        evidence_refs=["session:/project_state/plan.md"],
    )
    _write(session / "project_state" / "handoff.json", handoff)
    return project
