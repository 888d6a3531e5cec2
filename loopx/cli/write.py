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
from typing import TYPE_CHECKING, Any, TypeVar, cast, get_type_hints

import click

from loopx.cli.common import actor, common, context, emit, expected_revision, operation
from loopx.cli.output import emit_result
from loopx.engine.core import Context, Result

if TYPE_CHECKING:  # imported when a write is declared, not by every call of its group
    from loopx.engine.commands import Command

C = TypeVar("C", bound="Command")
Report = Callable[[C, Result, Context], tuple[dict[str, Any], Callable[[], str]]]


class Declared(click.Command):
    """A write command of a group, declared when it is first used: its options (the shared
    ones `_declare` adds) and its callback are made when click first reads `params` or
    `callback` (to parse, invoke, or show help), so a call of one command of a group does
    not declare all of them (issue 19: `todo claim` declared every todo write, and
    `handoff inspect` imported the write commands). Its name and help are known at once;
    `when_declared` runs a step (the CLI's conventions, `ergonomics.adapt`) once it is."""

    def __init__(self, name: str, help: str | None, declare: Callable[[], click.Command]):
        self._declare: Callable[[], click.Command] | None = None
        self._hooks: list[Callable[[click.Command], None]] = []
        super().__init__(name, help=help)
        self.__doc__ = help  # as click's `command` decorator sets it
        self._declare = declare

    def _ready(self) -> None:
        declare, self._declare = self._declare, None
        if declare is None:
            return
        made = declare()
        self._params, self._callback = made.params, made.callback
        for hook in self._hooks:
            hook(self)

    def when_declared(self, hook: Callable[[click.Command], None]) -> None:
        if self._declare is None:
            hook(self)
        else:
            self._hooks.append(hook)

    @property
    def params(self) -> list[click.Parameter]:
        self._ready()
        return self._params

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        self._ready()
        self._params = value

    @property
    def callback(self) -> Callable[..., Any] | None:
        self._ready()
        return self._callback

    @callback.setter
    def callback(self, value: Callable[..., Any] | None) -> None:
        self._ready()
        self._callback = value


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
        def declare() -> click.Command:
            from loopx.engine.commands import Guarded

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
            return click.command(name)(callback)

        command = Declared(name, build.__doc__, declare)
        group.add_command(command)
        return command

    return decorate


def command_type(run: Callable[..., Result]) -> type[Command]:
    """The command an engine write path takes: its second parameter's type."""
    from loopx.engine import commands

    name = list(inspect.signature(run).parameters)[1]
    # The engine paths name their command type under TYPE_CHECKING too: resolved here.
    found: type[Command] = get_type_hints(run, localns=vars(commands))[name]
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
