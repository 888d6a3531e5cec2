"""Free-text fields are declared once per record (`loopx.state.entities.Fields`), and the lens,
the boundary's forbidden strings and the governed redaction read that declaration.

The declaration tests fail when a record gains a field declared neither free text nor plain
(an id, an enum, a time): a new text field must be classified before it can ship, and once it
is free text the boundary forbids it and a redaction may blank it.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

import loopx.state.handoff
import loopx.state.monitors
import loopx.state.redactions
import loopx.state.turns  # noqa: F401  (their fold handlers)
from loopx.build.boundary import goal_strings
from loopx.model.events import REDACTABLE_FIELDS, validate_data
from loopx.privacy.audience import NOT_ON_HOST, PRIVATE, Lens
from loopx.state import entities as e
from loopx.state.fold import replay
from loopx.state.freetext import RECORDS, REDACTABLE, goal_texts, redactable

BLOB = {"blob": "sha256:" + "ab" * 32}
T = "2026-03-01T12:00:00Z"


def _event(seq: int, kind: str, data: dict[str, Any], visibility: str = "team") -> dict[str, Any]:
    return {
        "seq": seq,
        "event_id": f"evt-{seq:016x}",
        "operation_id": f"op-{seq}",
        "op_hash": f"{seq:064x}",
        "type": kind,
        "v": 1,
        "goal_id": "g",
        "actor": {"agent_id": "lead", "session_id": "s1"},
        "recorded_at": T,
        "visibility": visibility,
        "data": validate_data(kind, data),
        "prev": "0" * 64,
        "sum": f"{seq:064x}",
    }


NOTE = {
    "work_summary": "Half the parser is ported",
    "approaches_tried": [{"approach": "regex", "outcome": "too slow", "reason": "backtracking"}],
    "next_steps": ["port the lexer"],
    "files_touched": [{"path": "src/lexer.py", "action": "modified", "summary": "split tokens"}],
    "key_decisions": ["keep the old API"],
    "open_questions": ["drop Python 3.9?"],
    "source_refs": ["https://example.org/issue/4"],
}

Event = tuple[str, dict[str, Any], str]


def _e(event: str, vis: str = "team", /, **data: Any) -> Event:
    return event, data, vis


def _monitor(watch: str, kind: str) -> dict[str, Any]:
    return {"watch": watch, "watch_kind": kind, "next_at": T, "backoff": {"seconds": 60}}


GRANT = {"handoff_id": "h1", "todo_id": "port", "todo_revision": 8, "source_agent_id": "lead",
         "source_session_id": "s1", "target_agent_id": "bot",
         "target_session_id": "s2"}  # fmt: skip
URL = "https://example.org/acme/parser"

# Every event that makes a record, each with every field it may carry.
EVENTS: list[Event] = [
    _e("goal.created", title="Ship the parser", objective="A faster parser", repository=URL,
       acceptance=["benchmarks pass"], policy={"lease_seconds": 600, "quota_unit": "runs"}),
    _e("agent.registered", agent_id="bot", name="The bot", kind="coding-agent"),
    _e("quota.set", quota=9, quota_unit="hours"),
    _e("todo.added", todo_id="watch-ci", title="Watch CI", acceptance="green",
       monitor=_monitor("ci:main", "ci")),
    _e("todo.added", todo_id="port", title="Port the lexer"),
    _e("todo.claimed", todo_id="port", agent_id="lead", session_id="s1", lease_expires_at=T),
    _e("todo.renewed", todo_id="port", lease_expires_at=T),
    _e("handoff.prepared", handoff_id="h1", todo_id="port", todo_revision=6, note=NOTE,
       source_agent_id="lead", source_session_id="s1", target_agent_id="bot",
       git_revision="abcdef1", workspace_dirty=False),
    _e("handoff.adopted", handoff_id="h1", todo_id="port", grant=GRANT, git_revision="abcdef1",
       workspace_dirty=False),
    _e("todo.claimed", todo_id="port", agent_id="bot", session_id="s2", lease_expires_at=T,
       via_handoff="h1"),
    _e("turn.begun", turn_id="t1", todo_id="port", agent_id="bot", session_id="s2"),
    _e("turn.phased", turn_id="t1", phase="execute", session_id="s2", ref="branch port-lexer"),
    _e("run.recorded", run_id="r1", agent_id="bot", session_id="s2", todo_id="port",
       outcome="progress", summary="ported", wait="CI", successor="watch-ci"),
    _e("turn.settled", turn_id="t1", run_id="r1"),
    _e("evidence.added", "private", evidence_id="e1", kind="test", summary="tests pass",
       refs=["log"], revision="abcdef1", todo_id="watch-ci", body=BLOB, body_bytes=10),
    _e("monitor.observed", todo_id="watch-ci", result="unchanged", evidence_id="e1", next_at=T),
    _e("gate.opened", gate_id="ship", question="Ship it?", authority="lead", blocks=["port"],
       ask_again_at=T),
    _e("gate.resolved", gate_id="ship", resolution="approved", by="lead", rationale="fine"),
    _e("note.added", note_id="n1", kind="lesson", text="measure first", todo_id="port"),
    _e("todo.completed", todo_id="port", summary="done", evidence_ids=["e1"],
       successor="watch-ci"),
    _e("todo.blocked", todo_id="watch-ci", reason="CI is down"),
    _e("field.redacted", redaction_id="x1", entity="note", entity_id="n1", field="text",
       reason="a typo"),
    _e("goal.closed", outcome="achieved", reason="shipped"),
]  # fmt: skip


def _state() -> e.GoalState:
    state = replay(_event(i, kind, data, vis) for i, (kind, data, vis) in enumerate(EVENTS, 1))
    assert state is not None
    return state


@pytest.mark.parametrize("cls", [e.GoalState, e.Todo, e.Gate, e.Evidence, e.Run, e.Note])
def test_every_field_of_an_entity_is_declared_free_text_plain_or_nested(cls: type) -> None:
    declared = cls.FIELDS.declared()  # type: ignore[attr-defined]
    actual = {f.name for f in fields(cls)}
    assert actual - declared == set(), f"declare {cls.__name__}'s new fields in its FIELDS"
    assert declared - actual == set(), "a declaration names a field the entity does not have"
    text, plain = set(cls.FIELDS.text), set(cls.FIELDS.plain)  # type: ignore[attr-defined]
    assert not text & plain


def _keys(record: Any, prefix: str = "") -> set[str]:
    """The keys of a dict record, with ``list.key`` for the keys of items of its lists."""
    out = set()
    for key, value in record.items():
        out.add(prefix + key)
        items = value if isinstance(value, list) else []
        for item in items:
            if isinstance(item, dict):
                out |= _keys(item, f"{prefix}{key}.")
    return out


def _declared_keys(kind: str) -> set[str]:
    decl = RECORDS[kind]
    names = decl.declared()
    return names | {n.split(".", 1)[0] for n in names if "." in n}


def test_every_key_of_a_folded_dict_record_is_declared() -> None:
    state = _state()
    # The claim is gone once the todo is done: take it from the state just after the claim.
    claimed = replay(_event(i, k, d, v) for i, (k, d, v) in enumerate(EVENTS[:10], 1))
    assert claimed is not None
    records = {
        "handoff": list(state.handoffs.values()),
        "handoff_note": [h["note"] for h in state.handoffs.values()],
        "monitor": [state.todos["watch-ci"].monitor],
        "turn": list(state.turns.values()),
        "quota": [state.policy],
        "agent": list(state.agents.values()),
        "redaction": list(state.redactions.values()),
        "claim": [claimed.todos["port"].claim],
    }
    for kind, items in records.items():
        assert items and all(items), kind
        for item in items:
            undeclared = _keys(item) - _declared_keys(kind)
            assert not undeclared, f"declare the {kind} record's {sorted(undeclared)}"


def test_the_redactable_fields_are_the_declared_free_text() -> None:
    assert set(REDACTABLE_FIELDS) == set(REDACTABLE)
    for kind, names in REDACTABLE_FIELDS.items():
        assert redactable(kind) == names
    assert redactable("monitor") == ()


def test_every_declared_free_text_reaches_the_forbidden_strings() -> None:
    state = _state()
    found = {t for _, _, values in goal_texts(state) for t in values if isinstance(t, str)}
    for text in (
        "Ship the parser",
        "hours",  # the quota's unit
        "The bot",  # an agent's name
        "ci:main",  # a monitor's watch
        "branch port-lexer",  # a turn's ref
        "backtracking",  # inside a handoff note
        "too slow",
        "src/lexer.py",
        "a typo",  # a correction's reason
        "CI is down",
        "[redacted]",  # the note's text, blanked by the correction
    ):
        assert text in found, text
    assert BLOB in [v for _, _, values in goal_texts(state) for v in values]
    strings = goal_strings(state)
    assert "branch port-lexer" in strings.texts
    # Declared unmatched: most often the configured repository, on every public page.
    assert URL not in found | strings.texts


def test_text_never_published_counts_as_non_public_on_a_public_todo() -> None:
    watch = "https://deploy.internal.example/status"
    events = [
        _e("goal.created", "public", title="Public goal", objective="o"),
        _e("todo.added", "public", todo_id="watch", title="Watch the deploy",
           monitor=_monitor(watch, "url")),
    ]  # fmt: skip
    state = replay(_event(i, k, d, v) for i, (k, d, v) in enumerate(events, 1))
    assert state is not None
    strings = goal_strings(state)
    assert "Watch the deploy" in strings.public
    assert watch in strings.texts  # the watch: team-only
    assert "watch" in strings.public_ids


def test_the_lens_reads_only_declared_free_text() -> None:
    state = _state()
    lens = Lens("team")
    assert lens.field(state.todos["watch-ci"], "acceptance") == "green"
    assert lens.field(state.todos["port"], "reason") is None
    assert lens.field(state.todos["watch-ci"].monitor, "watch", e.MONITOR) == "ci:main"
    with pytest.raises(ValueError, match="not declared free text"):
        lens.field(state.todos["port"], "todo_id")


def test_one_marker_per_case_for_private_text() -> None:
    text = b"the private plan"
    ref = BLOB["blob"]

    def here(r: str) -> bytes | None:
        return text if r == ref else None

    assert e.private_ref(BLOB) == ref and e.private_ref("inline") is None
    for audience in ("public", "team"):
        lens = Lens(audience, here)  # a reader is never used for these audiences
        assert lens.text(BLOB) == PRIVATE
        assert lens.omitted == {"private text": 1}
    private = Lens("private", here)
    assert private.text(BLOB) == "the private plan"
    assert not private.omitted
    elsewhere = Lens("private", lambda r: None)
    assert elsewhere.text(BLOB) == NOT_ON_HOST
    assert elsewhere.omitted == {"private text not on this host": 1}
    assert Lens("private").text(BLOB) == NOT_ON_HOST
