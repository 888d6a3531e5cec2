"""The every-turn calls without click: `status`, `next`, `todo claim/renew/complete`,
`handoff inspect` and `build` in the forms agents type them.

Importing click and declaring a command's options costs a call more than its work (issue 19:
~55 M of `loopx status`'s ~310 M instructions). `parse` reads these commands' arguments with
the same options, defaults, environment variables and conversions as their click
declarations (`loopx.cli.status_cmd`, `loopx.cli.todo`, `loopx.cli.handoff`,
`loopx.cli.build`, adapted by `loopx.cli.ergonomics`) and returns the call, or None for
anything else it is not sure of — `--help`, an unknown or malformed option, a value click
would refuse or read differently (one that starts with `-`), a missing required option, a
stream click would wrap — which then goes to click, so every error and help text is click's
own. A test holds each table below to its click declaration, and runs a table of argument
lists both ways (same output, exit code). Both ways call the same plain function
(`loopx.cli.status`, `loopx.cli.build_run`, …) with the values read.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The largest integer any option takes: every JSON reader holds it exactly (2**53 - 1), and a
# larger one could not be written to the ledger (orjson stops at 64 bits) anyway.
MAX_INT = 2**53 - 1
LEASE_RANGE = (1, 30 * 86400)  # a claim's lease: one second to thirty days (engine.lookup's)

# How an option's value is read: text as given, a flag, one of `extra` (choices), an integer
# within `extra` (low, high), a folder (click.Path(file_okay=False)), the workspace (a folder,
# then its git work tree's top), or repeatable ids (each may be comma-separated).
TEXT, FLAG, CHOICE, INT, IDS = "text", "flag", "choice", "int", "ids"
FOLDER, WORKSPACE = "folder", "workspace"

# An option: its flag, the parameter's name, how it is read, its default, its environment
# variable, whether it is required, and the choices or range.
Option = tuple[str, str, str, Any, str | None, bool, Any]
_UNSET: Any = object()
# Set (to anything), click answers a shell-completion request instead of running the command.
COMPLETE_VAR = "_LOOPX_COMPLETE"
# The options whose default the project configures (`loopx.cli.defaults.configured`): filled
# in, in the order a table lists them (its click declaration's), when left out.
CONFIGURED = ("audience", "audiences", "out")


def _shared(formats: tuple[str, ...]) -> list[Option]:
    """What `common()` adds (and `ergonomics.adapt` for `--json`)."""
    return [
        ("--format", "fmt", CHOICE, formats[0], None, False, formats),
        ("--root", "root", FOLDER, None, "LOOPX_ROOT", False, None),
        ("--debug", "", FLAG, False, None, False, None),  # read by cli.main, not passed on
        ("--json", "as_json", FLAG, False, None, False, None),
    ]


GOAL: Option = ("--goal-id", "goal_id", TEXT, None, "LOOPX_GOAL_ID", False, None)
ACTOR: list[Option] = [
    ("--agent-id", "agent_id", TEXT, "user", "LOOPX_AGENT_ID", False, None),
    ("--session-id", "session_id", TEXT, "cli", "LOOPX_SESSION_ID", False, None),
]


def _write(own: list[Option]) -> list[Option]:
    """What `cli.write.write` adds to a guarded write's own options."""
    shared: list[Option] = [
        GOAL,
        ("--operation-id", "operation_id", TEXT, None, None, False, None),
        ("--expected-revision", "expected_revision", INT, None, None, False, (0, MAX_INT)),
    ]
    return shared + own + ACTOR + _shared(("text", "json"))


TODO: Option = ("--todo-id", "todo_id", TEXT, None, None, True, None)
LEASE: Option = ("--lease-seconds", "lease_seconds", INT, None, None, False, LEASE_RANGE)

# Each command: its path, its options, what runs it, and what its receipt names (writes).
COMMANDS: dict[tuple[str, ...], tuple[list[Option], str, str]] = {
    ("status",): (
        [("--goal-id", "goal_id", TEXT, None, None, False, None), *_shared(("text", "json"))],
        "status",
        "",
    ),
    ("next",): (
        [
            GOAL,
            ("--agent-id", "agent_id", TEXT, None, None, False, None),
            ("--explain", "explain", FLAG, False, None, False, None),
            ("--limit", "limit", INT, 20, None, False, (1, MAX_INT)),
            *_shared(("text", "json")),
        ],
        "next",
        "",
    ),
    ("todo", "claim"): (_write([TODO, LEASE]), "ClaimTodo claim_todo", "claim on"),
    ("todo", "renew"): (_write([TODO, LEASE]), "RenewTodo renew_todo", "lease on"),
    ("todo", "complete"): (
        _write(
            [
                TODO,
                ("--summary", "summary", TEXT, None, None, False, None),
                ("--evidence-id", "evidence_ids", IDS, (), None, False, None),
                ("--successor", "successor", TEXT, None, None, False, None),
            ]
        ),
        "CompleteTodo complete_todo",
        "completion of",
    ),
    ("handoff", "inspect"): (
        [
            GOAL,
            TODO,
            ("--handoff-id", "handoff_id", TEXT, None, None, False, None),
            ("--workspace", "workspace", WORKSPACE, Path("."), None, False, None),
            ("--audience", "audience", CHOICE, "private", None, False, ("team", "private")),
            ("--max-chars", "max_chars", INT, None, None, False, (1, MAX_INT)),
            *ACTOR,
            *_shared(("digest", "text", "markdown", "json")),
        ],
        "inspect",
        "",
    ),
    ("build",): (
        [
            ("--out", "out", FOLDER, None, None, False, None),
            ("--audience", "audiences", TEXT, "public,team", None, False, None),
            ("--head", "head", TEXT, None, None, False, None),
            ("--check", "check_only", FLAG, False, None, False, None),
            ("--validate", "validate", FLAG, False, None, False, None),
            ("--force", "force", FLAG, False, None, False, None),
            ("--overwrite", "overwrite", FLAG, False, None, False, None),
            *_shared(("text", "json")),
        ],
        "build",
        "",
    ),
}


def parse(args: list[str]) -> Callable[[], None] | None:
    """The call `args` asks for, when it is one of COMMANDS in a form read here; else None
    (click reads it)."""
    found = COMMANDS.get(tuple(args[:1])) or COMMANDS.get(tuple(args[:2]))
    if found is None or os.environ.get(COMPLETE_VAR) or not _plain_streams():
        return None
    options, runner, what = found
    path = 1 if tuple(args[:1]) in COMMANDS else 2
    given = _given(args[path:], {opt[0]: opt for opt in options})
    if given is None:
        return None
    values: dict[str, Any] = {}
    named: set[str] = set()  # given on the command line or by its environment variable
    for _flag, name, kind, default, envvar, required, extra in options:
        raw = given.get(name, _UNSET)
        if raw is _UNSET and envvar is not None:
            raw = os.environ.get(envvar) or _UNSET  # an empty variable is not set (click)
        if raw is _UNSET:
            if required:
                return None
            raw = default
        else:
            named.add(name)
        value = _convert(kind, raw, extra)
        if value is _UNSET:
            return None
        if name:
            values[name] = value
    configured = [(opt[1], opt[6] if opt[2] == CHOICE else ()) for opt in options]
    configured = [option for option in configured if option[0] in CONFIGURED]
    return lambda: _call(runner, what, values, named, configured)


def _plain_streams() -> bool:
    """Whether stdout and stderr are UTF-8 text streams, which click prints to as they are."""
    import codecs

    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None)
        if not isinstance(encoding, str):
            return False
        try:
            if codecs.lookup(encoding).name != "utf-8":
                return False
        except LookupError:
            return False
    return True


def _given(args: list[str], options: dict[str, Option]) -> dict[str, Any] | None:
    """Each option's value as typed (the last one given; a list for repeatable ids), or None
    for an argument not read here."""
    given: dict[str, Any] = {}
    i = 0
    while i < len(args):
        flag, eq, value = args[i].partition("=")
        opt = options.get(flag) if flag.startswith("--") else None
        if opt is None:
            return None
        i += 1
        if opt[2] == FLAG:
            if eq:
                return None  # click: the option does not take a value
            given[opt[1]] = True
            continue
        if not eq:
            if i >= len(args) or args[i].startswith("-"):
                return None
            value = args[i]
            i += 1
        if opt[2] == IDS:
            given.setdefault(opt[1], []).append(value)
        else:
            given[opt[1]] = value
    return given


def _convert(kind: str, raw: Any, extra: Any) -> Any:
    """The value click converts `raw` to, or _UNSET where click could refuse it."""
    if kind in (TEXT, FLAG):
        return raw
    if kind == CHOICE:
        return raw if raw in extra else _UNSET
    if kind == INT:
        if raw is None or isinstance(raw, int):
            return raw
        if not (raw.isascii() and raw.isdigit()):
            return _UNSET
        try:
            number = int(raw)
        except ValueError:  # more digits than Python converts: click's usage error
            return _UNSET
        return number if extra[0] <= number <= extra[1] else _UNSET
    if kind == IDS:
        return [v.strip() for value in raw for v in value.split(",") if v.strip()]
    if raw is None:
        return None
    folder = _folder(raw)  # FOLDER, WORKSPACE
    if folder is None or kind == FOLDER:
        return _UNSET if folder is None else folder
    from loopx.engine.git import checkout_root

    return checkout_root(folder)


def _folder(raw: str | Path) -> Path | None:
    """`raw` as click.Path(file_okay=False) takes it (a missing path is taken), or None where
    click refuses it (a file, an unreadable folder) or could (text no path can be)."""
    import stat

    try:
        st = os.stat(raw)
    except OSError:
        return Path(raw)
    except ValueError:
        return None
    if stat.S_ISREG(st.st_mode) or not os.access(raw, os.R_OK):
        return None
    return Path(raw)


def _call(
    runner: str,
    what: str,
    values: dict[str, Any],
    named: set[str],
    configured: list[tuple[str, tuple[str, ...]]],
) -> None:
    """Run the command as its click callback would, `ergonomics.adapt`'s steps first: `--json`
    for `--format json`, the configured options (name, choices) left out, the default goal."""
    if values.pop("as_json", False):
        values["fmt"] = "json"
    if configured:
        from loopx.cli import defaults

        options = [defaults.configured(name, choices) for name, choices in configured]
        filled = [option for option in options if option is not None]
        defaults.fill(values, filled, lambda name: name not in named)
    if "goal_id" in values and values["goal_id"] is None and runner != "status":
        from loopx.cli.stores import open_store
        from loopx.engine.defaults import default_goal

        values["goal_id"] = default_goal(open_store(values.get("root")))
    if runner == "status":
        from loopx.cli.status import show_status

        show_status(**values)
    elif runner == "next":
        from loopx.cli.status import show_next

        show_next(**values)
    elif runner == "inspect":
        from loopx.cli.handoff_inspect import show_inspected

        show_inspected(**values, named="agent_id" in named)
    elif runner == "build":
        from loopx.cli.build_run import run_build

        run_build(**values)
    else:
        _write_call(runner, what, values)


def _write_call(runner: str, what: str, values: dict[str, Any]) -> None:
    """As `cli.write.write`'s callback: the command from the options, run as the actor, the
    receipt printed."""
    from loopx.cli.output import emit_result
    from loopx.cli.stores import context
    from loopx.engine import commands, todos

    kind_name, run_name = runner.split()
    root, fmt = values.pop("root"), values.pop("fmt")
    agent_id, session_id = values.pop("agent_id"), values.pop("session_id")
    command = getattr(commands, kind_name)(**values)
    result = getattr(todos, run_name)(context(root, agent_id, session_id), command)
    emit_result(fmt, result, what)
