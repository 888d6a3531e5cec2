"""Error paths at the CLI edge: typed codes and exit codes, one line on stderr or a JSON
envelope, no traceback, nothing written, and no input value echoed back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest

from loopx.cli.main import COMMANDS, cli
from loopx.model.errors import EXIT_CODES, LoopxError
from tests.conftest import CliResult, run_cli

G = "demo"
SECRET = "ghp_Q7vXk2LmN9pR4sT6uW8yZ1aB3cD5eF7gH9jK"
SECRET_LOWER = "sk-live-4f9c2a1e7b3d5c8a9e0f1b2c3d4e5f6a"


def loopx(root: Path, *args: str, fmt: str | None = None, **env: str) -> CliResult:
    argv = [*args, "--root", str(root)]
    if fmt:
        argv += ["--format", fmt]
    return run_cli(argv, env=env or None)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under .loopx/ except the rebuildable cache (and lock files)."""
    state = root / ".loopx"
    return {
        p.relative_to(state).as_posix(): p.read_bytes()
        for p in sorted(state.rglob("*"))
        if p.is_file() and "cache" not in p.parts and p.name != "lock"
    }


def check_error(result: CliResult, code: str, exit_code: int, *, json_mode: bool) -> None:
    assert result.exit_code == exit_code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    if json_mode:
        body = result.json()
        assert list(body) == ["error"]
        assert set(body["error"]) == {"code", "message", "details"}
        assert body["error"]["code"] == code
        assert isinstance(body["error"]["message"], str) and body["error"]["message"]
        assert isinstance(body["error"]["details"], dict)
        assert result.stderr == ""
    else:
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith(f"loopx: error [{code}]: ")


@pytest.fixture
def proj(project: Path) -> Path:
    """The `project` fixture with one todo `t` (claimed by agent-a) and a gate `g`."""
    for args in (
        ["todo", "add", "--goal-id", G, "--title", "T", "--todo-id", "t"],
        ["todo", "add", "--goal-id", G, "--title", "U", "--todo-id", "u"],
        ["todo", "claim", "--goal-id", G, "--todo-id", "t", "--agent-id", "agent-a"],
        [
            "gate",
            "open",
            "--goal-id",
            G,
            "--question",
            "Q?",
            "--authority",
            "boss",
            "--gate-id",
            "g",
            "--blocks",
            "u",
        ],
    ):
        assert loopx(project, *args).exit_code == 0
    return project


# Each: (args, code, exit code). All run against `proj`, in text and in JSON mode.
FAILURES: list[tuple[list[str], str, int]] = [
    # unknown ids
    (["goal", "show", "--goal-id", "nope"], "goal_not_found", 3),
    (["goal", "close", "--goal-id", "nope", "--outcome", "achieved"], "goal_not_found", 3),
    (["todo", "add", "--goal-id", "nope", "--title", "T"], "goal_not_found", 3),
    (["todo", "show", "--goal-id", G, "--todo-id", "nope"], "todo_not_found", 3),
    (["todo", "claim", "--goal-id", G, "--todo-id", "nope"], "todo_not_found", 3),
    (["todo", "complete", "--goal-id", G, "--todo-id", "nope"], "todo_not_found", 3),
    (["todo", "list", "--goal-id", "nope"], "goal_not_found", 3),
    (
        ["todo", "add", "--goal-id", G, "--title", "T", "--depends-on", "zz"],
        "dependency_not_found",
        3,
    ),
    (
        ["gate", "resolve", "--goal-id", G, "--gate-id", "nope", "--resolution", "approve"],
        "gate_not_found",
        3,
    ),
    (["gate", "list", "--goal-id", "nope"], "goal_not_found", 3),
    (["evidence", "list", "--goal-id", "nope"], "goal_not_found", 3),
    (
        ["evidence", "add", "--goal-id", G, "--kind", "test", "--summary", "s", "--todo-id", "zz"],
        "todo_not_found",
        3,
    ),
    (
        ["run", "record", "--goal-id", G, "--outcome", "progress", "--evidence-id", "ev-9"],
        "evidence_not_found",
        3,
    ),
    (["run", "list", "--goal-id", "nope"], "goal_not_found", 3),
    (["status", "--goal-id", "nope"], "goal_not_found", 3),
    (["next", "--goal-id", "nope"], "goal_not_found", 3),
    (["log", "--goal-id", "nope"], "goal_not_found", 3),
    (["verify", "--goal-id", "nope"], "goal_not_found", 3),
    (["note", "add", "--goal-id", G, "--text", "x", "--todo-id", "zz"], "todo_not_found", 3),
    # malformed and empty values
    (["todo", "add", "--goal-id", G, "--title", ""], "empty_text", 2),
    (["todo", "add", "--goal-id", G, "--title", "   "], "empty_text", 2),
    (["todo", "add", "--goal-id", "Bad Goal", "--title", "T"], "invalid_id", 2),
    (["todo", "add", "--goal-id", G, "--title", "T", "--todo-id", "Bad"], "invalid_id", 2),
    (["todo", "add", "--goal-id", G, "--title", "T", "--kind", "Not A Kind"], "invalid_input", 2),
    (["todo", "add", "--goal-id", G, "--title", "T", "--operation-id", "a b"], "invalid_id", 2),
    (["todo", "add", "--goal-id", G, "--title", "T", "--agent-id", "Agent A"], "invalid_id", 2),
    (["todo", "update", "--goal-id", G, "--todo-id", "t"], "no_change", 2),
    (["todo", "block", "--goal-id", G, "--todo-id", "u", "--reason", ""], "empty_text", 2),
    (["evidence", "add", "--goal-id", G, "--kind", "Test", "--summary", "s"], "invalid_kind", 2),
    (
        [
            "evidence",
            "add",
            "--goal-id",
            G,
            "--kind",
            "test",
            "--summary",
            "s",
            "--revision",
            "xyz",
        ],
        "invalid_revision",
        2,
    ),
    (
        [
            "evidence",
            "add",
            "--goal-id",
            G,
            "--kind",
            "test",
            "--summary",
            "s",
            "--file",
            "/nonexistent/file.log",
        ],
        "file_not_found",
        3,
    ),
    (["goal", "create", "--goal-id", "x", "--title", "T", "--objective", ""], "empty_text", 2),
    (["note", "add", "--goal-id", G, "--text", ""], "empty_text", 2),
    # usage errors: wrong enums, bad numbers, missing options, unknown commands
    (["todo", "add", "--goal-id", G, "--title", "T", "--role", "robot"], "usage_error", 2),
    (["todo", "add", "--goal-id", G, "--title", "T", "--priority", "9"], "usage_error", 2),
    (["todo", "add", "--goal-id", G, "--title", "T", "--priority", "high"], "usage_error", 2),
    (["todo", "add", "--goal-id", G, "--title", "T", "--visibility", "world"], "usage_error", 2),
    (["todo", "add", "--goal-id", G], "usage_error", 2),
    (
        ["todo", "claim", "--goal-id", G, "--todo-id", "u", "--expected-revision", "-1"],
        "usage_error",
        2,
    ),
    (["todo", "claim", "--goal-id", G, "--todo-id", "u", "--lease-seconds", "0"], "usage_error", 2),
    (["goal", "close", "--goal-id", G, "--outcome", "done"], "usage_error", 2),
    (
        ["gate", "resolve", "--goal-id", G, "--gate-id", "g", "--resolution", "maybe"],
        "usage_error",
        2,
    ),
    (["run", "record", "--goal-id", G, "--outcome", "great"], "usage_error", 2),
    (["todo", "list", "--goal-id", G, "--status", "later"], "usage_error", 2),
    (["todo", "frobnicate", "--goal-id", G], "usage_error", 2),
    (["todo", "add", "--goal-id", G, "--title", "T", "--no-such-flag"], "usage_error", 2),
    (["todo", "add", "--goal-id", G, "--title", "T", "extra"], "usage_error", 2),
    # conflicts
    (["goal", "create", "--goal-id", G, "--title", "T", "--objective", "O"], "goal_exists", 4),
    (["todo", "add", "--goal-id", G, "--title", "T", "--todo-id", "t"], "todo_exists", 4),
    (
        ["todo", "claim", "--goal-id", G, "--todo-id", "t", "--agent-id", "agent-b"],
        "claim_owner_mismatch",
        4,
    ),
    (["todo", "claim", "--goal-id", G, "--todo-id", "u"], "gate_pending", 4),
    (["todo", "renew", "--goal-id", G, "--todo-id", "u"], "not_claimed", 4),
    (["todo", "unblock", "--goal-id", G, "--todo-id", "u"], "todo_not_blocked", 4),
    (["todo", "reopen", "--goal-id", G, "--todo-id", "u", "--reason", "r"], "todo_not_closed", 4),
    (
        ["todo", "update", "--goal-id", G, "--todo-id", "t", "--depends-on", "t"],
        "dependency_cycle",
        4,
    ),
    (
        ["todo", "add", "--goal-id", G, "--title", "T", "--expected-revision", "1"],
        "revision_conflict",
        4,
    ),
    (
        [
            "gate",
            "resolve",
            "--goal-id",
            G,
            "--gate-id",
            "g",
            "--resolution",
            "approve",
            "--by",
            "someone",
        ],
        "not_gate_authority",
        4,
    ),
    (["goal", "close", "--goal-id", G, "--outcome", "achieved"], "todos_open", 4),
    (["agent", "register", "--goal-id", G, "--agent-id", "agent-a"], None, 0),
]


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize(("args", "code", "exit_code"), FAILURES, ids=lambda v: str(v)[:60])
def test_failures_are_typed_and_write_nothing(
    proj: Path, args: list[str], code: str | None, exit_code: int, fmt: str
) -> None:
    if code is None:  # registering an agent succeeds once, then is agent_exists
        assert loopx(proj, *args).exit_code == 0
        code, exit_code = "agent_exists", 4
    before = snapshot(proj)
    result = loopx(proj, *args, fmt=fmt)
    check_error(result, code, exit_code, json_mode=fmt == "json")
    assert snapshot(proj) == before, "a refused command wrote something"


def test_revision_conflict_carries_the_current_revision(proj: Path) -> None:
    out = loopx(
        proj, "todo", "add", "--goal-id", G, "--title", "T", "--expected-revision", "2", fmt="json"
    )
    assert out.json()["error"]["details"] == {"expected_revision": 2, "current_revision": 5}
    text = loopx(proj, "todo", "add", "--goal-id", G, "--title", "T", "--expected-revision", "2")
    assert "expected revision 2 but it is 5" in text.stderr


def test_operation_id_reused_from_the_cli(proj: Path) -> None:
    args = ["todo", "add", "--goal-id", G, "--operation-id", "op-1"]
    assert loopx(proj, *args, "--title", "A").exit_code == 0
    before = snapshot(proj)
    check_error(
        loopx(proj, *args, "--title", "B", fmt="json"), "operation_id_reused", 4, json_mode=True
    )
    assert snapshot(proj) == before


def test_a_closed_goal_refuses_writes_from_the_cli(project: Path) -> None:
    assert loopx(project, "goal", "close", "--goal-id", G, "--outcome", "achieved").exit_code == 0
    before = snapshot(project)
    result = loopx(project, "todo", "add", "--goal-id", G, "--title", "Late", fmt="json")
    check_error(result, "goal_terminal", 4, json_mode=True)
    assert result.json()["error"]["details"]["status"] == "achieved"
    assert snapshot(project) == before


def test_huge_inputs_are_refused_without_writing(proj: Path) -> None:
    before = snapshot(proj)
    huge = "x" * 1_000_000
    for args, code in (
        (["todo", "add", "--goal-id", G, "--title", huge], "text_too_long"),
        (["note", "add", "--goal-id", G, "--text", huge], "text_too_long"),
        (
            [
                "todo",
                "add",
                "--goal-id",
                G,
                "--title",
                "T",
                "--depends-on",
                ",".join(f"d{i}" for i in range(5000)),
            ],
            "dependency_not_found",
        ),
    ):
        result = loopx(proj, *args, fmt="json")
        assert result.json()["error"]["code"] == code
        assert len(result.stdout) < 40_000
    assert snapshot(proj) == before


# -- nothing echoed -------------------------------------------------------------------------


def _secret_cases(tmp: Path) -> list[list[str]]:
    s = SECRET
    return [
        ["todo", "add", "--goal-id", s, "--title", "T"],
        ["todo", "add", "--goal-id", G, "--title", "T", "--todo-id", s],
        ["todo", "add", "--goal-id", G, "--title", "T", "--role", s],
        ["todo", "add", "--goal-id", G, "--title", "T", "--priority", s],
        ["todo", "add", "--goal-id", G, "--title", "T", "--visibility", s],
        ["todo", "add", "--goal-id", G, "--title", "T", "--kind", s],
        ["todo", "add", "--goal-id", G, "--title", "T", "--depends-on", s],
        ["todo", "add", "--goal-id", G, "--title", "T", "--operation-id", s + " x"],
        ["todo", "add", "--goal-id", G, "--title", "T", "--agent-id", s],
        ["todo", "add", "--goal-id", G, "--title", "T", "--session-id", s],
        ["todo", "add", "--goal-id", G, "--title", "T", "--expected-revision", s],
        ["todo", "add", "--goal-id", G, "--title", s * 20],
        ["todo", "add", "--goal-id", G, "--title", "T", s],
        ["todo", "add", "--goal-id", G, "--title", "T", f"--{s}"],
        ["todo", "claim", "--goal-id", G, "--todo-id", "u", "--lease-seconds", s],
        ["goal", "close", "--goal-id", G, "--outcome", s],
        ["gate", "resolve", "--goal-id", G, "--gate-id", "g", "--resolution", s],
        ["gate", "resolve", "--goal-id", G, "--gate-id", "g", "--resolution", "approve", "--by", s],
        ["evidence", "add", "--goal-id", G, "--kind", s, "--summary", "x"],
        ["evidence", "add", "--goal-id", G, "--kind", "test", "--summary", "x", "--revision", s],
        [
            "evidence",
            "add",
            "--goal-id",
            G,
            "--kind",
            "test",
            "--summary",
            "x",
            "--file",
            str(tmp / s),
        ],
        ["evidence", "add", "--goal-id", G, "--kind", "test", "--summary", "x", "--file", str(tmp)],
        ["run", "record", "--goal-id", G, "--outcome", s],
        ["run", "record", "--goal-id", G, "--outcome", "progress", "--quota-spent", s],
        ["log", "--goal-id", G, "--since", s],
        ["status", "--goal-id", s],
        ["verify", "--goal-id", s],
        [s],
    ]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_secret_passed_as_a_bad_argument_is_never_echoed(
    proj: Path, tmp_path: Path, fmt: str
) -> None:
    before = snapshot(proj)
    for args in _secret_cases(tmp_path):
        result = loopx(proj, *args, fmt=fmt)
        assert result.exit_code in (2, 3), (args, result.stdout, result.stderr)
        everything = result.stdout + result.stderr
        assert SECRET not in everything, (args, everything)
        assert SECRET[4:20] not in everything, (args, everything)
        assert "Traceback" not in everything
    for root_value in (str(tmp_path / SECRET), SECRET):
        result = run_cli(["status", "--root", root_value, "--format", fmt])
        assert result.exit_code == 3 and SECRET not in result.stdout + result.stderr
    bad_now = loopx(proj, "todo", "add", "--goal-id", G, "--title", "T", fmt=fmt, LOOPX_NOW=SECRET)
    assert bad_now.exit_code == 2 and SECRET not in bad_now.stdout + bad_now.stderr
    assert snapshot(proj) == before


def test_free_text_never_appears_in_an_error(proj: Path) -> None:
    long_secret = SECRET_LOWER + " " + "x" * 600
    result = loopx(proj, "todo", "add", "--goal-id", G, "--title", long_secret, fmt="json")
    assert result.json()["error"]["code"] == "text_too_long"
    assert SECRET_LOWER not in result.stdout


# -- the boundary -------------------------------------------------------------------------------


def test_an_unexpected_exception_is_exit_1_without_traceback(
    proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import loopx.engine.todos as todos

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError(SECRET)

    monkeypatch.setattr(todos, "execute", boom)  # deep in the write path
    text = loopx(proj, "todo", "add", "--goal-id", G, "--title", "T")
    check_error(text, "internal_error", 1, json_mode=False)
    assert "ZeroDivisionError" in text.stderr and "--debug" in text.stderr
    assert SECRET not in text.stderr
    data = loopx(proj, "todo", "add", "--goal-id", G, "--title", "T", fmt="json")
    check_error(data, "internal_error", 1, json_mode=True)
    with pytest.raises(ZeroDivisionError):
        loopx(proj, "todo", "add", "--goal-id", G, "--title", "T", "--debug")


def test_debug_lets_a_loopx_error_through(proj: Path) -> None:
    with pytest.raises(LoopxError) as caught:
        loopx(proj, "todo", "show", "--goal-id", G, "--todo-id", "nope", "--debug")
    assert caught.value.code == "todo_not_found"


def test_every_exit_code_is_documented() -> None:
    assert set(EXIT_CODES) == set(range(9))
    for code in FAILURES:
        assert code[2] in EXIT_CODES


# -- help -----------------------------------------------------------------------------------------


def _all_commands() -> list[list[str]]:
    out: list[list[str]] = [[]]
    ctx = click.Context(cli)
    for name in sorted(COMMANDS):
        command = cli.get_command(ctx, name)
        assert command is not None, name
        out.append([name])
        if isinstance(command, click.Group):
            out += [[name, sub] for sub in sorted(command.commands)]
    return out


def test_help_works_for_every_command_and_subcommand() -> None:
    commands = _all_commands()
    assert ["todo", "claim"] in commands and ["verify"] in commands
    for path in commands:
        result = run_cli([*path, "--help"])
        assert result.exit_code == 0, (path, result.stderr)
        assert result.stdout.startswith("Usage: loopx"), path
        assert result.stderr == ""
    top = run_cli(["--help"]).stdout
    for name in COMMANDS:
        assert name in top


def test_a_group_alone_prints_its_help() -> None:
    for args in ([], ["todo"], ["gate"]):
        result = run_cli(args)
        assert result.exit_code == 0 and "Usage: loopx" in result.stdout


def test_error_codes_are_stable_strings() -> None:
    for args, code, _ in FAILURES:
        if code is not None:
            assert code.replace("_", "").isalpha() and code.islower(), args


def test_a_write_to_an_unknown_goal_leaves_no_folder_behind(project: Path) -> None:
    before = sorted(p.relative_to(project).as_posix() for p in project.rglob("*"))
    result = run_cli(
        ["todo", "add", "--root", str(project), "--goal-id", "typo", "--title", "Anything"]
    )
    assert result.exit_code == 3 and "goal_not_found" in result.stderr
    assert sorted(p.relative_to(project).as_posix() for p in project.rglob("*")) == before


def test_unknown_ids_are_counted_in_the_message_and_listed_only_in_details(
    project: Path,
) -> None:
    secret = "ab12" * 10
    result = run_cli(
        [
            "gate",
            "open",
            "--root",
            str(project),
            "--goal-id",
            "demo",
            "--question",
            "Ship?",
            "--authority",
            "maintainer",
            "--blocks",
            secret,
        ]
    )
    assert result.exit_code == 3 and secret not in result.stderr
    assert "1 unknown todo id" in result.stderr
    as_json = run_cli(
        [
            "gate",
            "open",
            "--root",
            str(project),
            "--goal-id",
            "demo",
            "--question",
            "Ship?",
            "--authority",
            "maintainer",
            "--blocks",
            secret,
            "--format",
            "json",
        ]
    ).json()
    assert secret not in as_json["error"]["message"]
    assert as_json["error"]["details"]["todo_ids"] == [secret]
