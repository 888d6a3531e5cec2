"""`loopx gate …`: human decision gates."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import (
    VISIBILITY_CHOICE,
    actor,
    common,
    context,
    emit,
    emit_result,
    guarded,
    open_store,
    split_ids,
    text_resolver,
)


@click.group()
def gate() -> None:
    """Open and resolve human decision gates."""


@gate.command("open")
@click.option("--goal-id", required=True)
@click.option("--question", required=True, help="The decision to make.")
@click.option("--authority", required=True, help="Who decides (an agent or person id).")
@click.option("--blocks", multiple=True, help="Todo ids it holds back (default: the whole goal).")
@click.option("--blocks-goal", is_flag=True, help="Hold the whole goal.")
@click.option("--gate-id", default=None)
@click.option("--ask-again-at", default=None, help="When to ask again if still undecided.")
@click.option(
    "--visibility",
    type=VISIBILITY_CHOICE,
    default="team",
    show_default=True,
)
@guarded
@actor
@common()
def open_cmd(
    goal_id: str,
    question: str,
    authority: str,
    blocks: tuple[str, ...],
    blocks_goal: bool,
    gate_id: str | None,
    ask_again_at: str | None,
    visibility: str,
    operation_id: str | None,
    expected_revision: int | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Open a gate: what it blocks stays out of the frontier until it is approved or rejected."""
    from loopx.engine.gates import open_gate

    ctx = context(root, agent_id, session_id)
    result = open_gate(
        ctx,
        goal_id,
        question=question,
        authority=authority,
        blocks=split_ids(blocks),
        blocks_goal=blocks_goal,
        gate_id=gate_id,
        visibility=visibility,
        ask_again_at=ask_again_at,
        operation_id=operation_id,
        expected_revision=expected_revision,
    )
    emit_result(fmt, result, "gate")


@gate.command("resolve")
@click.option("--goal-id", required=True)
@click.option("--gate-id", required=True)
@click.option("--resolution", type=click.Choice(["approve", "reject", "defer"]), required=True)
@click.option("--by", default=None, help="The authority resolving it (default: --agent-id).")
@click.option("--rationale", default=None, help="Why.")
@click.option("--ask-again-at", default=None, help="With defer: when to ask again.")
@guarded
@actor
@common()
def resolve(
    goal_id: str,
    gate_id: str,
    resolution: str,
    by: str | None,
    rationale: str | None,
    ask_again_at: str | None,
    operation_id: str | None,
    expected_revision: int | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Approve, reject or defer a gate. Only its authority may; twice is gate_resolved."""
    from loopx.engine.gates import resolve_gate

    ctx = context(root, agent_id, session_id)
    result = resolve_gate(
        ctx,
        goal_id,
        gate_id,
        resolution=resolution,
        by=by,
        rationale=rationale,
        ask_again_at=ask_again_at,
        operation_id=operation_id,
        expected_revision=expected_revision,
    )
    emit_result(fmt, result, f"gate {resolution}")


@gate.command("list")
@click.option("--goal-id", required=True)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(["pending", "approved", "rejected", "deferred"]),
)
@common()
def list_gates(
    goal_id: str, statuses: tuple[str, ...], root: Path | None, fmt: str, debug: bool
) -> None:
    """List a goal's gates, oldest first."""
    from loopx.engine.core import require_goal
    from loopx.state.views import gate_view

    store = open_store(root)
    state = require_goal(store, goal_id)
    resolve_text = text_resolver(store)
    rows = [
        gate_view(g, resolve_text)
        for g in sorted(state.gates.values(), key=lambda g: g.created_seq)
        if not statuses or g.status in statuses
    ]

    def text() -> str:
        return (
            "\n".join(
                f"{g['gate_id']:<20} {g['status']:<9} {g['authority']:<12} {g['question']}  "
                f"blocks {'the goal' if g['blocks_goal'] else ','.join(g['blocks'])}"
                for g in rows
            )
            or "no gates"
        )

    emit(fmt, {"goal_id": goal_id, "gates": rows}, text)
