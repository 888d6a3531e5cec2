"""Write a planned session into the ledger, op by op, through the engine.

Each op runs with its own pinned clock and actor. An op already in the ledger replays (the
engine compares its request); an op from a file loopy-loop never rewrites is skipped once
imported, unless `replay_settled`. A refusal leaves out that op (and the rest of its group) and
becomes a `Problem`; the goal being closed is counted, not repeated per op.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field
from typing import Any

from loopx.engine.clock import FixedClock
from loopx.engine.core import Context
from loopx.importers.loopy_model import Problem
from loopx.importers.loopy_ops import EPOCH, Op
from loopx.model.errors import LoopxError


@dataclass
class Applied:
    applied: int = 0
    replayed: int = 0
    problems: list[Problem] = field(default_factory=list)


def apply_ops(
    store: Any,
    ops: list[Op],
    *,
    actor_session: str,
    recorded: Container[str],
    where: str,
    session_id: str,
    replay_settled: bool = False,
) -> Applied:
    """Run `ops` in order, each as its agent in `actor_session`; `recorded` holds the op ids
    already in the ledger. Problems name `where` (the session folder) and `session_id`."""
    out = Applied()

    def problem(message: str, severity: str) -> None:
        out.problems.append(Problem(where, message, severity, session_id))

    refused: set[str] = set()
    after_close = 0
    for op in ops:
        if op.group is not None and op.group in refused:
            continue  # its group was refused (and reported) already
        if op.settled and not replay_settled and op.op_id in recorded:
            out.replayed += 1  # already imported from a file that never changes
            continue
        clock = FixedClock(op.at or EPOCH)
        ctx = Context(store, clock, agent_id=op.agent, session_id=actor_session)
        try:
            result = op.call(ctx, op.op_id)
        except LoopxError as err:
            if err.code == op.exists_ok:
                out.replayed += 1
            elif err.code == "goal_terminal":
                after_close += 1
            elif err.code == "operation_id_reused":
                problem(
                    f"{op.label} changed in the source since it was imported; "
                    "the imported version is kept",
                    "warning",
                )
            else:
                problem(f"{op.label} was not imported: {err.message}", "error")
                if op.group is not None:
                    refused.add(op.group)
            continue
        if result.status == "applied":
            out.applied += 1
        else:
            out.replayed += 1
    if after_close:
        problem(
            f"the goal is closed; {after_close} newer items from the session were not imported",
            "warning",
        )
    return out
