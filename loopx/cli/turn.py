"""`loopx turn …`: the turn journal (begin, phase, end, list, resume)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    from loopx.engine.clock import from_env

    rows = turn_rows(open_store(root), goal_id, only_open, from_env().now())

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
    from loopx.engine.clock import from_env

    data = turn_detail(open_store(root), goal_id, turn_id, from_env().now())

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


def turn_rows(store: Any, goal_id: str, only_open: bool, now: str) -> list[dict[str, Any]]:
    """A goal's turns (only the open ones when `only_open`), oldest first, each with its last
    phase and that phase's age at `now` (`turn list`; the MCP tool `turn_list`)."""
    from loopx.cli.common import text_resolver
    from loopx.engine.core import require_goal
    from loopx.state.views import turn_view

    state, resolve = require_goal(store, goal_id), text_resolver(store)
    return [
        turn_view(t, now, resolve)
        for t in sorted(state.turns.values(), key=lambda t: (t["begun_at"], t["turn_id"]))
        if not only_open or t["status"] == "open"
    ]


def turn_detail(store: Any, goal_id: str, turn_id: str, now: str) -> dict[str, Any]:
    """One turn with its phases and, while open, what to re-inspect before continuing it
    (`turn resume`; the MCP tool `turn_resume`)."""
    from loopx.cli.common import text_resolver
    from loopx.engine.core import require_goal
    from loopx.model.errors import NotFound
    from loopx.model.ids import check_id
    from loopx.state.views import turn_view

    state = require_goal(store, goal_id)
    found = state.turns.get(check_id(turn_id, "turn_id"))
    if found is None:
        raise NotFound("no such turn", code="turn_not_found", turn_id=turn_id)
    return turn_view(found, now, text_resolver(store))
