"""The every-turn calls parsed without click (`loopx.cli.quick`) do what click's path does.

Each argument list of the table runs twice on two copies of one project, once as `main`
runs it and once with the quick parser switched off (click reads every call): the exit
code, stdout and stderr must be the same bytes, and so must the ledgers after a write. The
option tables are held to the click declarations they stand for.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from loopx.cli import quick
from tests.conftest import GIT_ENV, T0, CliResult, run_cli

NOTE = {"work_summary": "Parser half done", "next_steps": ["Finish it"]}
NOTE["files_touched"] = [{"path": "src/parser.py", "action": "modified"}]  # type: ignore[list-item]


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True, check=True)


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git checkout holding a project: goal demo (todos a, b, c; b after a; a claimed by
    agent-a with a handoff note), goal other, evidence e1 on c."""
    root = tmp_path_factory.mktemp("quick") / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "parser.py").write_text("def parse(): ...\n")
    _git(root, "init", "-q")
    _git(root, "add", "src")
    _git(root, "commit", "-q", "-m", "first")
    (root / "note.json").write_text(json.dumps(NOTE))
    (root / "a-file").write_text("")
    steps = [
        ["init"],
        ["goal", "create", "--goal-id", "demo", "--title", "Demo", "--objective", "Ship"],
        ["goal", "create", "--goal-id", "other", "--title", "Other", "--objective", "More"],
        ["todo", "add", "--goal-id", "demo", "--todo-id", "a", "--title", "Parser \x1b[31m"],
        ["todo", "add", "--goal-id", "demo", "--todo-id", "b", "--title", "B", "--depends-on", "a"],
        ["todo", "add", "--goal-id", "demo", "--todo-id", "c", "--title", "C"],
        ["todo", "claim", "--goal-id", "demo", "--todo-id", "a", "--agent-id", "agent-a"],
        ["evidence", "add", "--goal-id", "demo", "--todo-id", "c", "--evidence-id", "e1"]
        + ["--kind", "test", "--summary", "passes"],
        ["handoff", "prepare", "--goal-id", "demo", "--todo-id", "a", "--agent-id", "agent-a"]
        + ["--from-context", str(root / "note.json"), "--workspace", str(root)],
    ]
    for args in steps:
        done = run_cli([*args, "--root", str(root)], cwd=root)
        assert done.exit_code == 0, (args, done.stderr)
    return root


STATUS = ["status", "--goal-id", "demo"]
NEXT = ["next", "--goal-id", "demo"]
CLAIM = ["todo", "claim", "--goal-id", "demo", "--todo-id", "c"]
INSPECT = ["handoff", "inspect", "--goal-id", "demo", "--todo-id", "a"]

# Argument lists, each with its environment; those quick reads are marked True.
CALLS: list[tuple[list[str], dict[str, str], bool]] = [
    (STATUS, {}, True),
    ([*STATUS, "--format", "json"], {}, True),
    ([*STATUS, "--json"], {}, True),
    (["status", "--format=json"], {}, True),
    (["status"], {}, True),
    (["status", "--goal-id", "nope"], {}, True),
    (["status", "--goal-id", "Bad Id!"], {}, True),
    (["status", "--goal-id="], {}, True),
    ([*STATUS, "--format", "json", "--format", "text"], {}, True),
    ([*STATUS, "--debug"], {}, True),
    ([*STATUS, "--format", "xml"], {}, False),
    ([*STATUS, "--format", "JSON"], {}, False),
    ([*STATUS, "--json=1"], {}, False),
    ([*STATUS, "--help"], {}, False),
    ([*STATUS, "-h"], {}, False),
    ([*STATUS, "--bogus"], {}, False),
    ([*STATUS, "extra"], {}, False),
    (["status", "--goal-id"], {}, False),
    (["status", "--goal-id", "--json"], {}, False),
    ([*STATUS, "--", "--json"], {}, False),
    ([*STATUS, "--root", "a-file"], {}, False),
    (STATUS, {"LOOPX_ROOT": "a-file"}, False),
    ([*STATUS, "--root", "missing"], {}, True),
    (NEXT, {}, True),
    ([*NEXT, "--explain", "--limit", "1"], {}, True),
    ([*NEXT, "--agent-id", "agent-a", "--format", "json"], {}, True),
    (["next"], {"LOOPX_GOAL_ID": "demo"}, True),
    (["next"], {"LOOPX_GOAL_ID": ""}, True),  # empty: not set; two goals, none named
    (["next"], {}, True),
    ([*NEXT, "--limit", "0"], {}, False),
    ([*NEXT, "--limit", "x"], {}, False),
    ([*NEXT, "--limit", "-3"], {}, False),
    ([*NEXT, "--limit", "9007199254740992"], {}, False),
    ([*NEXT, "--explain=yes"], {}, False),
    ([*CLAIM, "--agent-id", "agent-c", "--session-id", "s"], {}, True),
    ([*CLAIM, "--format", "json"], {"LOOPX_AGENT_ID": "agent-c"}, True),
    ([*CLAIM, "--lease-seconds", "60", "--operation-id", "op-1"], {}, True),
    ([*CLAIM, "--expected-revision", "99"], {}, True),
    (["todo", "claim", "--goal-id", "demo", "--todo-id", "a"], {}, True),  # another's claim
    (["todo", "claim", "--goal-id", "demo", "--todo-id", "zz"], {}, True),
    ([*CLAIM, "--lease-seconds", "0"], {}, False),
    ([*CLAIM, "--lease-seconds", "2592001"], {}, False),
    (["todo", "claim", "--goal-id", "demo"], {}, False),  # --todo-id is required
    (["todo", "claim", "--todo-id", "c"], {"LOOPX_GOAL_ID": "demo"}, True),
    (["todo", "renew", "--goal-id", "demo", "--todo-id", "a", "--agent-id", "agent-a"], {}, True),
    (["todo", "renew", "--goal-id", "demo", "--todo-id", "a"], {}, True),  # not the holder
    (["todo", "complete", "--goal-id", "demo", "--todo-id", "c", "--summary", "ok"], {}, True),
    (
        ["todo", "complete", "--goal-id", "demo", "--todo-id", "c"]
        + ["--evidence-id", "e1, e9", "--evidence-id", "e8", "--successor", "b"],
        {},
        True,
    ),
    (["todo", "complete", "--goal-id", "demo", "--todo-id", "b", "--format", "json"], {}, True),
    (["todo", "complete", "--goal-id", "demo", "--todo-id", "c", "--reason", "x"], {}, False),
    (["todo", "release", "--goal-id", "demo", "--todo-id", "a"], {}, False),
    ([*INSPECT, "--agent-id", "agent-b", "--session-id", "s", "--workspace", "."], {}, True),
    ([*INSPECT, "--format", "json"], {}, True),
    ([*INSPECT, "--format", "text", "--audience", "team"], {}, True),
    ([*INSPECT, "--format", "markdown", "--max-chars", "400"], {}, True),
    (INSPECT, {"LOOPX_AGENT_ID": "agent-b"}, True),
    (INSPECT, {"LOOPX_AUDIENCE": "team"}, True),
    (INSPECT, {"LOOPX_AUDIENCE": "public"}, True),
    (INSPECT, {"LOOPX_AUDIENCE": "nobody"}, True),
    ([*INSPECT, "--workspace", "src"], {}, True),
    ([*INSPECT, "--workspace", "missing"], {}, True),
    ([*INSPECT, "--workspace", "a-file"], {}, False),
    ([*INSPECT, "--audience", "public"], {}, False),
    ([*INSPECT, "--max-chars", "0"], {}, False),
    (["handoff", "inspect", "--goal-id", "demo", "--todo-id", "c"], {}, True),
    (["handoff", "inspect", "--goal-id", "demo"], {}, False),
]


def _run(root: Path, args: list[str], env: dict[str, str]) -> tuple[CliResult, bytes]:
    done = run_cli(args, env=env, cwd=root)
    return done, (root / ".loopx" / "goals" / "demo" / "ledger.jsonl").read_bytes()


@pytest.mark.parametrize(("args", "env", "read_here"), CALLS, ids=lambda v: repr(v)[:60])
def test_a_call_reads_and_does_as_click(
    seed: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    read_here: bool,
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(seed)  # the project is found from here, as a relative path is
    assert (quick.parse(args) is not None) is read_here
    monkeypatch.undo()
    monkeypatch.setattr(os, "urandom", lambda n: b"\x07" * n)  # the same operation ids
    ours, theirs = tmp_path / "ours" / "repo", tmp_path / "theirs" / "repo"
    shutil.copytree(seed, ours, symlinks=True)
    shutil.copytree(seed, theirs, symlinks=True)
    done, ledger = _run(ours, args, env)
    monkeypatch.setattr(quick, "parse", lambda args: None)
    expected, expected_ledger = _run(theirs, args, env)
    mine = (done.exit_code, done.stdout, done.stderr.replace(str(ours), "ROOT"))
    assert mine == (
        expected.exit_code,
        expected.stdout,
        expected.stderr.replace(str(theirs), "ROOT"),
    )
    assert ledger == expected_ledger


def _as_click(param: click.Parameter, ctx: click.Context) -> tuple[Any, ...]:
    """What quick's table says of an option, read from its click declaration."""
    kind: str = quick.TEXT
    extra: Any = None
    if isinstance(param.type, click.Choice):
        kind, extra = quick.CHOICE, tuple(param.type.choices)
    elif isinstance(param.type, click.IntRange):
        kind, extra = quick.INT, (param.type.min, param.type.max)
        assert not (param.type.min_open or param.type.max_open or param.type.clamp)
    elif isinstance(param.type, click.Path):
        assert not (param.type.file_okay or param.type.exists or param.type.resolve_path)
        assert param.type.type is Path
        assert param.type.dir_okay and param.type.readable and not param.type.writable
        kind = quick.FOLDER
        if param.callback is not None:
            assert param.callback.__name__ == "checkout_root_option"
            kind = quick.WORKSPACE
    elif getattr(param, "is_flag", False):
        kind = quick.FLAG
        if param.secondary_opts:  # --x/--no-x
            assert isinstance(param.type, click.types.BoolParamType)
            kind, [extra] = quick.SWITCH, param.secondary_opts
    if getattr(param, "multiple", False):
        kind = quick.TEXTS if param.callback is None else quick.IDS
        assert param.callback is None or param.callback.__name__ == "ids"
        assert param.type.name == "text"
    else:
        assert param.type.name in ("text", "boolean", "integer range", "choice", "directory")
        assert param.callback is None or kind == quick.WORKSPACE
    name = param.name if param.expose_value else ""
    default = param.get_default(ctx)  # a flag's: False
    if default is getattr(click.core, "UNSET", object()):  # none declared (click >= 8.3)
        default = () if kind in (quick.IDS, quick.TEXTS) else None
    assert param.nargs == 1 and not getattr(param, "prompt", None)
    return (param.opts[0], name, kind, default, param.envvar, param.required, extra)


def _argument(param: click.Parameter) -> str:
    """The name of a positional parameter quick reads: any number of paths, each a file or a
    folder, missing or not, as `Path` (quick.ARGUMENTS)."""
    kind = param.type
    assert isinstance(param, click.Argument) and isinstance(kind, click.Path)
    assert param.nargs == -1 and not param.required and param.envvar is None
    assert param.callback is None and param.expose_value and param.name
    assert kind.file_okay and kind.dir_okay and kind.readable and kind.type is Path
    assert not (kind.exists or kind.writable or kind.resolve_path or kind.allow_dash)
    assert not kind.executable
    return param.name


@pytest.mark.parametrize("path", sorted(quick.COMMANDS))
def test_each_table_is_its_click_declaration(path: tuple[str, ...]) -> None:
    from loopx.cli.group import cli

    ctx = click.Context(cli)
    command: Any = cli
    for name in path:
        command = command.get_command(ctx, name)
        if isinstance(command, click.Group):
            from loopx.cli.ergonomics import adapt

            adapt(command)
    here = click.Context(command)
    declared = sorted(_as_click(p, here) for p in command.params if isinstance(p, click.Option))
    arguments = [p for p in command.params if not isinstance(p, click.Option)]
    named = quick.ARGUMENTS.get(path)
    assert [_argument(p) for p in arguments] == ([named] if named is not None else [])
    table = sorted(quick.COMMANDS[path][0], key=lambda o: o[:3])
    assert [o[:3] for o in table] == [o[:3] for o in declared]
    assert table == [tuple(o) for o in declared]
    for param in command.params:  # one spelling each: the table names the first (and --no-x)
        assert len(param.opts) == 1 and len(param.secondary_opts) <= 1
    # The configured options are filled in click's order (the first to fail is reported).
    configured = [o[1] for o in quick.COMMANDS[path][0] if o[1] in quick.CONFIGURED]
    assert configured == [p.name for p in command.params if p.name in quick.CONFIGURED]


def test_the_configured_options_are_those_of_the_defaults_module() -> None:
    from loopx.cli.defaults import configured

    for options, _, _ in quick.COMMANDS.values():
        for _flag, name, kind, _default, _envvar, _required, extra in options:
            choices = tuple(extra) if kind == quick.CHOICE else ()
            assert (configured(name, choices) is not None) is (name in quick.CONFIGURED), name


def test_the_ranges_are_the_engines() -> None:
    from loopx.cli.common import MAX_INT
    from loopx.engine.lookup import LEASE_RANGE

    assert quick.LEASE_RANGE == LEASE_RANGE and quick.MAX_INT == MAX_INT == 2**53 - 1


def test_the_writes_run_the_engine_path_click_runs() -> None:
    from loopx.cli.write import command_type
    from loopx.engine import commands, todos

    for path, (_, runner, _what) in quick.COMMANDS.items():
        if path[0] == "todo":
            kind, run = runner.split()
            assert command_type(getattr(todos, run)) is getattr(commands, kind)
            assert run == f"{path[1]}_todo"


def test_every_turn_calls_import_no_click(seed: Path, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(seed, root, symlinks=True)
    code = (
        "import sys\n"
        "from loopx.cli.main import main\n"
        "for args in sys.argv[1:]:\n"
        "    try:\n"
        "        main(args.split('|'))\n"
        "    except SystemExit as stop:\n"
        "        assert not stop.code, (args, stop.code)\n"
        "assert 'click' not in sys.modules, 'click imported'\n"
    )
    calls = [STATUS, NEXT, [*CLAIM, "--agent-id", "x"], INSPECT, ["status", "--goal-id", "no"]]
    calls[-1] = ["todo", "renew", "--goal-id", "demo", "--todo-id", "c", "--agent-id", "x"]
    argv = ["|".join([*args, "--root", str(root)]) for args in calls]
    env = {**os.environ, "LOOPX_NOW": T0, "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, cwd=root
    )
    assert done.returncode == 0, done.stderr


def test_a_stream_click_would_wrap_goes_to_click(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    ascii_out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", ascii_out)
    assert quick.parse(["status"]) is None
    monkeypatch.setattr(sys, "stdout", None)
    assert quick.parse(["status"]) is None
