"""The one declaration of a write command.

    @write(todo, "claim", todos.claim_todo, "claim on")
    @click.option("--todo-id", required=True)
    @lease_option()
    def claim() -> None:
        \"\"\"Claim a ready todo …\"\"\"

`write` adds what every write shares — `--goal-id`, `--operation-id`, `--expected-revision`
(when the command is `Guarded`), `--agent-id`/`--session-id`, `--root`, `--format` — and the
call: the command is built from the parsed options (each option is named after the command's
field it sets, so an option the engine does not know is an error, not a value silently
dropped), the engine path `todos.claim_todo` runs it as the acting agent, and the receipt is
printed (`what` names its subject: "claim on todo-3 recorded at …").

The decorated function declares the command's options and its help (the docstring). Most
take no arguments: the options are the command's fields as they are, and the command is the
type the engine path takes. One that converts an option (reads a file, splits a list) takes
the options as keywords and returns the command.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast, get_type_hints

import click

from loopx.cli.common import actor, common, context, emit, expected_revision, operation
from loopx.engine.commands import Command, Guarded
from loopx.engine.core import Context, Result

C = TypeVar("C", bound=Command)
Report = Callable[[C, Result, Context], tuple[dict[str, Any], Callable[[], str]]]


def write(
    group: click.Group,
    name: str,
    run: Callable[[Context, C], Result],
    what: str | Callable[[C], str] = "",
    *,
    report: Report[C] | None = None,
) -> Callable[[Callable[..., C | None]], click.Command]:
    """Declare the write `name` of `group`: build the command (the decorated function, or
    the command type of `run` from the options when it takes none), run, print the receipt
    as `what` names its subject, or as `report` says (data and text)."""

    def decorate(build: Callable[..., C | None]) -> click.Command:
        kind = command_type(run)
        converts = bool(inspect.signature(build).parameters)

        def callback(
            root: Path | None, fmt: str, agent_id: str, session_id: str, **fields: Any
        ) -> None:
            command = cast(C, build(**fields) if converts else kind(**fields))
            ctx = context(root, agent_id, session_id)
            result = run(ctx, command)
            if report is not None:
                emit(fmt, *report(command, result, ctx))
            else:
                emit_result(fmt, result, what if isinstance(what, str) else what(command))

        callback.__doc__ = build.__doc__
        callback.__name__ = build.__name__
        _declare(callback, build, guarded=issubclass(kind, Guarded))
        return group.command(name)(callback)

    return decorate


def receipt_text(result: Result, what: str) -> str:
    """`todo todo-3 recorded at revision 7 (goal g, operation op-1)`, and any tail repair."""
    r = result.receipt
    verb = "recorded" if result.status == "applied" else "already recorded (replayed)"
    named = r.get("subject") and not what.endswith(str(r["subject"]))
    subject = f" {r['subject']}" if named else ""
    lines = [
        f"{what}{subject} {verb} at revision {r['revision']} "
        f"(goal {r['goal_id']}, operation {r['operation_id']})"
    ]
    if result.repair:
        lines.append(
            f"repaired a damaged ledger tail: {result.repair['length']} bytes at offset "
            f"{result.repair['offset']} moved to {result.repair['quarantine']}"
        )
    return "\n".join(lines)


def emit_result(fmt: str, result: Result, what: str) -> None:
    """Print a write's result: its JSON (status, receipt, repair), or its receipt text."""
    emit(fmt, result.to_dict(), lambda: receipt_text(result, what))


def command_type(run: Callable[..., Result]) -> type[Command]:
    """The command an engine write path takes: its second parameter's type."""
    name = list(inspect.signature(run).parameters)[1]
    found: type[Command] = get_type_hints(run)[name]
    return found


def _declare(callback: Any, build: Callable[..., Any], *, guarded: bool) -> None:
    """Give `callback` the shared options around `build`'s own, in the order `--help` shows
    them: the goal, the command's own options, the operation and guard, the actor, the rest.
    (Click lists a function's options in the reverse of the order they were attached.)"""
    common()(callback)
    actor(callback)
    if guarded:
        expected_revision(callback)
    operation(callback)
    own: list[click.Parameter] = list(getattr(build, "__click_params__", []))
    callback.__click_params__.extend(own)
    if not any(p.name == "goal_id" for p in own):
        click.option("--goal-id", required=True)(callback)
