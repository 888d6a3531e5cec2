"""`loopx allow …`: reviewed allow entries for boundary findings that cannot be corrected."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import actor, common, context, count, emit, emit_result, guarded, open_store
from loopx.engine.allowances import ENTITIES


@click.group()
def allow() -> None:
    """Allow a boundary finding inside an id, which no correction can reach.

    The entry is an event in the ledger (who, why, which finding: the entity whose id holds it
    and the kind), accepted on closed goals too. `build`, `publish` and `scan` stop reporting
    findings of that kind inside that id; any other finding still blocks. `loopx build` and
    `loopx scan` print the command for each finding in an id (text fields: `loopx redact`).
    """


@allow.command("finding")
@click.option("--goal-id", required=True)
@click.option("--entity", required=True, type=click.Choice(ENTITIES), help="Whose id holds it.")
@click.option("--entity-id", default=None, help="Its id (a goal's defaults to --goal-id) …")
@click.option("--seq", type=count(1), default=None, help="… or the seq of the event that made it.")
@click.option("--kind", required=True, help="The finding's kind, as the scan reported it.")
@click.option("--reason", required=True, help="Why it may be published (kept in the ledger).")
@click.option("--allowance-id", default=None)
@guarded
@actor
@common()
def finding_cmd(
    goal_id: str,
    entity: str,
    entity_id: str | None,
    seq: int | None,
    kind: str,
    reason: str,
    allowance_id: str | None,
    operation_id: str | None,
    expected_revision: int | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Allow one finding: the entity whose id holds it, and its kind (closed goals too)."""
    from loopx.build.allowances import finder
    from loopx.engine.allowances import allow_finding
    from loopx.store.root import find_root

    ctx = context(root, agent_id, session_id)
    result = allow_finding(
        ctx,
        goal_id,
        entity=entity,
        entity_id=entity_id,
        seq=seq,
        kind=kind,
        reason=reason,
        finds=finder(find_root(root), ctx.store, kind),
        allowance_id=allowance_id,
        operation_id=operation_id,
        expected_revision=expected_revision,
    )
    emit_result(fmt, result, "allowance")


@allow.command("list")
@click.option("--goal-id", required=True)
@common()
def list_cmd(goal_id: str, root: Path | None, fmt: str, debug: bool) -> None:
    """The allow entries recorded on a goal, oldest first."""
    from loopx.engine.core import require_goal
    from loopx.state.allowances import entries

    items = entries(require_goal(open_store(root), goal_id))

    def text() -> str:
        lines = [
            f"{a['allowance_id']}: {a['kind']} in {a['entity']} {a['entity_id']} "
            f"by {a['by']} at {a['at']}: {a['reason']}"
            for a in items
        ]
        return "\n".join(lines) or "no allow entries"

    emit(fmt, {"goal_id": goal_id, "allowances": items}, text)
