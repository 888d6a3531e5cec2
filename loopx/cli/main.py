"""The `loopx` entry point and the error boundary.

The every-turn calls in the exact forms `loopx.cli.quick` parses run without click; every
other call goes to the click group (`loopx.cli.group`), whose subcommand modules are
imported only when invoked, so `loopx --help` stays fast. Every `LoopxError` becomes one
line on stderr (or a JSON envelope with `--format json`) and its documented exit code;
anything unexpected is exit 1 without a traceback unless `--debug`.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import sys
from typing import Any

from loopx.cli.output import echo_line


def __getattr__(name: str) -> Any:
    """`cli` and `COMMANDS`, the click group's, as this module named them before."""
    if name in ("cli", "COMMANDS"):
        from loopx.cli import group

        return getattr(group, name)
    raise AttributeError(name)


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
        from loopx.cli.terminal import field, paint

        label = paint(f"loopx: error [{err.code}]", sys.stderr, fg="red", bold=True)
        from loopx.model.errors import NotFound

        # Ids a not-found error carries are the unknown ones typed in: input, not shown.
        details = _id_details(err.details, names=not isinstance(err, NotFound))
        echo_line(f"{label}: {field(err.message)}{details}", err=True)


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
# module: ~8% of a `loopx status`, ~3% of a rebuild that holds ~9,000 files), after the
# `atexit` handlers: a build writes and closes every file through `loopx.store.fsio`
# (fsynced where it syncs), joins its flush thread and ends its worker pool before it
# returns, but the store it reads through (`loopx.store.select`, not `loopx.cli.stores`) is
# released by its finalizer (a PostgreSQL pool, a broker socket), which runs at exit. Serve,
# mcp, publish, imports and store moves end the ordinary way.
QUICK_EXIT = frozenset(
    {"status", "next", "log", "todo", "gate", "evidence", "run", "note", "goal", "agent"}
    | {"quota", "monitor", "wake", "turn", "review", "workbench", "graph", "handoff", "prime"}
    | {"build"}
)


def run() -> None:
    """The `loopx` console script and `python -m loopx`: `main`, then, for a command of
    QUICK_EXIT, end the process at once with `main`'s exit code (`_end`). Under a tracer or
    profiler (coverage, pyinstrument) the interpreter exits as usual."""
    args = sys.argv[1:]
    if args[:1] and args[0] in QUICK_EXIT and sys.gettrace() is None and sys.getprofile() is None:
        _end(_exit_code(args))
    main(args)


def _end(code: int) -> None:
    """End the process with `code` as an ordinary exit does, but for freeing its objects and
    modules: the `atexit` handlers run, then the output is flushed. A thread that is not a
    daemon still running (which an ordinary exit waits for) makes it an ordinary exit."""
    import threading

    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon for t in threading.enumerate()):
        sys.exit(code)
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        # A reader that went away (a closed pipe) can be told nothing more.
        with contextlib.suppress(OSError, ValueError):
            if stream is not None:
                stream.flush()
    os._exit(code)


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
        from loopx.cli.stores import close_stores

        close_stores()
        if collecting:
            gc.enable()


def _run(args: list[str], as_json: bool, debug: bool) -> None:
    from loopx.cli.quick import parse
    from loopx.model.errors import LoopxError

    try:
        _check_utf8(args)
        call = parse(args)
        if call is not None:
            _run_quick(call)
        else:
            from loopx.cli.group import cli

            cli.main(args=args, prog_name="loopx", standalone_mode=False)
    except LoopxError as err:
        if debug:
            raise
        report(err, as_json)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as err:  # the boundary: never a traceback unless asked
        if "click" in sys.modules:  # click's own (only when click ran)
            from loopx.cli.group import click_error

            click_error(err, as_json, debug)
        if debug:
            raise
        internal = LoopxError(
            f"internal error ({type(err).__name__}); rerun with --debug for details",
            code="internal_error",
        )
        report(internal, as_json)
        sys.exit(1)


def _run_quick(call: Any) -> None:
    """Run a call `loopx.cli.quick` parsed, ended as click ends a command it runs: an
    interrupt is a blank line and `loopx: aborted` (exit 130), a reader that went away
    (a closed pipe) exit 1."""
    import errno

    try:
        call()
    except (EOFError, KeyboardInterrupt):
        echo_line("", err=True)
        echo_line("loopx: aborted", err=True)
        sys.exit(130)
    except OSError as err:
        if err.errno != errno.EPIPE:
            raise
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
