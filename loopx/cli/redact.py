"""`loopx redact …`: governed corrections of text already in the ledger."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import emit_rows, open_store
from loopx.cli.read import read
from loopx.cli.write import write
from loopx.engine import redactions
from loopx.model.events import REDACTABLE_FIELDS

_FIELDS = sorted({f for fields in REDACTABLE_FIELDS.values() for f in fields})


@click.group()
def redact() -> None:
    """Redact a text field already in the ledger: every projection shows [redacted] from then on.

    The ledger stays append-only: the correction is an event (who, why, which field of which
    entity), accepted on closed goals too, so a false positive or a leaked secret never blocks
    a build for good. `loopx build` and `loopx scan` print the command for each finding.
    """


@write(redact, "field", redactions.redact_field, "redaction")
@click.option(
    "--entity", required=True, type=click.Choice(sorted(REDACTABLE_FIELDS)), help="What holds it."
)
@click.option("--entity-id", default=None, help="Its id (a goal's defaults to --goal-id).")
@click.option("--field", required=True, type=click.Choice(_FIELDS))
@click.option("--reason", required=True, help="Why (kept in the team ledger; no secret here).")
@click.option("--redaction-id", default=None)
def field_cmd() -> None:
    """Redact one field of one entity (allowed on a closed goal)."""


@read(redact, "list")
def list_cmd(goal_id: str, root: Path | None, fmt: str) -> None:
    """The corrections recorded on a goal, oldest first."""
    from loopx.engine.core import require_goal

    state = require_goal(open_store(root), goal_id)
    items = sorted(state.redactions.values(), key=lambda r: r["seq"])

    emit_rows(
        fmt,
        {"goal_id": goal_id, "redactions": items},
        items,
        lambda r: (
            f"{r['redaction_id']}: {r['entity']} {r['entity_id']} {r['field']} "
            f"by {r['by']} at {r['at']}: {r['reason']}"
        ),
        "no redactions",
    )
