"""The workbench (team or public, Markdown): the goal as a reviewer reads it in a pull request.

A workbench is committed, so it holds only what a reviewer acts on and changes only when that
does: no ledger revision or head, no lease expiry times, and "now" is the time of the last
event that was not a heartbeat, so `todo renew` (or a run, a private note, a handoff note)
leaves the file byte-identical. The file starts with a header naming its goal and a digest of
its own body, so `loopx workbench --check` can tell a stale file from one edited by hand.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from loopx.privacy.audience import Lens
from loopx.projections import base, waiting
from loopx.projections.allowances import allowance_items, listed
from loopx.state.entities import GoalState
from loopx.state.frontier import attention, frontier

SCHEMA = "loopx.workbench/v1"
HEADER_RE = re.compile(  # also reads the header of earlier versions (with revision and head)
    r"^<!-- loopx:workbench goal=(?P<goal>\S+)(?: revision=\d+ head=[0-9a-f]*)? "
    r"digest=(?P<digest>[0-9a-f]{64}) -->\n"
)
DONE_LIMIT = 20
LIST_LIMIT = 50  # longer lists are cut, and the workbench says by how much


def workbench(
    state: GoalState, lens: Lens, *, head: str | None, visible_goals: set[str]
) -> dict[str, Any]:
    now = state.changed_at or base.ledger_now(state)
    todos = lens.keep(base.ordered_todos(state), "todos")
    visible = {t.todo_id for t in todos}
    full = frontier(state, now)  # once: attention needs the whole frontier, pages the visible
    ready = [t for t in full if t.todo_id in visible]
    open_todos = [t for t in todos if t.is_open]
    agent_todos = [t for t in open_todos if t.role == "agent"]
    user_todos = [t for t in open_todos if t.role == "user"]
    done = [t for t in reversed(todos) if not t.is_open]
    notes = lens.keep(sorted(state.notes.values(), key=lambda n: n.created_seq), "notes")
    evidence, _ = base.recent_evidence(state, lens, head)
    att = attention(state, now, full)
    gates = lens.keep(sorted(state.gates.values(), key=lambda g: g.created_seq), "gates")
    return {
        **base.header(SCHEMA, state, lens, head, visible_goals),
        "attention": {"state": att["state"], "reason": att["reason"]},
        "next_action": _next_action(att, ready, gates, public=lens.is_public),
        "progress": base.progress(state),
        "frontier": [base.todo_card(t, lens, state, now) for t in ready[:LIST_LIMIT]],
        "frontier_total": len(ready),
        "agent_todos": [base.todo_card(t, lens, state, now) for t in agent_todos[:LIST_LIMIT]],
        "agent_total": len(agent_todos),
        "user_todos": [base.todo_card(t, lens, state, now) for t in user_todos[:LIST_LIMIT]],
        "user_total": len(user_todos),
        "closed_todos": [base.todo_card(t, lens, state, now) for t in done[:DONE_LIMIT]],
        "closed_total": len(done),
        "gates": [base.gate_item(g, lens, state) for g in gates],
        "evidence": evidence,
        "notes": [
            {
                "note_id": n.note_id,
                "kind": n.kind,
                "text": lens.text(n.text),
                "todo_id": n.todo_id,
                "recorded_at": n.recorded_at,
            }
            for n in notes
            if n.kind in ("lesson", "decision")
        ],
        "corrections": corrections(state, lens),
        "allowances": allowance_items(state, lens),
        "waiting_for": waiting.waiting_for(
            waiting.monitors(state, lens, now)["items"], state, lens, now
        ),
        "omissions": lens.omissions(),
    }


def _next_action(att: dict[str, Any], ready: list[Any], gates: list[Any], *, public: bool) -> str:
    if att["state"] == "done":
        return "Nothing: the goal is done."
    pending = [g for g in gates if g.status == "pending"]
    who = "" if public or not pending else f" ({pending[0].authority})"  # team-only
    agent = next((t for t in ready if t.role == "agent"), None)
    if att["state"] == "ready_for_agent" and agent is not None:  # ranked first: ready work
        also = f" A decision is pending too: gate `{pending[0].gate_id}`{who}." if pending else ""
        return f"Claim `{agent.todo_id}` (an agent, priority {agent.priority}).{also}"
    if pending:
        return f"A decision: resolve gate `{pending[0].gate_id}`{who}."
    if ready:
        who = "a person" if ready[0].role == "user" else "an agent"
        return f"Claim `{ready[0].todo_id}` ({who}, priority {ready[0].priority})."
    return str(att["reason"]).capitalize() + "."


def body_digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def with_header(wb: dict[str, Any], body: str) -> str:
    goal_id = wb["source"]["goal_id"]
    return f"<!-- loopx:workbench goal={goal_id} digest={body_digest(body)} -->\n{body}"


def read_header(text: str) -> dict[str, Any] | None:
    match = HEADER_RE.match(text)
    if match is None:
        return None
    return {**match.groupdict(), "body": text[match.end() :]}


def corrections(state: GoalState, lens: Lens) -> list[dict[str, Any]]:
    """The governed corrections (`loopx redact field`) on entities this audience may see.

    Public output lists none: a correction's reason is team text, and the redacted fields
    already say `[redacted]` and are counted in the omission note."""
    if lens.is_public:
        return []
    return listed(
        state,
        lens,
        sorted(state.redactions.values(), key=lambda r: r["seq"]),
        lambda r: {
            "redaction_id": r["redaction_id"],
            "what": f"{r['entity']} {r['entity_id']} {r['field']}",
        },
    )
