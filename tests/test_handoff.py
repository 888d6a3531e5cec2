"""Handoff write paths: who may prepare, what a note holds, and every way adoption refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopx.engine import todos
from loopx.engine.clock import FixedClock
from loopx.engine.commands import (
    AddTodo,
    AdoptHandoff,
    ClaimTodo,
    CompleteTodo,
    CreateGoal,
    PrepareHandoff,
    RenewTodo,
)
from loopx.engine.core import Context, load_state, require_goal
from loopx.engine.goals import create_goal
from loopx.engine.handoff import (
    adopt_handoff,
    check_note,
    note_from_flags,
    prepare_handoff,
    read_context,
)
from loopx.model.errors import Conflict, InvalidInput, LoopxError, NotFound
from loopx.state.handoff import latest_handoff

T0 = "2026-03-01T12:00:00Z"
REV = "0123456789abcdef0123456789abcdef01234567"
NOTE = {
    "work_summary": "Parser rewritten; two tests still fail on nested lists.",
    "approaches_tried": [
        {"approach": "Regex tokenizer", "outcome": "failed", "reason": "Nested lists."},
        {"approach": "Recursive descent", "outcome": "worked"},
    ],
    "next_steps": ["Fix test_nested_lists", "Run the full suite"],
    "files_touched": [
        {"path": "src/parser.py", "action": "modified", "summary": "new tokenizer"},
        {"path": "tests/test_parser.py", "action": "read"},
    ],
    "key_decisions": ["Keep the old API as a wrapper"],
    "open_questions": ["Is Python 3.10 still supported?"],
    "source_refs": ["https://example.com/pr/1"],
}


class World:
    """One store, one clock shared by every actor (so leases expire for everyone at once)."""

    def __init__(self, store: Any, step: int = 60):
        self.store = store
        self.clock = FixedClock(T0, step)
        create_goal(
            self.ctx("maintainer"), CreateGoal(goal_id="demo", title="Demo", objective="Ship it")
        )
        todos.add_todo(
            self.ctx("maintainer"), AddTodo(goal_id="demo", todo_id="todo_a", title="Parser")
        )

    def ctx(self, agent: str, session: str | None = None) -> Context:
        return Context(self.store, self.clock, agent_id=agent, session_id=session or f"{agent}-s")

    def state(self) -> Any:
        return require_goal(self.store, "demo")

    def todo(self) -> Any:
        return self.state().todos["todo_a"]

    def claim(self, agent: str = "agent-a", lease: int | None = None) -> None:
        todos.claim_todo(
            self.ctx(agent), ClaimTodo(goal_id="demo", todo_id="todo_a", lease_seconds=lease)
        )

    def prepare(self, agent: str = "agent-a", **kw: Any) -> Any:
        kw.setdefault("note", NOTE)
        kw.setdefault("git_revision", REV)
        return prepare_handoff(
            self.ctx(agent), PrepareHandoff(goal_id="demo", todo_id="todo_a", **kw)
        )

    def adopt(self, agent: str = "agent-b", **kw: Any) -> Any:
        return adopt_handoff(self.ctx(agent), AdoptHandoff(goal_id="demo", todo_id="todo_a", **kw))


@pytest.fixture
def world(store: Any) -> World:
    return World(store)


def _code(exc: pytest.ExceptionInfo[LoopxError]) -> str:
    return exc.value.code


# -- prepare --------------------------------------------------------------------------------


def test_prepare_binds_the_note_to_the_todo_revision_and_git_revision(world: World) -> None:
    world.claim()
    before = world.todo().revision
    result = world.prepare(target_agent_id="agent-b", workspace_dirty=True)
    assert result.status == "applied"
    handoff = latest_handoff(world.state(), "todo_a")
    assert handoff is not None
    assert handoff["handoff_id"] == f"handoff-{result.receipt['seq_first']}"
    assert handoff["todo_revision"] == before
    assert handoff["git_revision"] == REV and handoff["workspace_dirty"] is True
    assert handoff["source_agent_id"] == "agent-a" and handoff["target_agent_id"] == "agent-b"
    assert handoff["status"] == "pending" and handoff["visibility"] == "team"
    assert handoff["note"]["next_steps"] == NOTE["next_steps"]
    # The note's own event moves the todo's revision (so adopt guards on the new one).
    assert world.todo().revision == result.receipt["seq_first"]


def test_only_the_claim_holder_may_prepare(world: World) -> None:
    with pytest.raises(Conflict) as exc:
        world.prepare()
    assert _code(exc) == "not_claimed"
    world.claim("agent-a")
    with pytest.raises(Conflict) as exc:
        world.prepare("agent-b")
    assert _code(exc) == "claim_owner_mismatch"
    assert exc.value.details["claimed_by"] == "agent-a"
    assert latest_handoff(world.state(), "todo_a") is None


def test_prepare_refuses_an_expired_lease(store: Any) -> None:
    world = World(store, step=120)
    world.claim("agent-a", lease=60)
    with pytest.raises(Conflict) as exc:
        world.prepare()
    assert _code(exc) == "lease_expired"


def test_prepare_refuses_a_closed_todo(world: World) -> None:
    world.claim()
    todos.complete_todo(world.ctx("agent-a"), CompleteTodo(goal_id="demo", todo_id="todo_a"))
    with pytest.raises(Conflict) as exc:
        world.prepare()
    assert _code(exc) == "todo_closed"


def test_prepare_is_guarded_by_the_todo_revision(world: World) -> None:
    world.claim()
    current = world.todo().revision
    goal_head = world.state().revision
    todos.add_todo(
        world.ctx("maintainer"), AddTodo(goal_id="demo", todo_id="other", title="Unrelated")
    )
    with pytest.raises(Conflict) as exc:
        world.prepare(expected_revision=current - 1)
    assert _code(exc) == "revision_conflict"
    assert exc.value.details["current_revision"] == current
    # An unrelated event moved the goal's head but not the todo: the guard still passes.
    assert world.state().revision > goal_head
    assert world.prepare(expected_revision=current).status == "applied"


def test_prepare_is_idempotent_by_operation_id(world: World) -> None:
    world.claim()
    first = world.prepare(operation_id="handoff-1")
    again = world.prepare(operation_id="handoff-1")
    assert again.status == "replayed" and again.receipt == first.receipt
    assert world.state().revision == first.receipt["revision"]
    with pytest.raises(Conflict) as exc:
        world.prepare(operation_id="handoff-1", note={**NOTE, "work_summary": "different"})
    assert _code(exc) == "operation_id_reused"


def test_private_note_goes_to_the_blob_store(world: World) -> None:
    world.claim()
    world.prepare(visibility="private")
    handoff = latest_handoff(world.state(), "todo_a")
    assert handoff is not None and handoff["visibility"] == "private"
    ref = handoff["note"]["blob"]
    assert ref.startswith("sha256:")
    assert json.loads(world.store.get_blob(ref))["work_summary"] == NOTE["work_summary"]
    raw = world.store.raw("demo")
    assert b"nested lists" not in raw and ref.encode() in raw


def test_a_refused_private_prepare_stores_no_blob(world: World) -> None:
    from loopx.store.blobs import blob_ref
    from loopx.store.ledger import canonical

    world.claim()
    before = world.store.raw("demo")
    with pytest.raises(InvalidInput) as exc:  # refused after the plan: the revision is no SHA
        world.prepare(visibility="private", git_revision="not-a-commit")
    assert _code(exc) == "invalid_input" and world.store.raw("demo") == before
    assert world.store.get_blob(blob_ref(canonical(check_note(NOTE)))) is None
    world.prepare(visibility="private")
    assert world.store.get_blob(blob_ref(canonical(check_note(NOTE)))) is not None


def test_a_private_todo_gets_a_private_note_by_default(world: World) -> None:
    todos.add_todo(
        world.ctx("maintainer"),
        AddTodo(goal_id="demo", todo_id="secret", title="Secret", visibility="private"),
    )
    todos.claim_todo(world.ctx("agent-a"), ClaimTodo(goal_id="demo", todo_id="secret"))
    prepare_handoff(
        world.ctx("agent-a"), PrepareHandoff(goal_id="demo", todo_id="secret", note=NOTE)
    )
    handoff = latest_handoff(world.state(), "secret")
    assert handoff is not None and handoff["visibility"] == "private"
    assert "blob" in handoff["note"]


def test_a_new_note_supersedes_the_pending_one(world: World) -> None:
    world.claim()
    first = world.prepare()
    world.prepare(note={**NOTE, "work_summary": "Later"})
    old = world.state().handoffs[f"handoff-{first.receipt['seq_first']}"]
    assert old["status"] == "superseded"
    with pytest.raises(Conflict) as exc:
        world.adopt(handoff_id=old["handoff_id"])
    assert _code(exc) == "handoff_stale"
    assert world.adopt().status == "applied"


# -- adopt ----------------------------------------------------------------------------------


def test_adopt_moves_the_claim_through_a_grant_in_one_operation(world: World) -> None:
    world.claim("agent-a")
    prepared = world.prepare(target_agent_id="agent-b")
    revision = world.todo().revision
    result = world.adopt("agent-b", expected_revision=revision, operation_id="resume-1")
    receipt = result.receipt
    assert receipt["seq_last"] == receipt["seq_first"] + 1 == prepared.receipt["seq_first"] + 2
    assert len(receipt["event_ids"]) == 2
    todo = world.todo()
    assert todo.claim is not None
    assert todo.claim["agent_id"] == "agent-b" and todo.claim["session_id"] == "agent-b-s"
    handoff_id = f"handoff-{prepared.receipt['seq_first']}"
    assert todo.claim["via_handoff"] == handoff_id
    handoff = world.state().handoffs[handoff_id]
    assert handoff["status"] == "adopted"
    assert handoff["grant"] == {
        "handoff_id": handoff_id,
        "todo_id": "todo_a",
        "todo_revision": revision,
        "source_agent_id": "agent-a",
        "source_session_id": "agent-a-s",
        "target_agent_id": "agent-b",
        "target_session_id": "agent-b-s",
    }
    events = world.store.read("demo").events[-2:]
    assert [e["type"] for e in events] == ["handoff.adopted", "todo.claimed"]
    assert {e["operation_id"] for e in events} == {"resume-1"}


def test_adopt_retry_replays_the_identical_receipt(world: World) -> None:
    world.claim()
    world.prepare()
    revision = world.todo().revision
    first = world.adopt(expected_revision=revision, operation_id="resume-1")
    head = world.state().revision
    again = world.adopt(expected_revision=revision, operation_id="resume-1")
    assert again.status == "replayed" and again.receipt == first.receipt
    assert world.state().revision == head


def test_adopt_refuses_a_closed_todo(world: World) -> None:
    world.claim()
    world.prepare()
    todos.complete_todo(world.ctx("agent-a"), CompleteTodo(goal_id="demo", todo_id="todo_a"))
    with pytest.raises(Conflict) as exc:
        world.adopt()
    assert _code(exc) == "todo_closed"


def test_adopt_refuses_without_a_pending_note(world: World) -> None:
    world.claim()
    with pytest.raises(NotFound) as exc:
        world.adopt()
    assert _code(exc) == "handoff_not_found"
    world.prepare()
    world.adopt("agent-b")
    with pytest.raises(NotFound) as exc:  # already adopted: nothing pending any more
        world.adopt("agent-c")
    assert _code(exc) == "handoff_not_found"


def test_adopt_refuses_a_stale_note(world: World) -> None:
    world.claim()
    world.prepare()
    todos.renew_todo(
        world.ctx("agent-a"), RenewTodo(goal_id="demo", todo_id="todo_a")
    )  # the todo moved after the note
    with pytest.raises(Conflict) as exc:
        world.adopt(expected_revision=world.todo().revision)
    assert _code(exc) == "handoff_stale"
    assert exc.value.details["todo_revision"] > exc.value.details["note_revision"]


def test_adopt_refuses_when_the_revision_moved(world: World) -> None:
    world.claim()
    world.prepare()
    with pytest.raises(Conflict) as exc:
        world.adopt(expected_revision=world.todo().revision - 1)
    assert _code(exc) == "revision_conflict"
    assert world.todo().claim["agent_id"] == "agent-a"


def test_adopt_refuses_a_third_agents_live_claim(store: Any) -> None:
    world = World(store, step=120)
    world.claim("agent-a", lease=200)
    world.prepare(target_agent_id="agent-b")
    world.clock.now()  # time passes: agent-a's lease runs out
    world.claim("agent-c")  # allowed: the lease expired
    with pytest.raises(Conflict) as exc:
        world.adopt("agent-b", expected_revision=world.todo().revision)
    assert _code(exc) == "claim_owner_mismatch"
    assert exc.value.details["claimed_by"] == "agent-c"


def test_adopt_refuses_an_agent_the_note_was_not_meant_for(world: World) -> None:
    world.claim()
    world.prepare(target_agent_id="agent-b")
    with pytest.raises(Conflict) as exc:
        world.adopt("agent-c")
    assert _code(exc) == "handoff_target_mismatch"


def test_adopt_must_be_done_by_the_target(world: World) -> None:
    world.claim()
    world.prepare()
    with pytest.raises(InvalidInput) as exc:
        world.adopt("agent-b", target_agent_id="agent-c")
    assert _code(exc) == "target_agent_mismatch"


def test_adopt_is_allowed_after_the_source_lease_expired(store: Any) -> None:
    world = World(store, step=120)
    world.claim("agent-a", lease=150)
    world.prepare()
    world.clock.now()
    assert world.adopt("agent-b").status == "applied"
    assert world.todo().claim["agent_id"] == "agent-b"


def test_plain_claim_of_a_live_claimed_todo_is_still_refused(world: World) -> None:
    world.claim("agent-a")
    world.prepare(target_agent_id="agent-b")
    with pytest.raises(Conflict) as exc:
        world.claim("agent-b")
    assert _code(exc) == "claim_owner_mismatch"


def test_the_snapshot_round_trips_handoffs(world: World) -> None:
    world.claim()
    world.prepare(visibility="private")
    world.prepare()
    world.adopt()
    cold = load_state(world.store, "demo", cache=False).state
    assert world.store.load_snapshot("demo")  # the last write cached a snapshot …
    warm = require_goal(world.store, "demo")  # … which this read folds from
    assert cold is not None and cold.handoffs == warm.handoffs
    assert [h["status"] for h in warm.handoffs.values()] == ["superseded", "adopted"]


# -- the note -------------------------------------------------------------------------------


def test_every_problem_in_a_context_is_reported_at_once_without_values(tmp_path: Path) -> None:
    secret = "ghp_" + "S3cr3tT0k3n" * 4
    bad = {
        "work_summary": "",
        "approaches_tried": [{"approach": secret, "outcome": "x" * 201}, {"outcome": "failed"}],
        "next_steps": ["ok", 7],
        "files_touched": [{"path": "/etc/" + secret, "action": "nuked"}],
        "key_decisions": "not a list",
        secret: "unexpected",
    }
    path = tmp_path / "ctx.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(InvalidInput) as exc:
        read_context(path)
    err = exc.value
    assert err.code == "invalid_context"
    paths = [p["path"] for p in err.details["problems"]]
    assert paths == sorted(paths)
    for expected in (
        "$",
        "$.work_summary",
        "$.approaches_tried[0].outcome",
        "$.approaches_tried[1]",
        "$.next_steps[1]",
        "$.files_touched[0].path",
        "$.files_touched[0].action",
        "$.key_decisions",
    ):
        assert expected in paths, expected
    assert len(paths) >= 8
    everything = json.dumps(err.to_dict())
    assert secret not in everything and "S3cr3t" not in everything
    assert "xxxxx" not in everything


def test_a_context_that_is_not_json_is_one_problem(tmp_path: Path) -> None:
    path = tmp_path / "ctx.json"
    path.write_text('{"work_summary": "token-abc123",')
    with pytest.raises(InvalidInput) as exc:
        read_context(path)
    assert exc.value.code == "invalid_context"
    assert exc.value.details["problems"][0]["path"] == "$"
    assert "token-abc123" not in json.dumps(exc.value.to_dict())


def test_a_valid_context_is_normalised(tmp_path: Path) -> None:
    path = tmp_path / "ctx.json"
    path.write_text(json.dumps({"schema": "loopx.handoff-context/v1", "work_summary": "Done"}))
    note = read_context(path)
    assert note["work_summary"] == "Done"
    assert note["next_steps"] == [] and note["files_touched"] == []


def test_a_missing_context_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound) as exc:
        read_context(tmp_path / "nope.json")
    assert exc.value.code == "file_not_found"


def test_note_from_flags_parses_structured_items() -> None:
    note = note_from_flags(
        work_summary="Half done",
        next_steps=["one", "two"],
        tried=["cache it::failed::stale reads", "index it::worked"],
        files=["src/a.py::modified::new API", "docs/b.md::created"],
        decisions=["d"],
        questions=["q"],
        source_refs=["r"],
    )
    assert note["approaches_tried"] == [
        {"approach": "cache it", "outcome": "failed", "reason": "stale reads"},
        {"approach": "index it", "outcome": "worked"},
    ]
    assert note["files_touched"][0] == {
        "path": "src/a.py",
        "action": "modified",
        "summary": "new API",
    }
    assert note["files_touched"][1] == {"path": "docs/b.md", "action": "created"}


def test_legacy_rationale_maps_to_work_summary() -> None:
    note = note_from_flags(rationale="Legacy text", source_refs=["abc"])
    assert note["work_summary"] == "Legacy text" and note["source_refs"] == ["abc"]
    with pytest.raises(InvalidInput) as exc:
        note_from_flags()
    assert exc.value.code == "invalid_note"
    assert exc.value.details["problems"] == [
        {"path": "$", "problem": "missing required field work_summary"}
    ]


LIMITS = {
    "work_summary": 4000,
    "next_steps": 30,
    "approaches_tried": 30,
    "files_touched": 200,
    "key_decisions": 30,
    "open_questions": 30,
    "source_refs": 50,
}


def _item(name: str, i: int) -> Any:
    if name == "approaches_tried":
        return {"approach": f"a{i}", "outcome": "failed", "reason": "r" * 1000}
    if name == "files_touched":
        return {"path": f"src/f{i}.py", "action": "modified", "summary": "s" * 500}
    if name == "source_refs":
        return "u" * 2000
    return "t" * 1000


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_schema_and_event_model_agree_on_limits(name: str) -> None:
    from loopx.model.events import validate_data

    def event(note: dict[str, Any]) -> dict[str, Any]:
        return {
            "handoff_id": "handoff-1",
            "todo_id": "t",
            "todo_revision": 1,
            "source_agent_id": "a",
            "source_session_id": "s",
            "note": note,
        }

    limit = LIMITS[name]
    if name == "work_summary":
        at, over = "w" * limit, "w" * (limit + 1)
        ok, bad = {"work_summary": at}, {"work_summary": over}
    else:
        ok = {"work_summary": "w", name: [_item(name, i) for i in range(limit)]}
        bad = {"work_summary": "w", name: [_item(name, i) for i in range(limit + 1)]}
    assert check_note(ok)
    validate_data("handoff.prepared", event(ok))
    with pytest.raises(InvalidInput):
        check_note(bad)
    with pytest.raises(ValueError):
        validate_data("handoff.prepared", event(bad))


def test_the_context_schema_uses_the_event_models_path_pattern() -> None:
    from loopx.model.events import RELATIVE_PATH_PATTERN
    from loopx.resources import resource_dir

    schema = json.loads((resource_dir("schemas") / "handoff-context.schema.json").read_text())
    assert schema["$defs"]["file"]["properties"]["path"]["pattern"] == RELATIVE_PATH_PATTERN


@pytest.mark.parametrize(
    "path", ["/abs", "../up", "a/../b", "~/home", "C:/win", "a\\b", "a`b", "a.py\n", "b/.."]
)
def test_schema_and_event_model_agree_on_paths(path: str) -> None:
    from loopx.model.events import validate_data

    note = {"work_summary": "w", "files_touched": [{"path": path, "action": "read"}]}
    with pytest.raises(InvalidInput):
        check_note(note)
    with pytest.raises(ValueError):
        validate_data(
            "handoff.prepared",
            {
                "handoff_id": "handoff-1",
                "todo_id": "t",
                "todo_revision": 1,
                "source_agent_id": "a",
                "source_session_id": "s",
                "note": note,
            },
        )
