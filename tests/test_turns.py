"""The turn journal: a bounded turn's phases beside its claim, settled into a run and its
quota spend exactly once; an interrupted turn (SIGKILL at a phase boundary, or in the middle
of settling) is found open by the next executor, resumed at its phase, and never spent twice."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from loopx.engine import evidence, goals, handoff, todos, turns
from loopx.engine.commands import (
    AddTodo,
    AdoptHandoff,
    BeginTurn,
    ClaimTodo,
    CreateGoal,
    EndTurn,
    PrepareHandoff,
    RecordPhase,
    RecordRun,
)
from loopx.engine.core import require_goal
from loopx.model.errors import LoopxError
from loopx.store.filestore import FileStore
from tests.conftest import T0, make_ctx

G = "ship"


@pytest.fixture
def goal(store: Any) -> Any:
    ctx = make_ctx(store)
    goals.create_goal(ctx, CreateGoal(goal_id=G, title="Ship", objective="Ship it"))
    todos.add_todo(ctx, AddTodo(goal_id=G, title="Add --format json", todo_id="json"))
    todos.claim_todo(ctx, ClaimTodo(goal_id=G, todo_id="json"))
    return store


def refused(store: Any, code: str, call: Any) -> LoopxError:
    before = store.raw(G)
    with pytest.raises(LoopxError) as caught:
        call()
    assert caught.value.code == code, caught.value.to_dict()
    assert store.raw(G) == before
    return caught.value


def test_a_turn_walks_its_phases_and_settles_once(goal: Any) -> None:
    ctx = make_ctx(goal)
    assert (
        turns.begin_turn(ctx, BeginTurn(goal_id=G, todo_id="json")).receipt["subject"] == "turn-1"
    )
    turns.record_phase(ctx, RecordPhase(goal_id=G, turn_id="turn-1", phase="execute"))
    turns.record_phase(
        ctx, RecordPhase(goal_id=G, turn_id="turn-1", phase="validate", ref="pytest: 12 passed")
    )
    turns.record_phase(
        ctx, RecordPhase(goal_id=G, turn_id="turn-1", phase="write_back", ref="pushed origin/json")
    )
    state = require_goal(goal, G)
    entry = state.turns["turn-1"]
    assert entry["status"] == "open" and entry["phase"] == "write_back"
    assert [p["phase"] for p in entry["phases"]] == ["claim", "execute", "validate", "write_back"]
    assert state.quota_spent == 0 and not state.runs

    settled = turns.end_turn(
        ctx, EndTurn(goal_id=G, turn_id="turn-1", outcome="progress", quota_spent=2)
    )
    assert settled.receipt["subject"] == "turn-1"
    state = require_goal(goal, G)
    entry = state.turns["turn-1"]
    assert entry["status"] == "settled" and entry["phase"] == "settle"
    assert entry["run_id"] == "run-1" and state.runs["run-1"].quota_spent == 2
    assert [p["phase"] for p in entry["phases"]][-2:] == ["spend", "settle"]
    assert state.quota_spent == 2

    refused(
        goal,
        "turn_settled",
        lambda: turns.end_turn(ctx, EndTurn(goal_id=G, turn_id="turn-1", outcome="progress")),
    )
    refused(
        goal,
        "turn_settled",
        lambda: turns.record_phase(ctx, RecordPhase(goal_id=G, turn_id="turn-1", phase="execute")),
    )
    assert require_goal(goal, G).quota_spent == 2


def test_the_journal_authorises_nothing_and_keeps_its_order(goal: Any) -> None:
    ctx = make_ctx(goal)
    todos.add_todo(ctx, AddTodo(goal_id=G, title="Unclaimed", todo_id="free"))
    refused(
        goal, "not_claimed", lambda: turns.begin_turn(ctx, BeginTurn(goal_id=G, todo_id="free"))
    )
    refused(
        goal, "todo_not_found", lambda: turns.begin_turn(ctx, BeginTurn(goal_id=G, todo_id="ghost"))
    )
    turns.begin_turn(ctx, BeginTurn(goal_id=G, todo_id="json"))
    refused(goal, "turn_open", lambda: turns.begin_turn(ctx, BeginTurn(goal_id=G, todo_id="json")))
    turns.record_phase(ctx, RecordPhase(goal_id=G, turn_id="turn-1", phase="validate"))
    refused(
        goal,
        "turn_phase_order",
        lambda: turns.record_phase(ctx, RecordPhase(goal_id=G, turn_id="turn-1", phase="execute")),
    )
    refused(
        goal,
        "invalid_phase",
        lambda: turns.record_phase(ctx, RecordPhase(goal_id=G, turn_id="turn-1", phase="settle")),
    )
    refused(
        goal,
        "turn_not_found",
        lambda: turns.record_phase(ctx, RecordPhase(goal_id=G, turn_id="nope", phase="execute")),
    )
    refused(
        goal,
        "invalid_outcome",
        lambda: turns.end_turn(ctx, EndTurn(goal_id=G, turn_id="turn-1", outcome="great")),
    )
    # Spending outside the open turn would spend twice: refused with its own code.
    refused(
        goal,
        "turn_unsettled",
        lambda: evidence.record_run(ctx, RecordRun(goal_id=G, outcome="progress", todo_id="json")),
    )
    # A phase reached changes no goal truth: the committed projections' time stays put.
    state = require_goal(goal, G)
    assert state.changed_at < state.updated_at


def test_another_agent_settles_only_after_adopting_by_handoff(goal: Any) -> None:
    ctx_a, ctx_b = make_ctx(goal), make_ctx(goal, agent="agent-b", session="s9")
    turns.begin_turn(ctx_a, BeginTurn(goal_id=G, todo_id="json"))
    turns.record_phase(
        ctx_a, RecordPhase(goal_id=G, turn_id="turn-1", phase="write_back", ref="pushed")
    )
    refused(
        goal,
        "turn_owner_mismatch",
        lambda: turns.end_turn(ctx_b, EndTurn(goal_id=G, turn_id="turn-1", outcome="progress")),
    )
    handoff.prepare_handoff(
        ctx_a,
        PrepareHandoff(
            goal_id=G,
            todo_id="json",
            note={"work_summary": "pushed, not recorded"},
            target_agent_id="agent-b",
        ),
    )
    handoff.adopt_handoff(ctx_b, AdoptHandoff(goal_id=G, todo_id="json"))
    turns.end_turn(ctx_b, EndTurn(goal_id=G, turn_id="turn-1", outcome="completed"))
    state = require_goal(goal, G)
    assert state.turns["turn-1"]["status"] == "settled" and state.quota_spent == 1


# -- real interruption: the CLI in subprocesses, SIGKILL at every phase boundary -------------

# The driver is one agent turn as a script of real `loopx` calls; after each it prints the
# boundary it reached and waits, so the test can SIGKILL it (and its process group) exactly
# there. `end` settles with a fixed operation id, as a careful client does.
DRIVER = """
set -e
loopx() { "$PY" -m loopx "$@" --root "$ROOT"; }
loopx todo claim --goal-id ship --todo-id "$TODO" >/dev/null
loopx turn begin --goal-id ship --todo-id "$TODO" --turn-id "t-$TODO" >/dev/null
echo claim; read -r _
loopx turn phase --goal-id ship --turn-id "t-$TODO" --phase execute >/dev/null
echo execute; read -r _
loopx turn phase --goal-id ship --turn-id "t-$TODO" --phase validate --ref "12 passed" >/dev/null
echo validate; read -r _
loopx turn phase --goal-id ship --turn-id "t-$TODO" --phase write_back --ref "pushed" >/dev/null
echo write_back; read -r _
loopx turn end --goal-id ship --turn-id "t-$TODO" --outcome progress \
    --operation-id "end-$TODO" >/dev/null
echo settle; read -r _
"""
BOUNDARIES = ("claim", "execute", "validate", "write_back", "settle")


def _env(agent: str, session: str) -> dict[str, str]:
    env = {**os.environ, "LOOPX_NOW": T0, "LOOPX_AGENT_ID": agent, "LOOPX_SESSION_ID": session}
    env.pop("LOOPX_ROOT", None)
    return env


def _loopx(root: Path, *args: str, session: str = "s2") -> Any:
    return subprocess.run(
        [sys.executable, "-m", "loopx", *args, "--root", str(root)],
        capture_output=True,
        text=True,
        env=_env("agent-a", session),
        timeout=120,
    )


def _resume(root: Path, todo: str, killed_at: str) -> None:
    """The next executor (same agent, a new session) finds the turn and finishes it."""
    listed = _loopx(root, "turn", "list", "--goal-id", "ship", "--open", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    open_ids = {t["turn_id"]: t for t in json.loads(listed.stdout)["turns"]}
    turn_id = f"t-{todo}"
    if killed_at == "settle":
        assert turn_id not in open_ids
    else:
        assert open_ids[turn_id]["phase"] == killed_at  # resumed at the phase it reached
        told = _loopx(root, "turn", "resume", "--goal-id", "ship", "--turn-id", turn_id)
        assert told.returncode == 0 and "re-inspect:" in told.stdout, told.stderr
        status = _loopx(root, "status", "--goal-id", "ship")
        assert f"open turn {turn_id} on {todo} by agent-a: at {killed_at}" in status.stdout
        for phase in BOUNDARIES[BOUNDARIES.index(killed_at) + 1 : 4]:
            done = _loopx(root, "turn", "phase", "--goal-id", "ship", "--turn-id", turn_id,
                          "--phase", phase)  # fmt: skip
            assert done.returncode == 0, done.stderr
    # Settling with the operation id the killed turn used: applied once, or replayed.
    end = _loopx(
        root, "turn", "end", "--goal-id", "ship", "--turn-id", turn_id, "--outcome", "progress",
        "--operation-id", f"end-{todo}", "--format", "json",
    )  # fmt: skip
    assert end.returncode == 0, end.stderr
    assert json.loads(end.stdout)["status"] == ("replayed" if killed_at == "settle" else "applied")
    again = _loopx(root, "turn", "end", "--goal-id", "ship", "--turn-id", turn_id,
                   "--outcome", "progress", "--format", "json")  # fmt: skip
    assert again.returncode == 4 and json.loads(again.stdout)["error"]["code"] == "turn_settled"


def _kill_group(proc: subprocess.Popen[str]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def test_sigkill_at_every_phase_boundary_resumes_and_never_spends_twice(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    store = FileStore(root)
    store.init()
    ctx = make_ctx(store)
    goals.create_goal(ctx, CreateGoal(goal_id=G, title="Ship", objective="Ship it"))
    for boundary in BOUNDARIES:
        todos.add_todo(
            ctx,
            AddTodo(
                goal_id=G, title=f"killed at {boundary}", todo_id=f"at-{boundary}".replace("_", "-")
            ),
        )

    for boundary in BOUNDARIES:
        todo = f"at-{boundary}".replace("_", "-")
        env = {**_env("agent-a", "s1"), "PY": sys.executable, "ROOT": str(root), "TODO": todo}
        with subprocess.Popen(
            ["bash", "-c", DRIVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        ) as driver:
            assert driver.stdin is not None and driver.stdout is not None
            while True:
                reached = driver.stdout.readline().strip()
                assert reached, "the driver stopped before the boundary"
                if reached == boundary:
                    _kill_group(driver)  # SIGKILL, mid-turn: no cleanup runs
                    break
                driver.stdin.write("\n")
                driver.stdin.flush()
        _resume(root, todo, boundary)

    state = require_goal(FileStore(root), G)
    assert all(t["status"] == "settled" for t in state.turns.values())
    assert len(state.turns) == len(BOUNDARIES)
    per_todo = sorted(r.todo_id or "" for r in state.runs.values())
    assert per_todo == sorted(f"at-{b}".replace("_", "-") for b in BOUNDARIES)  # one run each
    assert state.quota_spent == len(BOUNDARIES)  # never spent twice
    assert FileStore(root).verify(G).ok


def test_sigkill_in_the_middle_of_settling_spends_at_most_once(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    store = FileStore(root)
    store.init()
    ctx = make_ctx(store)
    goals.create_goal(ctx, CreateGoal(goal_id=G, title="Ship", objective="Ship it"))
    rng = random.Random(16)
    rounds = 4
    for n in range(rounds):
        todo = f"mid-{n}"
        todos.add_todo(ctx, AddTodo(goal_id=G, title=todo, todo_id=todo))
        todos.claim_todo(ctx, ClaimTodo(goal_id=G, todo_id=todo))
        turns.begin_turn(ctx, BeginTurn(goal_id=G, todo_id=todo, turn_id=f"t-{todo}"))
        turns.record_phase(ctx, RecordPhase(goal_id=G, turn_id=f"t-{todo}", phase="write_back"))
        with subprocess.Popen(
            [sys.executable, "-m", "loopx", "turn", "end", "--goal-id", G, "--turn-id",
             f"t-{todo}", "--outcome", "progress", "--operation-id", f"end-{todo}",
             "--root", str(root)],
            env=_env("agent-a", "s1"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        ) as proc:  # fmt: skip
            time.sleep(rng.uniform(0.05, 0.6))  # before, during or after its append
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        end = _loopx(
            root, "turn", "end", "--goal-id", G, "--turn-id", f"t-{todo}", "--outcome",
            "progress", "--operation-id", f"end-{todo}", "--format", "json",
        )  # fmt: skip
        assert end.returncode == 0, end.stderr
    state = require_goal(FileStore(root), G)
    assert state.quota_spent == rounds and len(state.runs) == rounds
    assert all(t["status"] == "settled" for t in state.turns.values())
    assert FileStore(root).verify(G).ok


def test_prime_and_the_handoff_digest_name_the_open_turn_and_what_to_re_inspect(
    tmp_path: Path,
) -> None:
    from tests.conftest import run_cli

    root = tmp_path / "proj"
    store = FileStore(root)
    store.init()
    ctx = make_ctx(store)
    goals.create_goal(ctx, CreateGoal(goal_id=G, title="Ship", objective="Ship it"))
    todos.add_todo(ctx, AddTodo(goal_id=G, title="Add --format json", todo_id="json"))
    todos.claim_todo(ctx, ClaimTodo(goal_id=G, todo_id="json"))
    turns.begin_turn(ctx, BeginTurn(goal_id=G, todo_id="json"))
    turns.record_phase(
        ctx, RecordPhase(goal_id=G, turn_id="turn-1", phase="write_back", ref="pushed origin/json")
    )
    handoff.prepare_handoff(
        ctx,
        PrepareHandoff(
            goal_id=G, todo_id="json", note={"work_summary": "pushed, not yet recorded"}
        ),
    )

    def cli(*args: str) -> Any:
        return run_cli([*args, "--root", str(root)], env={"LOOPX_NOW": "2026-03-01T13:00:00Z"})

    primed = cli("prime", "--goal-id", G, "--agent-id", "agent-a", "--format", "json")
    assert primed.exit_code == 0, primed.stderr
    claim = primed.json()["claims"][0]
    assert claim["turn"]["turn_id"] == "turn-1" and claim["turn"]["phase"] == "write_back"
    text = cli("prime", "--goal-id", G, "--agent-id", "agent-a").stdout
    assert "stopped at write_back" in text and "loopx turn resume" in text
    assert "check the remote" in text

    digest = cli(
        "handoff", "inspect", "--goal-id", G, "--todo-id", "json", "--workspace", str(tmp_path),
        "--format", "json",
    )  # fmt: skip
    assert digest.exit_code == 0, digest.stderr
    codes = {r["code"]: r["message"] for r in digest.json()["reinspect"]}
    assert "turn_open" in codes and "stopped at write_back" in codes["turn_open"]

    listed = cli("turn", "list", "--goal-id", G, "--open", "--format", "json").json()
    assert [(t["turn_id"], t["phase"], t["age_seconds"]) for t in listed["turns"]] == [
        ("turn-1", "write_back", 3360)  # its last phase was recorded at 12:04 (test clock)
    ]
