"""The handoff digest (`loopx.handoff/v1`): everything the next agent needs to continue a todo.

Pure functions of folded state. `handoff_digest` gathers the goal, the todo with its
dependencies and gates, the latest continuation note, the todo's evidence with freshness
against a checkout's HEAD, the frontier, what the reader must re-inspect before acting
(`handoff_reinspect`), and an omission list. Workspace facts (HEAD, dirtiness, which files
exist) are observed by the caller and passed in; without them the digest says the checkout was
not inspected. Time comes from `now`, else the goal's last event. `pending_handoffs` lists the
notes still waiting for an agent (status, `loopx handoff list`).

Audiences: `team` shows team and public facts only (private notes, evidence and text are left
out and counted); `private` shows everything readable on this host. `handoff_budget` fits a
digest into a character budget.
"""

from __future__ import annotations

from typing import Any

from loopx.model.errors import NotFound
from loopx.model.ids import visible_to
from loopx.privacy.audience import BlobReader, Lens
from loopx.projections import waiting
from loopx.projections.handoff_reinspect import Facts, reinspect
from loopx.state.entities import GoalState, Handoff, Todo
from loopx.state.frontier import blocking_gates, frontier, lease_live
from loopx.state.handoff import ADOPTED, PENDING, adopt_refusal, is_stale, latest_handoff
from loopx.state.views import claim_view, evidence_card, todo_card

SCHEMA_ID = "loopx.handoff/v1"
AUDIENCES = ("team", "private")
FRONTIER_LIMIT = 5


# -- the digest ---------------------------------------------------------------------------


def handoff_digest(
    state: GoalState,
    todo_id: str,
    *,
    audience: str,
    read_blob: BlobReader | None,
    workspace_facts: dict[str, Any] | None,
    now: str | None = None,
    reader: dict[str, str] | None = None,
    handoff_id: str | None = None,
) -> dict[str, Any]:
    """The `loopx.handoff/v1` digest of the latest note for `todo_id` (or `handoff_id`).

    `workspace_facts` is `{"head", "dirty", "relation", "files": {path: exists}}` as observed
    in the reader's checkout, or None; `read_blob` reads private text on this host.
    Raises `NotFound` (`todo_not_found`, `handoff_not_found`) when there is nothing to show.
    """
    view = _lens(audience, read_blob)
    now = now or state.updated_at
    todo, handoff = _find(state, todo_id, handoff_id, view)
    facts = workspace_facts or {}
    evidence, evidence_total = _evidence(state, todo_id, view, facts.get("head"))
    digest: dict[str, Any] = {
        "schema": SCHEMA_ID,
        "source": {"goal_id": state.goal_id, "revision": state.revision, "head": state.head},
        "audience": audience,
        "now": now,
        "max_chars": None,
        "reader": dict(reader) if reader else None,
        "goal": {
            "goal_id": state.goal_id,
            "title": view.text(state.title),
            "objective": view.text(state.objective),
            "acceptance": [view.text(a) for a in state.acceptance],
            "status": state.status,
            "visibility": state.visibility,
        },
        "todo": _todo(state, todo, view, now),
        "handoff": _handoff(handoff, view.note(handoff), is_stale(state, handoff), facts),
        "adoption": _adoption(state, todo, handoff, reader, now),
        "evidence": evidence,
        "evidence_total": evidence_total,
        "frontier": _frontier(state, view, now, todo_id),
        "workspace": _workspace(workspace_facts, handoff.git_revision),
        "waiting": _waiting(state, view, now),
        "reinspect": [],
        "omissions": [],
    }
    digest["reinspect"] = reinspect(Facts(digest, state, todo, handoff, now, view.omitted))
    digest["omissions"] = [
        {"reason": "audience", "what": what, "count": count}
        for what, count in sorted(view.omitted.items())
    ]
    return digest


def _find(
    state: GoalState, todo_id: str, handoff_id: str | None, view: Lens
) -> tuple[Todo, Handoff]:
    """The todo and its note (`handoff_id`, else the latest), or `NotFound`."""
    todo = state.todos.get(todo_id)
    if todo is None or not view.sees(todo.visibility) or not view.sees(state.visibility):
        raise NotFound("todo not found", code="todo_not_found", todo_id=todo_id)
    handoff = state.handoffs.get(handoff_id) if handoff_id else latest_handoff(state, todo_id)
    if handoff is None or handoff.todo_id != todo_id:
        raise NotFound(
            "no handoff note was prepared for this todo", code="handoff_not_found", todo_id=todo_id
        )
    return todo, handoff


def _lens(audience: str, read_blob: BlobReader | None) -> Lens:
    if audience not in AUDIENCES:
        raise ValueError(f"handoff digests are for {' or '.join(AUDIENCES)} audiences")
    return Lens(audience, read_blob)


def handoff_digests(
    state: GoalState,
    *,
    audience: str,
    read_blob: BlobReader | None,
    workspace_facts: dict[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """One digest per todo with a note this audience may see, by todo id (for the build)."""
    if not visible_to(state.visibility, audience):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for todo_id in sorted({h.todo_id for h in state.handoffs.values()}):
        todo = state.todos.get(todo_id)
        if todo is None or not visible_to(todo.visibility, audience):
            continue
        out[todo_id] = handoff_digest(
            state, todo_id, audience=audience, read_blob=read_blob, workspace_facts=workspace_facts
        )
    return out


def _claim(todo: Todo, now: str) -> dict[str, Any] | None:
    if todo.claim is None:
        return None
    claim = claim_view(todo, now, ("agent_id", "session_id", "claimed_at"))
    return {**claim, "via_handoff": todo.claim.get("via_handoff")}


# The digest's todo: these keys of the todo's card, and what a handoff needs besides.
_CARD_KEYS = ("todo_id", "title", "status", "role", "kind", "priority", "visibility")


def _todo(state: GoalState, todo: Todo, view: Lens, now: str) -> dict[str, Any]:
    todos = state.todos
    deps = []
    for dep_id in todo.depends_on:
        dep = todos.get(dep_id)
        if dep is None:
            deps.append({"todo_id": dep_id, "title": None, "status": "missing"})
        elif view.sees(dep.visibility):
            deps.append({"todo_id": dep_id, "title": view.text(dep.title), "status": dep.status})
        else:
            view.omitted[f"{dep.visibility} dependency"] += 1
    per_todo, goal_wide = blocking_gates(state)
    holding = set(per_todo.get(todo.todo_id, [])) | set(goal_wide)
    gates = []
    for gate in sorted(state.gates.values(), key=lambda g: g.created_seq):
        if todo.todo_id not in gate.blocks and gate.gate_id not in holding:
            continue
        if not view.sees(gate.visibility):
            view.omitted[f"{gate.visibility} gate"] += 1
            continue
        gates.append(
            {
                "gate_id": gate.gate_id,
                "question": view.text(gate.question),
                "authority": gate.authority,
                "status": gate.status,
                "blocking": gate.gate_id in holding,
                "ask_again_at": gate.ask_again_at if gate.is_blocking else None,
            }
        )
    card = todo_card(todo, view.text, todos, now, sees=view.sees, team=False)
    return {
        **{key: card[key] for key in _CARD_KEYS},
        "revision": todo.revision,
        "acceptance": view.field(todo, "acceptance"),
        "claim": _claim(todo, now),
        "dependencies": deps,
        "gates": gates,
        "monitor": waiting.monitor_item(todo, view, now) if todo.monitor is not None else None,
    }


def _waiting(state: GoalState, view: Lens, now: str) -> dict[str, Any]:
    """What the goal waits for at `now` (its monitors' wakes, gates asking again on a date),
    soonest first, and when the next thing falls due."""
    items = waiting.monitors(state, view, now)["items"]
    return {
        "next_wake": waiting.next_wake(state, view, now),
        "items": waiting.waiting_for(items, state, view, now),
    }


def _handoff(
    handoff: Handoff, note: dict[str, Any] | None, stale: bool, facts: dict[str, Any]
) -> dict[str, Any]:
    files = facts.get("files") or {}
    shown_note = None
    if note is not None:
        shown_note = {
            "work_summary": note["work_summary"],
            "approaches_tried": [
                {"approach": a["approach"], "outcome": a["outcome"], "reason": a.get("reason")}
                for a in note.get("approaches_tried", [])
            ],
            "next_steps": list(note.get("next_steps", [])),
            "files_touched": [
                {
                    "path": f["path"],
                    "action": f["action"],
                    "summary": f.get("summary"),
                    "exists": files.get(f["path"]),
                }
                for f in note.get("files_touched", [])
            ],
            "key_decisions": list(note.get("key_decisions", [])),
            "open_questions": list(note.get("open_questions", [])),
            "source_refs": list(note.get("source_refs", [])),
        }
    adopted = None
    grant = handoff.grant
    if handoff.status == ADOPTED and grant is not None:
        adopted = {
            "agent_id": grant["target_agent_id"],
            "session_id": grant["target_session_id"],
            "adopted_at": handoff.adopted_at,
            "seq": handoff.adopted_seq,
        }
    return {
        "handoff_id": handoff.handoff_id,
        "status": handoff.status,
        "stale": stale,
        "prepared_at": handoff.prepared_at,
        "prepared_seq": handoff.prepared_seq,
        "todo_revision": handoff.todo_revision,
        "source_agent_id": handoff.source_agent_id,
        "source_session_id": handoff.source_session_id,
        "target_agent_id": handoff.target_agent_id,
        "git_revision": handoff.git_revision,
        "workspace_dirty": handoff.workspace_dirty,
        "visibility": handoff.visibility,
        "superseded_by": handoff.superseded_by,
        "adopted": adopted,
        "note": shown_note,
    }


def _adoption(
    state: GoalState,
    todo: Todo,
    handoff: Handoff,
    reader: dict[str, str] | None,
    now: str,
) -> dict[str, Any]:
    """Whether the note's target (else the reader) could adopt now, and the exact command."""
    latest = latest_handoff(state, todo.todo_id)
    reader = reader or {}
    agent = handoff.target_agent_id or reader.get("agent_id")
    refusal = adopt_refusal(state, todo, handoff if handoff is latest else latest, agent, now)
    if handoff is not latest and refusal is None:
        refusal = ("handoff_stale", "a newer note superseded this one")
    command = None
    if refusal is None:
        who = agent or "<agent-id>"
        session = reader.get("session_id") if reader.get("agent_id") == who else None
        command = (
            f"loopx handoff adopt --goal-id {state.goal_id} --todo-id {todo.todo_id} "
            f"--agent-id {who} --session-id {session or '<session-id>'} "
            f"--operation-id adopt-{handoff.handoff_id} --expected-revision {todo.revision} "
            f"--target-agent-id {who} --workspace ."
        )
    return {
        "possible": refusal is None,
        "agent_id": agent,
        "code": refusal[0] if refusal else None,
        "message": refusal[1] if refusal else None,
        "command": command,
    }


# The digest's evidence item: these keys of the item's card, and its visibility.
_EVIDENCE_KEYS = (
    "evidence_id", "kind", "summary", "refs", "revision", "freshness", "recorded_at", "agent_id"
)  # fmt: skip


def _evidence(
    state: GoalState, todo_id: str, view: Lens, head: str | None
) -> tuple[list[dict[str, Any]], int]:
    items = sorted(
        (e for e in state.evidence.values() if e.todo_id == todo_id),
        key=lambda e: -e.created_seq,
    )
    out = []
    for ev in items:
        if not view.sees(ev.visibility):
            view.omitted[f"{ev.visibility} evidence item"] += 1
            continue
        card = evidence_card(ev, view.text, head)
        out.append({**{k: card[k] for k in _EVIDENCE_KEYS}, "visibility": ev.visibility})
    return out, len(out)


def _frontier(state: GoalState, view: Lens, now: str, todo_id: str) -> dict[str, Any]:
    ready = [t for t in frontier(state, now) if t.todo_id != todo_id]
    shown = [t for t in ready if view.sees(t.visibility)]
    return {
        "todos": [
            {
                "todo_id": t.todo_id,
                "title": view.text(t.title),
                "priority": t.priority,
                "role": t.role,
            }
            for t in shown[:FRONTIER_LIMIT]
        ],
        "total": len(shown),
    }


def _workspace(facts: dict[str, Any] | None, note_revision: str | None) -> dict[str, Any]:
    if facts is None:
        return {"checked": False, "head": None, "dirty": None, "moved": None, "relation": None}
    head, relation = facts.get("head"), facts.get("relation")
    moved = None
    if head and note_revision:
        if relation is None:  # facts without a git comparison: only identity is known
            same = head.startswith(note_revision) or note_revision.startswith(head)
            relation = "same" if same else "unknown"
        moved = relation != "same"
    return {
        "checked": True,
        "head": head,
        "dirty": facts.get("dirty"),
        "moved": moved,
        "relation": relation,
    }


# -- pending handoffs (status, list) -------------------------------------------------------


def _summary_line(text: str, width: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1].rstrip() + "…"


def pending_handoffs(
    state: GoalState,
    *,
    audience: str = "team",
    read_blob: BlobReader | None = None,
    now: str | None = None,
) -> list[dict[str, Any]]:
    """Notes prepared and not yet adopted (open todos only), newest first.

    For the status projection and `loopx handoff list`: todo, source agent and session, when,
    the note's first line (when this audience may read it), target, and whether it is stale.
    """
    view = Lens(audience, read_blob)
    if not view.sees(state.visibility):
        return []
    now = now or state.updated_at
    out = []
    for handoff in state.handoffs.values():
        todo = state.todos.get(handoff.todo_id)
        if handoff.status != PENDING or todo is None or not todo.is_open:
            continue
        if not visible_to(todo.visibility, audience):
            continue
        summary = None
        if audience != "public" and visible_to(handoff.visibility, audience):
            note = view.note(handoff)
            if note is not None:
                summary = _summary_line(note["work_summary"])
        out.append(
            {
                "goal_id": state.goal_id,
                "handoff_id": handoff.handoff_id,
                "todo_id": todo.todo_id,
                "todo_title": view.text(todo.title),
                "source_agent_id": handoff.source_agent_id,
                "source_session_id": handoff.source_session_id,
                "target_agent_id": handoff.target_agent_id,
                "prepared_at": handoff.prepared_at,
                "prepared_seq": handoff.prepared_seq,
                "git_revision": handoff.git_revision,
                "visibility": handoff.visibility,
                "summary": summary,
                "stale": is_stale(state, handoff),
                "lease_live": lease_live(todo, now),
            }
        )
    out.sort(key=lambda h: (h["prepared_at"], h["prepared_seq"]), reverse=True)
    return out
