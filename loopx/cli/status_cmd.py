"""The click declarations of `loopx status` and `loopx next` (what they do: `loopx.cli.status`)."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import common, count
from loopx.cli.status import show_next, show_status


@click.command("status")
@click.option("--goal-id", default=None, help="One goal (default: every goal).")
@common()
def status_cmd(goal_id: str | None, root: Path | None, fmt: str) -> None:
    """Per goal: attention state, progress, frontier, pending gates, leases, quota, health."""
    show_status(goal_id, root, fmt)


@click.command("next")
@click.option("--goal-id", required=True)
@click.option("--agent-id", default=None, help="Show what this agent may take.")
@click.option("--explain", is_flag=True, help="Say why each other open todo is not ready.")
@click.option("--limit", type=count(1), default=20, show_default=True)
@common()
def next_cmd(
    goal_id: str,
    agent_id: str | None,
    explain: bool,
    limit: int,
    root: Path | None,
    fmt: str,
) -> None:
    """The frontier: open todos whose dependencies are done, not held by a pending gate, not
    claimed by someone else under a live lease. Highest priority first."""
    show_next(goal_id, agent_id, explain, limit, root, fmt)
