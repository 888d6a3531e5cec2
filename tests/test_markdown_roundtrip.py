"""Every Markdown projection shows the ledger's text as it was written (issue 20).

A goal is written through the governed write paths with hostile and ordinary strings in every
free-text field, paths in a handoff note, and refs on evidence and in the note; then the handoff
digest (both templates), the workbench, the review packet, `diff --format markdown` and the
session primer are rendered and parsed back with markdown-it-py. Every id and path must come
back as a code span, every http(s) ref as a link whose text is the ref and whose href is the ref
(percent-encoded only where a URL may not hold a character), every other ref as a code span,
and every piece of prose as plain text. No other link, and no raw HTML, may appear.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopx.build.diffing import render_markdown
from loopx.build.single import review, workbench_markdown
from loopx.engine import evidence, gates, todos
from loopx.engine.clock import FixedClock
from loopx.engine.commands import (
    AddEvidence,
    AddNote,
    AddTodo,
    ClaimTodo,
    CreateGoal,
    OpenGate,
    PrepareHandoff,
    UpdateTodo,
)
from loopx.engine.core import Context, require_goal
from loopx.engine.goals import add_note, create_goal
from loopx.engine.handoff import prepare_handoff
from loopx.privacy.audience import Lens
from loopx.projections.diff import describe, diff_facts, facts_from_state, summarize
from loopx.projections.handoff import handoff_digest
from loopx.projections.prime import goal_primer
from loopx.projections.prime import one_line as prime_line
from loopx.render.handoff import render_digest_markdown, render_digest_text
from loopx.render.md_escape import is_web_url, one_line
from loopx.render.prime import render_prime_markdown
from loopx.state.fold import replay
from loopx.store.memorystore import MemoryStore
from tests.conftest import run_cli
from tests.markdown_oracle import BUILD, Shown, normalize, shown
from tests.test_md_escape import HOSTILE, URLS

T0 = "2026-03-01T12:00:00Z"
REV = "1111111111111111111111111111111111111111"
IDS = {"todo": "todo_a", "dep": "dep.b_c", "ready": "ready_1", "gate": "g_1", "ev": "ev_1.x"}
PATH_RE = re.compile(r"^(?![/~])(?![A-Za-z]:)(?!(.*/)?\.\.(/|$))(?![\s\S]*[\x00-\x1f`\\])[\s\S]+$")
REFS = [*URLS, "javascript:alert(1)", "file:///etc/passwd", "data:text/html,<b>x</b>"]


@dataclass
class Corpus:
    prose: list[str]  # free text, one per field (cycled)
    paths: list[str]
    refs: list[str]

    def text(self, i: int) -> str:
        value = self.prose[i % len(self.prose)]
        return value if value.strip() else f"blank {i}"


@dataclass
class Written:
    store: MemoryStore
    expect_prose: dict[str, list[str]]  # projection → prose it must show
    paths: list[str]
    refs: list[str]


def _write(corpus: Corpus) -> Written:
    store = MemoryStore()
    clock = FixedClock(T0, 60)

    def ctx(agent: str) -> Context:
        return Context(store, clock, agent_id=agent, session_id=f"{agent}-s")

    me, agent = ctx("maintainer"), ctx("agent_a")
    t = corpus.text
    create_goal(
        me, CreateGoal(goal_id="demo", title=t(0)[:200], objective=t(1), acceptance=[t(2), t(3)])
    )
    todos.add_todo(me, AddTodo(goal_id="demo", todo_id=IDS["dep"], title=t(4)[:200]))
    todos.add_todo(me, AddTodo(goal_id="demo", todo_id=IDS["ready"], title=t(5)[:200], role="user"))
    todos.add_todo(
        me, AddTodo(goal_id="demo", todo_id=IDS["todo"], title=t(6)[:200], acceptance=t(7))
    )
    todos.claim_todo(agent, ClaimTodo(goal_id="demo", todo_id=IDS["todo"]))
    todos.update_todo(me, UpdateTodo(goal_id="demo", todo_id=IDS["todo"], depends_on=[IDS["dep"]]))
    evidence.add_evidence(
        me,
        AddEvidence(
            goal_id="demo",
            kind="test",
            summary=t(8),
            refs=corpus.refs,
            revision=REV,
            todo_id=IDS["todo"],
            evidence_id=IDS["ev"],
            visibility="team",
        ),
    )
    gates.open_gate(
        me,
        OpenGate(
            goal_id="demo",
            gate_id=IDS["gate"],
            authority="maintainer",
            question=t(9),
            blocks=[IDS["todo"]],
        ),
    )
    add_note(me, AddNote(goal_id="demo", text=t(10), kind="lesson", visibility="team"))
    note = {
        "work_summary": t(11),
        "approaches_tried": [{"approach": t(12), "outcome": t(13)[:200], "reason": t(14)}],
        "next_steps": [t(15), t(16)],
        "files_touched": [
            {"path": p, "action": "modified", "summary": t(17 + i)}
            for i, p in enumerate(corpus.paths)
        ],
        "key_decisions": [t(20)],
        "open_questions": [t(21)],
        "source_refs": corpus.refs,
    }
    prepare_handoff(
        agent,
        PrepareHandoff(
            goal_id="demo", todo_id=IDS["todo"], note=note, git_revision=REV, visibility="team"
        ),
    )
    files = [t(17 + i) for i in range(len(corpus.paths))]
    goal = [t(0)[:200], t(1), t(2), t(3)]
    handoff = [
        *goal,
        t(5)[:200],
        t(6)[:200],
        t(7),
        t(8),
        t(9),
        t(11),
        t(12),
        t(13)[:200],
        t(14),
        t(15),
        t(16),
        *files,
        t(20),
        t(21),
    ]
    changes = [t(4)[:200], t(5)[:200], t(6)[:200], t(8), t(9)]
    return Written(
        store=store,
        expect_prose={
            "digest": handoff,
            "handoff": [*handoff, t(4)[:200]],
            "workbench": [*goal, t(4)[:200], t(5)[:200], t(6)[:200], t(8), t(9), t(10)],
            "review": [t(0)[:200], t(9), t(8), *changes],
            "diff": changes,
            # the primer shows titles on one line, whitespace collapsed
            "prime": [prime_line(v) for v in (t(0)[:200], t(4)[:200], t(5)[:200], t(6)[:200])]
            + [prime_line(t(1), 400), prime_line(t(9))],
        },
        paths=corpus.paths,
        refs=corpus.refs,
    )


def _render(written: Written) -> dict[str, str]:
    state = require_goal(written.store, "demo")
    digest = handoff_digest(
        state, IDS["todo"], audience="team", read_blob=None, workspace_facts=None
    )
    events = written.store.read("demo").events
    before = replay(events[:1])
    assert before is not None
    changes = diff_facts(
        facts_from_state(before, Lens("team")), facts_from_state(state, Lens("team"))
    )
    result = {
        "changes": [{**c, "text": describe(c)} for c in changes],
        "summary": summarize(changes),
    }
    _, review_md = review(state, head=None, visible={"demo"}, audience="team", since=before)
    return {
        "text": render_digest_text(digest),
        "digest": render_digest_markdown(digest, template="digest"),
        "handoff": render_digest_markdown(digest, template="markdown"),
        "workbench": workbench_markdown(state, head=None, visible={"demo"}),
        "review": review_md,
        "diff": render_markdown(result, "builds/old_one", "builds/new`two"),
        "prime": render_prime_markdown(goal_primer(state, state.updated_at, lambda v: v)),
    }


SHOWS_REFS = {"digest", "handoff"}
SHOWS_PATHS = {"digest", "handoff"}
IDS_SHOWN: dict[str, set[str]] = {
    "prime": {IDS["todo"], IDS["dep"], IDS["ready"], IDS["gate"]},
    "digest": set(IDS.values()) | {"demo"},
    "handoff": set(IDS.values()) | {"demo"},
    "workbench": set(IDS.values()),
    "review": {IDS["gate"], IDS["ev"], "demo"},
    "diff": {
        IDS["todo"],
        IDS["dep"],
        IDS["ready"],
        IDS["gate"],
        IDS["ev"],
        "builds/old_one",
        "builds/new`two",
    },
}


def _check(name: str, markdown: str, written: Written) -> None:
    for parser in (None, BUILD):
        seen: Shown = shown(markdown) if parser is None else shown(markdown, parser)
        html = [h for h in seen.html if not h.startswith("<!-- loopx:")]  # the workbench header
        assert not html, (name, html)
        for value in IDS_SHOWN[name]:
            assert value in seen.code, (name, value)
        for value in written.expect_prose[name]:
            assert seen.has_text(one_line(value)), (name, value, markdown)
        web = [r for r in written.refs if is_web_url(r)] if name in SHOWS_REFS else []
        for url in web:
            assert seen.has_link(url), (name, url)
        assert all(link in {(normalize(u), u) for u in web} for link in seen.links), (
            name,
            seen.links,
        )
        if name in SHOWS_REFS:
            for other in (r for r in written.refs if not is_web_url(r)):
                assert one_line(other) in seen.code, (name, other)
        if name in SHOWS_PATHS:
            for path in written.paths:
                assert path in seen.code, (name, path)


PROJECTIONS = ["digest", "handoff", "workbench", "review", "diff", "prime"]


def _check_text(text: str, written: Written) -> None:
    """The plain-text digest shows every value as written (on one line), nothing escaped."""
    for value in [*written.expect_prose["digest"], *written.paths, *written.refs]:
        assert one_line(value) in text, value
    for value in IDS.values():
        assert value in text, value


FIXED_PATHS = [
    "tests/test_wide.py",
    "src/_visible_width.py",
    "docs/__init__.py",
    "a*b*/[x](y)|z<t>&amp;.md",
    "ünï/漢字 file.txt",
]


@pytest.mark.parametrize("name", PROJECTIONS)
def test_hostile_corpus_round_trips(name: str) -> None:
    prose = [v for v in HOSTILE if v.strip()]
    written = _write(Corpus(prose=prose, paths=FIXED_PATHS, refs=REFS))
    _check(name, _render(written)[name], written)


def test_hostile_corpus_is_verbatim_in_the_text_digest() -> None:
    prose = [v for v in HOSTILE if v.strip()]
    written = _write(Corpus(prose=prose, paths=FIXED_PATHS, refs=REFS))
    _check_text(_render(written)["text"], written)


def test_a_ref_with_an_underscore_links_to_itself_in_the_digest() -> None:
    url = "https://github.com/acme/my_repo/pull/1"
    written = _write(Corpus(prose=["plain text"], paths=["a_b.py"], refs=[url]))
    docs = _render(written)
    for name in ("digest", "handoff"):
        assert (url, url) in shown(docs[name]).links  # the href is the ref, byte for byte
        assert f"<{url}>" in docs[name]
        assert "\\_" not in docs[name]  # nothing in this note needs an escape


TEXT = st.text(
    st.sampled_from(list("ab _*`[]()<>|&#;\\!-+.1:/=~\n") + ["é", "字"]), min_size=1, max_size=16
).filter(lambda v: v.strip())
PATH = st.text(st.sampled_from(list("ab_*[]()<>|&#;!-+.:/= ") + ["é"]), min_size=1, max_size=12)
PATH = PATH.filter(lambda p: PATH_RE.fullmatch(p) is not None and p.strip() == p)
URL = st.text(st.sampled_from(list("a_-.~()[]*`|\\%&;#?=/:") + ["é"]), max_size=12).map(
    lambda p: "https://example.com/" + p
)
REF = st.one_of(URL, st.sampled_from(["javascript:alert(1)", "file:///x_y", "sha256:ab_cd"]))


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    st.lists(TEXT, min_size=3, max_size=8),
    st.lists(PATH, min_size=1, max_size=3, unique=True),
    st.lists(REF, min_size=1, max_size=3, unique=True),
)
def test_generated_corpus_round_trips_in_every_projection(
    prose: list[str], paths: list[str], refs: list[str]
) -> None:
    written = _write(Corpus(prose=prose, paths=paths, refs=refs))
    docs = _render(written)
    for name in PROJECTIONS:
        _check(name, docs[name], written)
    _check_text(docs["text"], written)


def test_the_cli_outputs_round_trip(tmp_path: Path) -> None:
    """The same proof on what users run: every Markdown command of the CLI, one real project."""
    texts = {
        "title": "Fix _visible_width in test_wide.py",
        "objective": "is error_code a stable field? *maybe* | <b>x</b>",
        "todo": "__init__.py: `render()` [draft](x)",
        "summary": "2*3*4 & &amp; > quoted",
        "question": "# ship 1. now? - yes",
    }
    refs = ["https://github.com/acme/my_repo/pull/1", "https://e.example/a_(b)", "javascript:x()"]
    root = tmp_path / "p"
    root.mkdir()
    note = {
        "work_summary": texts["summary"],
        "next_steps": [texts["title"]],
        "files_touched": [{"path": "src/_visible_width.py", "action": "modified"}],
        "source_refs": refs,
    }
    (root / "note.json").write_text(json.dumps(note))
    agent = ["--agent-id", "agent_a", "--session-id", "s1"]
    for args in (
        ["init"],
        ["goal", "create", "--goal-id", "demo", "--title", texts["title"]]
        + ["--objective", texts["objective"], "--acceptance", texts["todo"]],
        ["todo", "add", "--goal-id", "demo", "--todo-id", "todo_a", "--title", texts["todo"]],
        ["todo", "claim", "--goal-id", "demo", "--todo-id", "todo_a", *agent],
        ["evidence", "add", "--goal-id", "demo", "--kind", "pr", "--summary", texts["summary"]]
        + [a for r in refs for a in ("--ref", r)]
        + ["--todo-id", "todo_a", "--evidence-id", "ev_1", "--visibility", "team"],
        ["gate", "open", "--goal-id", "demo", "--gate-id", "g_1", "--question", texts["question"]]
        + ["--authority", "maintainer", "--blocks", "todo_a"],
        ["handoff", "prepare", "--goal-id", "demo", "--todo-id", "todo_a", *agent]
        + ["--from-context", str(root / "note.json"), "--workspace", str(root)],
    ):
        result = run_cli([*args, "--root", str(root)], cwd=root)
        assert result.exit_code == 0, (args, result.stderr)
    inspect = ["handoff", "inspect", "--goal-id", "demo", "--todo-id", "todo_a", *agent]
    outputs = {
        "digest": [*inspect, "--format", "digest"],
        "handoff": [*inspect, "--format", "markdown"],
        "workbench": ["workbench", "--goal-id", "demo"],
        "review": ["review", "--goal-id", "demo", "--since", "1"],
        "diff": ["diff", "--goal-id", "demo", "1", "6", "--format", "markdown"],
    }
    t = texts
    expected = {
        "digest": list(t.values()),
        "handoff": list(t.values()),
        "workbench": list(t.values()),
        "review": [t["title"], t["todo"], t["summary"], t["question"]],
        "diff": [t["todo"], t["summary"], t["question"]],
    }
    for name, args in outputs.items():
        result = run_cli([*args, "--root", str(root)], cwd=root)
        assert result.exit_code == 0, (name, result.stderr)
        seen = shown(result.stdout)
        assert not [h for h in seen.html if not h.startswith("<!-- loopx:")], name
        for value in expected[name]:
            assert seen.has_text(value), (name, value)
        assert "todo_a" in seen.code and "g_1" in seen.code, name
        if name in ("digest", "handoff"):
            assert "src/_visible_width.py" in seen.code
            assert seen.has_link(refs[0]) and (refs[0], refs[0]) in seen.links
            assert seen.has_link(refs[1]) and "javascript:x()" in seen.code
            assert all(href.startswith("https://") for href, _ in seen.links)


ODD = {
    "agent": "a-_b_",
    "session": "s-_1_",
    "kind": "k-_x_",
    "authority": "x-_lead_",
    "by": "r-_y_",
}


def test_names_that_read_as_emphasis_show_as_written() -> None:
    """Ids and kinds are valid with `-_` in them (`a-_b_`), which Markdown written raw would
    read as emphasis: every Markdown projection that names an agent, a session, an evidence
    kind or a gate's authority or resolver shows them as written."""
    from loopx.engine.commands import ResolveGate

    store = MemoryStore()
    clock = FixedClock(T0, 60)
    me = Context(store, clock, agent_id="maintainer", session_id="m")
    agent = Context(store, clock, agent_id=ODD["agent"], session_id=ODD["session"])
    create_goal(me, CreateGoal(goal_id="demo", title="Odd names", objective="Show them."))
    todos.add_todo(me, AddTodo(goal_id="demo", todo_id="t1", title="Work"))
    todos.claim_todo(agent, ClaimTodo(goal_id="demo", todo_id="t1"))
    evidence.add_evidence(
        me,
        AddEvidence(
            goal_id="demo",
            kind=ODD["kind"],
            summary="seen",
            todo_id="t1",
            revision=REV,
            visibility="team",
        ),
    )
    for gate_id in ("g1", "g2"):
        gates.open_gate(
            me,
            OpenGate(
                goal_id="demo",
                gate_id=gate_id,
                authority=ODD["authority"],
                question="Ok?",
                blocks=["t1"],
            ),
        )
    by = Context(store, clock, agent_id=ODD["authority"], session_id="r")  # its resolver too
    gates.resolve_gate(by, ResolveGate(goal_id="demo", gate_id="g2", resolution="approve"))
    note = {"work_summary": "Done so far", "next_steps": ["Go on"]}
    prepare_handoff(
        agent,
        PrepareHandoff(
            goal_id="demo", todo_id="t1", note=note, git_revision=REV, visibility="team"
        ),
    )
    state = require_goal(store, "demo")
    digest = handoff_digest(state, "t1", audience="team", read_blob=None, workspace_facts=None)
    docs = {
        "workbench": (
            workbench_markdown(state, head=None, visible={"demo"}),
            ("kind", "authority"),
        ),
        "review": (
            review(state, head=None, visible={"demo"}, audience="team")[1],
            ("kind", "authority"),
        ),
        "handoff": (
            render_digest_markdown(digest, template="markdown"),
            ("kind", "authority", "agent", "session"),
        ),
        "digest": (
            render_digest_markdown(digest, template="digest"),
            ("kind", "authority", "agent", "session"),
        ),
    }
    for name, (markdown, names) in docs.items():
        seen = shown(markdown, BUILD)
        for key in names:
            assert seen.has_text(ODD[key]) or ODD[key] in seen.code, (name, key, markdown)
