"""Import loopy-loop sessions into the ledger: read → plan → write, session by session.

Read (`loopy_reader`, no writes) → give each session a goal id (`goal_targets`) → plan every
write of a session in memory (`loopy_plan`, from the source alone) → write them one by one
(`loopy_apply`, through the engine's governed write paths, so preconditions hold). A session
that cannot be read completely (no goal, unreadable or newer `state.json`, `control.json`,
`session.json` or `session_outcome.json`), or whose goal id is taken by something else, is
reported and nothing of it is written; a problem in one item (an iteration's `result.json`, a
goal check, an events line) leaves out that item only.

Idempotent and incremental by construction: every operation id is derived from the source's
own identity (`loopy:<session key>:<entity>:<verb>`, the key being the session's uuid, else a
hash of its id) and every request only from source facts, so importing again replays every
operation (ledger bytes unchanged, no problem reported) and importing a grown session appends
only what is new. Each write's clock is pinned to the source's own timestamp for that fact;
the wall clock is never read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopx.engine.core import load_state
from loopx.importers.loopy_apply import apply_ops
from loopx.importers.loopy_model import Problem, Session, Source
from loopx.importers.loopy_ops import EPOCH
from loopx.importers.loopy_plan import Imported, SessionPlan, session_key
from loopx.importers.loopy_reader import read_source
from loopx.importers.loopy_report import ImportReport, SessionReport
from loopx.importers.loopy_stop import stop_state
from loopx.importers.sanitize import slug
from loopx.model.errors import InvalidInput, LoopxError
from loopx.model.ids import check_id
from loopx.state.frontier import attention

__all__ = ["ImportReport", "SessionReport", "goal_targets", "import_path", "import_source"]


def goal_targets(sessions: list[Session], goal_id: str | None = None) -> dict[str, str]:
    """Session id → goal id: derived from the session id, or `goal_id` for the one session
    at the top of the source (its children keep theirs)."""
    targets = {s.session_id: slug(s.session_id) for s in sessions}
    if goal_id is None:
        return targets
    check_id(goal_id, "goal_id")
    ids = {s.session_id for s in sessions}
    dirs = {s.directory for s in sessions}
    roots = [
        s
        for s in sessions
        if s.parent_session_id not in ids and not any(p in dirs for p in s.directory.parents)
    ]
    if len(roots) != 1:
        raise InvalidInput(
            f"--goal-id names one goal, but the path holds {len(roots)} sessions",
            code="goal_id_needs_one_session",
        )
    targets[roots[0].session_id] = goal_id
    return targets


def import_source(
    store: Any, source: Source, goal_id: str | None = None, *, replay_settled: bool = False
) -> ImportReport:
    """Import every session of `source` into `store`; see the module docstring.

    `replay_settled` replays even the operations from files loopy-loop never rewrites (by
    default skipped once imported), so any request that changed would be reported."""
    report = ImportReport()
    targets = goal_targets(source.sessions, goal_id)
    sessions = {s.session_id: s for s in source.sessions}
    claimed: dict[str, str] = {}
    for s in source.sessions:
        gid = targets[s.session_id]
        sr = SessionReport(s.session_id, gid, imported=False)
        report.sessions.append(sr)
        sr.events_read, sr.events_duplicates = s.events.read, s.events.duplicates
        sr.pending_iterations = list(s.pending)
        if claimed.get(gid, s.session_id) != s.session_id:
            message = f"session maps to goal id {gid} as another session does; not imported"
            s.problems.append(Problem(s.rel, message, "error", s.session_id, "goal_id_clash"))
        elif s.fatal:
            message = "the session was not imported (see the problems above)"
            s.problems.append(Problem(s.rel, message, "error", s.session_id, "session_unreadable"))
        else:
            claimed[gid] = s.session_id
            _import_session(store, s, gid, targets, sessions, sr, replay_settled)
        report.problems.extend(s.problems)
    return report


def import_path(
    store: Any, path: Path | str, goal_id: str | None = None, *, replay_settled: bool = False
) -> ImportReport:
    """Read PATH (a project root, a `.loopy_loop` folder or a session) and import it."""
    return import_source(store, read_source(Path(path)), goal_id, replay_settled=replay_settled)


def _import_session(
    store: Any,
    s: Session,
    goal_id: str,
    targets: dict[str, str],
    sessions: dict[str, Session],
    sr: SessionReport,
    replay_settled: bool,
) -> None:
    state = load_state(store, goal_id).state
    if state is not None and f"loopy:{session_key(s)}:goal:create" not in state.operations:
        message = (
            f"goal {goal_id} already exists and was not imported from this session; "
            "import it under another id with --goal-id"
        )
        s.problems.append(Problem(s.rel, message, "error", s.session_id, "goal_exists"))
        return
    parent = s.parent_session_id
    parent_goal = targets.get(parent) if parent else None
    plan = SessionPlan(s, goal_id, targets, sessions, parent_goal, Imported.of(state))
    try:
        ops = plan.build()
    except LoopxError as err:  # a value the engine would refuse: write nothing at all
        s.problems.append(Problem(s.rel, f"not imported: {err.message}", "error", s.session_id))
        return
    s.problems.extend(plan.problems)
    sr.imported = True
    done = apply_ops(
        store,
        ops,
        actor_session=plan.session_slug,
        recorded=state.operations if state is not None else (),
        where=s.rel,
        session_id=s.session_id,
        replay_settled=replay_settled,
    )
    sr.applied, sr.replayed = done.applied, done.replayed
    s.problems.extend(done.problems)
    final = load_state(store, goal_id).state
    if final is not None:
        sr.goal_status = final.status
        sr.runs = len(final.runs)
        sr.attention = attention(final, plan.last or EPOCH)["state"]
    sr.stop_state = stop_state(s).state
