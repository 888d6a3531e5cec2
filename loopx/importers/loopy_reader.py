"""Read loopy-loop's on-disk sessions into plain dataclasses: no engine, no writes. Which
folders are sessions is `loopy_discover`'s to say.

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

import os
import re
from pathlib import Path
from typing import Any

import orjson

from loopx.importers import loopy_paths
from loopx.importers.loopy_discover import LOOPY_DIR, discover
from loopx.importers.loopy_files import VERSIONS, SessionFiles, int_of, text_of, texts_of
from loopx.importers.loopy_finished import parse_finished
from loopx.importers.loopy_iterations import read_events, read_failures, read_iterations
from loopx.importers.loopy_model import (
    ChildRef,
    Control,
    EvalReport,
    LayerHandoff,
    LoopState,
    Outcome,
    Problem,
    Session,
    Source,
    UserInput,
)
from loopx.importers.sanitize import norm_time
from loopx.model.errors import InvalidInput
from loopx.store import fsio

_GOAL_FILE = re.compile(r"^goal_file:\s*['\"]?([^'\"#\n]+?)['\"]?\s*(?:#.*)?$", re.MULTILINE)

__all__ = ["LOOPY_DIR", "Problem", "Session", "Source", "discover", "read_session", "read_source"]


def read_source(path: Path) -> Source:
    base, root, folders = discover(path)
    sessions = [read_session(folder, base, root) for folder in folders]
    _refuse_clashes(sessions)
    _link_children(sessions)
    return Source(base, root, sessions)


def _refuse_clashes(sessions: list[Session]) -> None:
    """Two folders holding one session id would merge into one goal: refuse the import
    before anything is written, naming both folders (relative to the source root)."""
    seen: dict[str, Session] = {}
    for s in sessions:
        first = seen.setdefault(s.session_id, s)
        if first is not s:
            raise InvalidInput(
                f"two folders hold session {s.session_id}: {first.rel} and {s.rel}; "
                "import them separately (with --goal-id) or remove one",
                code="session_id_clash",
                session_id=s.session_id,
                folders=[first.rel, s.rel],
            )


def _link_children(sessions: list[Session]) -> None:
    """A session that names no parent belongs to the session whose `children.json` names it,
    else to the session it is nested under (`children/<id>/`)."""
    by_dir = {s.directory: s for s in sessions}
    named = {c.session_id: s.session_id for s in reversed(sessions) for c in s.children}
    for s in sessions:
        if s.parent_session_id is not None:
            continue
        if named.get(s.session_id, s.session_id) != s.session_id:
            s.parent_session_id = named[s.session_id]
        elif s.directory.parent.name == "children":
            parent = by_dir.get(s.directory.parent.parent)
            s.parent_session_id = parent.session_id if parent else None


# -- one session --------------------------------------------------------------------------


def read_session(folder: Path, base: Path, project_root: Path | None) -> Session:
    """Everything one session folder says, with the problems found on the way."""
    session = Session(
        session_id=folder.name, directory=folder, rel=folder.relative_to(base).as_posix()
    )
    files = SessionFiles(session)
    _read_manifest(session, files)
    _read_state(session, files, project_root)
    _read_control(session, files)
    _read_outcome(session, files)
    _read_goal(session, files, project_root)
    read_events(session, files)
    read_iterations(session, files)
    read_failures(session, files)
    _read_finished(session, files)
    _read_updates(session, files)
    _read_children(session, files)
    _read_evals(session, files)
    session.fatal = session.fatal or session.goal_text is None
    return session


def _fatal(session: Session) -> None:
    session.fatal = True


def _session_json(s: Session, f: SessionFiles, name: str) -> tuple[dict[str, Any], bytes] | None:
    """The session folder's JSON file `name`: None when there is none, and None with the
    session made fatal when it cannot be read."""
    path = s.directory / name
    if not loopy_paths.exists(path):
        return None
    got = f.json(path, name)
    if got is None:
        _fatal(s)
    return got


def _read_manifest(s: Session, f: SessionFiles) -> None:
    got = _session_json(s, f, "session.json")
    if got is None:
        return
    data, _ = got
    s.session_id = text_of(data.get("session_id")) or s.session_id
    s.uuid = text_of(data.get("session_uuid"))
    s.parent_session_id = text_of(data.get("parent_session_id"))
    s.created_at = norm_time(data.get("created_at"))


def _top_state(project_root: Path | None, session_id: str) -> Path | None:
    """The pre-session-folder layout kept one `state.json` beside `sessions/`."""
    if project_root is None:
        return None
    path = project_root / LOOPY_DIR / "state.json"
    try:
        data = orjson.loads(loopy_paths.read(path))
    except (OSError, orjson.JSONDecodeError, fsio.UnsafePath, fsio.TooLarge):
        return None
    if isinstance(data, dict) and data.get("active_session_id") == session_id:
        return path
    return None


def _read_state(s: Session, f: SessionFiles, project_root: Path | None) -> None:
    path = s.directory / "state.json"
    if not loopy_paths.exists(path):
        path = _top_state(project_root, s.session_id) or path
    if not loopy_paths.exists(path):
        f.problem(
            "state.json",
            "state.json is missing; the status is taken from control.json and events.jsonl",
            "warning",
        )
        return
    got = f.json(path, "state.json") if path.parent == s.directory else _outer_json(path)
    if got is None:
        if path.parent != s.directory:
            f.problem(
                "state.json",
                "the project's state.json has a schema_version this importer does not read",
            )
        _fatal(s)
        return
    data, _ = got
    history = [
        h
        for h in data.get("history") or []
        if isinstance(h, dict)
        and int_of(h.get("iteration")) is not None
        and h.get("session_id", s.session_id) == s.session_id
    ]
    current = data.get("current_task")
    snapshot = data.get("config_snapshot")
    s.state = LoopState(
        schema_version=data.get("schema_version", 1),
        status=text_of(data.get("status")) or "running",
        goal_met=data.get("goal_met") is True,
        stop_requested=data.get("stop_requested") is True,
        unresolvable_error=data.get("unresolvable_error") is True,
        stop_reason=text_of(data.get("stop_reason")),
        iteration_count=int_of(data.get("iteration_count")) or 0,
        max_turns=int_of(data.get("max_turns")),
        current_iteration=int_of(current.get("iteration")) if isinstance(current, dict) else None,
        goal=text_of(snapshot.get("goal")) if isinstance(snapshot, dict) else None,
        terminal_at=norm_time(data.get("terminal_at")),
        parent_session_id=text_of(data.get("parent_session_id")),
        history=history,
    )
    s.parent_session_id = s.parent_session_id or s.state.parent_session_id


def _outer_json(path: Path) -> tuple[dict[str, Any], bytes] | None:
    raw = loopy_paths.read(path)  # read once already by `_top_state`: a regular JSON object
    data = orjson.loads(raw)
    return (data, raw) if data.get("schema_version", 1) in VERSIONS["state.json"] else None


def _read_control(s: Session, f: SessionFiles) -> None:
    if not loopy_paths.exists(s.directory / "control.json"):
        f.problem(
            "control.json",
            "control.json is missing; the stop state comes from state.json",
            "warning",
        )
        return
    got = _session_json(s, f, "control.json")
    if got is None:
        return
    data, raw = got
    state = data.get("state")
    if state not in ("running", "stopped"):
        f.problem(s.directory / "control.json", "control.json state must be running or stopped")
        _fatal(s)
        return
    producer: dict[str, Any] = data["producer"] if isinstance(data.get("producer"), dict) else {}
    s.control = Control(
        schema_version=data.get("schema_version", 1),
        state=state,
        stop_reason=text_of(data.get("stop_reason")),
        reason=text_of(data.get("reason")) or "",
        evidence_refs=texts_of(data.get("evidence_refs")),
        eval_refs=texts_of(data.get("eval_receipt_refs"))
        + ([data["eval_receipt_ref"]] if text_of(data.get("eval_receipt_ref")) else []),
        producer_workflow=text_of(producer.get("workflow_id")),
        producer_attempt=text_of(producer.get("attempt_id")),
        created_at=norm_time(data.get("created_at")),
        raw=raw,
    )


def _read_outcome(s: Session, f: SessionFiles) -> None:
    got = _session_json(s, f, "session_outcome.json")
    if got is None:
        return
    data, raw = got
    s.outcome = Outcome(
        lifecycle=text_of(data.get("lifecycle")),
        terminal_status=text_of(data.get("terminal_status")),
        stop_reason=text_of(data.get("stop_reason")),
        evidence_refs=_refs(data),
        created_at=norm_time(data.get("created_at")),
        raw=raw,
    )


def _project_goal(project_root: Path | None) -> Path | None:
    if project_root is None:
        return None
    name = "loopy_loop_goal.txt"
    config = project_root / "loopy_loop_config.yaml"
    try:
        match = _GOAL_FILE.search(loopy_paths.read(config).decode("utf-8"))
        if match:
            name = match.group(1).strip()
    except (OSError, UnicodeDecodeError, fsio.UnsafePath, fsio.TooLarge):
        pass
    # Inside the project by name (no `..`, not absolute), and reached without a link.
    candidate = Path(os.path.normpath(project_root / name))
    if project_root not in candidate.parents:
        return None
    return candidate if loopy_paths.is_file(candidate) else None


def _read_goal(s: Session, f: SessionFiles, project_root: Path | None) -> None:
    contract_path = s.directory / "goal_contract.json"
    contract = None
    if loopy_paths.exists(contract_path):
        got = f.json(contract_path, "goal_contract.json")
        contract = got[0] if got else None
    if contract:
        s.criteria = texts_of(contract.get("completion_criteria"))
        s.constraints = texts_of(contract.get("constraints"))
        s.deliverables = texts_of(contract.get("deliverables"))
        s.created_at = s.created_at or norm_time(contract.get("created_at"))
    goal_md = f.text(s.directory / "goal.md")
    candidates: list[tuple[str | None, str]] = [
        (goal_md, "goal.md"),
        (text_of(contract.get("goal")) if contract else None, "goal_contract.json"),
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


def _read_finished(s: Session, f: SessionFiles) -> None:
    text = f.text(s.directory / "project_state" / "finished.md")
    if text:
        s.finished = parse_finished(text)
    path = s.directory / "project_state" / "handoff.json"
    if not loopy_paths.exists(path):
        return
    got = f.json(path, "handoff.json")
    if got is None:
        return
    data, _ = got
    producer = data.get("producer")
    revision = int_of(data.get("revision"))
    if not isinstance(producer, dict) or not text_of(producer.get("workflow_id")) or not revision:
        return  # the placeholder written before any orchestrator published a handoff
    s.handoff = LayerHandoff(
        revision=revision,
        workflow=producer["workflow_id"],
        attempt_id=text_of(producer.get("attempt_id")),
        updated_at=norm_time(data.get("updated_at")),
        summary=text_of(data.get("summary")) or "",
        accepted=_items(data.get("accepted_outcomes")),
        open_work=_items(data.get("open_work")),
        risks=_items(data.get("risks")),
        decisions=_items(data.get("decision_refs")),
        refs=_refs(data),
    )


def _refs(data: dict[str, Any]) -> list[str]:
    """A 0.12 file's evidence, delivery and eval refs, in that order."""
    keys = ("evidence_refs", "delivery_refs", "eval_refs")
    return [ref for key in keys for ref in texts_of(data.get(key))]


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


def _read_updates(s: Session, f: SessionFiles) -> None:
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
        input_id = text_of(record.get("input_id"))
        kind = record.get("record_type")
        if input_id and kind == "user_input" and input_id not in inputs:
            inputs[input_id] = UserInput(
                input_id=input_id,
                text=text_of(record.get("text")) or "",
                created_at=norm_time(record.get("created_at")),
            )
        elif input_id and kind == "user_input_acknowledgement":
            acks.setdefault(input_id, norm_time(record.get("acknowledged_at")))
    for input_id, item in inputs.items():
        if input_id in acks:
            item.acknowledged, item.acknowledged_at = True, acks[input_id]
        s.user_inputs.append(item)


def _read_children(s: Session, f: SessionFiles) -> None:
    path = s.directory / "children.json"
    if not loopy_paths.exists(path):
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
        if isinstance(record, dict) and text_of(record.get("session_id")):
            s.children.append(
                ChildRef(
                    session_id=record["session_id"],
                    status=text_of(record.get("status")),
                    stop_reason=text_of(record.get("stop_reason")),
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


def _read_evals(s: Session, f: SessionFiles) -> None:
    """eval-banana's `eval_results/<run>/report.json` and loopy-loop's `eval_receipts/`."""
    for folder in loopy_paths.subdirs(s.directory / "eval_results"):
        path = folder / "report.json"
        if not loopy_paths.exists(path):
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
    for path, data, raw in f.jsons(s.directory / "eval_receipts", "eval receipt"):
        report = _eval_receipt(path, data, raw)
        if report is not None:
            s.evals.append(report)


def _eval_receipt(path: Path, data: dict[str, Any], raw: bytes) -> EvalReport | None:
    """An eval receipt, or None for a canonical report copy (it carries no verdict)."""
    verdict = data.get("verdict")
    if not (isinstance(verdict, dict) and isinstance(verdict.get("goal_met"), bool)):
        return None
    results = data.get("check_results")
    results = results if isinstance(results, list) else []
    subject: dict[str, Any] = data["subject"] if isinstance(data.get("subject"), dict) else {}
    commit = text_of(subject.get("git_commit"))
    return EvalReport(
        report_id=text_of(data.get("eval_id")) or path.stem,
        source="eval_receipts",
        passed=verdict["goal_met"],
        checks_passed=sum(1 for r in results if isinstance(r, dict) and r.get("passed") is True),
        checks_total=len(results),
        revision=commit if commit and re.fullmatch(r"[0-9a-f]{7,64}", commit) else None,
        created_at=norm_time(data.get("created_at")),
        raw=raw,
    )
