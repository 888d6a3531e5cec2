"""Monitors: a todo that watches an external fact, with a next wake moved by its backoff; an
observation is evidence plus, when something changed, a typed transition. The goal waits
(not blocked, not needs_user) while its only open work is monitors not yet due."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from loopx.engine import goals, monitors, todos
from loopx.engine.clock import FixedClock
from loopx.engine.commands import (
    AddMonitor,
    AddTodo,
    Backoff,
    BlockTodo,
    ClaimTodo,
    CreateGoal,
    ObserveMonitor,
    OpenGate,
    ResolveGate,
)
from loopx.engine.core import Context, require_goal
from loopx.model.errors import Conflict, InvalidInput, LoopxError
from loopx.state.frontier import attention, frontier, readiness
from loopx.state.monitors import due, next_wake
from loopx.state.views import wake_view
from tests.conftest import T0, run_cli

G = "ship"


def at(store: Any, now: str, agent: str = "agent-a") -> Context:
    return Context(store, FixedClock(now), agent_id=agent, session_id="s1")


@pytest.fixture
def goal(store: Any) -> Any:
    goals.create_goal(at(store, T0), CreateGoal(goal_id=G, title="Ship", objective="Ship it"))
    return store


def watch_ci(store: Any, **kw: Any) -> Any:
    args: dict[str, Any] = {
        "title": "CI for the branch",
        "watch": "ci:github/actions/run/42",
        "every": 600,
        "backoff": "exponential",
        "cap": 1800,
        "todo_id": "ci",
    }
    args.update(kw)
    backoff = Backoff(kind=args.pop("backoff"), seconds=args.pop("every"), cap=args.pop("cap"))
    return monitors.add_monitor(at(store, T0), AddMonitor(goal_id=G, backoff=backoff, **args))


def refused(store: Any, code: str, call: Any) -> LoopxError:
    before = store.raw(G)
    with pytest.raises(LoopxError) as caught:
        call()
    assert caught.value.code == code, caught.value.to_dict()
    assert store.raw(G) == before
    return caught.value


def test_a_monitor_is_a_todo_with_a_typed_watch_and_a_backoff(goal: Any) -> None:
    watch_ci(goal)
    todo = require_goal(goal, G).todos["ci"]
    assert todo.kind == "monitor" and todo.role == "agent" and todo.status == "open"
    assert todo.monitor is not None
    assert todo.monitor["watch"] == "ci:github/actions/run/42"
    assert todo.monitor["watch_kind"] == "ci"
    assert todo.monitor["next_at"] == T0  # due at once by default
    assert todo.monitor["backoff"] == {"kind": "exponential", "seconds": 600, "cap": 1800}


@pytest.mark.parametrize(
    ("watch", "kind"),
    [
        ("pr:octo/repo#12", "pr"),
        ("url:https://example.org/deploy", "url"),
        ("the maintainer's reply on the list", "text"),
        ("docs: a note", "text"),
    ],
)
def test_watch_refs_are_typed_by_prefix(watch: str, kind: str) -> None:
    assert monitors.watch_kind(watch) == kind


def test_backoff_fixed_and_exponential_with_a_cap() -> None:
    fixed = asdict(monitors.check_backoff(Backoff("fixed", 300)))
    assert [monitors.delay(fixed, n) for n in (1, 2, 5)] == [300, 300, 300]
    grow = asdict(monitors.check_backoff(Backoff("exponential", 600, 1800)))
    assert [monitors.delay(grow, n) for n in (1, 2, 3, 4, 100)] == [600, 1200, 1800, 1800, 1800]


def test_unchanged_twice_moves_the_next_wake_by_the_backoff_then_changed_completes(
    goal: Any,
) -> None:
    watch_ci(goal)
    first = monitors.observe(
        at(goal, "2026-03-02T00:00:00Z"),
        ObserveMonitor(goal_id=G, todo_id="ci", result="unchanged", summary="queued"),
    )
    assert first.receipt["subject"] == "ci"
    state = require_goal(goal, G)
    record = state.todos["ci"].monitor
    assert record is not None
    assert record["next_at"] == "2026-03-02T00:10:00Z" and record["streak"] == 1
    assert record["last_result"] == "unchanged" and record["observations"] == 1
    ev = state.evidence[record["last_evidence_id"]]
    assert ev.kind == "ci" and ev.todo_id == "ci" and ev.visibility == "private"

    monitors.observe(
        at(goal, "2026-03-02T00:10:00Z"),
        ObserveMonitor(goal_id=G, todo_id="ci", result="unchanged", summary="running"),
    )
    record = require_goal(goal, G).todos["ci"].monitor
    assert record is not None and record["next_at"] == "2026-03-02T00:30:00Z"  # doubled

    monitors.observe(
        at(goal, "2026-03-02T00:31:00Z"),
        ObserveMonitor(
            goal_id=G,
            todo_id="ci",
            result="changed",
            summary="passed",
            then="complete",
            revision="abc1234",
        ),
    )
    state = require_goal(goal, G)
    todo = state.todos["ci"]
    assert todo.status == "done" and todo.monitor is not None
    assert todo.monitor["observations"] == 3 and todo.monitor["last_result"] == "changed"
    assert todo.evidence_ids == [todo.monitor["last_evidence_id"]]
    # Every observation stays on record as its own evidence: nothing is overwritten.
    assert len([e for e in state.evidence.values() if e.todo_id == "ci"]) == 3


def test_changed_can_block_or_create_a_successor(goal: Any) -> None:
    watch_ci(goal)
    watch_ci(goal, todo_id="review", watch="pr:octo/repo#7", title="Review")
    ctx = at(goal, "2026-03-02T00:00:00Z")
    monitors.observe(
        ctx,
        ObserveMonitor(
            goal_id=G,
            todo_id="ci",
            result="changed",
            summary="red",
            then="block",
            reason="tests fail on main",
        ),
    )
    monitors.observe(
        ctx,
        ObserveMonitor(
            goal_id=G,
            todo_id="review",
            result="changed",
            summary="approved",
            then="successor",
            successor_title="Merge the pull request",
            successor_id="merge",
        ),
    )
    state = require_goal(goal, G)
    assert state.todos["ci"].status == "blocked"
    assert state.todos["ci"].reason == "tests fail on main"
    review, merge = state.todos["review"], state.todos["merge"]
    assert review.status == "done" and review.successor == "merge"
    assert merge.predecessor == "review" and merge.status == "open" and merge.monitor is None
    assert [t.todo_id for t in frontier(state, "2026-03-02T00:00:00Z")] == ["merge"]


def test_failed_observation_backs_off_like_unchanged(goal: Any) -> None:
    watch_ci(goal, backoff="fixed", cap=None, every=120)
    monitors.observe(
        at(goal, "2026-03-02T00:00:00Z"),
        ObserveMonitor(goal_id=G, todo_id="ci", result="failed", summary="503"),
    )
    record = require_goal(goal, G).todos["ci"].monitor
    assert record is not None
    assert record["last_result"] == "failed" and record["next_at"] == "2026-03-02T00:02:00Z"


def test_a_goal_of_sleeping_monitors_waits_with_its_next_wake(goal: Any) -> None:
    watch_ci(goal, first_at="2026-03-02T01:00:00Z")
    watch_ci(goal, todo_id="pr", watch="pr:octo/repo#7", first_at="2026-03-02T00:30:00Z")
    state = require_goal(goal, G)
    now = "2026-03-02T00:00:00Z"
    att = attention(state, now)
    assert att["state"] == "waiting"
    assert att["next_wake"] == {"at": "2026-03-02T00:30:00Z", "todo_id": "pr"}
    assert att["todo_ids"] == ["ci", "pr"]
    assert frontier(state, now) == []
    reasons = {r.todo_id: r.reasons for r in readiness(state, now)}
    assert reasons["ci"] == [{"code": "monitor_not_due", "next_at": "2026-03-02T01:00:00Z"}]
    # At its wake the monitor is ready for an agent.
    later = "2026-03-02T00:30:00Z"
    assert [t.todo_id for t in due(state, later)] == ["pr"]
    assert attention(state, later) == {
        "state": "ready_for_agent",
        "reason": "work is ready",
        "todo_ids": ["pr"],
        "reasons": [{"state": "ready_for_agent", "count": 1}, {"state": "waiting", "count": 1}],
    }
    wake = next_wake(state, later)
    assert wake is not None and wake.todo_id == "ci"
    view = wake_view(state, later, lambda v: v)
    assert [d["todo_id"] for d in view["due"]] == ["pr"]
    assert view["next_wake"] == {"at": "2026-03-02T01:00:00Z", "todo_id": "ci"}


def test_a_monitor_not_yet_due_is_waiting_and_stuck_work_a_second_reason(goal: Any) -> None:
    """Each open todo counts once, in a fixed rank: a monitor not yet due is waiting (it wakes
    on its own), never blocked; a todo nothing can start is blocked, ranked after it."""
    watch_ci(goal, first_at="2026-03-02T01:00:00Z")
    todos.add_todo(at(goal, T0), AddTodo(goal_id=G, title="Write docs", todo_id="docs"))
    todos.block_todo(at(goal, T0), BlockTodo(goal_id=G, todo_id="docs", reason="needs a design"))
    att = attention(require_goal(goal, G), "2026-03-02T00:00:00Z")
    assert att["reasons"] == [{"state": "waiting", "count": 1}, {"state": "blocked", "count": 1}]
    assert att["state"] == "waiting" and att["todo_ids"] == ["ci"]
    assert att["next_wake"] == {"at": "2026-03-02T01:00:00Z", "todo_id": "ci"}


def test_a_decision_deferred_to_a_date_is_waited_for_and_asked_again(goal: Any) -> None:
    """Open work held only by a deferred gate that asks again on a date (and monitors not
    yet due, and work depending on those) waits with that time as its next wake; once the
    time has come the goal needs a person; a deferral with no date leaves its work blocked."""
    from loopx.engine import gates

    def attention_reasons(state: Any, now: str) -> Any:
        return attention(state, now)["reasons"]

    watch_ci(goal, first_at="2026-03-05T00:00:00Z")
    todos.add_todo(at(goal, T0), AddTodo(goal_id=G, title="Release", todo_id="release"))
    todos.add_todo(
        at(goal, T0), AddTodo(goal_id=G, title="Announce", todo_id="tell", depends_on=("ci",))
    )
    ctx = at(goal, T0, "maintainer")
    ask = OpenGate(goal_id=G, question="Stable?", authority="maintainer", gate_id="stable",
                   blocks=("release",))  # fmt: skip
    gates.open_gate(ctx, ask)
    now = "2026-03-02T00:00:00Z"
    assert attention(require_goal(goal, G), now)["state"] == "needs_user"
    gates.resolve_gate(ctx, ResolveGate(goal_id=G, gate_id="stable", resolution="defer",
                                        ask_again_at="2026-03-03T09:00:00Z"))  # fmt: skip
    state = require_goal(goal, G)
    att = attention(state, now)
    assert att["state"] == "waiting" and att["todo_ids"] == ["ci", "release", "tell"]
    assert att["next_wake"] == {"at": "2026-03-03T09:00:00Z", "gate_id": "stable"}
    assert attention_reasons(state, now) == [{"state": "waiting", "count": 3}]
    due = attention(state, "2026-03-03T09:00:00Z")
    assert due["state"] == "needs_user" and due["gate_ids"] == ["stable"]
    gates.resolve_gate(ctx, ResolveGate(goal_id=G, gate_id="stable", resolution="defer"))
    state = require_goal(goal, G)
    assert attention(state, now)["state"] == "waiting"  # ranked before the blocked release
    assert {r["state"]: r["count"] for r in attention_reasons(state, now)} == {
        "waiting": 2,
        "blocked": 1,
    }


def test_work_waits_through_a_chain_of_dependencies_in_any_order_but_not_a_cycle(
    goal: Any,
) -> None:
    from loopx.state.frontier import wakes_of

    for todo_id in ("a", "b", "c", "x", "y"):
        todos.add_todo(at(goal, T0), AddTodo(goal_id=G, title=todo_id, todo_id=todo_id))
    watch_ci(goal, first_at="2026-03-05T00:00:00Z")
    state = require_goal(goal, G)
    for todo_id, dep in (("a", "b"), ("b", "c"), ("c", "ci"), ("x", "y"), ("y", "x")):
        state.todos[todo_id].depends_on = [dep]  # a before b before c: the latest first
    now = "2026-03-02T00:00:00Z"
    wakes = wakes_of(state, now, [t for t in state.todos.values() if t.is_open])
    assert sorted(wakes) == ["a", "b", "c", "ci"]  # the cycle x ⇄ y waits for nothing
    assert wakes["a"] == ("2026-03-05T00:00:00Z", "monitor", "ci")
    assert attention(state, now)["reasons"] == [
        {"state": "waiting", "count": 4},
        {"state": "blocked", "count": 2},
    ]


def test_observation_refusals_write_nothing(goal: Any) -> None:
    watch_ci(goal)
    todos.add_todo(at(goal, T0), AddTodo(goal_id=G, title="Plain", todo_id="plain"))
    ctx = at(goal, "2026-03-02T00:00:00Z")

    def obs(todo_id: str = "ci", **kw: Any) -> Any:
        args = {"result": "unchanged", "summary": "seen", **kw}
        return lambda: monitors.observe(ctx, ObserveMonitor(goal_id=G, todo_id=todo_id, **args))

    refused(goal, "not_a_monitor", obs("plain"))
    refused(goal, "todo_not_found", obs("ghost"))
    refused(goal, "transition_required", obs(result="changed"))
    refused(goal, "transition_not_allowed", obs(then="complete"))
    refused(goal, "transition_not_allowed", obs(successor_title="x"))
    refused(goal, "empty_text", obs(result="changed", then="block"))
    refused(goal, "empty_text", obs(result="changed", then="successor"))
    refused(goal, "invalid_result", obs(result="maybe"))
    refused(goal, "invalid_revision", obs(revision="HEAD"))
    refused(goal, "empty_text", obs(summary="  "))
    monitors.observe(
        ctx,
        ObserveMonitor(goal_id=G, todo_id="ci", result="changed", summary="ok", then="complete"),
    )
    refused(goal, "todo_closed", obs())


def test_another_agents_live_claim_refuses_an_observation(goal: Any) -> None:
    watch_ci(goal)
    todos.claim_todo(at(goal, T0, "agent-b"), ClaimTodo(goal_id=G, todo_id="ci"))
    err = refused(
        goal,
        "claim_owner_mismatch",
        lambda: monitors.observe(
            at(goal, T0), ObserveMonitor(goal_id=G, todo_id="ci", result="unchanged", summary="x")
        ),
    )
    assert isinstance(err, Conflict)


@pytest.mark.parametrize(
    ("kw", "code"),
    [
        ({"backoff": "linear"}, "invalid_backoff"),
        ({"every": 0}, "invalid_backoff"),
        ({"cap": 60}, "invalid_backoff"),  # below the interval
        ({"backoff": "fixed", "cap": 3600}, "invalid_backoff"),
        ({"watch": "ci:"}, "invalid_watch"),
        ({"first_at": "tomorrow"}, "invalid_time"),
        ({"title": ""}, "empty_text"),
    ],
)
def test_add_refusals(goal: Any, kw: dict[str, Any], code: str) -> None:
    err = refused(goal, code, lambda: watch_ci(goal, **kw))
    assert isinstance(err, InvalidInput)


def test_observe_is_idempotent_by_operation_id(goal: Any) -> None:
    watch_ci(goal)
    ctx = at(goal, "2026-03-02T00:00:00Z")
    first = monitors.observe(
        ctx,
        ObserveMonitor(
            goal_id=G, todo_id="ci", result="unchanged", summary="q", operation_id="obs-1"
        ),
    )
    again = monitors.observe(
        ctx,
        ObserveMonitor(
            goal_id=G, todo_id="ci", result="unchanged", summary="q", operation_id="obs-1"
        ),
    )
    assert again.status == "replayed" and again.receipt == first.receipt
    record = require_goal(goal, G).todos["ci"].monitor
    assert record is not None and record["observations"] == 1


def test_a_private_monitor_keeps_its_watch_off_the_ledger(goal: Any) -> None:
    watch_ci(goal, visibility="private", watch="url:https://internal.example/deploy/7")
    assert b"internal.example" not in goal.raw(G)


# -- the CLI ---------------------------------------------------------------------------------


def _cli(root: Path, *args: str, now: str = T0) -> Any:
    return run_cli([*args, "--root", str(root)], env={"LOOPX_NOW": now})


def test_cli_monitor_status_next_and_wake(project: Path) -> None:
    added = _cli(
        project, "monitor", "add", "--goal-id", "demo", "--title", "CI", "--todo-id", "ci",
        "--watch", "ci:run/42", "--every", "600", "--backoff", "exponential", "--cap", "3600",
        "--first-at", "2026-03-02T01:00:00Z", "--format", "json",
    )  # fmt: skip
    assert added.exit_code == 0, added.stderr
    assert added.json()["receipt"]["subject"] == "ci"

    early = "2026-03-02T00:30:00Z"
    status = _cli(project, "status", "--goal-id", "demo", "--format", "json", now=early).json()
    goal = status["goals"][0]
    assert goal["monitors"] == {
        "due": [],
        "gates_due": [],
        "next_wake": {"at": "2026-03-02T01:00:00Z", "todo_id": "ci"},
    }
    text = _cli(project, "status", "--goal-id", "demo", now=early).stdout
    assert "next wake: 2026-03-02T01:00:00Z (ci)" in text
    explained = _cli(project, "next", "--goal-id", "demo", "--explain", now=early).stdout
    assert "ci" in explained and "monitor, next wake 2026-03-02T01:00:00Z" in explained

    woke = _cli(project, "wake", "--format", "json", now="2026-03-02T01:00:00Z").json()
    assert [(d["goal_id"], d["todo_id"], d["watch"]) for d in woke["due"]] == [
        ("demo", "ci", "ci:run/42")
    ]
    assert woke["now"] == "2026-03-02T01:00:00Z"
    text = _cli(project, "wake", "--goal-id", "demo", now="2026-03-02T01:00:00Z").stdout
    assert "demo/ci  watching ci:run/42 (due 2026-03-02T01:00:00Z)" in text

    observed = _cli(
        project, "monitor", "observe", "--goal-id", "demo", "--todo-id", "ci",
        "--result", "unchanged", "--summary", "still running", now="2026-03-02T01:00:00Z",
    )  # fmt: skip
    assert observed.exit_code == 0, observed.stderr
    assert "unchanged observation of monitor ci" in observed.stdout
    woke = _cli(
        project, "wake", "--goal-id", "demo", "--format", "json", now="2026-03-02T01:05:00Z"
    )
    assert woke.json()["due"] == []
    assert woke.json()["next_wake"] == {
        "at": "2026-03-02T01:10:00Z",
        "goal_id": "demo",
        "todo_id": "ci",
    }


def test_cli_observe_errors_are_one_line_with_a_code(project: Path) -> None:
    _cli(
        project, "monitor", "add", "--goal-id", "demo", "--title", "CI", "--todo-id", "ci",
        "--watch", "ci:run/42", "--every", "600",
    )  # fmt: skip
    bad = _cli(
        project, "monitor", "observe", "--goal-id", "demo", "--todo-id", "ci",
        "--result", "changed", "--summary", "s3cret-token-value", "--format", "json",
    )  # fmt: skip
    assert bad.exit_code == 2
    assert bad.json()["error"]["code"] == "transition_required"
    assert "s3cret" not in bad.stdout + bad.stderr
    text = _cli(
        project, "monitor", "add", "--goal-id", "demo", "--title", "x", "--watch", "pr:",
        "--every", "5",
    )  # fmt: skip
    assert text.exit_code == 2 and "invalid_watch" in text.stderr
    assert len(text.stderr.strip().splitlines()) == 1 and "Traceback" not in text.stderr
    missing = _cli(project, "wake", "--goal-id", "nope", "--format", "json")
    assert missing.exit_code == 3 and missing.json()["error"]["code"] == "goal_not_found"


def test_a_gate_asks_again_on_its_time(goal: Any) -> None:
    from loopx.engine import gates

    ctx = at(goal, T0, "maintainer")
    gates.open_gate(
        ctx,
        OpenGate(
            goal_id=G,
            question="Is error_code a stable field?",
            authority="maintainer",
            gate_id="stable",
            ask_again_at="2026-03-03T09:00:00Z",
        ),
    )
    state = require_goal(goal, G)
    assert state.gates["stable"].ask_again_at == "2026-03-03T09:00:00Z"
    view = wake_view(state, "2026-03-02T00:00:00Z", lambda v: v)
    assert view["gates_due"] == []
    assert view["next_wake"] == {"at": "2026-03-03T09:00:00Z", "gate_id": "stable"}
    view = wake_view(state, "2026-03-03T09:00:00Z", lambda v: v)
    assert [g["gate_id"] for g in view["gates_due"]] == ["stable"]
    # Deferred: ask again later; decided: never again.
    gates.resolve_gate(
        ctx,
        ResolveGate(
            goal_id=G, gate_id="stable", resolution="defer", ask_again_at="2026-03-10T09:00:00Z"
        ),
    )
    view = wake_view(require_goal(goal, G), "2026-03-04T00:00:00Z", lambda v: v)
    assert view["next_wake"] == {"at": "2026-03-10T09:00:00Z", "gate_id": "stable"}
    refused(
        goal,
        "ask_again_not_deferred",
        lambda: gates.resolve_gate(
            ctx,
            ResolveGate(
                goal_id=G,
                gate_id="stable",
                resolution="approve",
                ask_again_at="2026-03-10T09:00:00Z",
            ),
        ),
    )
    refused(
        goal,
        "invalid_time",
        lambda: gates.resolve_gate(
            ctx, ResolveGate(goal_id=G, gate_id="stable", resolution="defer", ask_again_at="soon")
        ),
    )
    gates.resolve_gate(ctx, ResolveGate(goal_id=G, gate_id="stable", resolution="approve"))
    state = require_goal(goal, G)
    assert state.gates["stable"].ask_again_at is None
    assert wake_view(state, "2026-03-11T00:00:00Z", lambda v: v)["next_wake"] is None


def test_cli_gate_ask_again_shows_in_status_and_wake(project: Path) -> None:
    opened = _cli(
        project, "gate", "open", "--goal-id", "demo", "--gate-id", "stable", "--question",
        "Is error_code stable?", "--authority", "maintainer", "--ask-again-at",
        "2026-03-03T09:00:00Z",
    )  # fmt: skip
    assert opened.exit_code == 0, opened.stderr
    text = _cli(project, "status", "--goal-id", "demo").stdout
    assert "(ask again on 2026-03-03T09:00:00Z)" in text
    woke = _cli(project, "wake", "--format", "json", now="2026-03-03T09:00:00Z").json()
    assert [(g["goal_id"], g["gate_id"]) for g in woke["gates_due"]] == [("demo", "stable")]
    text = _cli(project, "wake", now="2026-03-03T09:00:00Z").stdout
    assert "ask again: demo/stable (maintainer): Is error_code stable?" in text


def test_the_workbench_lists_what_the_goal_waits_for(project: Path) -> None:
    _cli(
        project, "monitor", "add", "--goal-id", "demo", "--title", "CI", "--todo-id", "ci",
        "--watch", "ci:run/42", "--every", "600", "--first-at", "2026-03-02T01:00:00Z",
    )  # fmt: skip
    _cli(
        project, "gate", "open", "--goal-id", "demo", "--gate-id", "stable", "--question",
        "Stable?", "--authority", "maintainer", "--ask-again-at", "2026-03-03T09:00:00Z",
    )  # fmt: skip
    text = _cli(project, "workbench", "--goal-id", "demo").stdout
    section = text.split("## Waiting for", 1)[1].split("##", 1)[0]
    assert section.strip().splitlines() == [
        "- 2026-03-02T01:00:00Z: `ci` watching ci:run/42 (0 observation(s))",
        "- 2026-03-03T09:00:00Z: `stable` a decision (ask again)",
    ]
