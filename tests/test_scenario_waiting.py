"""The classic waiting scenario, end to end through the CLI in a real git repository: add
`--format json` to a CLI; tests pass at a commit (evidence); a monitor waits for CI with a
backoff, observed unchanged twice (the goal `waiting` with its next wake in between), then
changed (passed); a gate asks the maintainer whether `error_code` is a stable field, is
deferred to a date (the goal `waiting` for it) and asked again then; a turn is killed after
write back, and the next agent finds it, adopts its todo by handoff and settles it once.

At each step the public status JSON, the public goal page and the handoff digest (the live
`loopx handoff inspect` of the todo with the latest note) are compared byte for byte with
the golden files under `tests/golden/scenario_waiting/<step>/`. Regenerate them, after a
change to the output, only with `scripts/regenerate-scenario-goldens` (which runs this test
with `LOOPX_REGEN_GOLDEN=1`), and review the diff.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import T0

GOLDEN = Path(__file__).parent / "golden" / "scenario_waiting"
REGEN = os.environ.get("LOOPX_REGEN_GOLDEN") == "1"
# Fixed identities and dates: the commit, and so every artifact naming it, is the same in
# every run.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Dev",
    "GIT_AUTHOR_EMAIL": "dev@example.invalid",
    "GIT_COMMITTER_NAME": "Dev",
    "GIT_COMMITTER_EMAIL": "dev@example.invalid",
    "GIT_AUTHOR_DATE": "2026-03-01T11:00:00Z",
    "GIT_COMMITTER_DATE": "2026-03-01T11:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


# The writes of the scenario: each is given an operation id, so the ledger (and its hashes,
# which the status JSON names) is the same in every run.
WRITES = {
    ("goal", "create"), ("todo", "add"), ("todo", "claim"), ("todo", "complete"),
    ("evidence", "add"), ("handoff", "prepare"), ("monitor", "add"), ("monitor", "observe"),
    ("gate", "open"), ("gate", "resolve"), ("turn", "begin"), ("turn", "end"),
    ("handoff", "adopt"),
}  # fmt: skip


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPX_", "GIT_"))}
    return {**env, "HOME": str(home), **GIT_ENV, **extra}


def _git(repo: Path, home: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=_env(home), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


class Goldens:
    """The outputs of each step, compared with (or, regenerating, written to) the goldens."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.steps: list[str] = []
        self.failures: list[str] = []

    def check(self, step: str, files: dict[str, bytes]) -> None:
        self.steps.append(step)
        folder = GOLDEN / step
        if REGEN:
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            for name, data in files.items():
                (folder / name).write_bytes(data)
            return
        on_disk = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        if on_disk != sorted(files):
            self.failures.append(f"{step}: golden files {on_disk}, made {sorted(files)}")
        for name, data in sorted(files.items()):
            path = folder / name
            want = path.read_bytes() if path.is_file() else b""
            if want != data:
                diff = difflib.unified_diff(
                    want.decode("utf-8", "replace").splitlines(),
                    data.decode("utf-8", "replace").splitlines(),
                    f"golden/{step}/{name}",
                    f"made/{step}/{name}",
                    lineterm="",
                )
                self.failures.append("\n".join(list(diff)[:60]))

    def finish(self) -> None:
        if REGEN:
            for stale in GOLDEN.iterdir():
                if stale.name not in self.steps:
                    shutil.rmtree(stale)
            return
        made = sorted(self.steps)
        assert sorted(p.name for p in GOLDEN.iterdir()) == made, "steps differ from goldens"
        assert not self.failures, (
            "the scenario's output differs from its goldens (regenerate on purpose with "
            "scripts/regenerate-scenario-goldens):\n" + "\n\n".join(self.failures)
        )


def test_the_classic_waiting_scenario(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    repo.mkdir()
    home.mkdir()
    _git(repo, home, "init", "-q", "-b", "main")
    (repo / "cli.py").write_text("def main(fmt='text'):\n    return fmt\n")
    _git(repo, home, "add", "cli.py")
    _git(repo, home, "commit", "-qm", "add --format json")
    head = _git(repo, home, "rev-parse", "HEAD")
    goldens = Goldens(tmp_path)

    ops = iter(range(1, 1000))

    def loopx(
        *args: str, now: str = T0, agent: str = "agent-a", session: str = "s1", code: int = 0
    ) -> Any:
        """The CLI's answer (JSON when asked for); `code`: the exit code it must end with."""
        env = _env(home, LOOPX_NOW=now, LOOPX_AGENT_ID=agent, LOOPX_SESSION_ID=session)
        if args[:2] in WRITES and "--operation-id" not in args:
            args = (*args, "--operation-id", f"op-{next(ops)}")  # a random one by default
        done = subprocess.run(
            [sys.executable, "-m", "loopx", *args, "--root", str(repo)],
            capture_output=True, text=True, env=env, cwd=repo, timeout=120,
        )  # fmt: skip
        assert done.returncode == code, (args, done.stderr)
        return json.loads(done.stdout) if "json" in args else done.stdout

    def capture(step: str, now: str, todo_id: str) -> None:
        """The step's public status JSON and goal page (a build, as committed) and the
        handoff digest of `todo_id` (live, against the checkout, as the next agent reads it)."""
        out = tmp_path / "site"
        loopx("build", "--out", str(out), "--audience", "public", "--validate", now=now)
        goal = out / "public" / "goals" / "fmt"
        digest = loopx("handoff", "inspect", *g, "--todo-id", todo_id, "--workspace", str(repo),
                       "--format", "digest", now=now, agent="agent-b", session="s2")  # fmt: skip
        goldens.check(
            step,
            {
                "status.json": (goal / "status.json").read_bytes(),
                "index.html": (goal / "index.html").read_bytes(),
                "handoff.md": digest.encode("utf-8"),
            },
        )

    g = ["--goal-id", "fmt"]
    public = ["--visibility", "public"]
    loopx("init")
    loopx("goal", "create", *g, "--title", "Add --format json", "--objective", "JSON output",
          *public)  # fmt: skip
    loopx("todo", "add", *g, "--todo-id", "impl", "--title", "Add --format json to the CLI",
          *public)  # fmt: skip
    loopx("todo", "claim", *g, "--todo-id", "impl")
    loopx("evidence", "add", *g, "--kind", "test", "--summary", "tests pass", "--todo-id", "impl",
          "--workspace", str(repo), *public)  # fmt: skip
    loopx("handoff", "prepare", *g, "--todo-id", "impl", "--work-summary",
          "--format json is in; the tests pass. CI runs on the branch: the monitor ci watches it.",
          "--next-step", "Observe ci at its next wake", "--workspace", str(repo))  # fmt: skip
    loopx("todo", "complete", *g, "--todo-id", "impl", "--evidence-id", "ev-1")
    loopx("monitor", "add", *g, "--todo-id", "ci", "--title", "CI on the branch", "--watch",
          f"ci:github/actions/{head[:7]}", "--every", "600", "--backoff", "exponential",
          "--cap", "3600", *public)  # fmt: skip

    def attention(now: str) -> dict[str, Any]:
        status = loopx("status", *g, "--format", "json", now=now)
        return status["goals"][0]["attention"]  # type: ignore[no-any-return]

    assert attention(T0)["state"] == "ready_for_agent"  # due at once
    capture("01-tests-pass", T0, "impl")

    loopx("monitor", "observe", *g, "--todo-id", "ci", "--result", "unchanged",
          "--summary", "queued")  # fmt: skip
    waiting = attention("2026-03-01T12:05:00Z")
    assert waiting["state"] == "waiting"
    assert waiting["next_wake"] == {"at": "2026-03-01T12:10:00Z", "todo_id": "ci"}
    capture("02-ci-unchanged", "2026-03-01T12:05:00Z", "impl")

    loopx("monitor", "observe", *g, "--todo-id", "ci", "--result", "unchanged",
          "--summary", "running", now="2026-03-01T12:10:00Z")  # fmt: skip
    assert attention("2026-03-01T12:20:00Z")["next_wake"]["at"] == "2026-03-01T12:30:00Z"
    capture("03-ci-unchanged-again", "2026-03-01T12:20:00Z", "impl")

    woke = loopx("wake", "--format", "json", now="2026-03-01T12:30:00Z")
    assert [d["todo_id"] for d in woke["due"]] == ["ci"]
    loopx("monitor", "observe", *g, "--todo-id", "ci", "--result", "changed", "--then",
          "successor", "--successor-id", "release", "--successor-title", "Release it",
          "--summary", "CI passed", "--revision", head, now="2026-03-01T12:30:00Z")  # fmt: skip
    assert attention("2026-03-01T12:30:00Z")["state"] == "ready_for_agent"
    capture("04-ci-passed", "2026-03-01T12:30:00Z", "impl")

    loopx("gate", "open", *g, "--gate-id", "stable", "--question",
          "Is error_code a stable field?", "--authority", "maintainer", "--blocks", "release",
          *public, now="2026-03-01T12:31:00Z")  # fmt: skip
    asked = attention("2026-03-01T13:00:00Z")
    assert asked["state"] == "needs_user" and asked["gate_ids"] == ["stable"]
    capture("05-gate-asked", "2026-03-01T13:00:00Z", "impl")

    loopx("gate", "resolve", *g, "--gate-id", "stable", "--resolution", "defer",
          "--ask-again-at", "2026-03-02T09:00:00Z", "--rationale", "after the API review",
          agent="maintainer", now="2026-03-01T13:30:00Z")  # fmt: skip
    deferred = attention("2026-03-01T18:00:00Z")
    assert deferred["state"] == "waiting"
    assert deferred["next_wake"] == {"at": "2026-03-02T09:00:00Z", "gate_id": "stable"}
    capture("06-gate-deferred", "2026-03-01T18:00:00Z", "impl")

    again = loopx("wake", "--format", "json", now="2026-03-02T09:00:00Z")
    assert [a["gate_id"] for a in again["gates_due"]] == ["stable"]
    assert attention("2026-03-02T09:00:00Z")["state"] == "needs_user"
    loopx("gate", "resolve", *g, "--gate-id", "stable", "--resolution", "approve",
          agent="maintainer", now="2026-03-02T09:30:00Z")  # fmt: skip
    capture("07-gate-approved", "2026-03-02T09:30:00Z", "impl")

    # The release turn, killed right after its write back.
    later = "2026-03-02T10:00:00Z"
    loopx("todo", "claim", *g, "--todo-id", "release", now=later)
    loopx("turn", "begin", *g, "--todo-id", "release", "--turn-id", "t1", now=later)
    loopx("handoff", "prepare", *g, "--todo-id", "release", "--work-summary",
          "Tagging v1 and pushing the tag", "--next-step", "Check the tag is on the remote",
          "--workspace", str(repo), now=later)  # fmt: skip
    script = (
        f'"{sys.executable}" -m loopx turn phase --goal-id fmt --turn-id t1 --phase write_back '
        f'--ref "pushed tag v1" --operation-id phase-t1 --root "{repo}" >/dev/null '
        "&& echo write_back && sleep 60"
    )
    env = _env(home, LOOPX_NOW=later, LOOPX_AGENT_ID="agent-a")
    with subprocess.Popen(
        ["bash", "-c", script], stdout=subprocess.PIPE, text=True, env=env,
        start_new_session=True,
    ) as turn:  # fmt: skip
        assert turn.stdout is not None and turn.stdout.readline().strip() == "write_back"
        os.killpg(turn.pid, signal.SIGKILL)
        turn.wait(timeout=30)
    # The next agent finds the open turn, but may settle it only after adopting its todo.
    b = {"agent": "agent-b", "session": "s2"}
    resumed = loopx("turn", "resume", *g, "--turn-id", "t1", "--format", "json",
                    now="2026-03-02T10:05:00Z", **b)  # fmt: skip
    assert resumed["phase"] == "write_back" and resumed["status"] == "open"
    assert "check the remote" in resumed["resume"]
    capture("08-turn-killed", "2026-03-02T10:05:00Z", "release")
    assert "turn open" in (GOLDEN / "08-turn-killed" / "handoff.md").read_text()
    taken = loopx("turn", "end", *g, "--turn-id", "t1", "--outcome", "completed", "--format",
                  "json", now="2026-03-02T10:05:00Z", code=4, **b)  # fmt: skip
    assert taken["error"]["code"] == "turn_owner_mismatch"
    loopx("handoff", "adopt", *g, "--todo-id", "release", "--workspace", str(repo),
          now="2026-03-02T10:05:30Z", **b)  # fmt: skip
    loopx("turn", "end", *g, "--turn-id", "t1", "--outcome", "completed",
          "--operation-id", "end-t1", now="2026-03-02T10:06:00Z", **b)  # fmt: skip
    twice = loopx("turn", "end", *g, "--turn-id", "t1", "--outcome", "completed", "--format",
                  "json", now="2026-03-02T10:06:00Z", code=4, **b)  # fmt: skip
    assert twice["error"]["code"] == "turn_settled"
    status = loopx("status", *g, "--format", "json", now="2026-03-02T10:06:00Z")["goals"][0]
    assert status["quota"]["spent"] == 1 and status["open_turns"] == []
    capture("09-turn-settled", "2026-03-02T10:06:00Z", "release")
    goldens.finish()
