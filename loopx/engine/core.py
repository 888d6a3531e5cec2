"""The governed write path shared by every command.

lock → repair a damaged tail → fold the tail onto the cached snapshot → idempotency →
terminal goal → revision guard → plan (preconditions) → validate → append + fsync → receipt.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from loopx import __version__
from loopx.engine.clock import Clock, SystemClock
from loopx.model.errors import Conflict, InvalidInput, LedgerDamage, LoopxError, NotFound
from loopx.model.ids import check_id, check_operation_id
from loopx.model.records import Mutable
from loopx.state.entities import GoalState, OpIndex, decode_state, encode_state
from loopx.state.fold import apply, replay
from loopx.store.base import SnapshotStale, Store
from loopx.store.ledger import Cursor, event_id

if TYPE_CHECKING:  # a read folds no command: the module is imported by the writes
    from loopx.engine.commands import Command

SNAPSHOT_FORMAT = f"loopx.snapshot/4+{__version__}"
# A snapshot holds the operations index's records since its base (`OpIndex.recent`) up to
# this size; beyond it they move to the index file (`loopx.engine.opindex`), once the base
# is at hand, or read for it once they pass `INDEX_LOAD` bytes.
INDEX_SPLIT, INDEX_LOAD = 64 * 1024, 1024 * 1024


def snapshot_due(behind: int, revision: int) -> bool:
    """Whether a snapshot `behind` events behind a ledger at `revision` should be rewritten.

    Rewriting costs in proportion to the goal's size (tens of milliseconds at 50,000
    events); folding a tail costs microseconds per event. So small goals are snapshotted on
    every change and a goal of N events every N/1000 (at most 256) events: the amortised
    cost of both stays flat as goals grow.
    """
    return behind >= max(1, min(256, revision // 1000))


@dataclass(repr=False, eq=False)
class Change(Mutable):
    """One event a write path wants appended."""

    type: str
    data: dict[str, Any]
    visibility: str = "team"


@dataclass(repr=False, eq=False)
class Context(Mutable):
    """Everything a write path needs: where the ledger is, what time it is, who is acting."""

    store: Store
    clock: Clock = field(default_factory=SystemClock)
    agent_id: str = "user"
    session_id: str = "cli"
    # Private content waiting for the write that refers to it: stored just before the append,
    # so a refused write leaves nothing behind, not even a blob.
    pending: dict[str, bytes] = field(default_factory=dict, repr=False)

    def blob(self, data: bytes) -> str:
        """The `sha256:` reference of `data`, stored with the next successful append."""
        from loopx.store.blobs import blob_ref

        ref = blob_ref(data)
        self.pending[ref] = data
        return ref

    def private_text(self, text: str, visibility: str) -> Any:
        """Text as the ledger may hold it: inline, or a blob reference when it is private."""
        if visibility == "private":
            return {"blob": self.blob(text.encode("utf-8"))}
        return text

    def optional_text(self, text: str | None, visibility: str) -> Any:
        """`private_text` of an optional field: None when there is no text (None or empty)."""
        return self.private_text(text, visibility) if text else None

    def flush_blobs(self) -> None:
        while self.pending:
            _, data = self.pending.popitem()
            self.store.put_blob(data)


@dataclass(repr=False, eq=False)
class Result(Mutable):
    """A write's outcome: `applied` or `replayed`, its receipt and any tail repair."""

    status: str  # "applied" | "replayed"
    receipt: dict[str, Any]
    repair: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "receipt": self.receipt}
        if self.repair:
            out["repair"] = self.repair
        return out


# -- reading ------------------------------------------------------------------------------


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector around a bulk load.

    Loading a snapshot or replaying a ledger allocates hundreds of thousands of small
    containers and no cycles; left on, the collector's repeated full passes over them cost
    more than the load itself. Re-enabled, it would still pass over all of them once, as
    young objects, on the next allocation: `freeze()` + `unfreeze()` moves them straight to
    the oldest generation instead (no pass, and no leak: they stay collectable). A CLI call
    keeps the collector off for its whole short life (see `loopx.cli.main`).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


_BAD_SNAPSHOT = (
    orjson.JSONDecodeError,
    TypeError,
    KeyError,
    ValueError,
    AttributeError,
    IndexError,
)


def _split_snapshot(raw: bytes | None) -> tuple[dict[str, Any], Cursor] | None:
    """A snapshot's header and the cursor it is valid for; None unless it is one of this
    version's. Only the header is parsed (or copied)."""
    if not raw:
        return None
    try:
        end = raw.index(b"\n")
        meta = orjson.loads(raw[:end])
        if meta.get("format") != SNAPSHOT_FORMAT:
            return None
        return meta, Cursor(**meta["cursor"])
    except _BAD_SNAPSHOT:
        return None


def _load_snapshot(store: Store, goal_id: str) -> tuple[GoalState | None, Cursor | None]:
    """The cached state and the cursor it is valid for, or (None, None).

    The snapshot is three lines: a JSON header (format, cursor, whether the goal was
    closed, the operations index's base and last operation), the state as JSON rows, and
    the index's records since its base as raw bytes, which stay unparsed until a lookup
    needs them; the records up to the base are in the index file, read only then too.
    """
    raw = store.load_snapshot(goal_id)
    found = _split_snapshot(raw)
    if raw is None or found is None:
        return None, None
    try:
        _, body, recent = raw.split(b"\n", 2)
        with gc_paused():
            state = decode_state(orjson.loads(body), recent)
        if state.goal_id != goal_id:
            return None, None
        index = found[0]["operations"]
        base = None if index["base"] is None else Cursor(**index["base"])
        state.operations = OpIndex(recent, base=base, last=index["last"])
        _bind_index(store, state)
        return state, found[1]
    except _BAD_SNAPSHOT:
        return None, None


def is_closed(store: Store, goal_id: str) -> bool:
    """Whether a goal is closed, without decoding its state when its snapshot is current:
    the snapshot says whether it was closed then, the events since whether it is now."""
    found = _split_snapshot(store.load_snapshot(goal_id))
    if found is not None:
        try:
            tail = store.read(goal_id, found[1])
        except SnapshotStale:
            tail = None
        if tail is not None:
            closed = found[0].get("closed") is True
            return closed or any(event["type"] == "goal.closed" for event in tail.events)
    state = load_state(store, goal_id).state
    return state is not None and state.is_terminal


def _bind_index(store: Store, state: GoalState) -> None:
    """Let the state's operations index read its base's records from `store` when asked."""
    base = state.operations.base
    if base is not None:
        from loopx.engine import opindex

        state.operations.bind(opindex.loader(store, state.goal_id, base))


def save_snapshot(store: Store, state: GoalState, cursor: Cursor) -> None:
    ops = state.operations
    recent = ops.recent()
    if len(recent) > INDEX_SPLIT and (ops.loaded or len(recent) > INDEX_LOAD):
        _split_index(store, state, cursor)
        recent = ops.recent()
    base = ops.base
    header = {
        "format": SNAPSHOT_FORMAT,
        "cursor": {"seq": cursor.seq, "head": cursor.head, "offset": cursor.offset},
        "closed": state.is_terminal,
        "operations": {
            "base": None
            if base is None
            else {"seq": base.seq, "head": base.head, "offset": base.offset},
            "last": ops.last,
        },
    }
    with gc_paused():
        body = orjson.dumps(encode_state(state))
    parts = (orjson.dumps(header), body, recent)
    store.save_snapshot(state.goal_id, b"\n".join(parts))  # one copy of the megabytes


def _split_index(store: Store, state: GoalState, cursor: Cursor) -> None:
    """Move the index's records up to `cursor` into the index file; the snapshot then holds
    none. Left as it is when the base cannot be read (the snapshot is only a cache)."""
    from loopx.engine import opindex

    try:
        records = state.operations.dump()
    except LoopxError:
        return
    opindex.save(store, state.goal_id, cursor, records)
    state.operations.rebase(cursor, records)


@dataclass(repr=False, eq=False)
class Loaded(Mutable):
    """A goal's state (None when it does not exist), its cursor and any tail damage."""

    state: GoalState | None
    cursor: Cursor
    damage: dict[str, Any] | None = None


def load_state(store: Store, goal_id: str, *, cache: bool = True) -> Loaded:
    """Fold a goal's ledger, starting from the cached snapshot when it still matches."""
    check_id(goal_id, "goal_id")
    state, cursor = _load_snapshot(store, goal_id) if cache else (None, None)
    with gc_paused():
        if cursor is None:
            return _load_whole(store, goal_id, cache=cache)
        try:
            scan = store.read(goal_id, cursor)
        except SnapshotStale:
            return _load_whole(store, goal_id, cache=cache)
        for event in scan.events:
            state = apply(state, event)
    fresh = cache and state is not None and scan.damage is None and scan.events
    if fresh and state is not None and snapshot_due(len(scan.events), state.revision):
        save_snapshot(store, state, scan.cursor)
    damage = scan.damage.to_dict() if scan.damage else None
    return Loaded(state, scan.cursor, damage)


def _load_whole(store: Store, goal_id: str, *, cache: bool) -> Loaded:
    """Fold a goal's whole ledger: in bulk (`loopx.store.bulk`: every line checked, folded
    as it is read, none kept) when every line is one the bulk read vouches for, else the
    careful way (`Store.read`), which says what is wrong or repairs a torn tail."""
    state, cursor = _bulk_fold(store, goal_id)
    if cursor is not None:
        damage = None
        if state is not None:  # its operations index stands on the whole ledger read
            _bind_index(store, state)
    else:
        scan = store.read(goal_id, None)
        state = replay(scan.events)
        damage, cursor = scan.damage, scan.cursor
    if cache and state is not None and damage is None:
        save_snapshot(store, state, cursor)  # due: it is `state.revision` events behind
    return Loaded(state, cursor, damage.to_dict() if damage else None)


def _bulk_fold(store: Store, goal_id: str) -> tuple[GoalState | None, Cursor | None]:
    """The state and cursor of the bulk read of a goal's ledger; no cursor when it does not
    vouch for every line (or a line's data is not its type's: the careful read, which
    checks every line before it folds, finds that again, or first a line's damage). A store
    that reads its ledger a window at a time (the file store) gives it so, any other all at
    once; none of it is kept once this returns."""
    from loopx.state.bulkfold import fold_stream
    from loopx.store.bulk import BulkRead, Unchecked

    reading = getattr(store, "reading", None)
    with reading(goal_id) if reading is not None else nullcontext(store.raw(goal_id)) as source:
        bulk = BulkRead(source, goal_id)
        try:
            return fold_stream(bulk), bulk.cursor
        except (Unchecked, LedgerDamage):
            return None, None


def require_goal(store: Store, goal_id: str) -> GoalState:
    loaded = load_state(store, goal_id)
    if loaded.state is None:
        raise NotFound("goal not found", code="goal_not_found", goal_id=goal_id)
    return loaded.state


# -- writing ------------------------------------------------------------------------------


def receipt_for(goal_id: str, operation_id: str, record: list[Any]) -> dict[str, Any]:
    first, last = record[1], record[2]
    return {
        "operation_id": operation_id,
        "goal_id": goal_id,
        "event_ids": [event_id(goal_id, seq) for seq in range(first, last + 1)],
        "seq_first": first,
        "seq_last": last,
        "revision": last,
        "subject": record[3],
    }


Planner = Callable[[GoalState | None, str], list[Change]]


def execute(ctx: Context, command: Command, plan: Planner) -> Result:
    """Run one governed write. `plan(state, now)` checks preconditions and returns changes.

    The command says where (its goal), how it is retried (its operation id, fingerprinted by
    its canonical form) and guarded (`Guarded.expected_revision`), and whether it may create
    the goal or reach a closed one (`creates_goal`, `allow_terminal`)."""
    goal_id = check_id(command.goal_id, "goal_id")
    check_id(ctx.agent_id, "agent_id")
    check_id(ctx.session_id, "session_id")
    given = command.operation_id
    op_id = check_operation_id(given) if given else f"op-{os.urandom(16).hex()}"
    fingerprint = command.fingerprint(ctx.agent_id, ctx.session_id)
    if not command.creates_goal and not ctx.store.exists(goal_id):
        # Refused before the store is touched: a typo in --goal-id leaves no folder behind.
        raise NotFound("goal not found", code="goal_not_found", goal_id=goal_id)
    cached, cursor = _load_snapshot(ctx.store, goal_id)
    with ctx.store.writing(goal_id, cursor) as writer:
        try:
            tail = writer.tail
            if tail is None:
                raise RuntimeError("store writer has no tail scan")
            from_cache = cursor is not None and tail.start == cursor
            state = cached if from_cache else None
            with gc_paused():
                for event in tail.events:
                    state = apply(state, event)
            repair = writer.repair.to_dict() if writer.repair else None
            # A generated id is new by construction: only a given one can be a retry.
            record = _retried(state, op_id, fingerprint) if given else None
            if record is not None:
                ctx.pending.clear()
                return Result("replayed", receipt_for(goal_id, op_id, record), repair)
            _admit(state, command)
            now = ctx.clock.now()
            envelopes = _envelopes(ctx, command, op_id, fingerprint, now, plan(state, now))
            ctx.flush_blobs()
            stamped = writer.append(envelopes)
            for event in stamped:
                state = apply(state, event)
            assert state is not None
            behind = len(tail.events) + len(stamped) if from_cache else state.revision
            if snapshot_due(behind, state.revision):
                save_snapshot(ctx.store, state, writer.cursor)
            return Result("applied", receipt_for(goal_id, op_id, state.operations[op_id]), repair)
        except LoopxError as err:
            # A refusal after the tail was repaired still says so (the cut bytes are kept).
            if writer.repair is not None:
                err.details.setdefault("repair", writer.repair.to_dict())
            raise
        finally:
            ctx.pending.clear()  # a refused write stores no private content either


def _retried(state: GoalState | None, op_id: str, fingerprint: str) -> list[Any] | None:
    """The record of `op_id` when this is a retry of it; `operation_id_reused` when the id
    was used for another request."""
    record = state.operations.get(op_id) if state is not None else None
    if record is not None and record[0] != fingerprint:
        raise Conflict(
            "operation id was already used for a different request",
            code="operation_id_reused",
            operation_id=op_id,
        )
    return record


def _admit(state: GoalState | None, command: Command) -> None:
    """Refuse a write its goal cannot take: missing, existing, closed, or at another revision."""
    from loopx.engine.commands import Guarded

    goal_id = command.goal_id
    if state is None and not command.creates_goal:
        raise NotFound("goal not found", code="goal_not_found", goal_id=goal_id)
    if state is not None and command.creates_goal:
        raise Conflict("goal already exists", code="goal_exists", goal_id=goal_id)
    if state is not None and state.is_terminal and not command.allow_terminal:
        raise Conflict(
            f"goal is {state.status}; it accepts no further events "
            "(start a new goal with --predecessor)",
            code="goal_terminal",
            goal_id=goal_id,
            status=state.status,
        )
    expected = command.expected_revision if isinstance(command, Guarded) else None
    if expected is not None:
        assert isinstance(command, Guarded)
        current = 0 if state is None else command.current_revision(state)
        if current != expected:
            raise Conflict(
                f"expected revision {expected} but it is {current}",
                code="revision_conflict",
                expected_revision=expected,
                current_revision=current,
            )


def _envelopes(
    ctx: Context,
    command: Command,
    op_id: str,
    fingerprint: str,
    now: str,
    changes: list[Change],
) -> list[dict[str, Any]]:
    """The planned changes as event envelopes, each one's data checked against its schema."""
    from loopx.model.upgrade import EVENT_VERSION

    actor = {"agent_id": ctx.agent_id, "session_id": ctx.session_id}
    envelopes = []
    for change in changes:
        try:
            data = _validate(change.type, change.data)
        except ValueError as err:  # DataError or pydantic's; neither echoes the input
            raise InvalidInput(
                f"invalid {change.type} data: {_describe(err)}", code="invalid_input"
            ) from None
        envelopes.append(
            {
                "operation_id": op_id,
                "op_hash": fingerprint,
                "type": change.type,
                "v": EVENT_VERSION,
                "goal_id": command.goal_id,
                "actor": actor,
                "recorded_at": now,
                "visibility": change.visibility,
                "data": data,
            }
        )
    if not envelopes:
        raise InvalidInput("nothing to change", code="no_change")
    return envelopes


def _validate(event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    """Check `data` against its type's schema (fast, no pydantic) or, for types that need
    Python checks, against the pydantic model; return it normalised."""
    from loopx.model.jsoncheck import check_data

    checked = check_data(event_type, data)
    if checked is not None:
        return checked
    from loopx.model.events import EVENT_MODELS, validate_data

    if event_type not in EVENT_MODELS:
        raise InvalidInput("unknown event type", code="invalid_input")
    return validate_data(event_type, data)


def _describe(err: Exception) -> str:
    errors = getattr(err, "errors", None)
    if not callable(errors):
        return str(err) if type(err).__name__ == "DataError" else "validation failed"
    parts = []
    for item in errors(include_input=False, include_url=False):
        loc = ".".join(str(p) for p in item.get("loc", ()))
        parts.append(f"{loc or 'value'}: {item.get('msg', 'invalid')}")
    return "; ".join(parts)
