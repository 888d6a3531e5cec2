"""An iteration's history: `state.json` history, iteration folders, git receipts,
`events.jsonl` (best effort) and protocol failures."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from loopx.importers import loopy_paths
from loopx.importers.loopy_files import VERSIONS, SessionFiles, int_of, text_of
from loopx.importers.loopy_model import GitMark, GoalCheck, Iteration, ProtocolFailure, Session
from loopx.importers.sanitize import norm_time

_ITERATION_DIR = re.compile(r"^(\d{1,8})_([A-Za-z0-9][\w.-]*)$")
_RECEIPT_NAME = re.compile(r"^(\d{1,8})_(.+)_git_(before|after)\.json$")


def read_events(s: Session, f: SessionFiles) -> None:
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
        if kind == "task_finished" and int_of(payload.get("iteration")) is not None:
            key = (payload["iteration"], text_of(payload.get("attempt_id")))
            info.finished.setdefault(key, {**payload, "ts": ts})
        elif kind == "session_stopped":
            info.stopped = {**payload, "ts": ts}


def _receipts(s: Session, f: SessionFiles) -> dict[tuple[str, str], GitMark]:
    """Git boundary receipts keyed by (attempt id or iteration prefix, phase)."""
    out: dict[tuple[str, str], GitMark] = {}
    for folder in ("receipts", "git_receipts"):
        for path, data, _ in f.jsons(s.directory / folder, "git receipt", severity="warning"):
            phase = text_of(data.get("phase"))
            if phase not in ("before", "after"):
                continue
            head = text_of(data.get("head"))
            mark = GitMark(
                head=head if head and re.fullmatch(r"[0-9a-f]{7,64}", head) else None,
                branch=text_of(data.get("branch")),
                captured_at=norm_time(data.get("captured_at")),
                dirty=data["dirty"] if isinstance(data.get("dirty"), bool) else None,
            )
            attempt = text_of(data.get("attempt_id"))
            if attempt:
                out[(attempt, phase)] = mark
            named = _RECEIPT_NAME.match(path.name)
            if named:
                out[(f"#{int(named.group(1))}", phase)] = mark
    return out


def _read_result(
    it: Iteration, folder: Path, f: SessionFiles
) -> tuple[dict[str, Any] | None, bool]:
    """Fill `it` from an iteration folder; return (result.json data, whether it is present)."""
    it.prompt = f.read(folder / "prompt.txt")
    it.result_text = f.read(folder / "result_text.txt")
    result_path = folder / "result.json"
    present = loopy_paths.exists(result_path)
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
    if loopy_paths.exists(check_path):
        got = f.json(check_path, "goal_check.json")
        if got is not None:
            data, raw = got
            if isinstance(data.get("goal_met"), bool):
                it.goal_check = GoalCheck(
                    goal_met=data["goal_met"],
                    reason=text_of(data.get("reason")) or "",
                    schema_version=data.get("schema_version", 1),
                    eval_receipt_ref=text_of(data.get("eval_receipt_ref")),
                    raw=raw,
                )
            else:
                f.problem(check_path, "goal_check.json has no boolean goal_met; not imported")
    return result, present


def _apply_result(it: Iteration, result: dict[str, Any]) -> None:
    it.attempt_id = it.attempt_id or text_of(result.get("attempt_id"))
    usage: dict[str, Any] = result["usage"] if isinstance(result.get("usage"), dict) else {}
    it.prompt_tokens = int_of(usage.get("prompt_tokens"))
    it.completion_tokens = int_of(usage.get("completion_tokens"))
    duration = result.get("duration_s")
    if isinstance(duration, int | float) and not isinstance(duration, bool):
        it.duration_s = float(duration)


def read_iterations(s: Session, f: SessionFiles) -> None:
    """The session's iterations: those its history records, then folders it does not record
    yet, each completed from `events.jsonl` and the git receipts."""
    folders: dict[tuple[int, str], Path] = {}
    for child in loopy_paths.subdirs(s.directory / "iterations"):
        match = _ITERATION_DIR.match(child.name)
        if match:
            folders[(int(match.group(1)), match.group(2))] = child
    receipts = _receipts(s, f)
    used = _read_recorded(s, f, folders)
    for (number, workflow), folder in sorted(folders.items()):
        if (number, workflow) not in used:
            _read_unrecorded(s, f, number, workflow, folder)
    for it in s.iterations:
        _complete(s, it, receipts)
    s.iterations.sort(key=lambda it: (it.number, it.attempt))
    s.pending.sort()


def _read_recorded(
    s: Session, f: SessionFiles, folders: dict[tuple[int, str], Path]
) -> set[tuple[int, str]]:
    """An iteration per `state.json` history entry (a retry is a further attempt), with the
    first folder of its number and workflow; return the folders used."""
    attempts: dict[int, int] = {}
    used: set[tuple[int, str]] = set()
    for entry in s.state.history if s.state else []:
        number = entry["iteration"]
        workflow = text_of(entry.get("workflow_id")) or "unknown"
        attempts[number] = attempts.get(number, 0) + 1
        it = Iteration(number=number, workflow=workflow, attempt=attempts[number])
        it.attempt_id = text_of(entry.get("attempt_id"))
        it.success = entry.get("success") is True
        it.error = text_of(entry.get("error"))
        it.failure_kind = text_of(entry.get("failure_kind"))
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
    return used


def _read_unrecorded(s: Session, f: SessionFiles, number: int, workflow: str, folder: Path) -> None:
    """An iteration folder the history does not record: finished when its result (or its
    `task_finished` event) says so, else still pending."""
    if s.state is not None and s.state.current_iteration == number:
        s.pending.append(number)  # dispatched, not yet recorded by the coordinator
        return
    it = Iteration(number=number, workflow=workflow)
    it.folder = folder.relative_to(s.directory).as_posix()
    result, present = _read_result(it, folder, f)
    event = _finished_event(s, number)
    if result is not None:
        it.success = result["success"]
        it.error = text_of(result.get("error"))
        it.failure_kind = text_of(result.get("failure_kind"))
        _apply_result(it, result)
    elif event is not None and not present:
        it.success = event.get("success") is True
        it.error = text_of(event.get("error"))
        it.failure_kind = text_of(event.get("failure_kind"))
        it.attempt_id = text_of(event.get("attempt_id"))
    else:
        if not present:
            s.pending.append(number)  # no result yet: still running
        return
    it.finished_at = (event or {}).get("ts")
    s.iterations.append(it)


def _complete(s: Session, it: Iteration, receipts: dict[tuple[str, str], GitMark]) -> None:
    """Fill what the iteration's files left out from its `task_finished` event and its git
    receipts."""
    event = _finished_event(s, it.number, it.attempt_id)
    if event is not None:
        it.finished_at = it.finished_at or event.get("ts")
        if it.prompt_tokens is None:
            it.prompt_tokens = int_of(event.get("prompt_tokens"))
            it.completion_tokens = int_of(event.get("completion_tokens"))
        if it.duration_s is None and isinstance(event.get("duration_s"), int | float):
            it.duration_s = float(event["duration_s"])
    for key in (it.attempt_id or "", f"#{it.number}"):
        it.git_before = it.git_before or receipts.get((key, "before"))
        it.git_after = it.git_after or receipts.get((key, "after"))
    if it.finished_at is None and it.git_after is not None:
        it.finished_at = it.git_after.captured_at


def _finished_event(
    s: Session, number: int, attempt_id: str | None = None
) -> dict[str, Any] | None:
    events = s.events.finished
    if attempt_id is not None and (number, attempt_id) in events:
        return events[(number, attempt_id)]
    return next((v for (n, _), v in sorted(events.items(), key=str) if n == number), None)


def read_failures(s: Session, f: SessionFiles) -> None:
    """`protocol_failures/` and `control_rejected/`, each file a failure of its own."""
    for path, data, raw in f.jsons(s.directory / "protocol_failures", "protocol failure"):
        attempt = data.get("finishing_attempt")
        attempt = attempt if isinstance(attempt, dict) else {}
        s.protocol_failures.append(
            ProtocolFailure(
                failure_id=text_of(data.get("failure_id")) or path.stem,
                kind=text_of(data.get("kind")) or "protocol_failure",
                source="protocol_failures",
                path=path.relative_to(s.directory).as_posix(),
                attempt_id=text_of(attempt.get("attempt_id")),
                workflow_id=text_of(attempt.get("workflow_id")),
                created_at=norm_time(data.get("created_at")),
                raw=raw,
            )
        )
    for path in loopy_paths.files(s.directory / "control_rejected"):
        body = f.read(path)
        if body is not None:
            s.protocol_failures.append(_rejected_control(s, path, body))


def _rejected_control(s: Session, path: Path, body: bytes) -> ProtocolFailure:
    """A control loopy-loop rejected, kept as it was, readable or not."""
    producer: dict[str, Any] = {}
    created = None
    try:
        data = orjson.loads(body)
        if isinstance(data, dict):
            if isinstance(data.get("producer"), dict):
                producer = data["producer"]
            created = norm_time(data.get("created_at"))
    except orjson.JSONDecodeError:
        pass
    return ProtocolFailure(
        failure_id=path.stem,
        kind="rejected_control",
        source="control_rejected",
        path=path.relative_to(s.directory).as_posix(),
        attempt_id=text_of(producer.get("attempt_id")),
        workflow_id=text_of(producer.get("workflow_id")),
        created_at=created,
        raw=body,
    )
