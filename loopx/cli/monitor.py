"""`loopx monitor …` and `loopx wake`: todos that watch the world, and what is due now."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from loopx.cli.common import (
    VISIBILITY_CHOICE,
    common,
    count,
    emit,
    ids,
    open_store,
    text_resolver,
    visibility_option,
)
from loopx.cli.write import write
from loopx.engine import commands, monitors


@click.group()
def monitor() -> None:
    """Watch an external fact (CI, a pull request, a URL) with a next wake and a backoff."""


@write(monitor, "add", monitors.add_monitor, "monitor")
@click.option("--title", required=True)
@click.option("--watch", required=True, help="What it watches: ci:…, pr:…, url:… or free text.")
@click.option("--every", type=count(1), required=True, help="Seconds between observations.")
@click.option(
    "--backoff",
    type=click.Choice(monitors.BACKOFFS),
    default="fixed",
    show_default=True,
    help="After an unchanged observation: wait --every, or double the wait each time.",
)
@click.option("--cap", type=count(1), default=None, help="Longest exponential wait, in seconds.")
@click.option(
    "--first-at", default=None, help="First due (default: now), e.g. 2026-01-31T12:00:00Z."
)
@click.option("--todo-id", default=None, help="Stable id (default: todo-N).")
@click.option("--priority", type=click.IntRange(0, 4), default=2, show_default=True)
@click.option(
    "--depends-on", multiple=True, callback=ids, help="Todo ids (repeatable or comma-separated)."
)
@visibility_option("team")
def add(every: int, backoff: str, cap: int | None, **fields: Any) -> commands.AddMonitor:
    """Add a monitor: a todo of kind monitor, ready for an agent when its next wake comes."""
    return commands.AddMonitor(
        backoff=commands.Backoff(kind=backoff, seconds=every, cap=cap), **fields
    )


@write(monitor, "observe", monitors.observe, lambda c: f"{c.result} observation of monitor")
@click.option("--todo-id", required=True)
@click.option("--result", type=click.Choice(["unchanged", "changed", "failed"]), required=True)
@click.option("--summary", required=True, help="What was seen (kept as evidence).")
@click.option("--ref", "refs", multiple=True, help="A URI of what was seen (repeatable).")
@click.option("--revision", default=None, help="The git commit it was observed at.")
@click.option(
    "--then",
    type=click.Choice(["complete", "block", "successor"]),
    default=None,
    help="When changed: complete the monitor, block it, or complete it with a successor todo.",
)
@click.option("--successor-title", default=None, help="With --then successor.")
@click.option("--successor-id", default=None, help="With --then successor (default: todo-N).")
@click.option("--reason", default=None, help="With --then block.")
@click.option("--evidence-id", default=None)
@click.option("--evidence-visibility", type=VISIBILITY_CHOICE, default="private", show_default=True)
def observe_cmd() -> None:
    """Record an observation as evidence: unchanged or failed moves the next wake by the
    backoff; changed makes the --then transition. --expected-revision guards the monitor."""


def wake_report(store: Any, goal_id: str | None, now: str, text: Any) -> dict[str, Any]:
    """Every monitor due at `now` (of every goal, or `goal_id`), every undecided gate whose
    ask-again time has come, and the next wake of either; goals that cannot be read are
    listed, not fatal (what `loopx wake --format json` prints, and the MCP tool `wake`)."""
    from loopx.engine.goals_all import load_all
    from loopx.model.errors import LoopxError, NotFound
    from loopx.model.ids import check_id
    from loopx.state.views import wake_view

    if goal_id is not None:
        check_id(goal_id, "goal_id")
    goals, unreadable = [], []
    for gid, loaded in load_all(store, [goal_id] if goal_id else None):
        if isinstance(loaded, LoopxError):
            if goal_id is not None:
                raise loaded
            unreadable.append(gid)  # one damaged goal must not silence every other's wake
            continue
        if loaded.state is None:
            if goal_id is not None:
                raise NotFound("goal not found", code="goal_not_found", goal_id=gid)
            continue
        if not loaded.state.is_terminal:
            goals.append(wake_view(loaded.state, now, text))
    later = [{"goal_id": g["goal_id"], **g["next_wake"]} for g in goals if g["next_wake"]]
    return {
        "now": now,
        "due": [{"goal_id": g["goal_id"], **item} for g in goals for item in g["due"]],
        "gates_due": [{"goal_id": g["goal_id"], **item} for g in goals for item in g["gates_due"]],
        "next_wake": min(later, key=lambda w: (w["at"], w["goal_id"]), default=None),
        "unreadable": sorted(unreadable),
    }


@click.command("wake")
@click.option("--goal-id", default=None, help="One goal (default: every goal).")
@common()
def wake_cmd(goal_id: str | None, root: Path | None, fmt: str) -> None:
    """What is due now and when the next thing falls due (for a scheduler or cron job)."""
    from loopx.engine.clock import from_env

    store = open_store(root)
    data = wake_report(store, goal_id, from_env().now(), text_resolver(store))
    due, asks, upcoming, unreadable = (
        data["due"],
        data["gates_due"],
        data["next_wake"],
        data["unreadable"],
    )

    def text() -> str:
        lines = [f"due now ({len(due)}):"]
        lines += [
            f"  {d['goal_id']}/{d['todo_id']}  watching {d['watch']} (due {d['next_at']})"
            for d in due
        ] or ["  nothing"]
        lines += [
            f"  ask again: {a['goal_id']}/{a['gate_id']} ({a['authority']}): {a['question']}"
            for a in asks
        ]
        what = upcoming and (upcoming.get("todo_id") or f"gate {upcoming.get('gate_id')}")
        lines.append(
            f"next wake: {upcoming['at']} ({upcoming['goal_id']}/{what})"
            if upcoming
            else "next wake: none (nothing is waiting)"
        )
        if unreadable:
            lines.append("unreadable goals (see loopx status): " + ", ".join(unreadable))
        return "\n".join(lines)

    emit(fmt, data, text)
