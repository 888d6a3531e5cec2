"""Handoff write paths: prepare a continuation note, adopt it (the claim moves with it).

`prepare_handoff` lets only the agent holding a todo's live claim write a note, bound to the
todo's revision and to the workspace's git HEAD (and whether it was dirty). `adopt_handoff`
moves the claim to the target agent through a typed transfer grant, in one operation: a
`handoff.adopted` event carrying the grant, then `todo.claimed` with `via_handoff`. Adoption has
its own preconditions; a plain `todo claim` on another agent's live claim is still refused.

The note comes from a `--from-context` JSON file or from flags; either way it is checked
against `schemas/handoff-context.schema.json` and every problem is reported at once, by JSON
path, never echoing a value.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from loopx.engine import lookup
from loopx.engine.clock import add_seconds
from loopx.engine.core import Change, Context, Result, execute
from loopx.engine.git import head_and_dirty, is_ancestor
from loopx.model.errors import Conflict, InvalidInput, NotFound
from loopx.model.ids import check_id
from loopx.model.schema_problems import schema_problem
from loopx.state.entities import GoalState, Handoff, Todo
from loopx.state.handoff import PENDING, SUPERSEDED, adopt_refusal, latest_handoff
from loopx.store import fsio
from loopx.store.ledger import canonical

if TYPE_CHECKING:  # `handoff inspect` reads notes: it needs no write command
    from loopx.engine.commands import AdoptHandoff, PrepareHandoff

CONTEXT_SCHEMA = "handoff-context.schema.json"
CONTEXT_FORMAT = "loopx.handoff-context/v1"
MAX_CONTEXT_BYTES = 1024 * 1024
NOTE_LISTS = (
    "approaches_tried",
    "next_steps",
    "files_touched",
    "key_decisions",
    "open_questions",
    "source_refs",
)
_NONBLANK = "\\S"
MESSAGE_PROBLEMS = 12  # problems spelled out in the one-line message; details list them all


# -- the note ------------------------------------------------------------------------------


@cache
def _validator() -> Any:
    import jsonschema

    from loopx.resources import resource_dir

    schema = orjson.loads((resource_dir("schemas") / CONTEXT_SCHEMA).read_bytes())
    return jsonschema.Draft202012Validator(schema)


def _json_path(parts: Any) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _problem(error: Any) -> str:
    """Say what is wrong without repeating the value (it may be a secret)."""
    kind, limit, schema = error.validator, error.validator_value, error.schema
    if kind == "additionalProperties":
        allowed = ", ".join(sorted(schema.get("properties", {})))
        return f"has fields that are not allowed here (allowed: {allowed})"
    if kind == "pattern":
        if limit == _NONBLANK:
            return "must not be blank"
        return "must be a path relative to the workspace (no leading '/', '~' or drive, no '..')"
    return schema_problem(error)


def check_note(note: Any, *, code: str = "invalid_note", what: str = "handoff note") -> dict:
    """Validate a note against the published context schema; return it normalised.

    Every problem is collected, then one `InvalidInput` is raised with all of them in
    `details["problems"]` (JSON path + what is wrong), sorted by path.
    """
    problems = sorted(
        {(_json_path(e.absolute_path), _problem(e)) for e in _validator().iter_errors(note)}
    )
    if problems:
        raise _invalid(code, what, problems)
    out = {"work_summary": note["work_summary"]}
    for name in NOTE_LISTS:
        out[name] = list(note.get(name, []))
    return out


def _invalid(code: str, what: str, problems: list[tuple[str, str]]) -> InvalidInput:
    shown = "; ".join(f"{path}: {problem}" for path, problem in problems[:MESSAGE_PROBLEMS])
    more = len(problems) - MESSAGE_PROBLEMS
    if more > 0:
        shown += f"; and {more} more (see details)"
    count = len(problems)
    return InvalidInput(
        f"{what} has {count} problem{'s' if count != 1 else ''}: {shown}",
        code=code,
        problems=[{"path": path, "problem": problem} for path, problem in problems],
    )


def _context_too_large() -> InvalidInput:
    return InvalidInput(
        f"handoff context file is larger than {MAX_CONTEXT_BYTES} bytes", code="file_too_large"
    )


def read_context(source: str | Path) -> dict:
    """Read and check a `--from-context` file (`-` for stdin); every problem at once."""
    try:
        if str(source) == "-":
            raw = sys.stdin.buffer.read(MAX_CONTEXT_BYTES + 1)
        else:  # the store's file rules: no link, FIFO or device; capped
            raw = fsio.current().read_file(Path(source), limit=MAX_CONTEXT_BYTES)
    except fsio.TooLarge:
        raise _context_too_large() from None
    except OSError:
        raise NotFound("handoff context file cannot be read", code="file_not_found") from None
    if len(raw) > MAX_CONTEXT_BYTES:
        raise _context_too_large()
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        where = f"line {err.lineno}, column {err.colno}"
        raise _invalid(
            "invalid_context", "handoff context", [("$", f"is not valid JSON ({where})")]
        ) from None
    if isinstance(data, dict) and data.get("schema") == CONTEXT_FORMAT:
        data = {k: v for k, v in data.items() if k != "schema"}
    return check_note(data, code="invalid_context", what="handoff context")


def _split(value: str, parts: int) -> list[str]:
    pieces = [p.strip() for p in value.split("::", parts - 1)]
    return pieces + [""] * (parts - len(pieces))


def note_from_flags(
    *,
    work_summary: str | None = None,
    rationale: str | None = None,
    next_steps: list[str] | tuple[str, ...] = (),
    tried: list[str] | tuple[str, ...] = (),
    files: list[str] | tuple[str, ...] = (),
    decisions: list[str] | tuple[str, ...] = (),
    questions: list[str] | tuple[str, ...] = (),
    source_refs: list[str] | tuple[str, ...] = (),
) -> dict:
    """Build a note from command-line flags and check it like a context file.

    `tried` items are `APPROACH::OUTCOME[::REASON]`, `files` items `PATH::ACTION[::SUMMARY]`.
    The legacy form `--rationale TEXT --source-ref REF…` maps to work_summary + source_refs.
    """
    if work_summary is not None and rationale is not None:
        raise InvalidInput(
            "pass --work-summary or its legacy name --rationale, not both", code="usage_error"
        )
    note: dict[str, Any] = {
        "work_summary": work_summary if work_summary is not None else rationale,
        "next_steps": list(next_steps),
        "key_decisions": list(decisions),
        "open_questions": list(questions),
        "source_refs": list(source_refs),
    }
    if note["work_summary"] is None:
        del note["work_summary"]
    note["approaches_tried"] = [_entry(item, ("approach", "outcome", "reason")) for item in tried]
    note["files_touched"] = [_entry(item, ("path", "action", "summary")) for item in files]
    return check_note(note, code="invalid_note", what="handoff note")


def _entry(item: str, names: tuple[str, str, str]) -> dict[str, str]:
    """`A::B[::C]` as {names[0]: A, names[1]: B, names[2]: C}, the last only when given."""
    first, second, last = _split(item, 3)
    entry = {names[0]: first, names[1]: second}
    if last:
        entry[names[2]] = last
    return entry


# -- prepare --------------------------------------------------------------------------------


def git_binding(workspace: Path | None) -> tuple[str | None, bool | None]:
    """The workspace's HEAD and whether its tracked files are dirty (None outside git)."""
    if workspace is None:
        return None, None
    return head_and_dirty(workspace)


def prepare_handoff(ctx: Context, cmd: PrepareHandoff) -> Result:
    """Write a continuation note for a todo you hold. `expected_revision` guards the todo.

    The note is bound to the todo's revision and to `git_revision` (default: the HEAD of
    `workspace`, with whether it was dirty). Visibility defaults to team (private when the
    todo is private); a private note goes to the blob store and the ledger keeps its hash.
    """
    cmd = _checked_note(cmd)
    todo_id, note = cmd.todo_id, cmd.note

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st, item = lookup.open_todo_in(state, todo_id)
        lookup.require_holder(item, ctx.agent_id, now, doing="prepare its handoff")
        vis = cmd.visibility or ("private" if item.visibility == "private" else "team")
        body: Any = note
        if vis == "private":
            body = {"blob": ctx.blob(canonical(note))}  # stored only if the append happens
        data = {
            "handoff_id": f"handoff-{st.revision + 1}",
            "todo_id": todo_id,
            "todo_revision": item.revision,
            "source_agent_id": ctx.agent_id,
            "source_session_id": ctx.session_id,
            "target_agent_id": cmd.target_agent_id,
            "git_revision": cmd.git_revision,
            "workspace_dirty": cmd.workspace_dirty,
            "note": body,
        }
        return [Change("handoff.prepared", data, vis)]

    return execute(ctx, cmd, plan)


def _checked_note(cmd: PrepareHandoff) -> PrepareHandoff:
    """`cmd` checked, its note normalised, and bound to the workspace's git HEAD unless a
    revision was given."""
    check_id(cmd.todo_id, "todo_id")
    if cmd.target_agent_id is not None:
        check_id(cmd.target_agent_id, "target_agent_id")
    if cmd.visibility is not None:
        lookup.visibility(cmd.visibility, "team")
    note = check_note(cmd.note)
    git_revision, dirty = cmd.git_revision, cmd.workspace_dirty
    if git_revision is None:
        git_revision, found_dirty = git_binding(cmd.workspace)
        if dirty is None:
            dirty = found_dirty
    return replace(cmd, note=note, git_revision=git_revision, workspace_dirty=dirty)


# -- adopt ----------------------------------------------------------------------------------


def pick_handoff(state: GoalState, todo_id: str, handoff_id: str | None) -> Handoff | None:
    """The note `handoff_id` names (refused unless it belongs to `todo_id`), else the todo's
    latest note (None when it has none)."""
    if handoff_id is None:
        return latest_handoff(state, todo_id)
    found = state.handoffs.get(check_id(handoff_id, "handoff_id"))
    if found is None or found.todo_id != todo_id:
        raise NotFound(
            "handoff not found for this todo", code="handoff_not_found", handoff_id=handoff_id
        )
    return found


def adopt_handoff(ctx: Context, cmd: AdoptHandoff) -> Result:
    """Adopt the pending note for a todo: the claim moves to the acting (target) agent.

    Appends `handoff.adopted` (with the transfer grant binding source agent, target agent,
    todo, todo revision and note) and `todo.claimed` (`via_handoff`) in one operation.
    Refused when the todo is closed (`todo_closed`), there is no pending note
    (`handoff_not_found`), the note is stale (`handoff_stale`), names another target
    (`handoff_target_mismatch`), or a third agent holds a live claim (`claim_owner_mismatch`);
    `expected_revision` guards the todo's revision (`revision_conflict`).
    """
    todo_id = check_id(cmd.todo_id, "todo_id")
    target = check_id(cmd.target_agent_id or ctx.agent_id, "target_agent_id")
    if target != ctx.agent_id:
        raise InvalidInput(
            "the adopting agent (--agent-id) must be the target agent (--target-agent-id)",
            code="target_agent_mismatch",
        )
    lookup.check_lease(cmd.lease_seconds)
    cmd = replace(cmd, target_agent_id=target)
    git_revision, dirty = git_binding(cmd.workspace)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        item = lookup.todo(st, todo_id)
        handoff = _adoptable(st, item, cmd.handoff_id, target, now)
        grant = {
            "handoff_id": handoff.handoff_id,
            "todo_id": todo_id,
            "todo_revision": item.revision,
            "source_agent_id": handoff.source_agent_id,
            "source_session_id": handoff.source_session_id,
            "target_agent_id": target,
            "target_session_id": ctx.session_id,
        }
        adopted = {
            "handoff_id": handoff.handoff_id,
            "todo_id": todo_id,
            "grant": grant,
            "git_revision": git_revision,
            "workspace_dirty": dirty,
        }
        claimed = {
            "todo_id": todo_id,
            "agent_id": target,
            "session_id": ctx.session_id,
            "lease_expires_at": add_seconds(now, lookup.lease_for(st, cmd.lease_seconds)),
            "via_handoff": handoff.handoff_id,
        }
        return [
            Change("handoff.adopted", adopted, item.visibility),
            Change("todo.claimed", claimed, item.visibility),
        ]

    return execute(ctx, cmd, plan)


def _adoptable(
    state: GoalState, item: Todo, handoff_id: str | None, target: str, now: str
) -> Handoff:
    """The pending note `target` may adopt, or the refusal `adopt_refusal` names, with the
    details that explain it."""
    handoff = pick_handoff(state, item.todo_id, handoff_id)
    refusal = adopt_refusal(state, item, handoff, target, now)
    if refusal is None:
        assert handoff is not None and handoff.status == PENDING
        return handoff
    code, message = refusal
    details: dict[str, Any] = {"todo_id": item.todo_id}
    if handoff is not None:
        details["handoff_id"] = handoff.handoff_id
    if code == "todo_closed":
        details["status"] = item.status
    if code == "handoff_stale":
        details["note_revision"] = handoff.prepared_seq if handoff else None
        details["todo_revision"] = item.revision
        if handoff is not None and handoff.status == SUPERSEDED:
            message = "a newer note superseded this one"
    if code == "claim_owner_mismatch" and item.claim:
        details["claimed_by"] = item.claim["agent_id"]
        details["lease_expires_at"] = item.claim["lease_expires_at"]
    error = NotFound if code == "handoff_not_found" else Conflict
    raise error(message, code=code, **details)


# -- reading the workspace ------------------------------------------------------------------


def workspace_facts(workspace: Path, note_revision: str | None, paths: list[str]) -> dict:
    """What the ledger cannot know: this checkout's HEAD, dirtiness, and which paths exist.

    `relation` compares HEAD with the note's revision: same, ahead (HEAD descends from it),
    diverged (it is not an ancestor of HEAD), or unknown (the commit is not in this clone).
    """
    head, dirty = git_binding(workspace)
    relation = None
    if head and note_revision:
        if head.startswith(note_revision) or note_revision.startswith(head):
            relation = "same"
        else:
            ancestor = is_ancestor(workspace, note_revision, head)
            relation = "unknown" if ancestor is None else ("ahead" if ancestor else "diverged")
    files = {path: (workspace / path).exists() for path in paths}
    return {"head": head, "dirty": dirty, "relation": relation, "files": files}
