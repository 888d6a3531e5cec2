"""The handoff digest (`loopx.handoff/v1`): everything the next agent needs to continue a todo.

Pure functions of folded state. `handoff_digest` gathers the goal, the todo with its
dependencies and gates, the latest continuation note, the todo's evidence with freshness
against a checkout's HEAD, the frontier, what the reader must re-inspect before acting (what
the ledger cannot vouch for), and an omission list. Workspace facts (HEAD, dirtiness, which
files exist) are observed by the caller and passed in; without them the digest says the
checkout was not inspected. Time comes from `now`, else the goal's last event.

Audiences: `team` shows team and public facts only (private notes, evidence and text are left
out and counted); `private` shows everything readable on this host. `fit_digest` and the
renderers fit a digest into a character budget by dropping the least important material
first — never the goal and todo identity or the next steps — and say what they dropped.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable
from typing import Any

from loopx.model.errors import InvalidInput, NotFound
from loopx.model.ids import visible_to
from loopx.privacy.audience import BlobReader, Lens
from loopx.state.entities import GoalState, Todo
from loopx.state.frontier import blocking_gates, frontier, lease_live
from loopx.state.handoff import ADOPTED, PENDING, adopt_refusal, is_stale, latest_handoff
from loopx.state.turns import RESUME_ADVICE, open_turns
from loopx.state.views import claim_view, evidence_card, todo_card

SCHEMA_ID = "loopx.handoff/v1"
AUDIENCES = ("team", "private")
FRONTIER_LIMIT = 5

TEMPLATES = {
    "digest": "handoff/digest.md.j2",  # compact Markdown to paste into any agent
    "markdown": "handoff/handoff.md.j2",  # the full report, with provenance and tables
    "text": "handoff/digest.txt.j2",  # the digest as plain text, for plain prompts
}

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
    todo = state.todos.get(todo_id)
    if todo is None or not view.sees(todo.visibility) or not view.sees(state.visibility):
        raise NotFound("todo not found", code="todo_not_found", todo_id=todo_id)
    handoff = state.handoffs.get(handoff_id) if handoff_id else latest_handoff(state, todo_id)
    if handoff is None or handoff["todo_id"] != todo_id:
        raise NotFound(
            "no handoff note was prepared for this todo", code="handoff_not_found", todo_id=todo_id
        )
    facts = workspace_facts or {}
    head = facts.get("head")
    note = view.note(handoff)
    stale = is_stale(state, handoff)
    evidence, evidence_total = _evidence(state, todo_id, view, head)
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
        "handoff": _handoff(handoff, note, stale, facts),
        "adoption": _adoption(state, todo, handoff, reader, now),
        "evidence": evidence,
        "evidence_total": evidence_total,
        "frontier": _frontier(state, view, now, todo_id),
        "workspace": _workspace(workspace_facts, handoff.get("git_revision")),
        "reinspect": [],
        "omissions": [],
    }
    digest["reinspect"] = _reinspect(digest, state, todo, handoff, now, view.omitted)
    digest["omissions"] = [
        {"reason": "audience", "what": what, "count": count}
        for what, count in sorted(view.omitted.items())
    ]
    return digest


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
    for todo_id in sorted({h["todo_id"] for h in state.handoffs.values()}):
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
    }


def _handoff(
    handoff: dict[str, Any], note: dict[str, Any] | None, stale: bool, facts: dict[str, Any]
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
    if handoff["status"] == ADOPTED:
        grant = handoff["grant"]
        adopted = {
            "agent_id": grant["target_agent_id"],
            "session_id": grant["target_session_id"],
            "adopted_at": handoff["adopted_at"],
            "seq": handoff["adopted_seq"],
        }
    return {
        "handoff_id": handoff["handoff_id"],
        "status": handoff["status"],
        "stale": stale,
        "prepared_at": handoff["prepared_at"],
        "prepared_seq": handoff["prepared_seq"],
        "todo_revision": handoff["todo_revision"],
        "source_agent_id": handoff["source_agent_id"],
        "source_session_id": handoff["source_session_id"],
        "target_agent_id": handoff.get("target_agent_id"),
        "git_revision": handoff.get("git_revision"),
        "workspace_dirty": handoff.get("workspace_dirty"),
        "visibility": handoff["visibility"],
        "superseded_by": handoff.get("superseded_by"),
        "adopted": adopted,
        "note": shown_note,
    }


def _adoption(
    state: GoalState,
    todo: Todo,
    handoff: dict[str, Any],
    reader: dict[str, str] | None,
    now: str,
) -> dict[str, Any]:
    """Whether the note's target (else the reader) could adopt now, and the exact command."""
    latest = latest_handoff(state, todo.todo_id)
    reader = reader or {}
    agent = handoff.get("target_agent_id") or reader.get("agent_id")
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
            f"--operation-id adopt-{handoff['handoff_id']} --expected-revision {todo.revision} "
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


def _paths(paths: list[str], limit: int = 3) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def _short(rev: str | None) -> str:
    return rev[:10] if rev else "none"


def _reinspect(
    digest: dict[str, Any],
    state: GoalState,
    todo: Todo,
    handoff: dict[str, Any],
    now: str,
    omitted: Counter[str],
) -> list[dict[str, str]]:
    """What the ledger cannot vouch for: the reader must look before acting on it."""
    out: list[dict[str, str]] = []

    def say(code: str, message: str) -> None:
        out.append({"code": code, "message": message})

    h, ws = digest["handoff"], digest["workspace"]
    if h["status"] == "superseded":
        say("note_superseded", f"A newer note ({h['superseded_by']}) replaced this one.")
    elif h["stale"]:
        say(
            "note_stale",
            f"The todo changed after this note was written (note at revision "
            f"{h['prepared_seq']}, todo now at {todo.revision}): check the todo before "
            "trusting the note.",
        )
    if not ws["checked"]:
        say("checkout_not_inspected", "No checkout was inspected: compare HEAD, status and files.")
    elif ws["head"] is None:
        say("not_a_checkout", "The workspace is not a git checkout: nothing could be compared.")
    elif h["git_revision"] is None:
        say("note_unbound", "The note is not bound to a git revision: re-read the files.")
    elif ws["moved"]:
        how = {"ahead": "moved ahead", "diverged": "diverged", "unknown": "moved"}.get(
            ws["relation"] or "unknown", "moved"
        )
        say(
            "checkout_moved",
            f"The checkout {how} since the note: HEAD is {_short(ws['head'])}, the note was "
            f"written at {_short(h['git_revision'])}. Re-read the files touched and re-run checks.",
        )
    if h["workspace_dirty"]:
        say(
            "note_dirty",
            "The note was written from a checkout with uncommitted changes; they may not be here.",
        )
    if ws["dirty"]:
        say("dirty_tree", "This checkout has uncommitted changes to tracked files.")
    note = h["note"]
    if note is not None and ws["checked"]:
        missing = [
            f["path"]
            for f in note["files_touched"]
            if f["exists"] is False and f["action"] != "deleted"
        ]
        back = [
            f["path"] for f in note["files_touched"] if f["exists"] and f["action"] == "deleted"
        ]
        if missing:
            say(
                "files_missing",
                f"{len(missing)} file(s) the note lists are missing here: {_paths(missing)}.",
            )
        if back:
            say(
                "files_reappeared",
                f"{len(back)} file(s) the note says were deleted exist here: {_paths(back)}.",
            )
    fresh = Counter(e["freshness"] for e in digest["evidence"])
    if fresh["historical"] and ws["head"]:
        say(
            "evidence_historical",
            f"{fresh['historical']} evidence item(s) were observed at another revision: "
            "re-run them before relying on them.",
        )
    elif fresh["bound"]:
        say(
            "evidence_unverified",
            f"{fresh['bound']} evidence item(s) are bound to a revision that was not "
            "compared with a checkout.",
        )
    if fresh["unbound"]:
        say(
            "evidence_unbound",
            f"{fresh['unbound']} evidence item(s) are not bound to any revision.",
        )
    claim = todo.claim
    if claim is not None and not lease_live(todo, now):
        say("lease_expired", f"The claim's lease expired at {claim['lease_expires_at']}.")
    if (
        claim is not None
        and lease_live(todo, now)
        and claim["agent_id"] not in (handoff["source_agent_id"], handoff.get("target_agent_id"))
        and h["status"] == PENDING
    ):
        say("claimed_by_other", f"{claim['agent_id']} holds the todo under a live lease.")
    blocking = [g["gate_id"] for g in digest["todo"]["gates"] if g["blocking"]]
    if blocking:
        say(
            "gate_pending",
            f"Pending gate(s) {', '.join(blocking)} must be resolved before the todo can be "
            "completed.",
        )
    for turn in open_turns(state):
        if turn["todo_id"] == todo.todo_id:
            say(
                "turn_open",
                f"Turn {turn['turn_id']} by {turn['agent_id']} stopped at {turn['phase']} "
                f"(last progress {turn['updated_at']}): {RESUME_ADVICE.get(turn['phase'], '')}. "
                f"Continue it (loopx turn resume --turn-id {turn['turn_id']}); settle it once.",
            )
    open_deps = [d["todo_id"] for d in digest["todo"]["dependencies"] if d["status"] != "done"]
    if open_deps:
        say("dependency_open", f"Dependencies not done: {', '.join(open_deps)}.")
    hidden = sum(n for what, n in omitted.items() if what.startswith("private"))
    if hidden and digest["audience"] != "private":
        say("private_omitted", f"{hidden} private fact(s) are not shown to this audience.")
    elif hidden:
        say("private_not_on_host", f"{hidden} private fact(s) are not on this host.")
    return out


# -- budget ---------------------------------------------------------------------------------


def _note(d: dict[str, Any]) -> dict[str, Any] | None:
    note: dict[str, Any] | None = d["handoff"]["note"]
    return note


def _keep_evidence(n: int) -> Callable[[dict[str, Any]], int]:
    def step(d: dict[str, Any]) -> int:
        cut = max(len(d["evidence"]) - n, 0)
        del d["evidence"][n:]
        return cut

    return step


def _drop_key(path: tuple[str, ...], key: str) -> Callable[[dict[str, Any]], int]:
    """Remove `key` from every item of the list at `path` (counts the items it cut from)."""

    def step(d: dict[str, Any]) -> int:
        node: Any = d
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                return 0
        n = 0
        for item in node:
            if item.get(key):
                item[key] = None if key in ("reason", "summary") else []
                n += 1
        return n

    return step


def _clear_note_list(name: str) -> Callable[[dict[str, Any]], int]:
    def step(d: dict[str, Any]) -> int:
        note = _note(d)
        if note is None:
            return 0
        n = len(note[name])
        note[name] = []
        return n

    return step


def _clear(path: tuple[str, ...]) -> Callable[[dict[str, Any]], int]:
    def step(d: dict[str, Any]) -> int:
        node: Any = d
        for part in path[:-1]:
            node = node[part]
        n = len(node[path[-1]])
        node[path[-1]] = []
        return n

    return step


def _truncate(path: tuple[str, ...], keep: int) -> Callable[[dict[str, Any]], int]:
    def step(d: dict[str, Any]) -> int:
        node: Any = d
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                return 0
        value = node.get(path[-1])
        if not isinstance(value, str) or len(value) <= keep:
            return 0
        node[path[-1]] = value[: keep - 1].rstrip() + "…"
        return len(value) - keep

    return step


def _shorten_reinspect(d: dict[str, Any]) -> int:
    n = 0
    for item in d["reinspect"]:
        short = item["code"].replace("_", " ")
        if item["message"] != short:
            item["message"] = short
            n += 1
    return n


def _clear_gates_and_dependencies(d: dict[str, Any]) -> int:
    return _clear(("todo", "gates"))(d) + _clear(("todo", "dependencies"))(d)


def _drop_command(d: dict[str, Any]) -> int:
    if d["adoption"]["command"] is None:
        return 0
    d["adoption"]["command"] = None
    return 1


def _trim_acceptance(d: dict[str, Any]) -> int:
    n = len(d["goal"]["acceptance"])
    d["goal"]["acceptance"] = []
    return n


# Least important first. Each step returns how many items (or characters) it removed; the
# goal and todo identity, the next steps and the re-inspect codes are never removed.
BUDGET_STEPS: list[tuple[str, Callable[[dict[str, Any]], int]]] = [
    ("evidence items", _keep_evidence(5)),
    ("ready todos", _clear(("frontier", "todos"))),
    ("evidence refs", _drop_key(("evidence",), "refs")),
    ("approach reasons", _drop_key(("handoff", "note", "approaches_tried"), "reason")),
    ("file summaries", _drop_key(("handoff", "note", "files_touched"), "summary")),
    ("source refs", _clear_note_list("source_refs")),
    ("evidence items", _keep_evidence(2)),
    ("acceptance criteria", _trim_acceptance),
    ("decisions", _clear_note_list("key_decisions")),
    ("evidence items", _keep_evidence(0)),
    ("approaches", _clear_note_list("approaches_tried")),
    ("questions", _clear_note_list("open_questions")),
    ("objective chars", _truncate(("goal", "objective"), 160)),
    ("todo acceptance chars", _truncate(("todo", "acceptance"), 160)),
    ("files", _clear_note_list("files_touched")),
    ("summary chars", _truncate(("handoff", "note", "work_summary"), 600)),
    ("gates/dependencies", _clear_gates_and_dependencies),
    ("adopt command", _drop_command),
    ("summary chars", _truncate(("handoff", "note", "work_summary"), 160)),
    ("objective chars", _truncate(("goal", "objective"), 60)),
    ("re-inspect details", _shorten_reinspect),
]


def fit_digest(
    digest: dict[str, Any], max_chars: int, render: Callable[[dict[str, Any]], str]
) -> dict[str, Any]:
    """A copy of `digest` whose `render` is at most `max_chars` characters long.

    Drops material step by step in `BUDGET_STEPS` order, recording each cut in `omissions`
    (reason `budget`). Raises `InvalidInput` (`budget_too_small`, with the smallest size
    that keeps the identity and next steps) when even the leanest digest does not fit.
    """
    if max_chars < 1:
        raise InvalidInput("--max-chars must be a positive number", code="invalid_budget")
    out = copy.deepcopy(digest)
    out["max_chars"] = max_chars
    if len(render(out)) <= max_chars:
        return out
    cut: dict[str, int] = {}
    for what, step in BUDGET_STEPS:
        removed = step(out)
        if not removed:
            continue
        cut[what] = cut.get(what, 0) + removed
        out["omissions"] = [o for o in out["omissions"] if o["reason"] != "budget"] + [
            {"reason": "budget", "what": name, "count": n} for name, n in cut.items()
        ]
        size = len(render(out))
        if size <= max_chars:
            return out
    while True:  # the smallest budget that works also names itself in the output
        out["max_chars"] = size
        needed = len(render(out))
        if needed <= size:
            break
        size = needed
    raise InvalidInput(
        f"--max-chars {max_chars} is too small: the leanest digest (goal, todo, next steps "
        f"and what was left out) takes {size} characters",
        code="budget_too_small",
        max_chars=max_chars,
        minimum=size,
    )


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
        todo = state.todos.get(handoff["todo_id"])
        if handoff["status"] != PENDING or todo is None or not todo.is_open:
            continue
        if not visible_to(todo.visibility, audience):
            continue
        summary = None
        if audience != "public" and visible_to(handoff["visibility"], audience):
            note = view.note(handoff)
            if note is not None:
                summary = _summary_line(note["work_summary"])
        out.append(
            {
                "goal_id": state.goal_id,
                "handoff_id": handoff["handoff_id"],
                "todo_id": todo.todo_id,
                "todo_title": view.text(todo.title),
                "source_agent_id": handoff["source_agent_id"],
                "source_session_id": handoff["source_session_id"],
                "target_agent_id": handoff.get("target_agent_id"),
                "prepared_at": handoff["prepared_at"],
                "prepared_seq": handoff["prepared_seq"],
                "git_revision": handoff.get("git_revision"),
                "visibility": handoff["visibility"],
                "summary": summary,
                "stale": is_stale(state, handoff),
                "lease_live": lease_live(todo, now),
            }
        )
    out.sort(key=lambda h: (h["prepared_at"], h["prepared_seq"]), reverse=True)
    return out
