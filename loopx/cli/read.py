"""The one declaration of a read of one goal.

    @read(gate, "list")
    @click.option("--status", "statuses", multiple=True, type=click.Choice([…]))
    def list_gates(goal_id: str, statuses: tuple[str, ...], root: Path | None, fmt: str) -> None:
        \"\"\"List a goal's gates, oldest first.\"\"\"

`read` adds what every such read shares: `--goal-id` (required) before the command's own
options, `--root` and `--format` after them, in the order `--help` shows them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from loopx.cli.common import common


def read(
    group: click.Group, name: str, *, formats: tuple[str, ...] = ("text", "json")
) -> Callable[[Callable[..., None]], click.Command]:
    """Declare the read `name` of `group` on the goal `--goal-id` names."""

    def decorate(fn: Callable[..., None]) -> click.Command:
        # Click lists a function's options in the reverse of the order they were attached.
        own: list[click.Parameter] = getattr(fn, "__click_params__", [])
        marked: Any = fn
        marked.__click_params__ = []
        common(formats)(fn)
        marked.__click_params__.extend(own)
        return group.command(name)(click.option("--goal-id", required=True)(fn))

    return decorate
