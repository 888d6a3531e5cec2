"""Calls `loopx.cli.quick` could read that must still end as click ends them: a number too
long for Python to convert, a shell-completion request, an interrupt, a closed pipe.

Each runs on one project twice, once as `main` runs it and once with the quick parser
switched off (click reads every call): the exit code, stdout and stderr must be the same."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest

from loopx.cli import quick
from tests.conftest import CliResult, run_cli

LONG = "1" * 5000  # int() refuses more than 4,300 digits: click says the value is invalid


def _both(monkeypatch: pytest.MonkeyPatch, root: Path, args: list[str], **env: str) -> Any:
    """(the call as main runs it, the same call read by click)."""
    args = [*args, "--root", str(root)]
    ours = run_cli(args, env=env)
    monkeypatch.setattr(quick, "parse", lambda args: None)
    theirs = run_cli(args, env=env)
    monkeypatch.undo()
    return _seen(ours), _seen(theirs)


def _seen(done: CliResult) -> tuple[int, str, str]:
    return done.exit_code, done.stdout, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["next", "--goal-id", "demo", "--limit", LONG],
        ["todo", "claim", "--goal-id", "demo", "--todo-id", "t", "--expected-revision", LONG],
        ["handoff", "inspect", "--goal-id", "demo", "--todo-id", "t", "--max-chars", LONG],
    ],
    ids=["limit", "expected-revision", "max-chars"],
)
def test_a_number_too_long_to_convert_is_clicks_usage_error(
    monkeypatch: pytest.MonkeyPatch, project: Path, args: list[str]
) -> None:
    ours, theirs = _both(monkeypatch, project, args)
    assert ours == theirs
    assert ours[0] == 2 and "usage_error" in ours[2]


def test_a_completion_request_is_answered_by_click(
    monkeypatch: pytest.MonkeyPatch, project: Path
) -> None:
    env = {"_LOOPX_COMPLETE": "bash_complete", "COMP_WORDS": "loopx sta", "COMP_CWORD": "1"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert quick.parse(["status"]) is None
    monkeypatch.undo()
    ours, theirs = _both(monkeypatch, project, ["status"], **env)
    assert ours == theirs
    assert "status" in ours[1]


@pytest.mark.parametrize(
    ("raised", "code"),
    [(KeyboardInterrupt, 130), (EOFError, 130), (BrokenPipeError, 1)],
    ids=["interrupt", "eof", "closed-pipe"],
)
def test_an_interrupt_or_a_closed_pipe_ends_the_call_as_click_does(
    monkeypatch: pytest.MonkeyPatch, project: Path, raised: type[BaseException], code: int
) -> None:
    from loopx.store import root

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise raised(errno.EPIPE, "Broken pipe") if raised is BrokenPipeError else raised()

    for args in (["status", "--goal-id", "demo"], ["next", "--goal-id", "demo"]):
        assert quick.parse([*args, "--root", str(project)]) is not None
        monkeypatch.setattr(root, "find_root", interrupted)
        ours = _seen(run_cli([*args, "--root", str(project)]))
        monkeypatch.setattr(quick, "parse", lambda args: None)
        theirs = _seen(run_cli([*args, "--root", str(project)]))
        monkeypatch.undo()
        assert ours == theirs
        assert ours[0] == code
