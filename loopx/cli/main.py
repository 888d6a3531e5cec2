"""The `loopx` entry point: a lazily loaded command group and the error boundary.

Subcommand modules are imported only when invoked, so `loopx --help` stays fast. Every
`LoopxError` becomes one line on stderr (or a JSON envelope with `--format json`) and its
documented exit code; anything unexpected is exit 1 without a traceback unless `--debug`.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import re
import sys
from typing import Any

import click

COMMANDS: dict[str, tuple[str, str, str]] = {
    "init": ("loopx.cli.setup", "init_cmd", "Create .loopx/ in a project folder."),
    "allow": ("loopx.cli.allow", "allow", "Allow a boundary finding in an id (an entry)."),
    "demo": ("loopx.cli.setup", "demo_cmd", "Create a realistic demo project."),
    "goal": ("loopx.cli.goal", "goal", "Create, show, list and close goals."),
    "agent": ("loopx.cli.goal", "agent", "Register agents on a goal."),
    "quota": ("loopx.cli.goal", "quota", "Set a goal's quota."),
    "note": ("loopx.cli.goal", "note", "Record lessons, decisions and notes."),
    "todo": ("loopx.cli.todo", "todo", "Add, claim, complete and inspect todos."),
    "gate": ("loopx.cli.gate", "gate", "Open and resolve human decision gates."),
    "monitor": (
        "loopx.cli.monitor",
        "monitor",
        "Watch CI, a pull request or a URL, with a backoff.",
    ),
    "wake": ("loopx.cli.monitor", "wake_cmd", "What is due now, and the next wake."),
    "turn": ("loopx.cli.turn", "turn", "Journal a turn's phases; resume an interrupted one."),
    "evidence": ("loopx.cli.evidence", "evidence", "Record and list evidence."),
    "run": ("loopx.cli.evidence", "run", "Record and list agent runs."),
    "status": ("loopx.cli.status", "status_cmd", "Attention, frontier, gates and leases."),
    "next": ("loopx.cli.status", "next_cmd", "The ready queue, and why the rest waits."),
    "log": ("loopx.cli.ledger", "log_cmd", "List a goal's events."),
    "verify": ("loopx.cli.ledger", "verify_cmd", "Walk each ledger's hash chain."),
    "build": ("loopx.cli.build", "build_cmd", "Build every projection into a folder."),
    "scan": ("loopx.cli.scan", "scan_cmd", "Scan files for anything that must stay private."),
    "redact": (
        "loopx.cli.redact",
        "redact",
        "Redact a field in the ledger (a correction).",
    ),
    "diff": ("loopx.cli.build", "diff_cmd", "Explain what changed between two builds."),
    "publish": ("loopx.cli.build", "publish_cmd", "Ship the public partition only."),
    "serve": ("loopx.cli.build", "serve_cmd", "Preview the build on 127.0.0.1, live."),
    "workbench": ("loopx.cli.projection", "workbench_cmd", "Write or check a workbench."),
    "review": ("loopx.cli.projection", "review_cmd", "A review packet for a decision."),
    "graph": ("loopx.cli.projection", "graph_cmd", "A goal's task graph."),
    "import": ("loopx.cli.importer", "import_group", "Import foreign state (loopy-loop sessions)."),
    "handoff": ("loopx.cli.handoff", "handoff", "Hand a todo to the next agent, with a digest."),
    "store": ("loopx.cli.store", "store", "Move a project between the file and PostgreSQL stores."),
    "prime": ("loopx.cli.prime", "prime_cmd", "A briefing an agent reads at session start."),
    "agents-md": ("loopx.cli.prime", "agents_md_cmd", "The loopx block for AGENTS.md/CLAUDE.md."),
    "mcp": ("loopx.cli.mcp", "mcp_cmd", "Serve the loopx tools over MCP (stdio)."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        spec = COMMANDS.get(name)
        if spec is None:
            return None
        from loopx.cli.ergonomics import adapt

        module = importlib.import_module(spec[0])
        cmd: click.Command = getattr(module, spec[1])
        return adapt(cmd)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="loopx", prog_name="loopx")
def cli() -> None:
    """loopx: canonical, verifiable state for long-running coding-agent work.

    The ledger under .loopx/ is the only authority; status pages, workbenches and digests
    are projections of it. Exit codes: 0 ok, 1 internal error, 2 invalid input, 3 not found,
    4 conflict, 5 ledger damage, 6 check failed, 7 public boundary violation, 8 store
    unavailable.
    """


def _wants(argv: list[str], flag: str, value: str | None = None) -> bool:
    for i, arg in enumerate(argv):
        if value is None and arg == flag:
            return True
        if value is not None and (
            arg == f"{flag}={value}" or (arg == flag and argv[i + 1 : i + 2] == [value])
        ):
            return True
    return False


def report(err: Any, as_json: bool) -> None:
    """Print one error: a line on stderr, or the JSON envelope on stdout."""
    if as_json:
        import orjson

        try:
            envelope = orjson.dumps({"error": err.to_dict()})
        except TypeError:  # a detail JSON cannot hold (an integer past 64 bits): drop them
            envelope = orjson.dumps({"error": {**err.to_dict(), "details": {}}})
        sys.stdout.buffer.write(envelope + b"\n")
        sys.stdout.flush()
    else:
        from loopx.cli.ergonomics import paint
        from loopx.cli.terminal import field

        label = paint(f"loopx: error [{err.code}]", sys.stderr, fg="red", bold=True)
        from loopx.model.errors import NotFound

        # Ids a not-found error carries are the unknown ones typed in: input, not shown.
        details = _id_details(err.details, names=not isinstance(err, NotFound))
        click.echo(f"{label}: {field(err.message)}{details}", err=True)


_ID_VALUE = re.compile(r"[a-z0-9][a-z0-9._:-]{0,63}")


def _id_details(details: dict[str, Any], *, names: bool = True) -> str:
    """The error's details that are numbers or (with `names`) ids and lists of ids, as
    ` (key: value; …)`: what a person needs to act on the error. Free text, which may hold
    input, is never shown; ids left out are pointed to in the JSON envelope."""
    shown, withheld = [], False
    for key in sorted(details):
        value = details[key]
        items = value if isinstance(value, list) else [value]
        if not items or len(items) > 20:
            continue
        numbers = all(isinstance(v, int) and not isinstance(v, bool) for v in items)
        ids = all(isinstance(v, str) and _ID_VALUE.fullmatch(v) for v in items)
        if numbers or (ids and names):
            shown.append(f"{key}: {', '.join(map(str, items))}")
        elif ids and isinstance(value, list):  # a single id is the one just typed
            withheld = True
    if withheld:
        shown.append("ids: see --format json")
    return f" ({'; '.join(shown)})" if shown else ""


# Commands that leave nothing pending when they return: every store is closed, every write
# fsynced and closed, no worker, thread or temporary folder outlives them. Their process ends
# without tearing the interpreter down (freeing every object of a folded goal and every
# module: ~8% of a `loopx status`). Builds, serve, mcp, publish, imports and store moves end
# the ordinary way.
QUICK_EXIT = frozenset(
    {"status", "next", "log", "todo", "gate", "evidence", "run", "note", "goal", "agent"}
    | {"quota", "monitor", "wake", "turn", "review", "workbench", "graph", "handoff", "prime"}
)


def run() -> None:
    """The `loopx` console script and `python -m loopx`: `main`, then, for a command of
    QUICK_EXIT, flush the output and end the process at once with `main`'s exit code.
    Under a tracer or profiler (coverage, pyinstrument) the interpreter exits as usual."""
    args = sys.argv[1:]
    if args[:1] and args[0] in QUICK_EXIT and sys.gettrace() is None and sys.getprofile() is None:
        code = _exit_code(args)
        for stream in (sys.stdout, sys.stderr):
            # A reader that went away (a closed pipe) can be told nothing more.
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
    main(args)


def _exit_code(args: list[str]) -> int:
    """What `main(args)` exits with, as the interpreter would report it."""
    try:
        main(args)
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = _wants(args, "--format", "json") or _wants(args, "--json")
    debug = _wants(args, "--debug")
    # A CLI call is short-lived and its loads allocate hundreds of thousands of objects and
    # no cycles: the cyclic collector would only cost time (up to a third of a `status` on a
    # large goal). Long-running commands keep it.
    collecting = gc.isenabled()
    if args[:1] not in (["serve"], ["mcp"]) and "--watch" not in args:
        gc.disable()
    try:
        _run(args, as_json, debug)
    finally:
        from loopx.cli.common import close_stores

        close_stores()
        if collecting:
            gc.enable()


def _run(args: list[str], as_json: bool, debug: bool) -> None:
    from loopx.model.errors import InvalidInput, LoopxError

    try:
        _check_utf8(args)
        cli.main(args=args, prog_name="loopx", standalone_mode=False)
    except LoopxError as err:
        if debug:
            raise
        report(err, as_json)
        sys.exit(err.exit_code)
    except click.exceptions.Abort:
        click.echo("loopx: aborted", err=True)
        sys.exit(130)
    except _NO_ARGS as err:  # `loopx` or `loopx todo` alone: a request for help
        if err.ctx is not None:
            click.echo(err.ctx.get_help())
        sys.exit(0)
    except click.ClickException as err:
        if debug:
            raise
        usage = InvalidInput(_click_message(err), code="usage_error")
        report(usage, as_json)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as err:  # the boundary: never a traceback unless asked
        if debug:
            raise
        internal = LoopxError(
            f"internal error ({type(err).__name__}); rerun with --debug for details",
            code="internal_error",
        )
        report(internal, as_json)
        sys.exit(1)


def _check_utf8(args: list[str]) -> None:
    """Refuse arguments and LOOPX_* variables that are not UTF-8 (Python hands such bytes
    over as lone surrogates, which no ledger line or JSON output can hold)."""
    from loopx.model.errors import InvalidInput

    for index, arg in enumerate(args, start=1):
        if not _is_utf8(arg):
            raise InvalidInput(
                f"argument {index} is not valid UTF-8 text", code="invalid_utf8", argument=index
            )
    for name in sorted(os.environ):
        if name.startswith("LOOPX_") and not _is_utf8(os.environ[name]):
            raise InvalidInput(
                f"environment variable {name} is not valid UTF-8 text",
                code="invalid_utf8",
                variable=name,
            )


def _is_utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_OPTION_NAME = re.compile(r"--?[a-z][a-z-]{0,24}")
# click >= 8.2 raises this for a group called without a command (8.1 prints help itself).
_NO_ARGS: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


def _click_message(err: click.ClickException) -> str:
    """Click's message without echoing the offending value (it may be a secret)."""
    if isinstance(err, click.BadParameter | click.MissingParameter) and err.param is not None:
        name = err.param.opts[0] if getattr(err.param, "opts", None) else err.param.name
        if isinstance(err, click.MissingParameter):
            return f"missing {name}"
        choices = getattr(err.param.type, "choices", None)
        if choices:
            return f"invalid value for {name}: choose from {', '.join(map(str, choices))}"
        return f"invalid value for {name} (expected {err.param.type.name})"
    ctx = getattr(err, "ctx", None)
    where = f"{ctx.command_path} --help" if ctx is not None else "--help"
    if isinstance(err, click.NoSuchOption):
        # Name the option only when it looks like one (a pasted token is not echoed); the
        # suggestions are the command's own option names.
        hint = _did_you_mean(err.possibilities or [])
        if _OPTION_NAME.fullmatch(err.option_name or ""):
            return f"no such option: {err.option_name}{hint} (see {where})"
        return f"no such option{hint} (see {where})"
    if isinstance(err, click.UsageError):
        message = err.format_message()
        if message.startswith("No such command"):
            return f"no such command{_command_hint(err)} (see {where})"
        if message.startswith("Got unexpected extra argument"):
            return f"unexpected extra argument (see {where})"
        return message.split("\n")[0]
    return err.format_message()


def _did_you_mean(names: list[str]) -> str:
    return f"; did you mean {' or '.join(names[:3])}?" if names else ""


def _command_hint(err: click.UsageError) -> str:
    """`; did you mean status?` for a mistyped command: the closest of the group's own
    command names (the typed name itself is not repeated)."""
    import difflib

    typed = getattr(err, "command_name", None)
    ctx = err.ctx
    if not isinstance(typed, str) or ctx is None or not isinstance(ctx.command, click.Group):
        return ""
    names = ctx.command.list_commands(ctx)
    return _did_you_mean(difflib.get_close_matches(typed, names, n=3, cutoff=0.6))
