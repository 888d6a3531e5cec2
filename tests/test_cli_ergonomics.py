"""A CLI that forgives: suggestions for typos, the failing group's help, error details in text
mode, a default goal, env vars in --help, --json, shell completion of ids, colour only on a
terminal."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

from loopx.cli.ergonomics import paint
from tests.conftest import T0, run_cli


def test_a_mistyped_command_gets_a_suggestion_and_its_groups_help() -> None:
    top = run_cli(["stauts"])
    assert top.exit_code == 2
    assert top.stderr == (
        "loopx: error [usage_error]: no such command; did you mean status? (see loopx --help)\n"
    )
    sub = run_cli(["todo", "claimm"])
    assert "did you mean claim? (see loopx todo --help)" in sub.stderr
    far = run_cli(["zzzzqqq"])
    assert far.stderr == "loopx: error [usage_error]: no such command (see loopx --help)\n"
    pasted = "ghp_" + "a1" * 18
    assert pasted not in run_cli([pasted]).stderr
    as_json = run_cli(["todo", "claimm", "--json"]).json()
    assert as_json["error"]["code"] == "usage_error"


def test_a_mistyped_option_gets_a_suggestion(project: Path) -> None:
    result = run_cli(["todo", "claim", "--root", str(project), "--goal", "demo"])
    assert result.exit_code == 2
    assert "no such option: --goal; did you mean --goal-id? (see loopx todo claim --help)" in (
        result.stderr
    )


def test_error_details_in_text_mode_are_ids_and_numbers_never_input(project: Path) -> None:
    r = ["--root", str(project), "--goal-id", "demo"]
    assert run_cli(["todo", "add", *r, "--todo-id", "a", "--title", "A"]).exit_code == 0
    stale = run_cli(["todo", "claim", *r, "--todo-id", "a", "--expected-revision", "1"])
    assert stale.exit_code == 4
    assert stale.stderr.endswith("(current_revision: 2; expected_revision: 1)\n")
    cycle = run_cli(["todo", "update", *r, "--todo-id", "a", "--depends-on", "a"])
    assert cycle.exit_code == 4 and cycle.stderr.endswith("(cycle: a, a; cycle_length: 2)\n")
    # unknown ids are what was typed: counted, pointed to, not printed
    secret = "ab12" * 10
    unknown = run_cli(["todo", "add", *r, "--title", "B", "--depends-on", f"a,{secret}"])
    assert unknown.exit_code == 3 and secret not in unknown.stderr
    assert "ids: see --format json" in unknown.stderr
    assert unknown.stderr.count("\n") == 1


def test_goal_id_defaults_to_the_env_or_the_only_active_goal(project: Path) -> None:
    root = ["--root", str(project)]
    added = run_cli(["todo", "add", *root, "--todo-id", "a", "--title", "A", "--json"])
    assert added.exit_code == 0 and added.json()["receipt"]["goal_id"] == "demo"
    goal = ["goal", "create", *root, "--title", "Other", "--objective", "O"]
    nameless = run_cli(goal)
    assert nameless.exit_code == 2 and "missing --goal-id" in nameless.stderr
    assert run_cli([*goal, "--goal-id", "other"]).exit_code == 0
    several = run_cli(["next", *root])
    assert several.exit_code == 2 and "goal_required" in several.stderr
    assert "(goal_ids: demo, other)" in several.stderr
    by_env = run_cli(["next", *root, "--json"], env={"LOOPX_GOAL_ID": "other"})
    assert by_env.exit_code == 0 and by_env.json()["goal_id"] == "other"
    flag_wins = run_cli(["next", *root, "--goal-id", "demo", "--json"], env={"LOOPX_GOAL_ID": "x"})
    assert flag_wins.json()["goal_id"] == "demo"
    closed = ["goal", "close", *root, "--goal-id", "other", "--outcome", "abandoned"]
    assert run_cli([*closed, "--reason", "r"]).exit_code == 0
    assert run_cli(["next", *root, "--json"]).json()["goal_id"] == "demo"


def test_help_names_the_environment_variables() -> None:
    text = run_cli(["todo", "claim", "--help"]).stdout
    for var in ("LOOPX_GOAL_ID", "LOOPX_AGENT_ID", "LOOPX_SESSION_ID", "LOOPX_ROOT"):
        assert f"env var: {var}" in " ".join(text.split()), var
    assert "--json" in text


def test_json_is_an_alias_of_format_json(project: Path) -> None:
    r = ["--root", str(project), "--goal-id", "demo"]
    assert (
        run_cli(["status", *r, "--json"]).stdout
        == run_cli(["status", *r, "--format", "json"]).stdout
    )
    missing = run_cli(["todo", "show", *r, "--todo-id", "nope", "--json"])
    assert missing.exit_code == 3 and missing.json()["error"]["code"] == "todo_not_found"


def _complete(project: Path, words: str) -> list[str]:
    env = {
        **os.environ,
        "_LOOPX_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split(" ")) - 1),
        "LOOPX_ROOT": str(project),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "loopx"], env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0 and proc.stderr == ""
    return [line.split(",", 1)[1] for line in proc.stdout.splitlines()]


def test_shell_completion_offers_goal_todo_and_gate_ids(project: Path) -> None:
    r = ["--root", str(project), "--goal-id", "demo"]
    for todo_id in ("parse", "print", "render"):
        assert run_cli(["todo", "add", *r, "--todo-id", todo_id, "--title", "T"]).exit_code == 0
    gate = ["gate", "open", *r, "--gate-id", "ship", "--question", "Q?", "--authority", "m"]
    assert run_cli(gate).exit_code == 0
    assert _complete(project, "loopx todo claim --goal-id ") == ["demo"]
    assert _complete(project, "loopx todo claim --goal-id demo --todo-id p") == [
        "parse",
        "print",
    ]
    assert _complete(project, "loopx todo show --todo-id r") == ["render"]  # the only goal
    assert _complete(project, "loopx gate resolve --gate-id ") == ["ship"]
    assert "status" in _complete(project, "loopx sta")


def test_colour_only_on_a_terminal_and_never_under_no_color(
    project: Path, monkeypatch: object
) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    os.environ.pop("NO_COLOR", None)
    assert paint("x", Tty(), fg="red") == "\x1b[31mx\x1b[0m"
    assert paint("x", io.StringIO(), fg="red") == "x"
    piped = run_cli(["todo", "show", "--root", str(project), "--todo-id", "nope"])
    assert "\x1b[" not in piped.stderr
    # a real terminal: `loopx status` and an error, through a pseudo-terminal
    assert _on_tty(project, ["status"], {}).count("\x1b[") >= 1
    assert "\x1b[" in _on_tty(project, ["todo", "show", "--todo-id", "nope"], {})
    assert "\x1b[" not in _on_tty(project, ["status"], {"NO_COLOR": "1"})


def _on_tty(project: Path, args: list[str], extra: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update({"LOOPX_ROOT": str(project), "LOOPX_NOW": T0, "TERM": "xterm", **extra})
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "loopx", *args],
            env=env,
            stdout=follower,
            stderr=follower,
            check=False,
            timeout=60,
        )
        os.close(follower)
        follower = -1
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert proc.returncode in (0, 3)
    return out.decode("utf-8", "replace")


def test_handoff_inspect_without_an_agent_does_not_suggest_user(project: Path) -> None:
    r = ["--root", str(project), "--goal-id", "demo"]
    assert run_cli(["todo", "add", *r, "--todo-id", "a", "--title", "A"]).exit_code == 0
    assert run_cli(["todo", "claim", *r, "--todo-id", "a", "--agent-id", "agent-a"]).exit_code == 0
    note = ["--work-summary", "W", "--next-step", "N", "--workspace", str(project)]
    prepared = run_cli(["handoff", "prepare", *r, "--todo-id", "a", "--agent-id", "agent-a", *note])
    assert prepared.exit_code == 0, prepared.stderr
    inspect = ["handoff", "inspect", *r, "--todo-id", "a", "--workspace", str(project), "--json"]
    anonymous = run_cli(inspect).json()
    assert anonymous["reader"] is None
    command = anonymous["adoption"]["command"] or ""
    assert "user" not in command.split()
    named = run_cli([*inspect, "--agent-id", "agent-b"]).json()
    assert "--agent-id agent-b" in named["adoption"]["command"]
    by_env = run_cli(inspect, env={"LOOPX_AGENT_ID": "agent-c"}).json()
    assert by_env["reader"]["agent_id"] == "agent-c"
