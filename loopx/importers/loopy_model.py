"""What a loopy-loop session holds, as plain dataclasses: the reader fills them, the planner
reads them. No I/O here."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from loopx.importers.loopy_finished import FinishedEntry


@dataclass
class Problem:
    """One thing that could not be read or written. `error`: something was not imported;
    `warning`: tolerated, nothing lost. `code` is stable for the problems a program may act
    on (a whole session left out: `goal_exists`, `goal_id_clash`, `session_unreadable`)."""

    path: str
    message: str
    severity: str = "error"
    session_id: str | None = None
    code: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class GitMark:
    head: str | None
    branch: str | None
    captured_at: str | None
    dirty: bool | None = None


@dataclass
class GoalCheck:
    goal_met: bool
    reason: str
    schema_version: int
    eval_receipt_ref: str | None
    raw: bytes


@dataclass
class Iteration:
    number: int
    workflow: str
    attempt: int = 1  # 1 for the first attempt at this iteration number, 2 for a retry, …
    folder: str | None = None  # "iterations/0004_outer", relative to the session
    attempt_id: str | None = None
    success: bool = False
    error: str | None = None
    failure_kind: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    prompt: bytes | None = None
    result_text: bytes | None = None
    result_json: bytes | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    duration_s: float | None = None
    goal_check: GoalCheck | None = None
    git_before: GitMark | None = None
    git_after: GitMark | None = None


@dataclass
class ProtocolFailure:
    failure_id: str
    kind: str
    source: str  # "protocol_failures" or "control_rejected"
    path: str  # relative to the session
    attempt_id: str | None
    workflow_id: str | None
    created_at: str | None
    raw: bytes


@dataclass
class Control:
    schema_version: int
    state: str
    stop_reason: str | None
    reason: str
    evidence_refs: list[str]
    eval_refs: list[str]
    producer_workflow: str | None
    producer_attempt: str | None
    created_at: str | None
    raw: bytes


@dataclass
class Outcome:
    lifecycle: str | None
    terminal_status: str | None
    stop_reason: str | None
    evidence_refs: list[str]
    created_at: str | None
    raw: bytes


@dataclass
class LoopState:
    schema_version: int
    status: str
    goal_met: bool
    stop_requested: bool
    unresolvable_error: bool
    stop_reason: str | None
    iteration_count: int
    max_turns: int | None
    current_iteration: int | None
    goal: str | None
    terminal_at: str | None
    parent_session_id: str | None
    history: list[dict[str, Any]]


@dataclass
class ChildRef:
    session_id: str
    status: str | None
    stop_reason: str | None
    created_at: str | None
    completed_at: str | None


@dataclass
class UserInput:
    input_id: str
    text: str
    created_at: str | None
    acknowledged_at: str | None = None
    acknowledged: bool = False


@dataclass
class EvalReport:
    report_id: str
    source: str  # "eval_results" or "eval_receipts"
    passed: bool | None
    checks_passed: int | None
    checks_total: int | None
    revision: str | None
    created_at: str | None
    raw: bytes


@dataclass
class LayerHandoff:
    """`project_state/handoff.json` (0.12): the orchestrator's rolling continuation note."""

    revision: int
    workflow: str
    attempt_id: str | None
    updated_at: str | None
    summary: str
    accepted: list[str]
    open_work: list[str]
    risks: list[str]
    decisions: list[str]
    refs: list[str]


@dataclass
class EventsInfo:
    read: int = 0
    duplicates: int = 0
    first_ts: str | None = None
    last_ts: str | None = None
    finished: dict[tuple[int, str | None], dict[str, Any]] = field(default_factory=dict)
    stopped: dict[str, Any] | None = None


@dataclass
class Session:
    session_id: str
    directory: Path
    rel: str  # the session folder, relative to the import root
    uuid: str | None = None
    parent_session_id: str | None = None
    created_at: str | None = None
    goal_text: str | None = None
    goal_source: str | None = None
    criteria: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    deliverables: list[str] = field(default_factory=list)
    state: LoopState | None = None
    control: Control | None = None
    outcome: Outcome | None = None
    iterations: list[Iteration] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)
    protocol_failures: list[ProtocolFailure] = field(default_factory=list)
    finished: list[FinishedEntry] = field(default_factory=list)
    updates_text: str | None = None
    user_inputs: list[UserInput] = field(default_factory=list)
    children: list[ChildRef] = field(default_factory=list)
    evals: list[EvalReport] = field(default_factory=list)
    handoff: LayerHandoff | None = None
    events: EventsInfo = field(default_factory=EventsInfo)
    problems: list[Problem] = field(default_factory=list)
    fatal: bool = False

    @property
    def times(self) -> list[str]:
        """Every timestamp the session records, for a deterministic clock."""
        out = [self.created_at, self.events.first_ts, self.events.last_ts]
        if self.state:
            out.append(self.state.terminal_at)
        for it in self.iterations:
            out += [it.started_at, it.finished_at]
        if self.outcome:
            out.append(self.outcome.created_at)
        if self.control:
            out.append(self.control.created_at)
        return sorted(t for t in out if t)


@dataclass
class Source:
    """What a PATH given to the importer holds."""

    base: Path  # problem paths are relative to this
    project_root: Path | None
    sessions: list[Session]
