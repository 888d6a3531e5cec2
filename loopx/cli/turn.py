"""`loopx turn …`: the turn journal (begin, phase, end, list, resume)."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import count, emit, open_store
from loopx.cli.read import read
from loopx.cli.write import write
from loopx.engine import turns
from loopx.engine.evidence import OUTCOMES


@click.group()
def turn() -> None:
    """Journal a bounded turn's phases so an interrupted one resumes where it stopped."""


@write(turn, "begin", turns.begin_turn, "turn")
@click.option("--todo-id", required=True, help="A todo the acting agent holds.")
@click.option("--turn-id", default=None, help="Stable id (default: turn-N).")
def begin() -> None:
    """Open a journal entry (phase claim) for a turn on a claimed todo."""


@write(turn, "phase", turns.record_phase, lambda c: f"phase {c.phase} of turn")
@click.option("--turn-id", required=True)
@click.option("--phase", type=click.Choice(["execute", "validate", "write_back"]), required=True)
@click.option("--ref", default=None, help="What the phase touched (a branch, a log, a URL).")
def phase() -> None:
    """Record the phase the turn reached (never backwards). It authorises nothing."""


@write(turn, "end", turns.end_turn, "settled turn")
@click.option("--turn-id", required=True)
@click.option("--outcome", type=click.Choice(OUTCOMES), required=True)
@click.option("--summary", default=None)
@click.option("--quota-spent", type=count(), default=1, show_default=True)
@click.option("--evidence-id", "evidence_ids", multiple=True)
@click.option("--run-id", default=None)
def end() -> None:
    """Settle the turn into a run record and its quota spend, exactly once (turn_settled)."""


@read(turn, "list")
@click.option("--open", "only_open", is_flag=True, help="Only turns not yet settled.")
def list_turns(goal_id: str, only_open: bool, root: Path | None, fmt: str) -> None:
    """A goal's turns with their last phase and its age, oldest first."""
    from loopx.cli.common import text_resolver
    from loopx.engine.clock import from_env
    from loopx.engine.core import require_goal
    from loopx.state.views import turn_view

    store = open_store(root)
    state = require_goal(store, goal_id)
    now, resolve = from_env().now(), text_resolver(store)
    rows = [
        turn_view(t, now, resolve)
        for t in sorted(state.turns.values(), key=lambda t: (t["begun_at"], t["turn_id"]))
        if not only_open or t["status"] == "open"
    ]

    def text() -> str:
        return "\n".join(
            f"{r['turn_id']:<12} {r['status']:<8} {r['todo_id']:<16} {r['agent_id']:<12} "
            f"at {r['phase']} for {r['age_seconds']}s"
            for r in rows
        ) or ("no open turns" if only_open else "no turns")

    emit(fmt, {"goal_id": goal_id, "turns": rows}, text)


@read(turn, "resume")
@click.option("--turn-id", required=True)
def resume(goal_id: str, turn_id: str, root: Path | None, fmt: str) -> None:
    """Where an interrupted turn stopped and what to re-inspect before continuing it."""
    from loopx.cli.common import text_resolver
    from loopx.engine.clock import from_env
    from loopx.engine.core import require_goal
    from loopx.model.errors import NotFound
    from loopx.state.views import turn_view

    store = open_store(root)
    state = require_goal(store, goal_id)
    found = state.turns.get(turn_id)
    if found is None:
        raise NotFound("no such turn", code="turn_not_found", turn_id=turn_id)
    data = turn_view(found, from_env().now(), text_resolver(store))

    def text() -> str:
        lines = [
            f"turn {data['turn_id']} on {data['todo_id']} by {data['agent_id']}: "
            f"{data['status']}, last phase {data['phase']} ({data['age_seconds']}s ago)"
        ]
        lines += [
            f"  {p['phase']:<10} {p['at']}" + (f"  {p['ref']}" if p.get("ref") else "")
            for p in data["phases"]
        ]
        if data.get("resume"):
            lines.append(f"re-inspect: {data['resume']}")
        return "\n".join(lines)

    emit(fmt, data, text)
