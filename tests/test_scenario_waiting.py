"""The classic waiting scenario, end to end through the CLI in a real git repository: add
`--format json` to a CLI; tests pass at a commit (evidence); a monitor waits for CI with a
backoff, observed unchanged twice (the goal `waiting` with its next wake in between), then
changed (passed); a gate asks the maintainer whether `error_code` is a stable field, and asks
again on its time; a turn is killed after write back and the next session resumes it there."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import T0


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.org",
           "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.org"}  # fmt: skip
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_classic_waiting_scenario(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "cli.py").write_text("def main(fmt='text'):\n    return fmt\n")
    _git(repo, "add", "cli.py")
    _git(repo, "commit", "-qm", "add --format json")
    head = _git(repo, "rev-parse", "HEAD")

    def loopx(*args: str, now: str = T0, agent: str = "agent-a", session: str = "s1") -> Any:
        env = {**os.environ, "LOOPX_NOW": now, "LOOPX_AGENT_ID": agent,
               "LOOPX_SESSION_ID": session}  # fmt: skip
        env.pop("LOOPX_ROOT", None)
        done = subprocess.run(
            [sys.executable, "-m", "loopx", *args, "--root", str(repo)],
            capture_output=True, text=True, env=env, cwd=repo, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, (args, done.stderr)
        return json.loads(done.stdout) if "json" in args else done.stdout

    g = ["--goal-id", "fmt"]
    loopx("init")
    loopx("goal", "create", *g, "--title", "Add --format json", "--objective", "JSON output")
    loopx("todo", "add", *g, "--todo-id", "impl", "--title", "Add --format json to the CLI")
    loopx("todo", "claim", *g, "--todo-id", "impl")
    loopx("evidence", "add", *g, "--kind", "test", "--summary", "tests pass", "--todo-id", "impl",
          "--workspace", str(repo))  # fmt: skip
    loopx("todo", "complete", *g, "--todo-id", "impl", "--evidence-id", "ev-1")
    loopx("monitor", "add", *g, "--todo-id", "ci", "--title", "CI on the branch", "--watch",
          f"ci:github/actions/{head[:7]}", "--every", "600", "--backoff", "exponential",
          "--cap", "3600")  # fmt: skip

    def attention(now: str) -> dict[str, Any]:
        status = loopx("status", *g, "--format", "json", now=now)
        return status["goals"][0]["attention"]  # type: ignore[no-any-return]

    assert attention(T0)["state"] == "ready_for_agent"  # due at once
    loopx("monitor", "observe", *g, "--todo-id", "ci", "--result", "unchanged",
          "--summary", "queued")  # fmt: skip
    waiting = attention("2026-03-01T12:05:00Z")
    assert waiting["state"] == "waiting"
    assert waiting["next_wake"] == {"at": "2026-03-01T12:10:00Z", "todo_id": "ci"}
    loopx("monitor", "observe", *g, "--todo-id", "ci", "--result", "unchanged",
          "--summary", "running", now="2026-03-01T12:10:00Z")  # fmt: skip
    assert attention("2026-03-01T12:20:00Z")["next_wake"]["at"] == "2026-03-01T12:30:00Z"
    woke = loopx("wake", "--format", "json", now="2026-03-01T12:30:00Z")
    assert [d["todo_id"] for d in woke["due"]] == ["ci"]
    loopx("monitor", "observe", *g, "--todo-id", "ci", "--result", "changed", "--then",
          "successor", "--successor-id", "release", "--successor-title", "Release it",
          "--summary", "CI passed", "--revision", head, now="2026-03-01T12:30:00Z")  # fmt: skip

    loopx("gate", "open", *g, "--gate-id", "stable", "--question",
          "Is error_code a stable field?", "--authority", "maintainer", "--blocks", "release",
          "--ask-again-at", "2026-03-02T09:00:00Z", now="2026-03-01T12:31:00Z")  # fmt: skip
    asked = attention("2026-03-01T13:00:00Z")
    assert asked["state"] == "needs_user" and asked["gate_ids"] == ["stable"]
    again = loopx("wake", "--format", "json", now="2026-03-02T09:00:00Z")
    assert [a["gate_id"] for a in again["gates_due"]] == ["stable"]
    loopx("gate", "resolve", *g, "--gate-id", "stable", "--resolution", "approve",
          agent="maintainer", now="2026-03-02T09:30:00Z")  # fmt: skip

    # The release turn, killed right after its write back.
    later = "2026-03-02T10:00:00Z"
    loopx("todo", "claim", *g, "--todo-id", "release", now=later)
    loopx("turn", "begin", *g, "--todo-id", "release", "--turn-id", "t1", now=later)
    script = (
        f'"{sys.executable}" -m loopx turn phase --goal-id fmt --turn-id t1 --phase write_back '
        f'--ref "pushed tag v1" --root "{repo}" >/dev/null && echo write_back && sleep 60'
    )
    env = {**os.environ, "LOOPX_NOW": later, "LOOPX_AGENT_ID": "agent-a"}
    with subprocess.Popen(
        ["bash", "-c", script], stdout=subprocess.PIPE, text=True, env=env,
        start_new_session=True,
    ) as turn:  # fmt: skip
        assert turn.stdout is not None and turn.stdout.readline().strip() == "write_back"
        os.killpg(turn.pid, signal.SIGKILL)
        turn.wait(timeout=30)
    resumed = loopx("turn", "resume", *g, "--turn-id", "t1", "--format", "json",
                    now="2026-03-02T10:05:00Z", session="s2")  # fmt: skip
    assert resumed["phase"] == "write_back" and resumed["status"] == "open"
    assert "check the remote" in resumed["resume"]
    loopx("turn", "end", *g, "--turn-id", "t1", "--outcome", "completed",
          "--operation-id", "end-t1", now="2026-03-02T10:06:00Z", session="s2")  # fmt: skip
    status = loopx("status", *g, "--format", "json", now="2026-03-02T10:06:00Z")["goals"][0]
    assert status["quota"]["spent"] == 1 and status["open_turns"] == []
