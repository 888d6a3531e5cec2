"""`loopx gate …`: human decision gates."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import (
    emit_rows,
    ids,
    open_store,
    text_resolver,
    visibility_option,
)
from loopx.cli.read import read
from loopx.cli.write import write
from loopx.engine import gates


@click.group()
def gate() -> None:
    """Open and resolve human decision gates."""


@write(gate, "open", gates.open_gate, "gate")
@click.option("--question", required=True, help="The decision to make.")
@click.option("--authority", required=True, help="Who decides (an agent or person id).")
@click.option(
    "--blocks",
    multiple=True,
    callback=ids,
    help="Todo ids it holds back (default: the whole goal).",
)
@click.option("--blocks-goal", is_flag=True, help="Hold the whole goal.")
@click.option("--gate-id", default=None)
@click.option("--ask-again-at", default=None, help="When to ask again if still undecided.")
@visibility_option("team")
def open_cmd() -> None:
    """Open a gate: what it blocks stays out of the frontier until it is approved or rejected."""


@write(gate, "resolve", gates.resolve_gate, lambda c: f"gate {c.resolution}")
@click.option("--gate-id", required=True)
@click.option("--resolution", type=click.Choice(["approve", "reject", "defer"]), required=True)
@click.option("--by", default=None, help="The authority resolving it (default: --agent-id).")
@click.option("--rationale", default=None, help="Why.")
@click.option("--ask-again-at", default=None, help="With defer: when to ask again.")
def resolve() -> None:
    """Approve, reject or defer a gate. Only its authority may; twice is gate_resolved."""


@read(gate, "list")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(["pending", "approved", "rejected", "deferred"]),
)
def list_gates(goal_id: str, statuses: tuple[str, ...], root: Path | None, fmt: str) -> None:
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

    emit_rows(
        fmt,
        {"goal_id": goal_id, "gates": rows},
        rows,
        lambda g: (
            f"{g['gate_id']:<20} {g['status']:<9} {g['authority']:<12} {g['question']}  "
            f"blocks {'the goal' if g['blocks_goal'] else ','.join(g['blocks'])}"
        ),
        "no gates",
    )
