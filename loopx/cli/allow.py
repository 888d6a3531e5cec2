"""`loopx allow …`: reviewed allow entries for boundary findings that cannot be corrected."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import count, emit_rows, open_store
from loopx.cli.read import read
from loopx.cli.write import write
from loopx.engine import allowances, commands
from loopx.engine.allowances import ENTITIES
from loopx.engine.core import Context, Result


@click.group()
def allow() -> None:
    """Allow a boundary finding inside an id, which no correction can reach.

    The entry is an event in the ledger (who, why, which finding: the entity whose id holds it
    and the kind), accepted on closed goals too. `build`, `publish` and `scan` stop reporting
    findings of that kind inside that id; any other finding still blocks. `loopx build` and
    `loopx scan` print the command for each finding in an id (text fields: `loopx redact`).
    """


def _allow(ctx: Context, cmd: commands.AllowFinding) -> Result:
    """The boundary scan confirms the finding first (see `confirm`), then the entry is written."""
    from loopx.build.allowances import confirm

    confirm(ctx.store, cmd)
    return allowances.allow_finding(ctx, cmd)


@write(allow, "finding", _allow, "allowance")
@click.option("--entity", required=True, type=click.Choice(ENTITIES), help="Whose id holds it.")
@click.option("--entity-id", default=None, help="Its id (a goal's defaults to --goal-id) …")
@click.option("--seq", type=count(1), default=None, help="… or the seq of the event that made it.")
@click.option("--kind", required=True, help="The finding's kind, as the scan reported it.")
@click.option("--reason", required=True, help="Why it may be published (kept in the ledger).")
@click.option("--allowance-id", default=None)
def finding_cmd() -> None:
    """Allow one finding: the entity whose id holds it, and its kind (closed goals too)."""


@read(allow, "list")
def list_cmd(goal_id: str, root: Path | None, fmt: str) -> None:
    """The allow entries recorded on a goal, oldest first."""
    from loopx.engine.core import require_goal
    from loopx.state.allowances import entries

    items = entries(require_goal(open_store(root), goal_id))
    emit_rows(
        fmt,
        {"goal_id": goal_id, "allowances": items},
        items,
        lambda a: (
            f"{a['allowance_id']}: {a['kind']} in {a['entity']} {a['entity_id']} "
            f"by {a['by']} at {a['at']}: {a['reason']}"
        ),
        "no allow entries",
    )
