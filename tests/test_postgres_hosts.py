"""Several "hosts" on one database: processes with their own project folders (and snapshot
caches) sharing one PostgreSQL store, racing for the same goal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopx.store.postgres import PostgresStore
from loopx.store.select import record
from tests.conftest import T0, run_cli

WORKER = Path(__file__).with_name("pg_worker.py")
REPO = Path(__file__).resolve().parent.parent


def host(tmp_path: Path, name: str, url: str) -> Path:
    root = tmp_path / name
    (root / ".loopx").mkdir(parents=True)
    record(root, url)
    return root


def env(root: Path, agent: str, now: str = T0, session: str | None = None) -> dict[str, str]:
    return {
        **os.environ,
        "LOOPX_NOW": now,
        "LOOPX_ROOT": str(root),
        "LOOPX_AGENT_ID": agent,
        "LOOPX_SESSION_ID": session or f"{agent}-session",
    }


def race(hosts: list[tuple[Path, dict[str, str]]], *args: str) -> list[int]:
    """Run the same loopx command from every host at once; return the exit codes."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "loopx", *args],
            env=e,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _, e in hosts
    ]
    codes = []
    for p in procs:
        _, err = p.communicate()
        assert "Traceback" not in err
        codes.append(p.returncode)
    return codes


def cli(root: Path, *args: str, agent: str = "lead", now: str = T0) -> None:
    result = run_cli(
        [*args, "--root", str(root)],
        env={"LOOPX_NOW": now, "LOOPX_AGENT_ID": agent, "LOOPX_SESSION_ID": f"{agent}-session"},
    )
    assert result.exit_code == 0, result.stderr


def ledger(url: str, goal: str = "g") -> tuple[list[dict[str, object]], bool]:
    with PostgresStore(url) as store:
        return store.read(goal).events, store.verify(goal).ok


def test_eight_hosts_append_2000_events_gap_free(tmp_path: Path, pg_empty: str) -> None:
    lead = host(tmp_path, "lead", pg_empty)
    cli(lead, "goal", "create", "--goal-id", "g", "--title", "T", "--objective", "O")
    hosts = [host(tmp_path, f"host-{i}", pg_empty) for i in range(8)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(root), "g", f"agent-{i}", "250"],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, root in enumerate(hosts)
    ]
    for root in hosts:
        (root / "go").touch()
    results = [p.communicate() for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [err for _, err in results]
    assert [int(out) for out, _ in results] == [250] * 8
    events, ok = ledger(pg_empty)
    assert ok, "the hash chain holds"
    assert [e["seq"] for e in events] == list(range(1, 2002)), "gap-free: goal + 2,000 notes"
    notes = [e for e in events if e["type"] == "note.added"]
    assert len(notes) == 2000 and len({e["operation_id"] for e in notes}) == 2000
    for i in range(8):  # each host's own writes landed in its own order
        mine = [e["operation_id"] for e in notes if e["actor"]["agent_id"] == f"agent-{i}"]
        assert mine == [f"agent-{i}-{n}" for n in range(250)]


@pytest.fixture
def claimable(tmp_path: Path, pg_empty: str) -> Path:
    lead = host(tmp_path, "lead", pg_empty)
    cli(lead, "goal", "create", "--goal-id", "g", "--title", "T", "--objective", "O")
    cli(lead, "todo", "add", "--goal-id", "g", "--title", "the one", "--todo-id", "one")
    return lead


def test_a_revision_guarded_claim_race_has_one_winner(
    tmp_path: Path, pg_empty: str, claimable: Path
) -> None:
    hosts = [(host(tmp_path, f"h{i}", pg_empty), {}) for i in range(4)]
    runs = [(root, env(root, f"agent-{i}")) for i, (root, _) in enumerate(hosts)]
    codes = race(
        runs, "todo", "claim", "--goal-id", "g", "--todo-id", "one", "--expected-revision", "2"
    )
    assert sorted(codes) == [0, 4, 4, 4]
    events, ok = ledger(pg_empty)
    assert ok and [e["type"] for e in events].count("todo.claimed") == 1


def test_an_expired_lease_is_taken_by_exactly_one_host(
    tmp_path: Path, pg_empty: str, claimable: Path
) -> None:
    cli(
        claimable,
        "todo",
        "claim",
        "--goal-id",
        "g",
        "--todo-id",
        "one",
        "--lease-seconds",
        "60",
        agent="agent-old",
    )
    later = "2026-03-01T13:00:00Z"  # the lease ran out an hour ago
    runs = [
        (root, env(root, f"agent-{i}", now=later))
        for i, root in enumerate(host(tmp_path, f"h{i}", pg_empty) for i in range(4))
    ]
    codes = race(runs, "todo", "claim", "--goal-id", "g", "--todo-id", "one")
    assert sorted(codes) == [0, 4, 4, 4]
    events, ok = ledger(pg_empty)
    claims = [e for e in events if e["type"] == "todo.claimed"]
    assert ok and len(claims) == 2
    assert claims[-1]["actor"]["agent_id"] != "agent-old"


def test_a_handoff_is_adopted_by_exactly_one_host(
    tmp_path: Path, pg_empty: str, claimable: Path
) -> None:
    cli(claimable, "todo", "claim", "--goal-id", "g", "--todo-id", "one", agent="agent-a")
    cli(
        claimable,
        *("handoff", "prepare", "--goal-id", "g", "--todo-id", "one"),
        *("--work-summary", "Half done", "--next-step", "Finish it"),
        *("--target-agent-id", "agent-b", "--workspace", str(claimable)),
        agent="agent-a",
    )
    runs = [
        (root, env(root, "agent-b", session=f"laptop-{i}"))
        for i, root in enumerate(host(tmp_path, f"h{i}", pg_empty) for i in range(3))
    ]
    codes = race(
        runs,
        *("handoff", "adopt", "--goal-id", "g", "--todo-id", "one"),
        *("--target-agent-id", "agent-b", "--workspace", str(claimable)),
    )
    assert codes.count(0) == 1 and all(c in (3, 4) for c in codes if c), codes
    events, ok = ledger(pg_empty)
    assert ok and [e["type"] for e in events].count("handoff.adopted") == 1
