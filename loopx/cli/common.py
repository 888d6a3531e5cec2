"""What every command shares: --root/--format/--debug, the actor flags, output, text lookup."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import orjson

from loopx.cli import terminal
from loopx.model.ids import VISIBILITIES

F = TypeVar("F", bound=Callable[..., Any])
# The largest integer any option takes: every JSON reader holds it exactly (2**53 - 1), and a
# larger one could not be written to the ledger (orjson stops at 64 bits) anyway.
MAX_INT = 2**53 - 1


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


# The stores this command opened, by project folder and store, closed by `close_stores` when
# it ends: one per project however often a command asks (the default goal, then the write),
# and one for the life of a long-running caller (the MCP server), which still sees every
# other process's writes (a store reads the ledger on every call).
_OPENED: dict[tuple[Path, str], Any] = {}


def open_store(root: Path | None) -> Any:
    """The project's store (files, or PostgreSQL when configured), closed when the command ends."""
    from loopx.store.root import find_root
    from loopx.store.select import configured
    from loopx.store.select import open_store as select

    found = find_root(root)
    key = (found, configured(found))
    store = _OPENED.get(key)
    if store is None:
        store = _OPENED[key] = select(found, key[1])
    return store


def close_stores() -> None:
    if not _OPENED:  # `--help`, a usage error: nothing opened, no store module to import
        return
    from loopx.store.select import close

    while _OPENED:
        close(_OPENED.popitem()[1])


def context(root: Path | None, agent_id: str, session_id: str) -> Any:
    from loopx.engine.clock import from_env
    from loopx.engine.core import Context

    return Context(open_store(root), from_env(), agent_id=agent_id, session_id=session_id)


def text_resolver(store: Any) -> Callable[[Any], str]:
    """Display text for stored values as the operator reads them: the private audience's
    lens, private text read from this host's blob store."""
    from loopx.privacy.audience import Lens

    return Lens("private", store.get_blob).text


def emit(fmt: str, data: Any, text: Callable[[], str] | str | None = None) -> None:
    """Print `data` as canonical JSON, or the text rendering.

    Text mode never prints `data` as JSON, so its strings are first made terminal-safe in
    place (`terminal.field`): every text renderer reads its values from `data`, so no value
    can drive the terminal or break its record onto a second line. The rendered text is
    printed as it is, so the colour a renderer adds on a terminal (`paint`) survives;
    documents and other text go through `echo`.
    """
    if fmt == "json":
        sys.stdout.buffer.write(
            orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"
        )
        sys.stdout.flush()
        return
    terminal.fields_in_place(data)
    out = text() if callable(text) else text
    if out is None:
        out = orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).decode()
    click.echo(out)


def emit_rows(fmt: str, data: Any, rows: list[Any], line: Callable[[Any], str], empty: str) -> None:
    """Print `data` as JSON, or `rows` (part of `data`) one `line` each, `empty` for none."""
    emit(fmt, data, lambda: "\n".join(line(row) for row in rows) or empty)


def echo(text: str, *, nl: bool = True, err: bool = False) -> None:
    """Print text (a document: its own newlines kept) with nothing a terminal would act on.
    Every text-mode print of loopx goes through here."""
    click.echo(terminal.document(text), nl=nl, err=err)


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


def print_findings(findings: list[dict[str, Any]]) -> None:
    """One line per finding (never the matched text), then the commands that clear it."""
    for f in findings:  # a path or id may come from a checkout: one escaped line each
        where = terminal.field(f["path"])
        echo(f"{where}:{f['line']}:{f['column']}: {f['kind']} ({f['encoding']})")
        for command in f.get("clear", []):
            echo(f"  clear with: {terminal.field(command)}")
        if "clear" in f and not f["clear"]:
            echo(
                "  no ledger field or id holds it (generated or configured text): "
                "change the project's configuration, or report it"
            )
