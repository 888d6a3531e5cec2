"""What makes the CLI forgiving, applied once to every command as it is loaded:

- `--goal-id` may be left out: `LOOPX_GOAL_ID`, else the configured default goal, else the
  project's only active goal (not for `goal create` / `goal close`, which must name theirs);
- `--audience` and `--out` left out: the environment, else the project configuration
  (`loopx.cli.defaults`, one rule for every command);
- every option read from an environment variable names it in `--help`;
- `--json` is an alias of `--format json` wherever JSON is a format;
- shell completion (click's) completes goal, todo and gate ids from the ledger;
- `paint()`: colour on a terminal only, never in a pipe or under `NO_COLOR`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import click
from click.core import ParameterSource

from loopx.cli.defaults import HELP, Configured, configured, fill
from loopx.cli.terminal import paint as paint

GOAL_ENV = "LOOPX_GOAL_ID"
MUST_NAME_GOAL = {"goal create", "goal close"}
_ADAPTED = "_loopx_adapted"


def adapt(cmd: click.Command, path: str = "") -> click.Command:
    """Apply the conventions above to `cmd` and its subcommands (once)."""
    if getattr(cmd, _ADAPTED, False):
        return cmd
    setattr(cmd, _ADAPTED, True)
    here = f"{path} {cmd.name}".strip() if path else str(cmd.name)
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            later = getattr(sub, "when_declared", None)  # a write declared on first use
            if later is not None:
                later(functools.partial(adapt, path=here))
            else:
                adapt(sub, here)
        return cmd
    defaults_goal = False
    json_alias = False
    options: list[Configured] = []
    for param in cmd.params:
        if not isinstance(param, click.Option):
            continue
        option = configured(param.name, tuple(getattr(param.type, "choices", ())))
        if option is not None:
            options.append(option)
            param.help = f"{param.help} {HELP[option.kind]}" if param.help else HELP[option.kind]
        if param.name == "goal_id":
            param._custom_shell_complete = complete_goal
            if param.required and here not in MUST_NAME_GOAL:
                param.required = False
                param.envvar = GOAL_ENV
                param.help = (param.help + " " if param.help else "") + (
                    "(default: the project's only active goal)"
                )
                defaults_goal = True
        elif param.name == "todo_id":
            param._custom_shell_complete = complete_todo
        elif param.name == "gate_id":
            param._custom_shell_complete = complete_gate
        elif param.name == "fmt" and "json" in getattr(param.type, "choices", ()):
            json_alias = not any(p.name == "as_json" for p in cmd.params)
        if param.envvar:
            param.show_envvar = True
    if json_alias:
        cmd.params.append(
            click.Option(["--json", "as_json"], is_flag=True, help="Same as --format json.")
        )
    if (defaults_goal or json_alias or options) and cmd.callback is not None:
        cmd.callback = _wrapped(cmd.callback, defaults_goal, json_alias, options)
    return cmd


def _left_out(name: str) -> bool:
    source = click.get_current_context().get_parameter_source(name)
    return source in (None, ParameterSource.DEFAULT)


def _wrapped(
    inner: Callable[..., Any], goal: bool, json_alias: bool, options: list[Configured]
) -> Callable[..., Any]:
    @functools.wraps(inner)
    def callback(*args: Any, **kwargs: Any) -> Any:
        if json_alias and kwargs.pop("as_json", False):
            kwargs["fmt"] = "json"
        if options:
            fill(kwargs, options, _left_out)
        if goal and kwargs.get("goal_id") is None:
            from loopx.cli.common import open_store
            from loopx.engine.defaults import default_goal

            kwargs["goal_id"] = default_goal(open_store(kwargs.get("root")))
        return inner(*args, **kwargs)

    return callback


# -- shell completion: quick reads, and silence on any failure -----------------------------


def _store(ctx: click.Context) -> Any:
    from loopx.cli.common import open_store

    return open_store(ctx.params.get("root"))


def complete_goal(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    try:
        return [g for g in sorted(_store(ctx).goal_ids()) if g.startswith(incomplete)]
    except Exception:  # completion must never print an error into the user's shell
        return []


def _state(ctx: click.Context) -> Any:
    from loopx.engine.core import load_state
    from loopx.engine.defaults import sole_goal

    store = _store(ctx)
    goal_id = ctx.params.get("goal_id") or os.environ.get(GOAL_ENV) or sole_goal(store)
    return None if goal_id is None else load_state(store, goal_id).state


def _complete_in_goal(ctx: click.Context, incomplete: str, entities: str) -> list[str]:
    """The ids of the goal's `entities` (todos, gates) that start with `incomplete`."""
    try:
        state = _state(ctx)
        ids = [] if state is None else sorted(getattr(state, entities))
        return [i for i in ids if i.startswith(incomplete)][:200]
    except Exception:  # completion must never print an error into the user's shell
        return []


def complete_todo(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    return _complete_in_goal(ctx, incomplete, "todos")


def complete_gate(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    return _complete_in_goal(ctx, incomplete, "gates")
