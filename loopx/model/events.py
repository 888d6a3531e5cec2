"""Versioned event shapes: the only things the ledger holds.

Every event is an envelope (see `Envelope`) whose `data` matches the model registered for its
`type` and `v`. Older versions are upgraded on read by `upgrade()`, never migrated in place.
Text that is not for the shared ledger (private notes, private evidence summaries) is held as
a `BlobText` reference to the local private blob store.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from loopx.model.ids import ID_PATTERN, OPERATION_ID_PATTERN
from loopx.model.upgrade import EVENT_VERSION, upgrade

__all__ = ["EVENT_MODELS", "EVENT_VERSION", "Envelope", "upgrade", "validate_data"]

Id = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
Title = Annotated[str, StringConstraints(min_length=1, max_length=500)]
LongText = Annotated[str, StringConstraints(min_length=1, max_length=20_000)]
Timestamp = Annotated[str, StringConstraints(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")]
Hash = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
GitRev = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{7,64}$")]
VisibilityName = Literal["public", "team", "private"]


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BlobText(_Data):
    """Text kept in the private blob store; the ledger holds only its hash."""

    blob: Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]


Text = Title | BlobText
Body = LongText | BlobText


class Policy(_Data):
    lease_seconds: int = Field(default=1800, ge=1, le=30 * 86400)
    quota: int | None = Field(default=None, ge=0)
    quota_unit: Annotated[str, StringConstraints(min_length=1, max_length=32)] = "runs"


class GoalCreated(_Data):
    title: Text
    objective: Body
    acceptance: list[Body] = Field(default_factory=list, max_length=100)
    repository: Annotated[str, StringConstraints(max_length=500)] | None = None
    predecessor: Id | None = None
    policy: Policy = Field(default_factory=Policy)


class GoalClosed(_Data):
    outcome: Literal["achieved", "abandoned"]
    reason: Body | None = None


class AgentRegistered(_Data):
    agent_id: Id
    name: Title | None = None
    kind: Annotated[str, StringConstraints(min_length=1, max_length=64)] | None = None


class Backoff(_Data):
    """When a monitor looks again after an observation that found nothing new: `fixed` waits
    `seconds` every time; `exponential` doubles the wait after each such observation, up to
    `cap` seconds."""

    kind: Literal["fixed", "exponential"] = "fixed"
    seconds: int = Field(ge=1, le=30 * 86400)
    cap: int | None = Field(default=None, ge=1, le=365 * 86400)


class MonitorSpec(_Data):
    """What a monitor todo watches (a typed ref: `ci:`, `pr:`, `url:` or free text), when it
    is first due, and how its next wake moves."""

    watch: Text
    watch_kind: Literal["ci", "pr", "url", "text"]
    next_at: Timestamp
    backoff: Backoff


class TodoAdded(_Data):
    todo_id: Id
    title: Text
    role: Literal["agent", "user"] = "agent"
    kind: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,31}$")] = "task"
    priority: int = Field(default=2, ge=0, le=4)
    depends_on: list[Id] = Field(default_factory=list, max_length=1000)
    acceptance: Body | None = None
    predecessor: Id | None = None
    monitor: MonitorSpec | None = None


class TodoUpdated(_Data):
    todo_id: Id
    title: Text | None = None
    priority: int | None = Field(default=None, ge=0, le=4)
    depends_on: list[Id] | None = Field(default=None, max_length=1000)
    acceptance: Body | None = None
    kind: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,31}$")] | None = None
    role: Literal["agent", "user"] | None = None


class TodoClaimed(_Data):
    todo_id: Id
    agent_id: Id
    session_id: Id
    lease_expires_at: Timestamp
    via_handoff: Id | None = None


class TodoRenewed(_Data):
    todo_id: Id
    lease_expires_at: Timestamp


class TodoRef(_Data):
    """A todo transition with an optional reason: release, block, unblock, reopen, cancel."""

    todo_id: Id
    reason: Body | None = None


class TodoCompleted(_Data):
    todo_id: Id
    summary: Body | None = None
    evidence_ids: list[Id] = Field(default_factory=list, max_length=1000)
    successor: Id | None = None


class GateOpened(_Data):
    gate_id: Id
    question: Text
    authority: Id
    blocks: list[Id] = Field(default_factory=list, max_length=1000)
    blocks_goal: bool = False
    # When to ask the authority again if it is still undecided (a next wake for a decision).
    ask_again_at: Timestamp | None = None


class GateResolved(_Data):
    gate_id: Id
    resolution: Literal["approved", "rejected", "deferred"]
    by: Id
    rationale: Body | None = None
    ask_again_at: Timestamp | None = None  # with `deferred`: when to ask again


class EvidenceAdded(_Data):
    evidence_id: Id
    kind: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]
    summary: Text
    # A private item's references are private text too: blob references, like its summary.
    refs: list[Annotated[str, StringConstraints(min_length=1, max_length=2000)] | BlobText] = Field(
        default_factory=list, max_length=100
    )
    revision: GitRev | None = None
    todo_id: Id | None = None
    body: BlobText | None = None
    body_bytes: int | None = Field(default=None, ge=0)


class RunRecorded(_Data):
    run_id: Id
    agent_id: Id
    session_id: Id
    todo_id: Id | None = None
    outcome: Literal["progress", "completed", "blocked", "failed", "no_op", "waiting"]
    summary: Body | None = None
    evidence_ids: list[Id] = Field(default_factory=list, max_length=1000)
    successor: Id | None = None
    wait: Body | None = None
    quota_spent: int = Field(default=1, ge=0, le=1_000_000)


class QuotaSet(_Data):
    quota: int | None = Field(default=None, ge=0)
    quota_unit: Annotated[str, StringConstraints(min_length=1, max_length=32)] = "runs"


# Lessons and decisions are what the workbench carries forward; a `note` is anything else.
NoteKind = Literal["lesson", "decision", "note"]


class NoteAdded(_Data):
    note_id: Id
    kind: NoteKind
    text: Body
    todo_id: Id | None = None


class MonitorObserved(_Data):
    """One observation of a monitor, recorded as evidence (`evidence_id`, appended by the same
    operation). `unchanged` and `failed` move the next wake to `next_at` (by the backoff);
    `changed` names the transition the same operation appends: the monitor completes, is
    blocked, or completes with a new successor todo."""

    todo_id: Id
    result: Literal["unchanged", "changed", "failed"]
    evidence_id: Id
    next_at: Timestamp | None = None
    transition: Literal["complete", "block", "successor"] | None = None
    successor: Id | None = None


TURN_PHASES = ("claim", "execute", "validate", "write_back", "spend", "settle")


class TurnBegun(_Data):
    """A turn journal entry opens (phase `claim`): progress, never authority."""

    turn_id: Id
    todo_id: Id
    agent_id: Id
    session_id: Id


class TurnPhased(_Data):
    """A turn reached a phase; `ref` names what it touched (a pushed branch, a test log)."""

    turn_id: Id
    phase: Literal["execute", "validate", "write_back"]
    session_id: Id
    ref: Text | None = None


class TurnSettled(_Data):
    """The turn is settled into `run_id` (appended by the same operation, with its quota)."""

    turn_id: Id
    run_id: Id


#: The text fields a `field.redacted` event may blank, per kind of entity.
REDACTABLE_FIELDS: dict[str, tuple[str, ...]] = {
    "goal": ("title", "objective", "acceptance", "reason", "repository"),
    "todo": ("title", "acceptance", "reason", "summary"),
    "gate": ("question", "rationale"),
    "evidence": ("summary", "refs", "body"),
    "note": ("text",),
    "run": ("summary", "wait"),
    "handoff": ("note",),
}


class FieldRedacted(_Data):
    """A governed correction: one text field of one entity is shown as ``[redacted]`` from
    now on, in every projection and audience. Who is the event's actor; why is `reason`.
    The only event a closed goal accepts (a false positive must never block it for good)."""

    redaction_id: Id
    entity: Literal["goal", "todo", "gate", "evidence", "note", "run", "handoff"]
    entity_id: Id
    field: Literal[
        "title",
        "objective",
        "acceptance",
        "reason",
        "repository",
        "summary",
        "question",
        "rationale",
        "refs",
        "body",
        "text",
        "wait",
        "note",
    ]
    reason: Title


class FindingAllowed(_Data):
    """A reviewed allow entry: the boundary scan stops reporting findings of `kind` inside one
    entity's id, which no correction can reach (an id cannot be renamed in an append-only
    ledger). Who is the event's actor; why is `reason`. Like a redaction, a closed goal accepts
    it, so a false positive in an id never blocks publishing for good. It names the place (the
    entity; `field` is always its `id`), never the text nor a hash of it."""

    allowance_id: Id
    entity: Literal["goal", "todo", "gate", "evidence", "note", "run", "handoff"]
    entity_id: Id
    field: Literal["id"] = "id"
    kind: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]{1,63}$")]
    reason: Title


# -- handoff (issue 5) --------------------------------------------------------------------
# Limits here mirror schemas/handoff-context.schema.json; a test keeps the two in step.

# A path relative to the workspace: no leading `/` or `~`, no drive letter, no `..` segment, no
# control character, backslash or backtick. The same text is the context schema's pattern.
RELATIVE_PATH_PATTERN = (
    r"^(?![/~])(?![A-Za-z]:)(?!(.*/)?\.\.(/|$))(?![\s\S]*[\x00-\x1f`\\])[\s\S]+$"
)


NoteItem = Annotated[str, StringConstraints(min_length=1, max_length=1000)]


class HandoffApproach(_Data):
    approach: Annotated[str, StringConstraints(min_length=1, max_length=500)]
    outcome: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    reason: NoteItem | None = None


class HandoffFile(_Data):
    model_config = ConfigDict(extra="forbid", frozen=True, regex_engine="python-re")

    path: Annotated[
        str, StringConstraints(min_length=1, max_length=500, pattern=RELATIVE_PATH_PATTERN)
    ]
    action: Literal["created", "modified", "deleted", "renamed", "read"]
    summary: Annotated[str, StringConstraints(min_length=1, max_length=500)] | None = None


class HandoffNote(_Data):
    """The continuation note: what was done, tried, decided, and what comes next."""

    work_summary: Annotated[str, StringConstraints(min_length=1, max_length=4000)]
    approaches_tried: list[HandoffApproach] = Field(default_factory=list, max_length=30)
    next_steps: list[NoteItem] = Field(default_factory=list, max_length=30)
    files_touched: list[HandoffFile] = Field(default_factory=list, max_length=200)
    key_decisions: list[NoteItem] = Field(default_factory=list, max_length=30)
    open_questions: list[NoteItem] = Field(default_factory=list, max_length=30)
    source_refs: list[Annotated[str, StringConstraints(min_length=1, max_length=2000)]] = Field(
        default_factory=list, max_length=50
    )


class HandoffPrepared(_Data):
    """A continuation note for a todo, bound to the todo's revision and the workspace's HEAD."""

    handoff_id: Id
    todo_id: Id
    todo_revision: int = Field(ge=0)
    source_agent_id: Id
    source_session_id: Id
    target_agent_id: Id | None = None
    git_revision: GitRev | None = None
    workspace_dirty: bool | None = None
    note: HandoffNote | BlobText


class TransferGrant(_Data):
    """What an adoption may do: move this todo's claim from the source to the target agent."""

    handoff_id: Id
    todo_id: Id
    todo_revision: int = Field(ge=1)
    source_agent_id: Id
    source_session_id: Id
    target_agent_id: Id
    target_session_id: Id


class HandoffAdopted(_Data):
    handoff_id: Id
    todo_id: Id
    grant: TransferGrant
    git_revision: GitRev | None = None
    workspace_dirty: bool | None = None


# (type, version) → data model. New versions are added here, with an upgrade in `upgrade()`.
EVENT_MODELS: dict[str, type[_Data]] = {
    "goal.created": GoalCreated,
    "goal.closed": GoalClosed,
    "agent.registered": AgentRegistered,
    "todo.added": TodoAdded,
    "todo.updated": TodoUpdated,
    "todo.claimed": TodoClaimed,
    "todo.renewed": TodoRenewed,
    "todo.released": TodoRef,
    "todo.blocked": TodoRef,
    "todo.unblocked": TodoRef,
    "todo.reopened": TodoRef,
    "todo.cancelled": TodoRef,
    "todo.completed": TodoCompleted,
    "gate.opened": GateOpened,
    "gate.resolved": GateResolved,
    "evidence.added": EvidenceAdded,
    "run.recorded": RunRecorded,
    "quota.set": QuotaSet,
    "note.added": NoteAdded,
    "field.redacted": FieldRedacted,
    "finding.allowed": FindingAllowed,
    "monitor.observed": MonitorObserved,
    "turn.begun": TurnBegun,
    "turn.phased": TurnPhased,
    "turn.settled": TurnSettled,
    "handoff.prepared": HandoffPrepared,
    "handoff.adopted": HandoffAdopted,
}


class Actor(_Data):
    agent_id: Id
    session_id: Id


class Envelope(BaseModel):
    """One ledger line. `seq`, `event_id`, `prev` and `sum` are stamped by the store."""

    # Strict, like the JSON Schema: a ledger line with "seq": "1" is not a valid line.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    seq: int = Field(ge=1)
    event_id: Annotated[str, StringConstraints(pattern=r"^evt-[0-9a-f]{16}$")]
    operation_id: Annotated[str, StringConstraints(pattern=OPERATION_ID_PATTERN)]
    op_hash: Hash
    type: Annotated[str, StringConstraints(pattern=r"^[a-z]+\.[a-z_]+$")]
    v: int = Field(ge=1)
    goal_id: Id
    actor: Actor
    recorded_at: Timestamp
    visibility: VisibilityName
    data: dict[str, Any]
    prev: Hash
    sum: Hash
    # On every event of a multi-event operation but its last (stamped by the store): a
    # ledger that ends on one was cut mid-operation, so the store treats it as a torn tail.
    more: Literal[True] | None = None


def validate_data(event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    """Validate event data against its model; return it normalised (defaults filled, no Nones)."""
    model = EVENT_MODELS[event_type]
    return model.model_validate(data).model_dump(mode="json", exclude_none=True)
