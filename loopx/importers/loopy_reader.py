"""Read loopy-loop's on-disk sessions into plain dataclasses: no engine, no writes.

Two layouts are read, side by side, file by file:

- the older documented one: `goal.md`, `session.json`, `state.json`, `events.jsonl`,
  `control.json` (v1), `updates_from_user.md`, `children.json`, `project_state/finished.md`,
  `iterations/<NNNN>_<workflow>/{prompt.txt,result.json,result_text.txt,harness_run_id.txt,
  goal_check.json}`, `eval_results/<run>/report.json`;
- loopy-loop 0.12's: session ids `001_<slug>`, `goal_contract.json`, `session_outcome.json`,
  `receipts/` (or `git_receipts/`), `inputs/user_updates.jsonl`, `protocol_failures/`,
  `control_rejected/`, `eval_receipts/`, control v2/v3, child sessions nested under
  `children/<id>/`.

`state.json` is loopy-loop's source of truth; `events.jsonl` is best effort (gaps, duplicates
and a torn final line are tolerated). Every problem is reported per file as a `Problem`;
`Session.fatal` says the session must not be imported at all (its goal or status cannot be
known), otherwise only the named item is left out. Unknown files are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from loopx.importers.loopy_finished import FinishedEntry, parse_finished
from loopx.importers.sanitize import norm_time
from loopx.model.errors import NotFound

LOOPY_DIR = ".loopy_loop"
SESSION_MARKERS = ("session.json", "state.json", "goal.md", "control.json", "events.jsonl")
_ITERATION_DIR = re.compile(r"^(\d{1,8})_([A-Za-z0-9][\w.-]*)$")
_RECEIPT_NAME = re.compile(r"^(\d{1,8})_(.+)_git_(before|after)\.json$")
_GOAL_FILE = re.compile(r"^goal_file:\s*['\"]?([^'\"#\n]+?)['\"]?\s*(?:#.*)?$", re.MULTILINE)

# The schema versions this importer understands, per file kind.
VERSIONS: dict[str, tuple[int, ...]] = {
    "state.json": (1, 2),
    "control.json": (1, 2, 3),
    "session.json": (1, 2),
    "session_outcome.json": (1,),
    "goal_contract.json": (1,),
    "children.json": (1, 2),
    "goal_check.json": (1, 2),
    "protocol failure": (1,),
    "event": (1,),
    "git receipt": (1, 2),
    "eval receipt": (1,),
    "user input": (1,),
    "handoff.json": (1,),
}


@dataclass
class Problem:
    """One thing that could not be read. `error`: something was not imported; `warning`:
    tolerated, nothing lost."""

    path: str
    message: str
    severity: str = "error"
    session_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "message": self.message,
            "severity": self.severity,
            "session_id": self.session_id,
        }


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


# -- discovery ----------------------------------------------------------------------------


def is_session_dir(path: Path) -> bool:
    return path.is_dir() and (
        any((path / name).is_file() for name in SESSION_MARKERS) or (path / "iterations").is_dir()
    )


def _nested(session_dir: Path) -> list[Path]:
    """A session folder and every child session nested under it, parents first."""
    out = [session_dir]
    children = session_dir / "children"
    if children.is_dir():
        for child in sorted(children.iterdir()):
            if not child.name.startswith(".") and is_session_dir(child):
                out.extend(_nested(child))
    return out


def discover(path: Path) -> tuple[Path, Path | None, list[Path]]:
    """(base, project root, session folders) for a project root, `.loopy_loop` or session."""
    path = path.expanduser().resolve()
    if not path.exists():
        raise NotFound("the path to import does not exist", code="source_not_found")
    sessions_dir: Path | None = None
    if (path / LOOPY_DIR / "sessions").is_dir():
        base, root, sessions_dir = path, path, path / LOOPY_DIR / "sessions"
    elif (path / "sessions").is_dir() and (path.name == LOOPY_DIR or not is_session_dir(path)):
        base, root, sessions_dir = path, path.parent, path / "sessions"
    elif path.name == "sessions" and path.parent.name == LOOPY_DIR:
        base, root, sessions_dir = path, path.parent.parent, path
    elif is_session_dir(path):
        anchor = next((p for p in path.parents if p.name == LOOPY_DIR), None)
        return path.parent, anchor.parent if anchor else None, _nested(path)
    else:
        raise NotFound(
            "no loopy-loop sessions found (expected a project root holding .loopy_loop/, "
            "a .loopy_loop folder or a session folder)",
            code="source_not_found",
        )
    found: list[Path] = []
    for entry in sorted(sessions_dir.iterdir()):
        if not entry.name.startswith(".") and is_session_dir(entry):
            found.extend(_nested(entry))
    if not found:
        raise NotFound(
            "no loopy-loop sessions found under .loopy_loop/sessions", code="no_sessions"
        )
    return base, root, found


def read_source(path: Path) -> Source:
    base, root, folders = discover(path)
    return Source(base, root, [read_session(folder, base, root) for folder in folders])


# -- one session --------------------------------------------------------------------------


class _Files:
    """Reads a session's files, turning every failure into a `Problem`."""

    def __init__(self, session: Session):
        self.s = session

    def rel(self, path: Path) -> str:
        return f"{self.s.rel}/{path.relative_to(self.s.directory).as_posix()}"

    def problem(self, path: Path | str, message: str, severity: str = "error") -> None:
        where = self.rel(path) if isinstance(path, Path) else f"{self.s.rel}/{path}"
        self.s.problems.append(Problem(where, message, severity, self.s.session_id))

    def read(self, path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError:
            self.problem(path, "cannot be read")
            return None

    def text(self, path: Path) -> str | None:
        data = self.read(path)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self.problem(path, "is not UTF-8 text")
            return None

    def json(
        self,
        path: Path,
        kind: str,
        *,
        versions: tuple[int, ...] | None = None,
        severity: str = "error",
    ) -> tuple[dict[str, Any], bytes] | None:
        """The JSON object at `path` with a supported schema version, or None (reported).

        `versions` overrides the versions known for `kind`; `()` skips the version check.
        """
        raw = self.read(path)
        if raw is None:
            return None
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as err:
            where = f" (line {err.lineno}, column {err.colno})" if err.lineno else ""
            self.problem(path, f"{kind} is not valid JSON{where}", severity)
            return None
        if not isinstance(data, dict):
            self.problem(path, f"{kind} is not a JSON object", severity)
            return None
        allowed = versions if versions is not None else VERSIONS.get(kind, (1,))
        version = data.get("schema_version", 1)
        if allowed and (
            not isinstance(version, int) or isinstance(version, bool) or version not in allowed
        ):
            shown = version if isinstance(version, int) else "unreadable"
            self.problem(
                path,
                f"{kind} has schema_version {shown}, which this importer does not read "
                f"(it reads {_versions(allowed)}); is it from a newer loopy-loop?",
                severity,
            )
            return None
        return data, raw


def _versions(allowed: tuple[int, ...]) -> str:
    return ", ".join(str(v) for v in allowed)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _strs(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str) and v.strip()] if isinstance(value, list) else []


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_session(folder: Path, base: Path, project_root: Path | None) -> Session:
    """Everything one session folder says, with the problems found on the way."""
    session = Session(
        session_id=folder.name, directory=folder, rel=folder.relative_to(base).as_posix()
    )
    files = _Files(session)
    _read_manifest(session, files)
    _read_state(session, files, project_root)
    _read_control(session, files)
    _read_outcome(session, files)
    _read_goal(session, files, project_root)
    _read_events(session, files)
    _read_iterations(session, files)
    _read_failures(session, files)
    _read_finished(session, files)
    _read_updates(session, files)
    _read_children(session, files)
    _read_evals(session, files)
    session.fatal = session.fatal or session.goal_text is None
    return session


def _fatal(session: Session) -> None:
    session.fatal = True


def _read_manifest(s: Session, f: _Files) -> None:
    path = s.directory / "session.json"
    if not path.exists():
        return
    got = f.json(path, "session.json")
    if got is None:
        _fatal(s)
        return
    data, _ = got
    s.session_id = _str(data.get("session_id")) or s.session_id
    s.uuid = _str(data.get("session_uuid"))
    s.parent_session_id = _str(data.get("parent_session_id"))
    s.created_at = norm_time(data.get("created_at"))


def _top_state(project_root: Path | None, session_id: str) -> Path | None:
    """The pre-session-folder layout kept one `state.json` beside `sessions/`."""
    if project_root is None:
        return None
    path = project_root / LOOPY_DIR / "state.json"
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if isinstance(data, dict) and data.get("active_session_id") == session_id:
        return path
    return None


def _read_state(s: Session, f: _Files, project_root: Path | None) -> None:
    path = s.directory / "state.json"
    if not path.exists():
        path = _top_state(project_root, s.session_id) or path
    if not path.exists():
        f.problem(
            "state.json",
            "state.json is missing; the status is taken from control.json and events.jsonl",
            "warning",
        )
        return
    got = f.json(path, "state.json") if path.parent == s.directory else _outer_json(path)
    if got is None:
        _fatal(s)
        return
    data, _ = got
    history = [
        h
        for h in data.get("history") or []
        if isinstance(h, dict)
        and _int(h.get("iteration")) is not None
        and h.get("session_id", s.session_id) == s.session_id
    ]
    current = data.get("current_task")
    snapshot = data.get("config_snapshot")
    s.state = LoopState(
        schema_version=data.get("schema_version", 1),
        status=_str(data.get("status")) or "running",
        goal_met=data.get("goal_met") is True,
        stop_requested=data.get("stop_requested") is True,
        unresolvable_error=data.get("unresolvable_error") is True,
        stop_reason=_str(data.get("stop_reason")),
        iteration_count=_int(data.get("iteration_count")) or 0,
        max_turns=_int(data.get("max_turns")),
        current_iteration=_int(current.get("iteration")) if isinstance(current, dict) else None,
        goal=_str(snapshot.get("goal")) if isinstance(snapshot, dict) else None,
        terminal_at=norm_time(data.get("terminal_at")),
        parent_session_id=_str(data.get("parent_session_id")),
        history=history,
    )
    s.parent_session_id = s.parent_session_id or s.state.parent_session_id


def _outer_json(path: Path) -> tuple[dict[str, Any], bytes] | None:
    raw = path.read_bytes()
    data = orjson.loads(raw)
    return (data, raw) if data.get("schema_version", 1) in VERSIONS["state.json"] else None


def _read_control(s: Session, f: _Files) -> None:
    path = s.directory / "control.json"
    if not path.exists():
        return
    got = f.json(path, "control.json")
    if got is None:
        _fatal(s)
        return
    data, raw = got
    state = data.get("state")
    if state not in ("running", "stopped"):
        f.problem(path, "control.json state must be running or stopped")
        _fatal(s)
        return
    producer: dict[str, Any] = data["producer"] if isinstance(data.get("producer"), dict) else {}
    s.control = Control(
        schema_version=data.get("schema_version", 1),
        state=state,
        stop_reason=_str(data.get("stop_reason")),
        reason=_str(data.get("reason")) or "",
        evidence_refs=_strs(data.get("evidence_refs")),
        eval_refs=_strs(data.get("eval_receipt_refs"))
        + ([data["eval_receipt_ref"]] if _str(data.get("eval_receipt_ref")) else []),
        producer_workflow=_str(producer.get("workflow_id")),
        producer_attempt=_str(producer.get("attempt_id")),
        created_at=norm_time(data.get("created_at")),
        raw=raw,
    )


def _read_outcome(s: Session, f: _Files) -> None:
    path = s.directory / "session_outcome.json"
    if not path.exists():
        return
    got = f.json(path, "session_outcome.json")
    if got is None:
        _fatal(s)
        return
    data, raw = got
    s.outcome = Outcome(
        lifecycle=_str(data.get("lifecycle")),
        terminal_status=_str(data.get("terminal_status")),
        stop_reason=_str(data.get("stop_reason")),
        evidence_refs=_strs(data.get("evidence_refs"))
        + _strs(data.get("delivery_refs"))
        + _strs(data.get("eval_refs")),
        created_at=norm_time(data.get("created_at")),
        raw=raw,
    )


def _project_goal(project_root: Path | None) -> Path | None:
    if project_root is None:
        return None
    name = "loopy_loop_goal.txt"
    config = project_root / "loopy_loop_config.yaml"
    try:
        match = _GOAL_FILE.search(config.read_text(encoding="utf-8"))
        if match:
            name = match.group(1).strip()
    except (OSError, UnicodeDecodeError):
        pass
    candidate = (project_root / name).resolve()
    if project_root.resolve() not in candidate.parents:
        return None
    return candidate if candidate.is_file() else None


def _read_goal(s: Session, f: _Files, project_root: Path | None) -> None:
    contract_path = s.directory / "goal_contract.json"
    contract = None
    if contract_path.exists():
        got = f.json(contract_path, "goal_contract.json")
        contract = got[0] if got else None
    if contract:
        s.criteria = _strs(contract.get("completion_criteria"))
        s.constraints = _strs(contract.get("constraints"))
        s.deliverables = _strs(contract.get("deliverables"))
        s.created_at = s.created_at or norm_time(contract.get("created_at"))
    goal_md = f.text(s.directory / "goal.md")
    candidates: list[tuple[str | None, str]] = [
        (goal_md, "goal.md"),
        (_str(contract.get("goal")) if contract else None, "goal_contract.json"),
        (s.state.goal if s.state else None, "state.json"),
    ]
    for text, source in candidates:
        if text and text.strip():
            s.goal_text, s.goal_source = text.strip(), source
            return
    project_goal = _project_goal(project_root) if s.parent_session_id is None else None
    if project_goal is not None:
        text = f.text(project_goal)
        if text and text.strip():
            s.goal_text, s.goal_source = text.strip(), "project goal file"
            f.problem(
                "goal.md",
                "goal.md is missing; the goal was taken from the project's goal file, "
                "which may have changed since the session started",
                "warning",
            )
            return
    f.problem(
        "goal.md",
        "no goal: goal.md is missing or empty and neither goal_contract.json nor state.json "
        "names one; the session was not imported",
    )


def _read_events(s: Session, f: _Files) -> None:
    path = s.directory / "events.jsonl"
    raw = f.read(path)
    if not raw:
        return
    info = s.events
    seen: set[str] = set()
    lines = raw.split(b"\n")
    torn = not raw.endswith(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        last = number == len(lines)
        try:
            event = orjson.loads(line)
            if not isinstance(event, dict):
                raise ValueError
        except (orjson.JSONDecodeError, ValueError):
            if last and torn:
                f.problem(path, "the final line is incomplete (a torn write); ignored", "warning")
            else:
                f.problem(path, f"line {number} is not a JSON object; skipped", "warning")
            continue
        version = event.get("schema_version", 1)
        if version not in VERSIONS["event"]:
            f.problem(
                path, f"line {number} has unknown schema_version {version}; skipped", "warning"
            )
            continue
        event_id = event.get("event_id")
        if isinstance(event_id, str):
            if event_id in seen:
                info.duplicates += 1
                continue
            seen.add(event_id)
        info.read += 1
        ts = norm_time(event.get("ts"))
        if ts:
            info.first_ts = min(info.first_ts or ts, ts)
            info.last_ts = max(info.last_ts or ts, ts)
        payload: dict[str, Any] = event["payload"] if isinstance(event.get("payload"), dict) else {}
        kind = event.get("type")
        if kind == "task_finished" and _int(payload.get("iteration")) is not None:
            key = (payload["iteration"], _str(payload.get("attempt_id")))
            info.finished.setdefault(key, {**payload, "ts": ts})
        elif kind == "session_stopped":
            info.stopped = {**payload, "ts": ts}


def _receipts(s: Session, f: _Files) -> dict[tuple[str, str], GitMark]:
    """Git boundary receipts keyed by (attempt id or iteration prefix, phase)."""
    out: dict[tuple[str, str], GitMark] = {}
    for folder in ("receipts", "git_receipts"):
        root = s.directory / folder
        if not root.is_dir():
            continue
        for path in sorted(root.glob("*.json")):
            got = f.json(path, "git receipt", severity="warning")
            if got is None:
                continue
            data, _ = got
            phase = _str(data.get("phase"))
            if phase not in ("before", "after"):
                continue
            head = _str(data.get("head"))
            mark = GitMark(
                head=head if head and re.fullmatch(r"[0-9a-f]{7,64}", head) else None,
                branch=_str(data.get("branch")),
                captured_at=norm_time(data.get("captured_at")),
                dirty=data["dirty"] if isinstance(data.get("dirty"), bool) else None,
            )
            attempt = _str(data.get("attempt_id"))
            if attempt:
                out[(attempt, phase)] = mark
            named = _RECEIPT_NAME.match(path.name)
            if named:
                out[(f"#{int(named.group(1))}", phase)] = mark
    return out


def _read_result(it: Iteration, folder: Path, f: _Files) -> tuple[dict[str, Any] | None, bool]:
    """Fill `it` from an iteration folder; return (result.json data, whether it is present)."""
    it.prompt = f.read(folder / "prompt.txt")
    it.result_text = f.read(folder / "result_text.txt")
    result_path = folder / "result.json"
    present = result_path.exists()
    result = None
    if present:
        got = f.json(result_path, "result.json", versions=(1,))
        if got is not None:
            data, raw = got
            if isinstance(data.get("success"), bool):
                result, it.result_json = data, raw
            else:
                f.problem(result_path, "result.json has no boolean success; run not imported")
    check_path = folder / "goal_check.json"
    if check_path.exists():
        got = f.json(check_path, "goal_check.json")
        if got is not None:
            data, raw = got
            if isinstance(data.get("goal_met"), bool):
                it.goal_check = GoalCheck(
                    goal_met=data["goal_met"],
                    reason=_str(data.get("reason")) or "",
                    schema_version=data.get("schema_version", 1),
                    eval_receipt_ref=_str(data.get("eval_receipt_ref")),
                    raw=raw,
                )
            else:
                f.problem(check_path, "goal_check.json has no boolean goal_met; not imported")
    return result, present


def _apply_result(it: Iteration, result: dict[str, Any]) -> None:
    it.attempt_id = it.attempt_id or _str(result.get("attempt_id"))
    usage: dict[str, Any] = result["usage"] if isinstance(result.get("usage"), dict) else {}
    it.prompt_tokens = _int(usage.get("prompt_tokens"))
    it.completion_tokens = _int(usage.get("completion_tokens"))
    duration = result.get("duration_s")
    if isinstance(duration, int | float) and not isinstance(duration, bool):
        it.duration_s = float(duration)


def _read_iterations(s: Session, f: _Files) -> None:
    folders: dict[tuple[int, str], Path] = {}
    root = s.directory / "iterations"
    if root.is_dir():
        for child in sorted(root.iterdir()):
            match = _ITERATION_DIR.match(child.name)
            if match and child.is_dir():
                folders[(int(match.group(1)), match.group(2))] = child
    receipts = _receipts(s, f)
    history = s.state.history if s.state else []
    attempts: dict[int, int] = {}
    used: set[tuple[int, str]] = set()
    for entry in history:
        number = entry["iteration"]
        workflow = _str(entry.get("workflow_id")) or "unknown"
        attempts[number] = attempts.get(number, 0) + 1
        it = Iteration(number=number, workflow=workflow, attempt=attempts[number])
        it.attempt_id = _str(entry.get("attempt_id"))
        it.success = entry.get("success") is True
        it.error = _str(entry.get("error"))
        it.failure_kind = _str(entry.get("failure_kind"))
        it.started_at = norm_time(entry.get("started_at"))
        it.finished_at = norm_time(entry.get("finished_at"))
        folder = folders.get((number, workflow))
        if folder is not None and (number, workflow) not in used:
            used.add((number, workflow))
            it.folder = folder.relative_to(s.directory).as_posix()
            result, _ = _read_result(it, folder, f)
            if result is not None and result.get("attempt_id") in (None, it.attempt_id):
                _apply_result(it, result)
        s.iterations.append(it)
    for (number, workflow), folder in sorted(folders.items()):
        if (number, workflow) in used:
            continue
        if s.state is not None and s.state.current_iteration == number:
            s.pending.append(number)  # dispatched, not yet recorded by the coordinator
            continue
        it = Iteration(number=number, workflow=workflow)
        it.folder = folder.relative_to(s.directory).as_posix()
        result, present = _read_result(it, folder, f)
        event = _finished_event(s, number)
        if result is not None:
            it.success = result["success"]
            it.error = _str(result.get("error"))
            it.failure_kind = _str(result.get("failure_kind"))
            _apply_result(it, result)
        elif event is not None and not present:
            it.success = event.get("success") is True
            it.error = _str(event.get("error"))
            it.failure_kind = _str(event.get("failure_kind"))
            it.attempt_id = _str(event.get("attempt_id"))
        else:
            if not present:
                s.pending.append(number)  # no result yet: still running
            continue
        it.finished_at = (event or {}).get("ts")
        s.iterations.append(it)
    for it in s.iterations:
        event = _finished_event(s, it.number, it.attempt_id)
        if event is not None:
            it.finished_at = it.finished_at or event.get("ts")
            if it.prompt_tokens is None:
                it.prompt_tokens = _int(event.get("prompt_tokens"))
                it.completion_tokens = _int(event.get("completion_tokens"))
            if it.duration_s is None and isinstance(event.get("duration_s"), int | float):
                it.duration_s = float(event["duration_s"])
        for key in (it.attempt_id or "", f"#{it.number}"):
            it.git_before = it.git_before or receipts.get((key, "before"))
            it.git_after = it.git_after or receipts.get((key, "after"))
        if it.finished_at is None and it.git_after is not None:
            it.finished_at = it.git_after.captured_at
    s.iterations.sort(key=lambda it: (it.number, it.attempt))
    s.pending.sort()


def _finished_event(
    s: Session, number: int, attempt_id: str | None = None
) -> dict[str, Any] | None:
    events = s.events.finished
    if attempt_id is not None and (number, attempt_id) in events:
        return events[(number, attempt_id)]
    return next((v for (n, _), v in sorted(events.items(), key=str) if n == number), None)


def _read_failures(s: Session, f: _Files) -> None:
    root = s.directory / "protocol_failures"
    if root.is_dir():
        for path in sorted(root.glob("*.json")):
            got = f.json(path, "protocol failure")
            if got is None:
                continue
            data, raw = got
            attempt = data.get("finishing_attempt")
            attempt = attempt if isinstance(attempt, dict) else {}
            s.protocol_failures.append(
                ProtocolFailure(
                    failure_id=_str(data.get("failure_id")) or path.stem,
                    kind=_str(data.get("kind")) or "protocol_failure",
                    source="protocol_failures",
                    path=path.relative_to(s.directory).as_posix(),
                    attempt_id=_str(attempt.get("attempt_id")),
                    workflow_id=_str(attempt.get("workflow_id")),
                    created_at=norm_time(data.get("created_at")),
                    raw=raw,
                )
            )
    rejected = s.directory / "control_rejected"
    if rejected.is_dir():
        for path in sorted(p for p in rejected.iterdir() if p.is_file()):
            body = f.read(path)
            if body is None:
                continue
            producer: dict[str, Any] = {}
            created = None
            try:
                data = orjson.loads(body)
                if isinstance(data, dict):
                    if isinstance(data.get("producer"), dict):
                        producer = data["producer"]
                    created = norm_time(data.get("created_at"))
            except orjson.JSONDecodeError:
                pass  # a rejected control is kept as it was, readable or not
            s.protocol_failures.append(
                ProtocolFailure(
                    failure_id=path.stem,
                    kind="rejected_control",
                    source="control_rejected",
                    path=path.relative_to(s.directory).as_posix(),
                    attempt_id=_str(producer.get("attempt_id")),
                    workflow_id=_str(producer.get("workflow_id")),
                    created_at=created,
                    raw=body,
                )
            )


def _read_finished(s: Session, f: _Files) -> None:
    text = f.text(s.directory / "project_state" / "finished.md")
    if text:
        s.finished = parse_finished(text)
    path = s.directory / "project_state" / "handoff.json"
    if not path.exists():
        return
    got = f.json(path, "handoff.json")
    if got is None:
        return
    data, _ = got
    producer = data.get("producer")
    revision = _int(data.get("revision"))
    if not isinstance(producer, dict) or not _str(producer.get("workflow_id")) or not revision:
        return  # the placeholder written before any orchestrator published a handoff
    s.handoff = LayerHandoff(
        revision=revision,
        workflow=producer["workflow_id"],
        attempt_id=_str(producer.get("attempt_id")),
        updated_at=norm_time(data.get("updated_at")),
        summary=_str(data.get("summary")) or "",
        accepted=_items(data.get("accepted_outcomes")),
        open_work=_items(data.get("open_work")),
        risks=_items(data.get("risks")),
        decisions=_items(data.get("decision_refs")),
        refs=_strs(data.get("evidence_refs"))
        + _strs(data.get("delivery_refs"))
        + _strs(data.get("eval_refs")),
    )


def _items(value: Any) -> list[str]:
    """A list of free-form items (strings or objects) as strings."""
    if not isinstance(value, list):
        return []
    out = []
    for item in value:
        text = item if isinstance(item, str) else orjson.dumps(item).decode()
        if text.strip():
            out.append(text.strip())
    return out


def _read_updates(s: Session, f: _Files) -> None:
    text = f.text(s.directory / "updates_from_user.md")
    if text and text.strip():
        s.updates_text = text.strip()
    path = s.directory / "inputs" / "user_updates.jsonl"
    raw = f.read(path)
    if not raw:
        return
    inputs: dict[str, UserInput] = {}
    acks: dict[str, str | None] = {}
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
            if not isinstance(record, dict):
                raise ValueError
        except (orjson.JSONDecodeError, ValueError):
            f.problem(path, f"line {number} is not a JSON object; skipped", "warning")
            continue
        if record.get("schema_version", 1) not in VERSIONS["user input"]:
            f.problem(path, f"line {number} has an unknown schema_version; skipped", "warning")
            continue
        input_id = _str(record.get("input_id"))
        kind = record.get("record_type")
        if input_id and kind == "user_input" and input_id not in inputs:
            inputs[input_id] = UserInput(
                input_id=input_id,
                text=_str(record.get("text")) or "",
                created_at=norm_time(record.get("created_at")),
            )
        elif input_id and kind == "user_input_acknowledgement":
            acks.setdefault(input_id, norm_time(record.get("acknowledged_at")))
    for input_id, item in inputs.items():
        if input_id in acks:
            item.acknowledged, item.acknowledged_at = True, acks[input_id]
        s.user_inputs.append(item)


def _read_children(s: Session, f: _Files) -> None:
    path = s.directory / "children.json"
    if not path.exists():
        return
    raw = f.read(path)
    try:
        data = orjson.loads(raw or b"")
    except orjson.JSONDecodeError as err:
        f.problem(path, f"children.json is not valid JSON (line {err.lineno}); links skipped")
        return
    if isinstance(data, list):  # the earliest form: a bare list of records
        data = {"schema_version": 1, "children": data}
    got = f.json(path, "children.json") if isinstance(data, dict) else None
    if got is None:
        if not isinstance(data, dict):
            f.problem(path, "children.json is not a JSON object; links skipped")
        return
    for record in data.get("children") or []:
        if isinstance(record, dict) and _str(record.get("session_id")):
            s.children.append(
                ChildRef(
                    session_id=record["session_id"],
                    status=_str(record.get("status")),
                    stop_reason=_str(record.get("stop_reason")),
                    created_at=norm_time(record.get("created_at")),
                    completed_at=norm_time(record.get("completed_at")),
                )
            )


def _eval_counts(data: dict[str, Any]) -> tuple[bool | None, int | None, int | None]:
    passed = next(
        (data[k] for k in ("run_passed", "passed", "all_passed") if isinstance(data.get(k), bool)),
        None,
    )
    checks = next(
        (data[k] for k in ("checks", "results", "check_results") if isinstance(data.get(k), list)),
        None,
    )
    if checks is None:
        return passed, None, None
    ok = 0
    for item in checks:
        if isinstance(item, dict) and (
            item.get("passed") is True or item.get("status") in ("passed", "pass")
        ):
            ok += 1
    return passed, ok, len(checks)


def _read_evals(s: Session, f: _Files) -> None:
    results = s.directory / "eval_results"
    if results.is_dir():
        for folder in sorted(p for p in results.iterdir() if p.is_dir()):
            path = folder / "report.json"
            if not path.exists():
                continue
            got = f.json(path, "eval report", versions=())  # eval-banana's own format
            if got is None:
                continue
            data, raw = got
            passed, ok, total = _eval_counts(data)
            s.evals.append(
                EvalReport(
                    report_id=folder.name,
                    source="eval_results",
                    passed=passed,
                    checks_passed=ok,
                    checks_total=total,
                    revision=None,
                    created_at=norm_time(
                        data.get("finished_at") or data.get("created_at") or data.get("timestamp")
                    ),
                    raw=raw,
                )
            )
    receipts = s.directory / "eval_receipts"
    if receipts.is_dir():
        for path in sorted(receipts.glob("*.json")):
            got = f.json(path, "eval receipt")
            if got is None:
                continue
            data, raw = got
            verdict = data.get("verdict")
            if not (isinstance(verdict, dict) and isinstance(verdict.get("goal_met"), bool)):
                continue  # a canonical report copy, not a receipt
            results_list = data.get("check_results")
            results_list = results_list if isinstance(results_list, list) else []
            subject: dict[str, Any] = (
                data["subject"] if isinstance(data.get("subject"), dict) else {}
            )
            commit = _str(subject.get("git_commit"))
            s.evals.append(
                EvalReport(
                    report_id=_str(data.get("eval_id")) or path.stem,
                    source="eval_receipts",
                    passed=verdict["goal_met"],
                    checks_passed=sum(
                        1 for r in results_list if isinstance(r, dict) and r.get("passed") is True
                    ),
                    checks_total=len(results_list),
                    revision=commit if commit and re.fullmatch(r"[0-9a-f]{7,64}", commit) else None,
                    created_at=norm_time(data.get("created_at")),
                    raw=raw,
                )
            )
