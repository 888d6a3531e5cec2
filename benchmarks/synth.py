"""Synthetic goals of any size, written fast and still a valid ledger.

`make_goal(root, "big", todos=5000, events=50000)` builds a realistic history — agents, todos
with dependencies and priorities, claims with heartbeats, evidence, runs, notes, gates opened
and resolved, completions, a few blocked and cancelled todos — and appends it through the
FileStore's own writer in one batch (one lock, one fsync), so every line carries the real
seq, chain and checksum. Each event's data is validated against its model first (on by
default), so the result replays exactly like one written by 50,000 governed writes, minus
the precondition checks, which the generator respects by construction.

Reusable by other benchmarks and tests; deterministic for a given seed.
"""

from __future__ import annotations

import gc
import hashlib
import random
from pathlib import Path
from typing import Any

from loopx.engine.clock import add_seconds
from loopx.model.errors import Conflict
from loopx.store.filestore import FileStore

START = "2026-01-05T08:00:00Z"
AGENTS = ("agent-claude", "agent-codex", "agent-gemini", "agent-local")
VERBS = ("Refactor", "Test", "Document", "Benchmark", "Review", "Port", "Fix", "Profile")
NOUNS = ("ledger reader", "claim leases", "gate resolver", "status view", "frontier", "CLI parser")


class _Writer:
    """Collects envelopes with the exact shape `engine.core.execute` produces."""

    def __init__(self, goal_id: str, start: str, step: int, validate: bool):
        self.goal_id = goal_id
        self.t = start
        self.step = step
        self.validate = validate
        self.envelopes: list[dict[str, Any]] = []
        if validate:
            from loopx.model.events import validate_data

            self._validate = validate_data

    def now(self) -> str:
        return self.t

    def add(
        self, event_type: str, data: dict[str, Any], agent: str = "maintainer", vis: str = "team"
    ) -> None:
        n = len(self.envelopes) + 1
        clean = {k: v for k, v in data.items() if v is not None}
        if self.validate:
            clean = self._validate(event_type, clean)
        op = f"synth-{n:06d}"
        self.envelopes.append(
            {
                "operation_id": op,
                "op_hash": hashlib.sha256(f"{self.goal_id}:{op}".encode()).hexdigest(),
                "type": event_type,
                "v": 1,
                "goal_id": self.goal_id,
                "actor": {"agent_id": agent, "session_id": f"{agent}-s{n // 500:03d}"},
                "recorded_at": self.t,
                "visibility": vis,
                "data": clean,
            }
        )
        self.t = add_seconds(self.t, self.step)


def make_goal(
    root: Path | str,
    goal_id: str = "bench",
    *,
    todos: int = 5000,
    events: int = 50000,
    seed: int = 0,
    start: str = START,
    step: int = 1,
    validate: bool = True,
) -> dict[str, Any]:
    """Write a goal of `todos` todos and exactly `events` events under `root` (initialised if
    needed). Returns a summary with the time of the last event (`end`) and the size.

    About 60% of the todos end done (every 50th cancelled), a band of 39 is claimed under
    live 30-day leases, one is blocked, one is held by a pending gate; the rest are open.
    """
    store = FileStore(root)
    store.init()
    if store.exists(goal_id):
        raise Conflict("goal already exists", code="goal_exists", goal_id=goal_id)
    rng = random.Random(seed)
    w = _Writer(goal_id, start, step, validate)
    lease = 3600
    was_enabled = gc.isenabled()
    gc.disable()  # 50,000 small dicts: the collector would be most of the cost
    try:
        _history(w, rng, todos, events, lease)
    finally:
        if was_enabled:
            gc.enable()
    with store.writing(goal_id) as writer:
        writer.append(w.envelopes)
    return {
        "root": str(root),
        "goal_id": goal_id,
        "events": len(w.envelopes),
        "todos": todos,
        "end": w.now(),
        "bytes": store.ledger_path(goal_id).stat().st_size,
    }


def _history(w: _Writer, rng: random.Random, n_todos: int, n_events: int, lease: int) -> None:
    w.add(
        "goal.created",
        {
            "title": "Synthetic benchmark goal",
            "objective": "A long-running goal with thousands of todos, for measuring loopx.",
            "acceptance": ["Every todo done or cancelled", "Status answers on every turn"],
            "repository": "https://example.invalid/synthetic.git",
            "policy": {"lease_seconds": lease, "quota": 10 * n_events, "quota_unit": "runs"},
        },
    )
    for agent in AGENTS:
        w.add("agent.registered", {"agent_id": agent, "name": agent, "kind": "coding-agent"})

    ids = [f"t{i:05d}" for i in range(1, n_todos + 1)]
    for i, todo_id in enumerate(ids):
        deps: list[str] = []
        if i >= 10 and rng.random() < 0.6:
            window = ids[max(0, i - 40) : i]
            deps = sorted(set(rng.sample(window, k=rng.randint(1, 2))))
        w.add(
            "todo.added",
            {
                "todo_id": todo_id,
                "title": f"{rng.choice(VERBS)} {rng.choice(NOUNS)} (part {i + 1})",
                "role": "user" if rng.random() < 0.04 else "agent",
                "kind": "task",
                "priority": rng.randint(0, 4),
                "depends_on": deps,
                "acceptance": "Tests pass and the change is reviewed." if i % 7 == 0 else None,
            },
        )

    # Work through the first ~60% in order (dependencies point backwards, so each is ready
    # when its turn comes); the rest stays open, with a claimed band and a few blocked ones.
    # Every done todo costs claim + heartbeat(s) + evidence + run + complete; a cancelled one
    # note + run + cancel instead; every 500th is held by a gate (two more events). The
    # heartbeats absorb the rest of the event budget, so the count comes out exact.
    n_done = int(n_todos * 0.6)
    band = min(40, n_todos - n_done)
    gated = [i for i in range(n_done) if i % 500 == 250 and i % 50 != 49]
    budget = n_events - (5 + n_todos) - 3 - band - 2 * len(gated) - 5 * n_done
    if budget < 0:
        raise ValueError("too few events for this many todos")
    extra, leftover = divmod(budget, max(n_done, 1))
    for i in range(n_done):
        todo_id = ids[i]
        agent = AGENTS[i % len(AGENTS)]
        session = f"{agent}-s{i // 100:03d}"
        w.add(
            "todo.claimed",
            {
                "todo_id": todo_id,
                "agent_id": agent,
                "session_id": session,
                "lease_expires_at": add_seconds(w.now(), lease),
            },
            agent,
        )
        for _ in range(1 + extra + (1 if i < leftover else 0)):
            w.add(
                "todo.renewed",
                {"todo_id": todo_id, "lease_expires_at": add_seconds(w.now(), lease)},
                agent,
            )
        if i % 50 == 49:
            w.add(
                "note.added",
                {
                    "note_id": f"note-{i}",
                    "kind": "decision",
                    "text": "Superseded by a later task.",
                    "todo_id": todo_id,
                },
                agent,
            )
            w.add(
                "run.recorded",
                {
                    "run_id": f"run-{i}",
                    "agent_id": agent,
                    "session_id": session,
                    "todo_id": todo_id,
                    "outcome": "no_op",
                    "summary": "Nothing to do: superseded.",
                    "quota_spent": 1,
                },
                agent,
            )
            w.add("todo.cancelled", {"todo_id": todo_id, "reason": "Superseded."}, agent)
            continue
        if i in gated:
            _gate_pair(w, f"gate-{i}", todo_id)
        w.add(
            "evidence.added",
            {
                "evidence_id": f"ev-{i}",
                "kind": "test" if i % 3 else "ci",
                "summary": f"Tests pass for {todo_id}",
                "refs": [f"https://ci.example.invalid/runs/{i}"],
                "revision": hashlib.sha1(todo_id.encode()).hexdigest(),
                "todo_id": todo_id,
            },
            agent,
        )
        w.add(
            "run.recorded",
            {
                "run_id": f"run-{i}",
                "agent_id": agent,
                "session_id": session,
                "todo_id": todo_id,
                "outcome": "completed",
                "summary": f"Finished {todo_id}.",
                "evidence_ids": [f"ev-{i}"],
                "quota_spent": 1,
            },
            agent,
        )
        w.add(
            "todo.completed",
            {
                "todo_id": todo_id,
                "summary": f"{todo_id} done.",
                "evidence_ids": [f"ev-{i}"],
            },
            agent,
        )
    # A band of claimed todos right after the done ones (live leases at the end), a blocked
    # one, and a pending gate on a later todo.
    for j in range(band):
        todo_id = ids[n_done + j]
        agent = AGENTS[j % len(AGENTS)]
        if j == 0:
            w.add("todo.blocked", {"todo_id": todo_id, "reason": "Waiting on upstream."})
            continue
        w.add(
            "todo.claimed",
            {
                "todo_id": todo_id,
                "agent_id": agent,
                "session_id": f"{agent}-live",
                "lease_expires_at": add_seconds(w.now(), 30 * 86400),
            },
            agent,
        )
    held = ids[min(n_done + band + 5, n_todos - 1)]
    w.add(
        "gate.opened",
        {
            "gate_id": "gate-pending",
            "question": f"Should {held} ship behind a flag?",
            "authority": "maintainer",
            "blocks": [held],
        },
    )
    w.add("quota.set", {"quota": 10 * n_events, "quota_unit": "runs"})
    w.add(
        "note.added",
        {"note_id": "note-lesson", "kind": "lesson", "text": "Batch the heartbeats."},
        AGENTS[0],
    )
    if len(w.envelopes) != n_events:  # the budget arithmetic above is wrong
        raise RuntimeError(f"generated {len(w.envelopes)} events, not {n_events}")


def _gate_pair(w: _Writer, gate_id: str, todo_id: str) -> None:
    """A gate opened and approved on `todo_id` while it is claimed (two events)."""
    w.add(
        "gate.opened",
        {
            "gate_id": gate_id,
            "question": f"Approve the approach for {todo_id}?",
            "authority": "maintainer",
            "blocks": [todo_id],
        },
    )
    w.add(
        "gate.resolved",
        {"gate_id": gate_id, "resolution": "approved", "by": "maintainer", "rationale": "Yes."},
    )
