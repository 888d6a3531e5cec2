"""The handoff digest projection: audiences, facts, staleness, schema validity and budgets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from loopx.engine import evidence, gates, todos
from loopx.engine.clock import FixedClock
from loopx.engine.commands import (
    AddEvidence,
    AddTodo,
    AdoptHandoff,
    ClaimTodo,
    CompleteTodo,
    CreateGoal,
    OpenGate,
    PrepareHandoff,
    RenewTodo,
    UpdateTodo,
)
from loopx.engine.core import Context, require_goal
from loopx.engine.goals import create_goal
from loopx.engine.handoff import adopt_handoff, prepare_handoff
from loopx.model.errors import InvalidInput, NotFound
from loopx.projections.handoff import (
    fit_digest,
    handoff_digest,
    handoff_digests,
    pending_handoffs,
)
from loopx.render.handoff import render_digest_json, render_digest_markdown
from loopx.resources import resource_dir
from loopx.store.memorystore import MemoryStore

T0 = "2026-03-01T12:00:00Z"
OLD = "1111111111111111111111111111111111111111"
NEW = "2222222222222222222222222222222222222222"
NOTE = {
    "work_summary": "Tokenizer rewritten. " * 20,
    "approaches_tried": [
        {"approach": f"Approach {i}", "outcome": "failed", "reason": "Too slow " * 10}
        for i in range(4)
    ],
    "next_steps": ["Fix test_nested_lists", "Run the full suite", "Open the PR"],
    "files_touched": [
        {"path": "src/parser.py", "action": "modified", "summary": "new tokenizer " * 5},
        {"path": "src/gone.py", "action": "deleted"},
        {"path": "tests/test_parser.py", "action": "created", "summary": "nested cases"},
    ],
    "key_decisions": ["Keep the old API as a wrapper " * 3] * 3,
    "open_questions": ["Is Python 3.10 still supported?"] * 2,
    "source_refs": ["https://example.com/pr/1", "https://example.com/issue/2"],
}


@pytest.fixture(scope="module")
def schema() -> jsonschema.Draft202012Validator:
    doc = json.loads((resource_dir("schemas") / "handoff.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(doc)
    return jsonschema.Draft202012Validator(doc)


def _valid(schema: jsonschema.Draft202012Validator, digest: dict[str, Any]) -> None:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in schema.iter_errors(digest)]
    assert not errors, errors


class Goal:
    def __init__(self, note_visibility: str = "team") -> None:
        self.store = MemoryStore()
        self.clock = FixedClock(T0, 60)
        me = self.ctx("maintainer")
        create_goal(
            me,
            CreateGoal(
                goal_id="demo",
                title="Demo",
                objective="Ship the parser",
                acceptance=["Tests green"],
            ),
        )
        todos.add_todo(me, AddTodo(goal_id="demo", todo_id="dep", title="Groundwork"))
        todos.add_todo(
            me, AddTodo(goal_id="demo", todo_id="secret-dep", title="Hidden", visibility="private")
        )
        todos.add_todo(
            me,
            AddTodo(
                goal_id="demo", todo_id="todo_a", title="Parser", acceptance="Nested lists parse"
            ),
        )
        agent = self.ctx("agent-a")
        todos.claim_todo(agent, ClaimTodo(goal_id="demo", todo_id="todo_a"))
        # Dependencies and a gate that arrived after the claim (claiming would refuse them).
        todos.update_todo(
            me, UpdateTodo(goal_id="demo", todo_id="todo_a", depends_on=["dep", "secret-dep"])
        )
        todos.add_todo(me, AddTodo(goal_id="demo", todo_id="ready-1", title="Something else ready"))
        for i, (rev, vis) in enumerate(
            [(OLD, "team"), (NEW, "team"), (None, "team"), (NEW, "private")]
        ):
            evidence.add_evidence(
                me,
                AddEvidence(
                    goal_id="demo",
                    kind="test",
                    summary=f"Run {i} of the suite",
                    refs=[f"https://ci.example.com/{i}"],
                    revision=rev,
                    todo_id="todo_a",
                    evidence_id=f"ev-{i}",
                    visibility=vis,
                ),
            )
        gates.open_gate(
            me,
            OpenGate(
                goal_id="demo",
                gate_id="g1",
                authority="maintainer",
                question="Merge?",
                blocks=["todo_a"],
            ),
        )
        prepare_handoff(
            agent,
            PrepareHandoff(
                goal_id="demo",
                todo_id="todo_a",
                note=NOTE,
                git_revision=OLD,
                workspace_dirty=True,
                visibility=note_visibility,
                target_agent_id="agent-b",
            ),
        )

    def ctx(self, agent: str) -> Context:
        return Context(self.store, self.clock, agent_id=agent, session_id=f"{agent}-s")

    def state(self) -> Any:
        return require_goal(self.store, "demo")

    def digest(self, audience: str = "private", facts: Any = None, **kw: Any) -> dict[str, Any]:
        return handoff_digest(
            self.state(),
            "todo_a",
            audience=audience,
            read_blob=self.store.get_blob,
            workspace_facts=facts,
            **kw,
        )


FACTS_MOVED = {
    "head": NEW,
    "dirty": True,
    "relation": "ahead",
    "files": {"src/parser.py": True, "src/gone.py": True, "tests/test_parser.py": False},
}


def _codes(digest: dict[str, Any]) -> list[str]:
    return [r["code"] for r in digest["reinspect"]]


def test_digest_carries_goal_todo_note_and_facts(schema: Any) -> None:
    goal = Goal()
    d = goal.digest(facts=FACTS_MOVED, reader={"agent_id": "agent-b", "session_id": "b1"})
    _valid(schema, d)
    assert d["schema"] == "loopx.handoff/v1"
    assert d["goal"]["acceptance"] == ["Tests green"]
    assert d["todo"]["acceptance"] == "Nested lists parse"
    assert [g["gate_id"] for g in d["todo"]["gates"]] == ["g1"]
    assert d["todo"]["gates"][0]["blocking"] is True
    assert {x["todo_id"] for x in d["todo"]["dependencies"]} == {"dep", "secret-dep"}
    assert d["handoff"]["note"]["next_steps"] == NOTE["next_steps"]
    assert d["handoff"]["stale"] is False
    fresh = {e["evidence_id"]: e["freshness"] for e in d["evidence"]}
    assert fresh == {"ev-0": "historical", "ev-1": "current", "ev-2": "unbound", "ev-3": "current"}
    assert [e["evidence_id"] for e in d["evidence"]] == ["ev-3", "ev-2", "ev-1", "ev-0"]
    files = {f["path"]: f["exists"] for f in d["handoff"]["note"]["files_touched"]}
    assert files == FACTS_MOVED["files"]
    assert d["workspace"] == {
        "checked": True,
        "head": NEW,
        "dirty": True,
        "moved": True,
        "relation": "ahead",
    }
    codes = _codes(d)
    for code in (
        "checkout_moved",
        "note_dirty",
        "dirty_tree",
        "files_missing",
        "files_reappeared",
        "evidence_historical",
        "evidence_unbound",
        "gate_pending",
        "dependency_open",
    ):
        assert code in codes, code
    assert d["adoption"]["possible"] is True
    assert "--agent-id agent-b --session-id b1" in d["adoption"]["command"]
    assert f"--expected-revision {d['todo']['revision']}" in d["adoption"]["command"]


def test_same_checkout_is_not_moved() -> None:
    d = Goal().digest(facts={"head": OLD, "dirty": False, "relation": "same", "files": {}})
    assert d["workspace"]["moved"] is False
    assert "checkout_moved" not in _codes(d) and "dirty_tree" not in _codes(d)
    # Facts with only a HEAD (as the build passes them) still compare identity.
    assert Goal().digest(facts={"head": OLD})["workspace"]["moved"] is False
    assert Goal().digest(facts={"head": NEW})["workspace"]["relation"] == "unknown"


def test_without_a_workspace_the_digest_says_nothing_was_inspected(schema: Any) -> None:
    d = Goal().digest()
    _valid(schema, d)
    assert d["workspace"]["checked"] is False
    assert "checkout_not_inspected" in _codes(d)
    assert all(f["exists"] is None for f in d["handoff"]["note"]["files_touched"])


def test_team_audience_omits_private_facts_and_counts_them(schema: Any) -> None:
    d = Goal().digest("team", facts=FACTS_MOVED)
    _valid(schema, d)
    assert [e["evidence_id"] for e in d["evidence"]] == ["ev-2", "ev-1", "ev-0"]
    assert [x["todo_id"] for x in d["todo"]["dependencies"]] == ["dep"]
    omitted = {o["what"]: o["count"] for o in d["omissions"] if o["reason"] == "audience"}
    assert omitted == {"private evidence item": 1, "private dependency": 1}
    assert "private_omitted" in _codes(d)
    assert "Hidden" not in json.dumps(d)


def test_a_private_note_is_shown_only_to_the_private_audience(schema: Any) -> None:
    goal = Goal(note_visibility="private")
    team = goal.digest("team")
    _valid(schema, team)
    assert team["handoff"]["note"] is None
    assert {"reason": "audience", "what": "private handoff note", "count": 1} in team["omissions"]
    assert "Tokenizer" not in json.dumps(team) + render_digest_markdown(team)
    private = goal.digest("private")
    assert private["handoff"]["note"]["work_summary"] == NOTE["work_summary"]


def test_a_private_note_missing_on_this_host_is_said_so(schema: Any) -> None:
    goal = Goal(note_visibility="private")
    d = handoff_digest(
        goal.state(),
        "todo_a",
        audience="private",
        read_blob=lambda ref: None,  # this host does not hold the note
        workspace_facts=None,
    )
    _valid(schema, d)
    assert d["handoff"]["note"] is None
    assert any("not on this host" in o["what"] for o in d["omissions"])
    assert "not on this host" in render_digest_markdown(d)


def test_stale_and_adopted_notes() -> None:
    goal = Goal()
    todos.renew_todo(goal.ctx("agent-a"), RenewTodo(goal_id="demo", todo_id="todo_a"))
    d = goal.digest()
    assert d["handoff"]["stale"] is True and "note_stale" in _codes(d)
    assert d["adoption"] == {
        "possible": False,
        "agent_id": "agent-b",
        "code": "handoff_stale",
        "message": "the todo changed after the note was written",
        "command": None,
    }
    fresh = Goal()
    adopt_handoff(fresh.ctx("agent-b"), AdoptHandoff(goal_id="demo", todo_id="todo_a"))
    done = fresh.digest()
    assert done["handoff"]["status"] == "adopted" and done["handoff"]["stale"] is False
    assert done["handoff"]["adopted"]["agent_id"] == "agent-b"
    assert done["todo"]["claim"]["via_handoff"] == done["handoff"]["handoff_id"]
    assert done["adoption"]["code"] == "handoff_not_found"


def test_unknown_or_hidden_todos_have_no_digest() -> None:
    goal = Goal()
    with pytest.raises(NotFound):
        handoff_digest(goal.state(), "dep", audience="team", read_blob=None, workspace_facts=None)
    with pytest.raises(NotFound):
        handoff_digest(goal.state(), "nope", audience="team", read_blob=None, workspace_facts=None)
    with pytest.raises(ValueError):
        handoff_digest(
            goal.state(), "todo_a", audience="public", read_blob=None, workspace_facts=None
        )


def test_digests_for_the_build_are_deterministic_and_per_audience(schema: Any) -> None:
    goal = Goal()
    a = handoff_digests(goal.state(), audience="team", read_blob=goal.store.get_blob)
    b = handoff_digests(goal.state(), audience="team", read_blob=goal.store.get_blob)
    assert list(a) == ["todo_a"]
    assert render_digest_json(a["todo_a"]) == render_digest_json(b["todo_a"])
    assert render_digest_markdown(a["todo_a"]) == render_digest_markdown(b["todo_a"])
    _valid(schema, a["todo_a"])


BUDGETS = [6000, 4000, 3000, 2500, 2000, 1600]


@pytest.mark.parametrize("template", ["digest", "markdown", "text"])
@pytest.mark.parametrize("budget", BUDGETS)
def test_markdown_fits_the_budget(template: str, budget: int) -> None:
    digest = Goal().digest(facts=FACTS_MOVED)
    full = render_digest_markdown(digest, template=template)
    out = render_digest_markdown(digest, budget, template=template)
    assert len(out) <= budget
    for step in NOTE["next_steps"]:  # never dropped
        assert step in out  # verbatim: intra-word underscores need no escape
    ids = ("todo_a", "demo") if template == "text" else ("`todo_a`", "`demo`")
    assert all(i in out for i in ids)
    if len(full) > budget:
        assert "Omitted to fit" in out or "To fit" in out
    else:
        assert out == full


@pytest.mark.parametrize("budget", [20000, 8000, 6000, 5000, 4000])
def test_json_fits_the_budget_and_lists_omissions(schema: Any, budget: int) -> None:
    digest = Goal().digest(facts=FACTS_MOVED)
    fitted = fit_digest(digest, budget, render_digest_json)
    text = render_digest_json(fitted)
    assert len(text) <= budget
    _valid(schema, json.loads(text))
    assert fitted["max_chars"] == budget
    assert fitted["handoff"]["note"]["next_steps"] == NOTE["next_steps"]
    cut = [o for o in fitted["omissions"] if o["reason"] == "budget"]
    compact = render_digest_json({**digest, "max_chars": budget})  # budgeted JSON is compact
    assert "\n  " not in text
    if len(compact) > budget:
        assert cut and all(o["count"] > 0 for o in cut)
    else:
        assert not cut and text == compact
    assert digest["max_chars"] is None  # the input digest is not modified


def test_budget_drops_least_important_first() -> None:
    digest = Goal().digest(facts=FACTS_MOVED)
    full = len(render_digest_markdown(digest))
    render_digest_markdown(digest, full - 50)  # a small cut …
    fitted = fit_digest(
        digest, full - 50, lambda d: render_digest_markdown(d)
    )  # … removes evidence and ready todos before anything from the note
    cut = [o["what"] for o in fitted["omissions"] if o["reason"] == "budget"]
    assert cut and cut[0] in ("ready todos", "evidence items")
    assert (
        fitted["handoff"]["note"]["approaches_tried"]
        == digest["handoff"]["note"]["approaches_tried"]
    )


def test_budget_too_small_is_refused_with_the_minimum() -> None:
    digest = Goal().digest()
    with pytest.raises(InvalidInput) as exc:
        render_digest_markdown(digest, 200)
    assert exc.value.code == "budget_too_small"
    minimum = exc.value.details["minimum"]
    assert minimum > 200
    assert len(render_digest_markdown(digest, minimum)) <= minimum


def test_pending_handoffs_newest_first_and_filtered() -> None:
    goal = Goal()
    me = goal.ctx("maintainer")
    todos.add_todo(me, AddTodo(goal_id="demo", todo_id="todo_b", title="Second"))
    todos.claim_todo(goal.ctx("agent-c"), ClaimTodo(goal_id="demo", todo_id="todo_b"))
    prepare_handoff(
        goal.ctx("agent-c"),
        PrepareHandoff(goal_id="demo", todo_id="todo_b", note={"work_summary": "B\nnext"}),
    )
    items = pending_handoffs(goal.state())
    assert [h["todo_id"] for h in items] == ["todo_b", "todo_a"]
    assert items[0]["summary"] == "B next"
    assert items[1]["target_agent_id"] == "agent-b" and items[1]["stale"] is False
    assert pending_handoffs(goal.state(), audience="public") == []  # a team goal
    adopt_handoff(goal.ctx("agent-b"), AdoptHandoff(goal_id="demo", todo_id="todo_a"))
    todos.complete_todo(goal.ctx("agent-c"), CompleteTodo(goal_id="demo", todo_id="todo_b"))
    assert pending_handoffs(goal.state()) == []


def test_pending_handoffs_hide_private_notes_from_the_team() -> None:
    goal = Goal(note_visibility="private")
    [team] = pending_handoffs(goal.state(), audience="team", read_blob=goal.store.get_blob)
    [private] = pending_handoffs(goal.state(), audience="private", read_blob=goal.store.get_blob)
    assert team["summary"] is None
    assert private["summary"] is not None and private["summary"].startswith("Tokenizer")


def test_demo_digest_is_schema_valid(tmp_path: Path, schema: Any) -> None:
    from loopx.engine.demo import create_demo
    from loopx.store.filestore import FileStore

    create_demo(tmp_path)
    state = require_goal(FileStore(tmp_path), "launch")
    [pending] = pending_handoffs(state)
    assert pending["todo_id"] == "handoff" and pending["source_agent_id"] == "agent-claude"
    assert pending["target_agent_id"] == "agent-codex" and pending["stale"] is False
    for audience in ("team", "private"):
        digests = handoff_digests(state, audience=audience, read_blob=None)
        _valid(schema, digests["handoff"])
        note = digests["handoff"]["handoff"]["note"]
        assert any(f["path"] == "loopx/engine/handoff.py" for f in note["files_touched"])
        assert digests["handoff"]["adoption"]["possible"] is True


@pytest.mark.parametrize("template", ["digest", "markdown", "text"])
def test_templates_do_not_show_now(template: str) -> None:
    """The CLI's render cache leaves `now` out of its key: no template may show it."""
    digest = Goal().digest()
    later = {**digest, "now": "2030-01-01T00:00:00Z"}
    assert render_digest_markdown(digest, template=template) == render_digest_markdown(
        later, template=template
    )
