"""What an option the project configures means when it is left out: the environment variable,
else the `[defaults]` of the project configuration, else the command's own default. The flag
always wins. `ergonomics.adapt` applies this to every command, by the option's name:

- `--goal-id`: `LOOPX_GOAL_ID`, else `defaults.goal`, else the project's only (active) goal
  (`loopx.engine.defaults.default_goal`);
- `--audience` (a list, for build and serve): `LOOPX_AUDIENCE`, else `defaults.audiences`;
- `--audience` (one, for a single projection): the widest of those two lists that the command
  takes (public < team < private); neither names one it takes: the command's own default;
- `--out` (build): `LOOPX_OUT` (relative to the current folder, like the flag), else
  `defaults.out` (relative to the project root).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

AUDIENCE_ENV = "LOOPX_AUDIENCE"
OUT_ENV = "LOOPX_OUT"
ORDER = ("public", "team", "private")
HELP = {
    "audience": f"Left out: {AUDIENCE_ENV}, else defaults.audiences of the project "
    "configuration (the widest of them this command takes), else the default.",
    "audiences": f"Left out: {AUDIENCE_ENV}, else defaults.audiences of the project "
    "configuration, else the default.",
    "out": f"Left out: {OUT_ENV}, else defaults.out of the project configuration (relative "
    "to the project root), else the default.",
}


@dataclass(frozen=True)
class Configured:
    """An option whose default the project configures: the parameter's name, its kind
    (`audience`, `audiences` or `out`) and, for one audience, the choices it takes."""

    name: str
    kind: str
    choices: tuple[str, ...] = ()


def configured(name: str | None, choices: tuple[str, ...]) -> Configured | None:
    """The option `name` (a click parameter's name) as a configured one, or None."""
    if name == "audience" and choices:
        return Configured(name, "audience", choices)
    if name in ("audiences", "out"):
        return Configured(name, name)
    return None


def fill(
    kwargs: dict[str, Any], options: list[Configured], left_out: Callable[[str], bool]
) -> None:
    """Set each option of `options` that `left_out` says was not given from the environment,
    else from the project configuration of `kwargs["root"]` (read once, only when needed)."""
    config: list[Any] = []
    for opt in options:
        if not left_out(opt.name):
            continue
        variable = OUT_ENV if opt.kind == "out" else AUDIENCE_ENV
        given = os.environ.get(variable) or None
        if given is not None:
            value = _value(opt, given, variable)
        else:
            if not config:
                config.append(_project(kwargs.get("root")))
            value = _configured_value(opt, *config[0])
        if value is not None:
            kwargs[opt.name] = value


def _value(opt: Configured, given: str, variable: str) -> Any:
    """The option's value from the environment variable's text."""
    if opt.kind == "out":
        return Path(given)
    from loopx.build.pipeline import parse_audiences
    from loopx.model.errors import InvalidInput

    try:
        audiences = parse_audiences(given)
    except InvalidInput as err:
        raise InvalidInput(f"{variable}: {err.message}", code=err.code) from None
    return _audience(opt, audiences)


def _configured_value(opt: Configured, root: Path | None, config: Any) -> Any:
    if opt.kind == "out":
        return root / config.out if root is not None and config.out is not None else None
    return _audience(opt, config.audiences) if config.audiences else None


def _audience(opt: Configured, audiences: tuple[str, ...]) -> str | None:
    if opt.kind == "audiences":
        return ",".join(audiences)
    taken = [a for a in ORDER if a in audiences and a in opt.choices]
    return taken[-1] if taken else None


def _project(root: Path | None) -> tuple[Path | None, Any]:
    """The project folder and its configuration; outside any project, none."""
    from loopx.model.config import ProjectConfig
    from loopx.model.errors import NotFound
    from loopx.store.config import load_config
    from loopx.store.root import find_root

    try:
        found = find_root(root)
    except NotFound:  # e.g. `loopx diff` of two build folders outside any project
        return None, ProjectConfig()
    return found, load_config(found)
