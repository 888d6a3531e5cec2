"""`loopx redact …`: governed corrections of text already in the ledger."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import actor, common, context, emit, emit_result, guarded, open_store
from loopx.model.events import REDACTABLE_FIELDS

_FIELDS = sorted({f for fields in REDACTABLE_FIELDS.values() for f in fields})


@click.group()
def redact() -> None:
    """Redact a text field already in the ledger: every projection shows [redacted] from then on.

    The ledger stays append-only: the correction is an event (who, why, which field of which
    entity), accepted on closed goals too, so a false positive or a leaked secret never blocks
    a build for good. `loopx build` and `loopx scan` print the command for each finding.
    """


@redact.command("field")
@click.option("--goal-id", required=True)
@click.option(
    "--entity", required=True, type=click.Choice(sorted(REDACTABLE_FIELDS)), help="What holds it."
)
@click.option("--entity-id", default=None, help="Its id (a goal's defaults to --goal-id).")
@click.option("--field", "field_name", required=True, type=click.Choice(_FIELDS))
@click.option("--reason", required=True, help="Why (kept in the team ledger; no secret here).")
@click.option("--redaction-id", default=None)
@guarded
@actor
@common()
def field_cmd(
    goal_id: str,
    entity: str,
    entity_id: str | None,
    field_name: str,
    reason: str,
    redaction_id: str | None,
    operation_id: str | None,
    expected_revision: int | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Redact one field of one entity (allowed on a closed goal)."""
    from loopx.engine.redactions import redact_field

    ctx = context(root, agent_id, session_id)
    result = redact_field(
        ctx,
        goal_id,
        entity=entity,
        entity_id=entity_id,
        field=field_name,
        reason=reason,
        redaction_id=redaction_id,
        operation_id=operation_id,
        expected_revision=expected_revision,
    )
    emit_result(fmt, result, "redaction")


@redact.command("list")
@click.option("--goal-id", required=True)
@common()
def list_cmd(goal_id: str, root: Path | None, fmt: str, debug: bool) -> None:
    """The corrections recorded on a goal, oldest first."""
    from loopx.engine.core import require_goal

    state = require_goal(open_store(root), goal_id)
    items = sorted(state.redactions.values(), key=lambda r: r["seq"])

    def text() -> str:
        return (
            "\n".join(
                f"{r['redaction_id']}: {r['entity']} {r['entity_id']} {r['field']} "
                f"by {r['by']} at {r['at']}: {r['reason']}"
                for r in items
            )
            or "no redactions"
        )

    emit(fmt, {"goal_id": goal_id, "redactions": items}, text)
