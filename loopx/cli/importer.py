"""`loopx import loopy-loop PATH`: bring loopy-loop sessions into the ledger."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import orjson

from loopx.cli.common import common, echo, emit, open_store


@click.group("import")
def import_group() -> None:
    """Import foreign state (loopy-loop sessions)."""


def _text(data: dict[str, Any]) -> str:
    """The report's text, from its dict (whose strings `emit` has made terminal-safe)."""
    lines: list[str] = []
    for s in data["sessions"]:
        if not s["imported"]:
            lines.append(f"{s['session_id']}: not imported")
            continue
        pending = s["pending_iterations"]
        running = f", {len(pending)} iterations still running" if pending else ""
        lines.append(
            f"{s['session_id']} -> goal {s['goal_id']} [{s['goal_status']}, attention "
            f"{s['attention']}]: {s['applied']} new, {s['replayed']} already imported; "
            f"{s['runs']} runs{running}"
        )
    if data["problems"]:
        lines.append("problems:")
        lines += [f"  {p['severity']:<7} {p['path']}: {p['message']}" for p in data["problems"]]
    if not data["sessions"] and not data["problems"]:
        lines.append("nothing to import")
    return "\n".join(lines)


@import_group.command("loopy-loop")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--goal-id", default=None, help="Goal id for a single session (default: derived).")
@click.option("--watch", "watching", is_flag=True, help="Keep importing as the session grows.")
@click.option(
    "--debounce",
    type=click.FloatRange(min=0.0),
    default=0.5,
    show_default=True,
    help="With --watch: seconds of quiet before importing again.",
)
@common()
def loopy_loop_cmd(
    path: Path,
    goal_id: str | None,
    watching: bool,
    debounce: float,
    root: Path | None,
    fmt: str,
) -> None:
    """Import loopy-loop sessions from PATH: a project root, a .loopy_loop folder or one
    session folder. Each session becomes a goal; importing again changes nothing, and
    importing a grown session adds only what is new.

    Problems (unreadable or newer files, a missing goal) are listed per file and the rest is
    imported. Exit 0 when everything was imported, 2 when something was left out.
    """
    from loopx.importers.loopy_loop import import_path

    store = open_store(root)
    if watching:
        _watch(store, path, goal_id, debounce, fmt)
        return
    report = import_path(store, path, goal_id)
    data = report.to_dict()
    emit(fmt, data, lambda: _text(data))
    if not report.ok:
        sys.exit(2)


def _watch(store: Any, path: Path, goal_id: str | None, debounce: float, fmt: str) -> None:
    from loopx.importers.loopy_watch import watch

    first = [True]

    def show(report: Any) -> None:
        shown, first[0] = first[0], False  # the first pass always says where things stand
        if fmt == "json":
            sys.stdout.buffer.write(orjson.dumps(report.to_dict(), option=orjson.OPT_SORT_KEYS))
            sys.stdout.buffer.write(b"\n")
            sys.stdout.flush()
        elif shown or report.applied or report.problems:
            emit(fmt, data := report.to_dict(), lambda: _text(data))

    if fmt != "json":
        echo(f"watching {path} (Ctrl-C to stop)")
    try:
        watch(store, path, show, goal_id=goal_id, debounce=debounce)
    except KeyboardInterrupt:
        if fmt != "json":
            echo("stopped watching")
