"""Every governed write as a typed command: one frozen dataclass per write.

A command is the engine's only argument besides the `Context` (who acts, on which store,
at what time). Its canonical form is its idempotency fingerprint: the write's `cmd` name and
every field, but the goal, the operation id and the revision guard (where the write goes and
how it is retried, not what it asks). So no field can be left out of the fingerprint by
mistake: a retry that changes any field is `operation_id_reused`, never "replayed".

The canonical form reproduces the request each write recorded before commands were typed
(`tests/test_command_fingerprints.py`), so an operation recorded by an older loopx still
replays. Field metadata says where a field differs: `_unkeyed()` (how to observe, not what
to write: a workspace, its git binding), `_optional()` (in the form only when set), and a
`key` naming it in the form. Bytes are keyed by their `sha256:` reference.

The engine normalises a command (defaults, trimmed text) before it runs it; the normalised
command is what is fingerprinted. The CLI and the MCP tools build commands from their
options by field name, so neither can pass a field the engine does not know.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # pragma: no cover (Python 3.10)
    from typing_extensions import dataclass_transform

from loopx.model.records import Record, record
from loopx.store.blobs import blob_ref
from loopx.store.ledger import canonical

if TYPE_CHECKING:
    from loopx.state.entities import GoalState


def _unkeyed(default: Any = None) -> Any:
    """A field the fingerprint leaves out."""
    return field(default=default, metadata={"key": None})


def _optional(key: str | None = None) -> Any:
    """A field (default None) that is part of the fingerprint only when it is set."""
    return field(default=None, metadata={"omit_none": True, **({"key": key} if key else {})})


def _plain(value: Any) -> Any:
    """A field's value as the canonical form holds it."""
    if isinstance(value, bytes):
        return blob_ref(value)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    return value


if TYPE_CHECKING:  # to mypy, a command is the frozen dataclass it behaves as
    from dataclasses import dataclass as _commandclass
else:

    def _commandclass(**_: Any) -> Callable[[type[Any]], type[Any]]:
        return record


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(field,))
@_commandclass(frozen=True, kw_only=True)
class Command(Record):
    """A write: its goal, its idempotency key and what it asks. A frozen, keyword-only
    dataclass whose methods are `Record`'s (`loopx.model.records`: not compiled per command)."""

    cmd: ClassVar[str]
    keyed_by_session: ClassVar[bool] = False  # the acting session is part of what it asks
    creates_goal: ClassVar[bool] = False
    allow_terminal: ClassVar[bool] = False  # reaches a closed goal (governed corrections)

    goal_id: str = field(metadata={"key": None})
    operation_id: str | None = _unkeyed()

    def __init_subclass__(cls, cmd: str | None = None, **kwargs: Any) -> None:
        """Every subclass is a frozen, keyword-only dataclass; a concrete one names its
        write: `class ClaimTodo(OnTodo, cmd="todo.claim")`."""
        super().__init_subclass__(**kwargs)
        if cmd is not None:
            cls.cmd = cmd
        record(cls)

    def request(self, session_id: str) -> dict[str, Any]:
        """The canonical form: `cmd` and every keyed field (and the session when keyed)."""
        out: dict[str, Any] = {"cmd": self.cmd}
        for f in fields(self):
            key = f.metadata.get("key", f.name)
            value = getattr(self, f.name)
            if key is None or (value is None and f.metadata.get("omit_none")):
                continue
            out[key] = _plain(value)
        if self.keyed_by_session:
            out["session_id"] = session_id
        return out

    def fingerprint(self, agent_id: str, session_id: str) -> str:
        """The idempotency fingerprint: what is asked, and by which agent."""
        body = {"request": self.request(session_id), "agent_id": agent_id}
        return hashlib.sha256(canonical(body)).hexdigest()


class Guarded(Command):
    """A write that `expected_revision` may guard: by default the goal's head revision."""

    expected_revision: int | None = _unkeyed()

    def current_revision(self, state: GoalState) -> int:
        return state.revision


class OnTodo(Guarded):
    """A write on one todo: `expected_revision` guards that todo (0 when it does not exist)."""

    todo_id: str

    def current_revision(self, state: GoalState) -> int:
        found = state.todos.get(self.todo_id)
        return found.revision if found is not None else 0


# -- goals ----------------------------------------------------------------------------------


class CreateGoal(Command, cmd="goal.create"):
    creates_goal = True

    goal_id: str  # keyed: a retry must name the same goal
    title: str
    objective: str
    acceptance: Sequence[str] = ()
    repository: str | None = None
    visibility: str | None = None
    predecessor: str | None = None
    lease_seconds: int | None = None
    quota: int | None = None
    quota_unit: str = "runs"


class CloseGoal(Guarded, cmd="goal.close"):
    outcome: str
    reason: str | None = None


class RegisterAgent(Command, cmd="agent.register"):
    agent_id: str | None = None  # default: the acting agent
    name: str | None = None
    kind: str | None = None


class SetQuota(Guarded, cmd="quota.set"):
    quota: int | None  # None: no limit
    unit: str = "runs"


class AddNote(Command, cmd="note.add"):
    text: str
    kind: str = "note"
    todo_id: str | None = None
    visibility: str | None = None
    note_id: str | None = None


# -- todos ----------------------------------------------------------------------------------


class AddTodo(Guarded, cmd="todo.add"):
    title: str
    todo_id: str | None = None
    role: str = "agent"
    kind: str = "task"
    priority: int = 2
    depends_on: Sequence[str] = ()
    acceptance: str | None = None
    visibility: str | None = None
    predecessor: str | None = None


class UpdateTodo(OnTodo, cmd="todo.update"):
    """Change an open todo's fields; None leaves a field as it is."""

    title: str | None = None
    priority: int | None = None
    depends_on: Sequence[str] | None = None  # () clears them
    acceptance: str | None = None
    kind: str | None = None
    role: str | None = None


class ClaimTodo(OnTodo, cmd="todo.claim"):
    keyed_by_session = True

    lease_seconds: int | None = None


class RenewTodo(OnTodo, cmd="todo.renew"):
    lease_seconds: int | None = None


class TodoTransition(OnTodo):
    """A todo transition that takes a reason (required to block or reopen). The transitions
    below add no field: each is this dataclass under its own `cmd`."""

    reason: str | None = None


class ReleaseTodo(TodoTransition, cmd="todo.release"):
    """Give up the acting agent's claim; the todo is open again."""


class BlockTodo(TodoTransition, cmd="todo.block"):
    """Mark a todo blocked, with the reason (required)."""


class UnblockTodo(TodoTransition, cmd="todo.unblock"):
    """Clear a todo's blocked state."""


class ReopenTodo(TodoTransition, cmd="todo.reopen"):
    """Reopen a done or cancelled todo, with the reason (required)."""


class CancelTodo(TodoTransition, cmd="todo.cancel"):
    """Cancel an open todo."""


class CompleteTodo(OnTodo, cmd="todo.complete"):
    summary: str | None = None
    evidence_ids: Sequence[str] = ()
    successor: str | None = None


# -- gates ----------------------------------------------------------------------------------


class OpenGate(Guarded, cmd="gate.open"):
    """With no todos named, the gate holds the whole goal."""

    question: str
    authority: str
    blocks: Sequence[str] = ()
    blocks_goal: bool = False
    gate_id: str | None = None
    visibility: str | None = None
    ask_again_at: str | None = _optional()


class ResolveGate(Guarded, cmd="gate.resolve"):
    """`expected_revision` guards the gate."""

    gate_id: str
    resolution: str
    by: str | None = None  # default: the acting agent
    rationale: str | None = None
    ask_again_at: str | None = _optional()

    def current_revision(self, state: GoalState) -> int:
        found = state.gates.get(self.gate_id)
        return found.revision if found is not None else 0


# -- evidence and runs ----------------------------------------------------------------------


class AddEvidence(Command, cmd="evidence.add"):
    """Its revision is `revision`, else the git HEAD of `workspace`, else none."""

    kind: str
    summary: str
    refs: Sequence[str] = ()
    body: bytes | None = None
    revision: str | None = None
    workspace: Path | None = _unkeyed()
    todo_id: str | None = None
    evidence_id: str | None = None
    visibility: str | None = None


class RecordRun(Command, cmd="run.record"):
    outcome: str
    agent_id: str | None = None  # default: the acting agent (and session)
    session_id: str | None = None
    todo_id: str | None = None
    summary: str | None = None
    evidence_ids: Sequence[str] = ()
    successor: str | None = None
    wait: str | None = None
    quota_spent: int = 1
    run_id: str | None = None
    visibility: str | None = None


# -- monitors -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Backoff:
    """`fixed`: every `seconds`; `exponential`: from `seconds`, doubling, up to `cap`."""

    kind: str
    seconds: int
    cap: int | None = None


class AddMonitor(Guarded, cmd="monitor.add"):
    """A todo of kind `monitor`, first due at `first_at` (default: now)."""

    title: str
    watch: str
    backoff: Backoff
    first_at: str | None = None
    todo_id: str | None = None
    priority: int = 2
    depends_on: Sequence[str] = ()
    visibility: str | None = None


class ObserveMonitor(OnTodo, cmd="monitor.observe"):
    """One observation: its evidence, and when `changed` the transition `then` names."""

    result: str
    summary: str
    refs: Sequence[str] = ()
    revision: str | None = None
    then: str | None = None
    successor_title: str | None = None
    successor_id: str | None = None
    reason: str | None = None
    evidence_id: str | None = None
    evidence_visibility: str | None = field(default=None, metadata={"key": "visibility"})


# -- turns ----------------------------------------------------------------------------------


class BeginTurn(Command, cmd="turn.begin"):
    keyed_by_session = True

    todo_id: str
    turn_id: str | None = None


class RecordPhase(Command, cmd="turn.phase"):
    turn_id: str
    phase: str
    ref: str | None = None


class EndTurn(Command, cmd="turn.end"):
    turn_id: str
    outcome: str
    summary: str | None = None
    quota_spent: int = 1
    evidence_ids: Sequence[str] = ()
    run_id: str | None = None


# -- corrections ----------------------------------------------------------------------------


class RedactField(Guarded, cmd="field.redact"):
    """A correction: the one write a closed goal accepts."""

    allow_terminal = True

    entity: str
    entity_id: str | None = None  # a goal's defaults to the goal
    field: str
    reason: str
    redaction_id: str | None = None


class AllowFinding(Guarded, cmd="finding.allow"):
    """A reviewed allow entry for a boundary finding inside an id (which no redaction can
    reach): a closed goal accepts it too."""

    allow_terminal = True

    entity: str
    entity_id: str | None = None  # a goal's defaults to the goal
    seq: int | None = None  # or: the entity the event at this seq created
    kind: str
    reason: str
    allowance_id: str | None = None


# -- handoffs -------------------------------------------------------------------------------


class PrepareHandoff(OnTodo, cmd="handoff.prepare"):
    """A continuation note, bound to the todo's revision and to a git revision: given, else
    the HEAD of `workspace`. The binding is how, not what: a retry after a commit is still
    the same operation."""

    keyed_by_session = True

    note: dict[str, Any]
    visibility: str | None = None
    target_agent_id: str | None = None
    workspace: Path | None = _unkeyed()
    git_revision: str | None = _unkeyed()
    workspace_dirty: bool | None = _unkeyed()


class AdoptHandoff(OnTodo, cmd="handoff.adopt"):
    """The acting agent adopts a todo's pending note; `workspace`'s HEAD is recorded."""

    keyed_by_session = True

    handoff_id: str | None = None
    target_agent_id: str | None = None  # must be the acting agent
    lease_seconds: int | None = None
    workspace: Path | None = _unkeyed()
