"""Folded state: plain dataclasses that `apply()` mutates and the snapshot cache serialises.

Text fields hold either a string or `{"blob": "sha256:…"}` for private content kept off the
ledger; projections resolve those through the privacy layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

OPEN_STATUSES = ("open", "active", "blocked")
CLOSED_STATUSES = ("done", "cancelled")
BLOCKING_GATE_STATUSES = ("pending", "deferred")


@dataclass(slots=True)
class Todo:
    todo_id: str
    title: Any
    role: str = "agent"
    kind: str = "task"
    priority: int = 2
    depends_on: list[str] = field(default_factory=list)
    acceptance: Any = None
    visibility: str = "team"
    status: str = "open"
    claim: dict[str, Any] | None = None
    predecessor: str | None = None
    successor: str | None = None
    reason: Any = None
    summary: Any = None
    evidence_ids: list[str] = field(default_factory=list)
    created_seq: int = 0
    created_at: str = ""
    updated_at: str = ""
    closed_at: str | None = None
    revision: int = 0

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES


@dataclass(slots=True)
class Gate:
    gate_id: str
    question: Any
    authority: str
    blocks: list[str] = field(default_factory=list)
    blocks_goal: bool = False
    visibility: str = "team"
    status: str = "pending"
    resolved_by: str | None = None
    rationale: Any = None
    opened_at: str = ""
    resolved_at: str | None = None
    created_seq: int = 0
    revision: int = 0

    @property
    def is_blocking(self) -> bool:
        return self.status in BLOCKING_GATE_STATUSES


@dataclass(slots=True)
class Evidence:
    evidence_id: str
    kind: str
    summary: Any
    refs: list[str] = field(default_factory=list)
    revision: str | None = None
    todo_id: str | None = None
    body: dict[str, str] | None = None
    body_bytes: int | None = None
    visibility: str = "private"
    recorded_at: str = ""
    agent_id: str = ""
    created_seq: int = 0


@dataclass(slots=True)
class Run:
    run_id: str
    agent_id: str
    session_id: str
    outcome: str
    todo_id: str | None = None
    summary: Any = None
    evidence_ids: list[str] = field(default_factory=list)
    successor: str | None = None
    wait: Any = None
    quota_spent: int = 0
    visibility: str = "team"
    recorded_at: str = ""
    created_seq: int = 0


@dataclass(slots=True)
class Note:
    note_id: str
    kind: str
    text: Any
    todo_id: str | None = None
    visibility: str = "private"
    agent_id: str = ""
    recorded_at: str = ""
    created_seq: int = 0


@dataclass(slots=True)
class GoalState:
    goal_id: str
    title: str = ""
    objective: Any = ""
    acceptance: list[Any] = field(default_factory=list)
    repository: str | None = None
    predecessor: str | None = None
    visibility: str = "team"
    status: str = "active"
    outcome_reason: Any = None
    policy: dict[str, Any] = field(default_factory=dict)
    quota_spent: int = 0
    created_at: str = ""
    updated_at: str = ""
    closed_at: str | None = None
    revision: int = 0
    head: str = ""
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    todos: dict[str, Todo] = field(default_factory=dict)
    gates: dict[str, Gate] = field(default_factory=dict)
    evidence: dict[str, Evidence] = field(default_factory=dict)
    runs: dict[str, Run] = field(default_factory=dict)
    notes: dict[str, Note] = field(default_factory=dict)
    handoffs: dict[str, dict[str, Any]] = field(default_factory=dict)
    # operation id → [op_hash, first seq, last seq]: the idempotency index.
    operations: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def is_terminal(self) -> bool:
        return self.status in ("achieved", "abandoned")


_ENTITY_TYPES: dict[str, type] = {
    "todos": Todo,
    "gates": Gate,
    "evidence": Evidence,
    "runs": Run,
    "notes": Note,
}


def state_from_dict(data: dict[str, Any]) -> GoalState:
    """Rebuild a `GoalState` from its orjson serialisation (the snapshot cache)."""
    kwargs = dict(data)
    for name, cls in _ENTITY_TYPES.items():
        kwargs[name] = {key: cls(**value) for key, value in data.get(name, {}).items()}
    known = {f.name for f in fields(GoalState)}
    return GoalState(**{k: v for k, v in kwargs.items() if k in known})
