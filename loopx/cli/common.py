"""What every command shares: --root/--format/--debug, the actor flags, output, text lookup.

Output (`loopx.cli.output`) and the stores (`loopx.cli.stores`) are click-free modules of
their own, named here too, so the every-turn calls (`loopx.cli.quick`) run without click."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from loopx.cli.output import echo as echo
from loopx.cli.output import emit as emit
from loopx.cli.output import emit_rows as emit_rows
from loopx.cli.quick import MAX_INT
from loopx.cli.stores import close_stores as close_stores
from loopx.cli.stores import context as context
from loopx.cli.stores import open_store as open_store
from loopx.cli.stores import text_resolver as text_resolver
from loopx.model.ids import VISIBILITIES

F = TypeVar("F", bound=Callable[..., Any])


def count(minimum: int = 0) -> click.IntRange:
    """An integer option from `minimum` to MAX_INT (a larger one is a usage error, exit 2)."""
    return click.IntRange(minimum, MAX_INT)


VISIBILITY_CHOICE = click.Choice(VISIBILITIES)  # every --visibility option


def visibility_option(default: str) -> Callable[[F], F]:
    """Add --visibility: who may see what a write records (`default` when not given)."""
    return click.option("--visibility", type=VISIBILITY_CHOICE, default=default, show_default=True)


def path_option(*decls: str, help: str, folder: bool = False, **attrs: Any) -> Callable[[F], F]:
    """Add an optional path option: a file (a folder with `folder`), given as a `Path`."""
    kind = click.Path(file_okay=not folder, dir_okay=folder, path_type=Path)
    return click.option(*decls, type=kind, default=None, help=help, **attrs)


def root_option(show_envvar: bool = False) -> Callable[[F], F]:
    """Add --root: the project folder (LOOPX_ROOT), found from the current folder when not given."""
    return path_option(
        "--root",
        folder=True,
        envvar="LOOPX_ROOT",
        show_envvar=show_envvar,
        help="Project folder holding .loopx/ (default: found from here).",
    )


debug_option = click.option(  # read by `loopx.cli.main` from the arguments, before click runs
    "--debug",
    is_flag=True,
    hidden=True,
    expose_value=False,
    help="Show tracebacks for unexpected errors.",
)


def common(formats: tuple[str, ...] = ("text", "json")) -> Callable[[F], F]:
    """Add --root, --format and --debug to a command."""

    def decorate(fn: F) -> F:
        fn = debug_option(fn)
        fn = click.option(
            "--format",
            "fmt",
            type=click.Choice(formats),
            default=formats[0],
            show_default=True,
            help="Output format.",
        )(fn)
        return root_option()(fn)

    return decorate


def audience_option(
    *choices: str, default: str = "team", help: str | None = None
) -> Callable[[F], F]:
    """Add --audience: whose facts a command shows, one of `choices`."""
    return click.option(
        "--audience",
        type=click.Choice(list(choices)),
        default=default,
        show_default=True,
        help=help,
    )


def lease_option(help: str | None = None) -> Callable[[F], F]:
    """Add --lease-seconds: a claim's lease, within the range every lease takes."""
    from loopx.engine.lookup import LEASE_RANGE

    return click.option(
        "--lease-seconds", type=click.IntRange(*LEASE_RANGE), default=None, help=help
    )


def max_chars_option(help: str) -> Callable[[F], F]:
    """Add --max-chars: the size budget an output is fitted into."""
    return click.option("--max-chars", type=count(1), default=None, help=help)


ACTOR = (  # option, environment variable, default, help
    ("--session-id", "LOOPX_SESSION_ID", "cli", "The acting session."),
    ("--agent-id", "LOOPX_AGENT_ID", "user", "The acting agent (or person)."),
)


def actor(fn: F) -> F:
    """Add --agent-id/--session-id (from LOOPX_AGENT_ID/LOOPX_SESSION_ID) to a write command."""
    for name, variable, default, what in ACTOR:
        fn = click.option(name, envvar=variable, default=default, show_default=True, help=what)(fn)
    return fn


def operation(fn: F) -> F:
    """Add --operation-id to a write command."""
    return click.option(
        "--operation-id",
        default=None,
        help="Idempotency key: a retry with the same id and payload replays the original receipt.",
    )(fn)


def expected_revision(fn: F) -> F:
    """Add --expected-revision to a guarded write command."""
    return click.option(
        "--expected-revision",
        type=count(),
        default=None,
        help="Refuse unless the entity is at this revision (revision_conflict).",
    )(fn)


def split_ids(values: tuple[str, ...]) -> list[str]:
    """Accept repeated flags and comma-separated lists alike."""
    out: list[str] = []
    for value in values:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


def ids(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> list[str]:
    """An option callback: a repeatable id option's values, each may be comma-separated."""
    return split_ids(value)


def checkout_root_option(ctx: Any, param: Any, value: Path | None) -> Path | None:
    """A `--workspace` option's value as the top of the git work tree it lies in, so a
    command run from a subfolder observes the same checkout (paths in a handoff note are
    relative to it); a folder outside git is taken as it is."""
    if value is None:
        return None
    from loopx.engine.git import checkout_root

    return checkout_root(value)


def workspace_option(what: str) -> Callable[[F], F]:
    """Add --workspace: the checkout `what` says (default: the git work tree of the current
    folder, found from a subfolder too)."""
    return click.option(
        "--workspace",
        type=click.Path(file_okay=False, path_type=Path),
        default=Path("."),
        callback=checkout_root_option,
        help=f"{what} (default: the git work tree of the current folder).",
    )
