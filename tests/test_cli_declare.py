"""The one declaration of a write (`cli/write.py`), of a read of one goal (`cli/read.py`) and
of each option several commands take (`cli/common.py`): what they add, in which order, and
that an option declared once is the same option wherever a command takes it."""

from __future__ import annotations

from typing import Any

import click
import pytest
from click.testing import CliRunner

from loopx.cli import write as write_module
from loopx.cli.main import COMMANDS, cli
from loopx.cli.write import write
from loopx.engine import commands
from loopx.engine.core import Context, Result

READS = [
    ("allow", "list"),
    ("redact", "list"),
    ("goal", "show"),
    ("evidence", "list"),
    ("run", "list"),
    ("gate", "list"),
    ("todo", "list"),
    ("todo", "show"),
    ("turn", "list"),
    ("turn", "resume"),
]


def every_command() -> list[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    out: list[tuple[str, click.Command]] = []
    for name in sorted(COMMANDS):
        command = cli.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            out += [(f"{name} {sub}", c) for sub, c in sorted(command.commands.items())]
        else:
            out.append((name, command))
    return out


def _names(command: click.Command) -> list[str | None]:
    return [p.name for p in command.params]


@pytest.mark.parametrize(("group", "name"), READS)
def test_a_read_takes_the_goal_first_its_own_options_then_root_and_format(
    group: str, name: str
) -> None:
    found = cli.get_command(click.Context(cli), group)
    assert isinstance(found, click.Group)
    names = _names(found.commands[name])
    assert names[0] == "goal_id" and "goal_id" not in names[1:]
    at = names.index("root")  # after the command's own options (`--json` is added later)
    assert names[at : at + 3] == ["root", "fmt", "debug"]


def test_a_write_that_takes_no_options_gets_the_command_its_engine_path_takes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[Any] = []

    def renew(ctx: Context, cmd: commands.RenewTodo) -> Result:
        seen.append(cmd)
        receipt = {"subject": cmd.todo_id, "revision": 3, "goal_id": cmd.goal_id}
        return Result("applied", {**receipt, "operation_id": "op-1"})

    monkeypatch.setattr(write_module, "context", lambda *args: None)
    group = click.Group("todo")

    @write(group, "renew", renew, "lease on")
    @click.option("--todo-id", required=True)
    @click.option("--lease-seconds", type=int, default=None)
    def declared() -> None:
        """Renew a lease."""

    result = CliRunner().invoke(group, ["renew", "--goal-id", "g", "--todo-id", "t-1"])
    assert result.exit_code == 0, result.output
    assert seen == [
        commands.RenewTodo(goal_id="g", todo_id="t-1", lease_seconds=None, expected_revision=None)
    ]
    assert result.output == "lease on t-1 recorded at revision 3 (goal g, operation op-1)\n"
    assert declared.help == "Renew a lease."
    assert _names(declared)[:2] == ["goal_id", "todo_id"]


def test_a_write_is_declared_when_first_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """A group lists its writes by name and help without declaring them; a write's options
    and callback are made when it is parsed, invoked or shown (issue 19)."""
    made: list[str] = []
    real = write_module._declare

    def counting(callback: Any, build: Any, *, guarded: bool) -> None:
        made.append(build.__name__)
        real(callback, build, guarded=guarded)

    monkeypatch.setattr(write_module, "_declare", counting)
    group = click.Group("todo")

    def renew(ctx: Context, command: commands.RenewTodo) -> Result:
        raise AssertionError("not run")

    for name in ("first", "second"):

        @write(group, name, renew, "lease on")
        @click.option("--todo-id", required=True)
        def declared() -> None:
            """Renew a lease."""

    listed = CliRunner().invoke(group, ["--help"])
    assert listed.exit_code == 0 and "first" in listed.output and "second" in listed.output
    assert made == []
    shown = CliRunner().invoke(group, ["second", "--help"])
    assert shown.exit_code == 0 and "--todo-id" in shown.output and "--goal-id" in shown.output
    assert made == ["declared"]  # the second only
    assert _names(group.commands["first"])[:2] == ["goal_id", "todo_id"]
    assert made == ["declared", "declared"]


@pytest.mark.parametrize("option", ["lease_seconds", "root", "max_chars", "visibility"])
def test_an_option_several_commands_take_is_the_same_option_in_each(option: str) -> None:
    kinds = {
        name: param.to_info_dict()["type"]
        for name, command in every_command()
        for param in command.params
        if param.name == option
    }
    assert len(kinds) >= 2, kinds
    assert all(kind == next(iter(kinds.values())) for kind in kinds.values()), kinds


def test_every_single_audience_option_names_audiences_only() -> None:
    found = [
        param
        for _, command in every_command()
        for param in command.params
        if param.name == "audience"
    ]
    assert len(found) >= 5
    for param in found:
        assert isinstance(param.type, click.Choice)
        assert set(param.type.choices) <= {"public", "team", "private"}
