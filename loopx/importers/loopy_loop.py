"""Import loopy-loop sessions into the ledger, through the engine's governed write paths.

Read (`loopy_reader`) → plan every write of a session in memory → write them one by one. A
session that cannot be read completely (no goal, unreadable or newer `state.json`,
`control.json`, `session.json` or `session_outcome.json`) is reported and nothing of it is
written; a problem in one item (an iteration's `result.json`, a goal check, an events line)
leaves out that item only. Every write is an ordinary engine call, so preconditions hold.

Idempotent and incremental by construction: every operation id is derived from the source's
own identity (`loopy:<session key>:<entity>:<verb>`, the key being the session's uuid, else a
hash of its id) and every request only from source facts, so importing again replays every
operation (ledger bytes unchanged) and importing a grown session appends only what is new.
Each write's clock is pinned to the source's own timestamp for that fact; the engine's wall
clock is never read.

The mapping is described in `loopy_plan`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopx.engine.clock import FixedClock
from loopx.engine.core import Context, load_state
from loopx.importers.loopy_model import Problem, Session, Source
from loopx.importers.loopy_plan import EPOCH, SessionPlan, stop_state
from loopx.importers.loopy_reader import read_source
from loopx.importers.sanitize import slug
from loopx.model.errors import Conflict, InvalidInput, LoopxError
from loopx.model.ids import check_id
from loopx.state.frontier import attention


@dataclass
class SessionReport:
    session_id: str
    goal_id: str
    imported: bool
    applied: int = 0
    replayed: int = 0
    runs: int = 0
    pending_iterations: list[int] = field(default_factory=list)
    events_read: int = 0
    events_duplicates: int = 0
    goal_status: str | None = None
    attention: str | None = None
    stop_state: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "goal_id": self.goal_id,
            "imported": self.imported,
            "applied": self.applied,
            "replayed": self.replayed,
            "runs": self.runs,
            "pending_iterations": self.pending_iterations,
            "events": {"read": self.events_read, "duplicates": self.events_duplicates},
            "goal_status": self.goal_status,
            "attention": self.attention,
            "stop_state": self.stop_state,
        }


@dataclass
class ImportReport:
    sessions: list[SessionReport] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def applied(self) -> int:
        return sum(s.applied for s in self.sessions)

    @property
    def replayed(self) -> int:
        return sum(s.replayed for s in self.sessions)

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "applied": self.applied,
            "replayed": self.replayed,
            "sessions": [s.to_dict() for s in self.sessions],
            "problems": [p.to_dict() for p in self.problems],
        }


# -- running the plan -----------------------------------------------------------------------


def _roots(sessions: list[Session]) -> list[Session]:
    ids = {s.session_id for s in sessions}
    dirs = {s.directory for s in sessions}
    return [
        s
        for s in sessions
        if s.parent_session_id not in ids and not any(p in dirs for p in s.directory.parents)
    ]


def _parent_of(s: Session, by_dir: dict[Path, Session]) -> str | None:
    if s.parent_session_id:
        return s.parent_session_id
    if s.directory.parent.name == "children":
        parent = by_dir.get(s.directory.parent.parent)
        return parent.session_id if parent else None
    return None


def import_source(store: Any, source: Source, goal_id: str | None = None) -> ImportReport:
    """Import every session of `source` into `store`; see the module docstring."""
    report = ImportReport()
    by_dir = {s.directory: s for s in source.sessions}
    for s in source.sessions:
        s.parent_session_id = _parent_of(s, by_dir)
    roots = _roots(source.sessions)
    if goal_id is not None:
        check_id(goal_id, "goal_id")
        if len(roots) != 1:
            raise InvalidInput(
                f"--goal-id names one goal, but the path holds {len(roots)} sessions",
                code="goal_id_needs_one_session",
            )
    goal_ids: dict[str, str] = {}
    for s in source.sessions:
        goal_ids.setdefault(s.session_id, slug(s.session_id))
    if goal_id is not None:
        goal_ids[roots[0].session_id] = goal_id
    sessions = {s.session_id: s for s in source.sessions}
    claimed: dict[str, str] = {}
    for s in source.sessions:
        gid = goal_ids[s.session_id]
        sr = SessionReport(s.session_id, gid, imported=False)
        report.sessions.append(sr)
        sr.events_read, sr.events_duplicates = s.events.read, s.events.duplicates
        sr.pending_iterations = list(s.pending)
        if claimed.get(gid, s.session_id) != s.session_id:
            s.problems.append(
                Problem(
                    s.rel,
                    f"session maps to goal id {gid} as another session does; not imported",
                    "error",
                    s.session_id,
                )
            )
        elif not s.fatal:
            claimed[gid] = s.session_id
            _import_session(store, s, gid, goal_ids, sessions, sr)
        else:
            s.problems.append(
                Problem(
                    s.rel,
                    "the session was not imported (see the problems above)",
                    "error",
                    s.session_id,
                )
            )
        report.problems.extend(s.problems)
    return report


def import_path(store: Any, path: Path | str, goal_id: str | None = None) -> ImportReport:
    """Read PATH (a project root, a `.loopy_loop` folder or a session) and import it."""
    return import_source(store, read_source(Path(path)), goal_id)


def _import_session(
    store: Any,
    s: Session,
    goal_id: str,
    goal_ids: dict[str, str],
    sessions: dict[str, Session],
    sr: SessionReport,
) -> None:
    state = load_state(store, goal_id).state
    parent = s.parent_session_id
    parent_goal = goal_ids.get(parent) if parent else None
    try:
        plan = SessionPlan(s, goal_id, state, goal_ids, sessions, parent_goal)
        ops = plan.build()
    except LoopxError as err:  # a value the engine would refuse: write nothing at all
        s.problems.append(Problem(s.rel, f"not imported: {err.message}", "error", s.session_id))
        return
    create = f"loopy:{plan.key}:goal:create"
    if state is not None and create not in state.operations:
        s.problems.append(
            Problem(
                s.rel,
                f"goal {goal_id} already exists and was not imported from this session; "
                "import it under another id with --goal-id",
                "error",
                s.session_id,
            )
        )
        return
    sr.imported = True
    refused_after_close = 0
    for op in ops:
        if op.settled and state is not None and op.op_id in state.operations:
            sr.replayed += 1  # already imported from a file that never changes
            continue
        ctx = Context(
            store, FixedClock(op.at or EPOCH), agent_id=op.agent, session_id=plan.session_slug
        )
        try:
            result = op.call(ctx, op.op_id)
        except Conflict as err:
            if err.code == "goal_terminal":
                refused_after_close += 1
                continue
            if err.code == "operation_id_reused":
                message = (
                    f"{op.label} changed in the source since it was imported; "
                    "the imported version is kept"
                )
                s.problems.append(Problem(s.rel, message, "warning", s.session_id))
                continue
            s.problems.append(Problem(s.rel, f"{op.label}: {err.message}", "error", s.session_id))
            continue
        except LoopxError as err:
            s.problems.append(Problem(s.rel, f"{op.label}: {err.message}", "error", s.session_id))
            continue
        if result.status == "applied":
            sr.applied += 1
        else:
            sr.replayed += 1
    if refused_after_close:
        s.problems.append(
            Problem(
                s.rel,
                f"the goal is closed; {refused_after_close} newer items from the session "
                "were not imported",
                "warning",
                s.session_id,
            )
        )
    final = load_state(store, goal_id).state
    if final is not None:
        sr.goal_status = final.status
        sr.runs = len(final.runs)
        sr.attention = attention(final, plan.last or EPOCH)["state"]
    sr.stop_state = stop_state(s).state
