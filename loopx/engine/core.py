"""The governed write path shared by every command.

lock → repair a damaged tail → fold the tail onto the cached snapshot → idempotency →
terminal goal → revision guard → plan (preconditions) → validate → append + fsync → receipt.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from loopx import __version__
from loopx.engine.clock import Clock, SystemClock
from loopx.model.errors import Conflict, InvalidInput, NotFound
from loopx.model.ids import check_id, check_operation_id
from loopx.state.entities import GoalState, state_from_dict
from loopx.state.fold import apply
from loopx.store.base import SnapshotStale, Store
from loopx.store.ledger import Cursor, canonical

SNAPSHOT_FORMAT = f"loopx.snapshot/1+{__version__}"


@dataclass
class Change:
    """One event a write path wants appended."""

    type: str
    data: dict[str, Any]
    visibility: str = "team"


@dataclass
class Context:
    """Everything a write path needs: where the ledger is, what time it is, who is acting."""

    store: Store
    clock: Clock = field(default_factory=SystemClock)
    agent_id: str = "user"
    session_id: str = "cli"

    def private_text(self, text: str, visibility: str) -> Any:
        """Text as the ledger may hold it: inline, or a blob reference when it is private."""
        if visibility == "private":
            return {"blob": self.store.put_blob(text.encode("utf-8"))}
        return text


@dataclass
class Result:
    status: str  # "applied" | "replayed"
    receipt: dict[str, Any]
    repair: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "receipt": self.receipt}
        if self.repair:
            out["repair"] = self.repair
        return out


# -- reading ------------------------------------------------------------------------------


def _load_snapshot(store: Store, goal_id: str) -> tuple[GoalState | None, Cursor | None]:
    raw = store.load_snapshot(goal_id)
    if not raw:
        return None, None
    try:
        snap = orjson.loads(raw)
        if snap.get("format") != SNAPSHOT_FORMAT:
            return None, None
        return state_from_dict(snap["state"]), Cursor(**snap["cursor"])
    except (orjson.JSONDecodeError, TypeError, KeyError, ValueError):
        return None, None


def save_snapshot(store: Store, state: GoalState, cursor: Cursor) -> None:
    store.save_snapshot(
        state.goal_id,
        orjson.dumps(
            {
                "format": SNAPSHOT_FORMAT,
                "cursor": {"seq": cursor.seq, "head": cursor.head, "offset": cursor.offset},
                "state": state,
            }
        ),
    )


@dataclass
class Loaded:
    state: GoalState | None
    cursor: Cursor
    damage: dict[str, Any] | None = None


def load_state(store: Store, goal_id: str, *, cache: bool = True) -> Loaded:
    """Fold a goal's ledger, starting from the cached snapshot when it still matches."""
    check_id(goal_id, "goal_id")
    state, cursor = _load_snapshot(store, goal_id) if cache else (None, None)
    try:
        scan = store.read(goal_id, cursor)
    except SnapshotStale:
        state, cursor = None, None
        scan = store.read(goal_id, None)
    for event in scan.events:
        state = apply(state, event)
    if cache and state is not None and scan.events and scan.damage is None:
        save_snapshot(store, state, scan.cursor)
    damage = scan.damage.to_dict() if scan.damage else None
    return Loaded(state, scan.cursor, damage)


def require_goal(store: Store, goal_id: str) -> GoalState:
    loaded = load_state(store, goal_id)
    if loaded.state is None:
        raise NotFound("goal not found", code="goal_not_found", goal_id=goal_id)
    return loaded.state


# -- writing ------------------------------------------------------------------------------


def op_hash(request: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(request)).hexdigest()


def receipt_for(goal_id: str, operation_id: str, record: list[Any]) -> dict[str, Any]:
    first, last = record[1], record[2]
    return {
        "operation_id": operation_id,
        "goal_id": goal_id,
        "event_ids": [
            "evt-" + hashlib.sha256(f"{goal_id}:{seq}".encode()).hexdigest()[:16]
            for seq in range(first, last + 1)
        ],
        "seq_first": first,
        "seq_last": last,
        "revision": last,
        "subject": record[3],
    }


Planner = Callable[[GoalState | None, str], list[Change]]


def execute(
    ctx: Context,
    goal_id: str,
    request: dict[str, Any],
    plan: Planner,
    *,
    operation_id: str | None = None,
    expected_revision: int | None = None,
    revision_of: Callable[[GoalState], int] | None = None,
    creates_goal: bool = False,
) -> Result:
    """Run one governed write. `plan(state, now)` checks preconditions and returns changes."""
    from loopx.model.events import EVENT_VERSION, validate_data

    check_id(goal_id, "goal_id")
    check_id(ctx.agent_id, "agent_id")
    check_id(ctx.session_id, "session_id")
    op_id = check_operation_id(operation_id) if operation_id else f"op-{uuid.uuid4().hex}"
    fingerprint = op_hash({"request": request, "agent_id": ctx.agent_id})
    cached, cursor = _load_snapshot(ctx.store, goal_id)
    with ctx.store.writing(goal_id, cursor) as writer:
        tail = writer.tail
        if tail is None:
            raise RuntimeError("store writer has no tail scan")
        state = cached if cursor is not None and tail.start == cursor else None
        for event in tail.events:
            state = apply(state, event)
        repair = writer.repair.to_dict() if writer.repair else None

        if state is not None:
            record = state.operations.get(op_id)
            if record is not None:
                if record[0] != fingerprint:
                    raise Conflict(
                        "operation id was already used for a different request",
                        code="operation_id_reused",
                        operation_id=op_id,
                    )
                return Result("replayed", receipt_for(goal_id, op_id, record), repair)
        if state is None and not creates_goal:
            raise NotFound("goal not found", code="goal_not_found", goal_id=goal_id)
        if state is not None and creates_goal:
            raise Conflict("goal already exists", code="goal_exists", goal_id=goal_id)
        if state is not None and state.is_terminal:
            raise Conflict(
                f"goal is {state.status}; it accepts no further events "
                "(start a new goal with --predecessor)",
                code="goal_terminal",
                goal_id=goal_id,
                status=state.status,
            )
        if expected_revision is not None:
            current = 0 if state is None else (revision_of or _goal_revision)(state)
            if current != expected_revision:
                raise Conflict(
                    f"expected revision {expected_revision} but it is {current}",
                    code="revision_conflict",
                    expected_revision=expected_revision,
                    current_revision=current,
                )

        now = ctx.clock.now()
        changes = plan(state, now)
        actor = {"agent_id": ctx.agent_id, "session_id": ctx.session_id}
        envelopes = []
        for change in changes:
            try:
                data = validate_data(change.type, change.data)
            except ValueError as err:  # pydantic ValidationError; never echo the input
                raise InvalidInput(
                    f"invalid {change.type} data: {_describe(err)}", code="invalid_input"
                ) from None
            envelopes.append(
                {
                    "operation_id": op_id,
                    "op_hash": fingerprint,
                    "type": change.type,
                    "v": EVENT_VERSION,
                    "goal_id": goal_id,
                    "actor": actor,
                    "recorded_at": now,
                    "visibility": change.visibility,
                    "data": data,
                }
            )
        if not envelopes:
            raise InvalidInput("nothing to change", code="no_change")
        stamped = writer.append(envelopes)
        for event in stamped:
            state = apply(state, event)
        assert state is not None
        record = state.operations[op_id]
        save_snapshot(ctx.store, state, writer.cursor)
        return Result("applied", receipt_for(goal_id, op_id, record), repair)


def _goal_revision(state: GoalState) -> int:
    return state.revision


def _describe(err: Exception) -> str:
    errors = getattr(err, "errors", None)
    if not callable(errors):
        return "validation failed"
    parts = []
    for item in errors(include_input=False, include_url=False):
        loc = ".".join(str(p) for p in item.get("loc", ()))
        parts.append(f"{loc or 'value'}: {item.get('msg', 'invalid')}")
    return "; ".join(parts)
