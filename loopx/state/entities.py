"""Folded state: plain dataclasses that `apply()` mutates and the snapshot cache serialises.

Free-text fields hold either a string or a `PrivateText` (`{"blob": "sha256:…"}`) for private
content kept off the ledger; projections resolve those through the privacy layer (one lens).

Every record declares its fields once (`Fields`): which are free text people typed, which are
plain (ids, enums, times, numbers, flags) and which hold nested records. The audience lens,
the public boundary's forbidden strings and the governed redaction all read the declarations,
and a test fails when a record gains a field declared neither way: a new text field cannot
skip the boundary.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, TypedDict, TypeVar

from loopx.model.records import Mutable, Value

OPEN_STATUSES = ("open", "active", "blocked")
CLOSED_STATUSES = ("done", "cancelled")
BLOCKING_GATE_STATUSES = ("pending", "deferred")


class PrivateText(TypedDict):
    """Private text kept in this host's blob store: the ledger, the fold and the snapshots
    hold only this reference to it."""

    blob: str


def private_ref(value: Any) -> str | None:
    """The blob reference when `value` is private text, else None (inline text, or nothing)."""
    if isinstance(value, dict):
        ref = value.get("blob")
        return ref if isinstance(ref, str) else None
    return None


@dataclass(frozen=True, repr=False, eq=False)
class Fields(Value):
    """One kind of record's fields, each declared once.

    `text`: free text (a string or `PrivateText`, or a list of them; ``a.b`` is field `b` of
    each item of the list `a`). `plain`: ids, enums, times, numbers, flags: never free text.
    `nested`: (field, kind) of a record a field holds; `tables`: of a dict of records by id.
    `shapes`: (field, kind) of a text field that may hold a structured record of free text.
    `published`: whether a public record's text may appear in public output (else it counts
    as non-public always). `unmatched`: text fields the boundary does not look for as exact
    text (the scanner's rules still read every public byte). `names`: (field, name) where
    commands call a field otherwise.
    """

    kind: str
    text: tuple[str, ...]
    plain: tuple[str, ...] = ()
    nested: tuple[tuple[str, str], ...] = ()
    tables: tuple[tuple[str, str], ...] = ()
    shapes: tuple[tuple[str, str], ...] = ()
    published: bool = True
    unmatched: tuple[str, ...] = ()
    names: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, kind: str, text: str, plain: str = "", **pairs: Any) -> Fields:
        """Names are space-separated; `nested`, `tables` and `shapes` as ``field:kind``."""
        for key in ("nested", "tables", "shapes"):
            if isinstance(pairs.get(key), str):
                pairs[key] = tuple(_pair(p) for p in pairs[key].split())
        if isinstance(pairs.get("unmatched"), str):
            pairs["unmatched"] = tuple(pairs["unmatched"].split())
        return cls(kind, tuple(text.split()), tuple(plain.split()), **pairs)

    def declared(self) -> set[str]:
        """Every field this declaration names."""
        pairs = self.nested + self.tables
        return {*self.text, *self.plain, *(name for name, _ in pairs)}

    def named(self) -> tuple[str, ...]:
        """The text fields as commands and events call them."""
        rename = dict(self.names)
        return tuple(rename.get(n, n) for n in self.text)


def _pair(spec: str) -> tuple[str, str]:
    name, kind = spec.split(":")
    return name, kind


class _Factory:
    """The default of a field made by a factory (a fresh list or dict per record)."""

    def __repr__(self) -> str:
        return "<factory>"


# The `__init__` of each entity record (todo, gate, evidence, run, note, handoff) is written
# out, as `dataclass` would generate it: generating them compiled one per record on every
# import (~15 M instructions, 5% of a `loopx status`; issue 19). tests/test_entity_inits.py
# holds each to the one `dataclass` would write. `GoalState`'s is still generated.
_FACTORY: Any = _Factory()


@dataclass(slots=True, repr=False, eq=False, init=False)
class Todo(Mutable):
    """A unit of work: its lifecycle, dependencies, claim and lease, and what closed it."""

    FIELDS: ClassVar[Fields] = Fields.of(
        "todo",
        text="title acceptance reason summary",
        plain="todo_id role kind priority depends_on visibility status predecessor successor "
        "evidence_ids created_seq created_at updated_at closed_at revision",
        nested="claim:claim monitor:monitor",
    )

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
    # A monitor's watch, backoff, next wake and observation record (see loopx.state.monitors).
    monitor: dict[str, Any] | None = None

    def __init__(
        self,
        todo_id: str,
        title: Any,
        role: str = "agent",
        kind: str = "task",
        priority: int = 2,
        depends_on: list[str] = _FACTORY,
        acceptance: Any = None,
        visibility: str = "team",
        status: str = "open",
        claim: dict[str, Any] | None = None,
        predecessor: str | None = None,
        successor: str | None = None,
        reason: Any = None,
        summary: Any = None,
        evidence_ids: list[str] = _FACTORY,
        created_seq: int = 0,
        created_at: str = "",
        updated_at: str = "",
        closed_at: str | None = None,
        revision: int = 0,
        monitor: dict[str, Any] | None = None,
    ) -> None:
        self.todo_id = todo_id
        self.title = title
        self.role = role
        self.kind = kind
        self.priority = priority
        self.depends_on = list() if depends_on is _FACTORY else depends_on
        self.acceptance = acceptance
        self.visibility = visibility
        self.status = status
        self.claim = claim
        self.predecessor = predecessor
        self.successor = successor
        self.reason = reason
        self.summary = summary
        self.evidence_ids = list() if evidence_ids is _FACTORY else evidence_ids
        self.created_seq = created_seq
        self.created_at = created_at
        self.updated_at = updated_at
        self.closed_at = closed_at
        self.revision = revision
        self.monitor = monitor

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES


@dataclass(slots=True, repr=False, eq=False, init=False)
class Gate(Mutable):
    """A question for a named authority and what it holds until it is resolved."""

    FIELDS: ClassVar[Fields] = Fields.of(
        "gate",
        text="question rationale",
        plain="gate_id authority blocks blocks_goal visibility status resolved_by opened_at "
        "resolved_at created_seq revision ask_again_at",
    )

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
    ask_again_at: str | None = None  # when to ask the authority again, while undecided

    def __init__(
        self,
        gate_id: str,
        question: Any,
        authority: str,
        blocks: list[str] = _FACTORY,
        blocks_goal: bool = False,
        visibility: str = "team",
        status: str = "pending",
        resolved_by: str | None = None,
        rationale: Any = None,
        opened_at: str = "",
        resolved_at: str | None = None,
        created_seq: int = 0,
        revision: int = 0,
        ask_again_at: str | None = None,
    ) -> None:
        self.gate_id = gate_id
        self.question = question
        self.authority = authority
        self.blocks = list() if blocks is _FACTORY else blocks
        self.blocks_goal = blocks_goal
        self.visibility = visibility
        self.status = status
        self.resolved_by = resolved_by
        self.rationale = rationale
        self.opened_at = opened_at
        self.resolved_at = resolved_at
        self.created_seq = created_seq
        self.revision = revision
        self.ask_again_at = ask_again_at

    @property
    def is_blocking(self) -> bool:
        return self.status in BLOCKING_GATE_STATUSES


@dataclass(slots=True, repr=False, eq=False, init=False)
class Evidence(Mutable):
    """An observation (test, CI, review, …) bound to the revision it was made at."""

    FIELDS: ClassVar[Fields] = Fields.of(
        "evidence",
        text="summary refs body",
        plain="evidence_id kind revision todo_id body_bytes visibility recorded_at agent_id "
        "created_seq",
    )

    evidence_id: str
    kind: str
    summary: Any
    refs: list[str] = field(default_factory=list)
    revision: str | None = None
    todo_id: str | None = None
    body: PrivateText | None = None
    body_bytes: int | None = None
    visibility: str = "private"
    recorded_at: str = ""
    agent_id: str = ""
    created_seq: int = 0

    def __init__(
        self,
        evidence_id: str,
        kind: str,
        summary: Any,
        refs: list[str] = _FACTORY,
        revision: str | None = None,
        todo_id: str | None = None,
        body: PrivateText | None = None,
        body_bytes: int | None = None,
        visibility: str = "private",
        recorded_at: str = "",
        agent_id: str = "",
        created_seq: int = 0,
    ) -> None:
        self.evidence_id = evidence_id
        self.kind = kind
        self.summary = summary
        self.refs = list() if refs is _FACTORY else refs
        self.revision = revision
        self.todo_id = todo_id
        self.body = body
        self.body_bytes = body_bytes
        self.visibility = visibility
        self.recorded_at = recorded_at
        self.agent_id = agent_id
        self.created_seq = created_seq


@dataclass(slots=True, repr=False, eq=False, init=False)
class Run(Mutable):
    """One bounded agent turn: who ran it, on what, its outcome and the quota it spent."""

    FIELDS: ClassVar[Fields] = Fields.of(
        "run",
        text="summary wait",
        plain="run_id agent_id session_id outcome todo_id evidence_ids successor quota_spent "
        "visibility recorded_at created_seq",
    )

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

    def __init__(
        self,
        run_id: str,
        agent_id: str,
        session_id: str,
        outcome: str,
        todo_id: str | None = None,
        summary: Any = None,
        evidence_ids: list[str] = _FACTORY,
        successor: str | None = None,
        wait: Any = None,
        quota_spent: int = 0,
        visibility: str = "team",
        recorded_at: str = "",
        created_seq: int = 0,
    ) -> None:
        self.run_id = run_id
        self.agent_id = agent_id
        self.session_id = session_id
        self.outcome = outcome
        self.todo_id = todo_id
        self.summary = summary
        self.evidence_ids = list() if evidence_ids is _FACTORY else evidence_ids
        self.successor = successor
        self.wait = wait
        self.quota_spent = quota_spent
        self.visibility = visibility
        self.recorded_at = recorded_at
        self.created_seq = created_seq


@dataclass(slots=True, repr=False, eq=False, init=False)
class Note(Mutable):
    """A lesson, decision or note recorded on the goal (or one of its todos)."""

    FIELDS: ClassVar[Fields] = Fields.of(
        "note",
        text="text",
        plain="note_id kind todo_id visibility agent_id recorded_at created_seq",
    )

    note_id: str
    kind: str
    text: Any
    todo_id: str | None = None
    visibility: str = "private"
    agent_id: str = ""
    recorded_at: str = ""
    created_seq: int = 0

    def __init__(
        self,
        note_id: str,
        kind: str,
        text: Any,
        todo_id: str | None = None,
        visibility: str = "private",
        agent_id: str = "",
        recorded_at: str = "",
        created_seq: int = 0,
    ) -> None:
        self.note_id = note_id
        self.kind = kind
        self.text = text
        self.todo_id = todo_id
        self.visibility = visibility
        self.agent_id = agent_id
        self.recorded_at = recorded_at
        self.created_seq = created_seq


@dataclass(slots=True, repr=False, eq=False, init=False)
class Handoff(Mutable):
    """A continuation note for a todo (see loopx.state.handoff), bound to the todo's revision
    it was written against and to the writer's git HEAD; `note` is the note's dict, or
    `{"blob": …}` when private. Pending until adopted or superseded by a newer note."""

    FIELDS: ClassVar[Fields] = Fields.of(
        "handoff",
        text="note",
        plain="handoff_id todo_id todo_revision prepared_seq prepared_at source_agent_id "
        "source_session_id target_agent_id git_revision workspace_dirty visibility status "
        "superseded_by adopted_seq adopted_at adopted_git_revision grant",
        shapes="note:handoff_note",
    )

    handoff_id: str
    todo_id: str
    todo_revision: int
    source_agent_id: str
    source_session_id: str
    note: Any
    target_agent_id: str | None = None
    git_revision: str | None = None
    workspace_dirty: bool | None = None
    visibility: str = "team"
    status: str = "pending"  # pending | adopted | superseded
    prepared_seq: int = 0
    prepared_at: str = ""
    superseded_by: str | None = None
    # Once adopted: when, the transfer grant, and the adopting checkout's HEAD.
    adopted_seq: int | None = None
    adopted_at: str | None = None
    grant: dict[str, Any] | None = None
    adopted_git_revision: str | None = None

    def __init__(
        self,
        handoff_id: str,
        todo_id: str,
        todo_revision: int,
        source_agent_id: str,
        source_session_id: str,
        note: Any,
        target_agent_id: str | None = None,
        git_revision: str | None = None,
        workspace_dirty: bool | None = None,
        visibility: str = "team",
        status: str = "pending",
        prepared_seq: int = 0,
        prepared_at: str = "",
        superseded_by: str | None = None,
        adopted_seq: int | None = None,
        adopted_at: str | None = None,
        grant: dict[str, Any] | None = None,
        adopted_git_revision: str | None = None,
    ) -> None:
        self.handoff_id = handoff_id
        self.todo_id = todo_id
        self.todo_revision = todo_revision
        self.source_agent_id = source_agent_id
        self.source_session_id = source_session_id
        self.note = note
        self.target_agent_id = target_agent_id
        self.git_revision = git_revision
        self.workspace_dirty = workspace_dirty
        self.visibility = visibility
        self.status = status
        self.prepared_seq = prepared_seq
        self.prepared_at = prepared_at
        self.superseded_by = superseded_by
        self.adopted_seq = adopted_seq
        self.adopted_at = adopted_at
        self.grant = grant
        self.adopted_git_revision = adopted_git_revision


HANDOFF = Handoff.FIELDS

# Records the fold keeps as plain dicts, declared like the dataclasses.
HANDOFF_NOTE = Fields.of(
    "handoff_note",
    text="work_summary next_steps key_decisions open_questions source_refs "
    "approaches_tried.approach approaches_tried.outcome approaches_tried.reason "
    "files_touched.path files_touched.summary",
    plain="files_touched.action",
)
MONITOR = Fields.of(
    "monitor",
    text="watch",
    plain="watch_kind backoff next_at observations streak last_result last_observed_at "
    "last_evidence_id",
    published=False,  # public output names only the watch's kind
)
TURN = Fields.of(
    "turn",
    text="phases.ref",
    plain="turn_id todo_id agent_id session_id phase phases.phase phases.at phases.session_id "
    "begun_at updated_at status run_id settled_at",
    published=False,
)
CLAIM = Fields.of(
    "claim",
    text="",
    plain="agent_id session_id claimed_at heartbeat_at lease_expires_at via_handoff",
)
QUOTA = Fields.of("quota", text="quota_unit", plain="lease_seconds quota")
AGENT = Fields.of("agent", text="name kind", plain="agent_id registered_at", published=False)
ALLOWANCE = Fields.of(
    "allowance",
    text="reason",
    plain="allowance_id entity entity_id field kind by at seq",
    published=False,
)
REDACTION = Fields.of(
    "redaction",
    text="reason",
    plain="redaction_id entity entity_id field by at seq",
    published=False,
)


class OpIndex:
    """The idempotency index: operation id → [op_hash, first seq, last seq, subject].

    A goal of 50,000 events has 50,000 entries, which a write with an explicit operation id
    needs and no read does. So they are kept as blocks of bytes, records of
    `|<op id> <hash> <first> <last> <subject>` (never parsed as a whole: a lookup searches
    them), in up to three parts, newest last: the records of the ledger up to the cursor
    `base` (None: there are none), which are read only when a lookup gets that far (`load`
    gives them: the engine's index file, `loopx.engine.opindex`, checked against `base`, or
    rebuilt from the ledger); the block the snapshot holds (the records since `base`); and
    `entries`, those added since. Ids and hashes contain no space or `|`.
    """

    __slots__ = ("_blob", "_base_blob", "_load", "base", "entries", "last")

    def __init__(
        self,
        blob: bytes = b"",
        entries: dict[str, list[Any]] | None = None,
        *,
        base: Any = None,
        last: str | None = None,
        load: Callable[[], bytes] | None = None,
    ):
        self._blob = blob
        self.entries: dict[str, list[Any]] = dict(entries or {})
        self.base = base  # a `Cursor` of the ledger, or None
        self._base_blob: bytes | None = None if base is not None else b""
        self._load = load
        # The operation of the latest event: events of one operation are consecutive, so
        # the fold extends a record only when the next event continues this one.
        if last is None:
            last = next(reversed(self.entries), "") if self.entries else _last_id(blob)
        self.last = last

    @property
    def loaded(self) -> bool:
        """Whether every record is in memory (no base, or its records already read)."""
        return self._base_blob is not None

    def bind(self, load: Callable[[], bytes]) -> None:
        """Where the base's records come from, when a lookup needs them."""
        self._load = load

    def _based(self) -> bytes:
        if self._base_blob is None:
            if self._load is None:
                raise LookupError("the operations index's base records are not at hand")
            self._base_blob = self._load()
        return self._base_blob

    def get(self, op_id: str) -> list[Any] | None:
        found = self.entries.get(op_id)
        if found is not None:
            return found
        needle = b"|" + op_id.encode() + b" "
        for blob in (self._blob, None):  # the latest record wins: the newer block first
            if blob is None:
                if self.base is None:
                    return None
                blob = self._based()
            start = blob.rfind(needle)
            if start >= 0:
                end = blob.find(b"|", start + 1)
                record = blob[start + 1 : end if end > 0 else None].decode()
                _, op_hash, first, last, subject = record.split()
                return [op_hash, int(first), int(last), None if subject == "-" else subject]
        return None

    def __getitem__(self, op_id: str) -> list[Any]:
        found = self.get(op_id)
        if found is None:
            raise KeyError(op_id)
        return found

    def __setitem__(self, op_id: str, record: list[Any]) -> None:
        self.entries[op_id] = record
        self.last = op_id

    def __contains__(self, op_id: object) -> bool:
        return isinstance(op_id, str) and self.get(op_id) is not None

    def recent(self) -> bytes:
        """The records since `base`, in the compact form the snapshot stores."""
        added = "".join(
            f"|{k} {h} {a} {b} {s if _plain(s) else '-'}"
            for k, (h, a, b, s) in self.entries.items()
        )
        return self._blob + added.encode()

    def dump(self) -> bytes:
        """Every record, in the compact form (the base's read if it was not yet)."""
        recent = self.recent()
        return self._based() + recent if self.base is not None else recent

    def rebase(self, base: Any, records: bytes) -> None:
        """`records` (this index's `dump()`) now stand for the ledger up to `base`."""
        self.base, self._base_blob, self._blob, self.entries = base, records, b"", {}

    def to_dict(self) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        for record in self.dump().decode().split("|")[1:]:
            op_id, op_hash, first, last, subject = record.split()
            out[op_id] = [op_hash, int(first), int(last), None if subject == "-" else subject]
        return out

    def __len__(self) -> int:
        return len(self.to_dict())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpIndex) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if not self.loaded:
            return f"OpIndex(up to {self.base!r}, and {len(self.recent())} bytes since)"
        return f"OpIndex({len(self)} operations)"


def _plain(subject: Any) -> bool:
    return isinstance(subject, str) and bool(subject) and " " not in subject and "|" not in subject


def _last_id(blob: bytes) -> str:
    start = blob.rfind(b"|")
    return "" if start < 0 else blob[start + 1 :].split(b" ", 1)[0].decode()


@dataclass(slots=True, repr=False, eq=False)
class GoalState(Mutable):
    """A goal folded from its ledger: its fields, every entity by id, and its heads."""

    FIELDS: ClassVar[Fields] = Fields.of(
        "goal",
        text="title objective acceptance outcome_reason repository",
        plain="goal_id predecessor visibility status quota_spent created_at updated_at "
        "changed_at closed_at revision head truth_revision truth_head truth_at operations "
        "history",
        nested="policy:quota",
        tables="agents:agent todos:todo gates:gate evidence:evidence runs:run notes:note "
        "handoffs:handoff redactions:redaction turns:turn allowances:allowance",
        # A goal's repository is most often the project's own, which loopx.toml's
        # `repository_url` shows on every public page: matching it would refuse every build.
        unmatched="repository",
        names=(("outcome_reason", "reason"),),
    )

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
    # The time of the last event other than a heartbeat (`todo.renewed`): the "now" of
    # committed projections, which a heartbeat must not change.
    changed_at: str = ""
    closed_at: str | None = None
    revision: int = 0
    head: str = ""
    # The seq, hash and time of the last event of goal truth: every event but the turn
    # journal's progress (`turn.begun`, `turn.phased`). Committed artifacts name these
    # (`loopx.state.turns.goal_truth`), so a turn's phases leave a committed build current.
    truth_revision: int = 0
    truth_head: str = ""
    truth_at: str = ""
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    todos: dict[str, Todo] = field(default_factory=dict)
    gates: dict[str, Gate] = field(default_factory=dict)
    evidence: dict[str, Evidence] = field(default_factory=dict)
    runs: dict[str, Run] = field(default_factory=dict)
    notes: dict[str, Note] = field(default_factory=dict)
    handoffs: dict[str, Handoff] = field(default_factory=dict)
    # redaction id → the governed correction (see loopx.state.redactions)
    redactions: dict[str, dict[str, Any]] = field(default_factory=dict)
    # allowance id → a reviewed allow entry of the boundary scan (see loopx.state.allowances)
    allowances: dict[str, dict[str, Any]] = field(default_factory=dict)
    # turn id → the turn journal entry (see loopx.state.turns): progress, never authority
    turns: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The goal's status changes a visitor follows, in ledger order, one per event: [seq,
    # recorded_at, kind (goal, todo or gate), its id, what (achieved, abandoned, done,
    # reopened, approved, rejected), the event line's checksum's first 16 hex digits] (the
    # feed's entries: loopx.projections.feed).
    history: list[list[Any]] = field(default_factory=list)
    # operation id → [op_hash, first seq, last seq, subject]: the idempotency index.
    operations: OpIndex = field(default_factory=lambda: OpIndex())

    @property
    def is_terminal(self) -> bool:
        return self.status in ("achieved", "abandoned")


_ENTITY_TYPES: dict[str, type] = {
    "todos": Todo,
    "gates": Gate,
    "evidence": Evidence,
    "runs": Run,
    "notes": Note,
    "handoffs": Handoff,
}


E = TypeVar("E")
_REQUIRED: Any = object()  # in a row of defaults: the field has none


class _Row:
    """A record's fields as `from_event` lays them out: each one's position in `__init__`,
    the row of defaults (`_FACTORY` where the record makes a fresh list) and the positions
    of the fields that have no default."""

    __slots__ = ("places", "defaults", "required")

    def __init__(self, cls: type) -> None:
        found = fields(cls)
        self.places = {f.name: at for at, f in enumerate(found)}
        self.defaults = tuple(_default(f) for f in found)
        self.required = tuple(at for at, value in enumerate(self.defaults) if value is _REQUIRED)


def _default(f: Any) -> Any:
    if f.default is not MISSING:
        return f.default
    return _FACTORY if f.default_factory is not MISSING else _REQUIRED


_ROWS: dict[type, _Row] = {}


def from_event(cls: type[E], data: dict[str, Any], **stamps: Any) -> E:
    """A new entity from the event that creates it: the values of the event's data keys that
    name a field of `cls` (lists copied; a key without a field is left out), then `stamps`,
    what the envelope adds (visibility, seq, time). A field with no default and no value is
    a `TypeError`, as `cls(**values)` would raise.

    The values are passed by position (issue 19): a dict of them passed by keyword cost
    more than all the rest of the fold's work on a new entity (11,000 in 50,000 events)."""
    layout = _ROWS.get(cls)
    if layout is None:
        layout = _ROWS[cls] = _Row(cls)
    places, row = layout.places, list(layout.defaults)
    for key, value in data.items():
        at = places.get(key)
        if at is not None:
            row[at] = list(value) if type(value) is list else value
    for key, value in stamps.items():
        row[places[key]] = value
    for at in layout.required:
        if row[at] is _REQUIRED:
            name = fields(cls)[at].name  # type: ignore[arg-type]
            raise TypeError(f"{cls.__name__} has no value for its field {name}")
    return cls(*row)


def state_from_dict(data: dict[str, Any]) -> GoalState:
    """Rebuild a `GoalState` from a plain dict (entities as dicts of field values)."""
    kwargs = dict(data)
    ops = data.get("operations") or {}
    kwargs["operations"] = OpIndex(ops) if isinstance(ops, bytes) else OpIndex(entries=ops)
    for name, cls in _ENTITY_TYPES.items():
        kwargs[name] = {key: cls(**value) for key, value in data.get(name, {}).items()}
    known = {f.name for f in fields(GoalState)}
    return GoalState(**{k: v for k, v in kwargs.items() if k in known})


# -- the snapshot codec ----------------------------------------------------------------------
# Entities are stored as rows of field values in declaration order (half the bytes of dicts,
# and `cls(*row)` is several times faster than `cls(**mapping)`), under a signature of the
# field names, so a snapshot written by code with other fields is refused, never misread.

_GOAL_FIELDS = tuple(
    f.name for f in fields(GoalState) if f.name not in _ENTITY_TYPES and f.name != "operations"
)


def _signature() -> dict[str, list[str]]:
    sig = {name: [f.name for f in fields(cls)] for name, cls in _ENTITY_TYPES.items()}
    sig["goal"] = list(_GOAL_FIELDS)
    return sig


def encode_state(state: GoalState) -> dict[str, Any]:
    """`state` as JSON-ready rows (the operations index is stored apart: `OpIndex.dump`)."""
    out: dict[str, Any] = {
        "fields": _signature(),
        "goal": [getattr(state, name) for name in _GOAL_FIELDS],
    }
    for name, cls in _ENTITY_TYPES.items():
        # One C call per entity (a tuple: every entity has several fields; orjson writes a
        # tuple as the same array a list gives).
        row = operator.attrgetter(*[f.name for f in fields(cls)])
        out[name] = [row(item) for item in getattr(state, name).values()]
    return out


def decode_state(data: dict[str, Any], operations: bytes) -> GoalState:
    """The inverse of `encode_state`; `ValueError` when the rows were written for other fields."""
    if data.get("fields") != _signature():
        raise ValueError("snapshot fields differ from this version's")
    state = GoalState(**dict(zip(_GOAL_FIELDS, data["goal"], strict=True)))
    state.operations = OpIndex(operations)
    for name, cls in _ENTITY_TYPES.items():
        key = 0  # the id is each entity's first field
        setattr(state, name, {row[key]: cls(*row) for row in data[name]})
    return state
