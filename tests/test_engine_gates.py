"""Gate write paths: open a question for a named authority; resolve it once (a deferred gate
may be decided later); only its authority may."""

from __future__ import annotations

from typing import Any

import pytest

from loopx.engine import gates, goals, todos
from loopx.engine.commands import AddTodo, ClaimTodo, CreateGoal, OpenGate, ResolveGate
from loopx.engine.core import require_goal
from loopx.model.errors import Conflict, InvalidInput, LoopxError, NotFound
from tests.conftest import make_ctx

G = "launch"


@pytest.fixture
def goal(store: Any) -> Any:
    ctx = make_ctx(store)
    goals.create_goal(ctx, CreateGoal(goal_id=G, title="Launch", objective="Ship"))
    todos.add_todo(ctx, AddTodo(goal_id=G, title="Publish", todo_id="publish"))
    return store


def refused(store: Any, code: str, call: Any, kind: type = LoopxError) -> Any:
    before = store.raw(G)
    with pytest.raises(kind) as caught:
        call()
    assert caught.value.code == code, caught.value.to_dict()
    assert store.raw(G) == before
    return caught.value


def test_open_a_gate_on_todos(goal: Any) -> None:
    result = gates.open_gate(
        make_ctx(goal),
        OpenGate(
            goal_id=G,
            question="Publish 0.1?",
            authority="maintainer",
            blocks=["publish", "publish"],
        ),
    )
    gate = require_goal(goal, G).gates[result.receipt["subject"]]
    assert gate.gate_id == "gate-1" and gate.status == "pending"
    assert gate.blocks == ["publish"] and not gate.blocks_goal
    assert gate.authority == "maintainer" and gate.question == "Publish 0.1?"
    assert gate.revision == result.receipt["revision"]


def test_a_gate_naming_no_todos_holds_the_whole_goal(goal: Any) -> None:
    gates.open_gate(
        make_ctx(goal), OpenGate(goal_id=G, question="Pause all work?", authority="maintainer")
    )
    assert require_goal(goal, G).gates["gate-1"].blocks_goal


def test_open_refusals(goal: Any) -> None:
    ctx = make_ctx(goal)
    err = refused(
        goal,
        "todo_not_found",
        lambda: gates.open_gate(
            ctx, OpenGate(goal_id=G, question="Q?", authority="m", blocks=["ghost"])
        ),
        NotFound,
    )
    assert err.details["todo_ids"] == ["ghost"]
    refused(
        goal,
        "empty_text",
        lambda: gates.open_gate(ctx, OpenGate(goal_id=G, question=" ", authority="m")),
    )
    refused(
        goal,
        "text_too_long",
        lambda: gates.open_gate(ctx, OpenGate(goal_id=G, question="q" * 501, authority="m")),
    )
    refused(
        goal,
        "invalid_id",
        lambda: gates.open_gate(ctx, OpenGate(goal_id=G, question="Q", authority="A B")),
    )
    gates.open_gate(ctx, OpenGate(goal_id=G, question="Q?", authority="m", gate_id="g"))
    refused(
        goal,
        "gate_exists",
        lambda: gates.open_gate(
            ctx, OpenGate(goal_id=G, question="Q?", authority="m", gate_id="g")
        ),
        Conflict,
    )


def test_resolve_by_the_authority_records_who_and_why(goal: Any) -> None:
    ctx = make_ctx(goal)
    gates.open_gate(ctx, OpenGate(goal_id=G, question="Ship?", authority="maintainer", gate_id="g"))
    gates.resolve_gate(
        make_ctx(goal, agent="maintainer"),
        ResolveGate(goal_id=G, gate_id="g", resolution="approve", rationale="Ready."),
    )
    gate = require_goal(goal, G).gates["g"]
    assert gate.status == "approved" and gate.resolved_by == "maintainer"
    assert gate.rationale == "Ready." and gate.resolved_at


def test_by_names_the_resolver_explicitly(goal: Any) -> None:
    ctx = make_ctx(goal, agent="agent-a")
    gates.open_gate(ctx, OpenGate(goal_id=G, question="Ship?", authority="maintainer", gate_id="g"))
    gates.resolve_gate(
        ctx, ResolveGate(goal_id=G, gate_id="g", resolution="reject", by="maintainer")
    )
    assert require_goal(goal, G).gates["g"].status == "rejected"


def test_only_the_authority_may_resolve(goal: Any) -> None:
    ctx = make_ctx(goal, agent="agent-a")
    gates.open_gate(ctx, OpenGate(goal_id=G, question="Ship?", authority="maintainer", gate_id="g"))
    err = refused(
        goal,
        "not_gate_authority",
        lambda: gates.resolve_gate(ctx, ResolveGate(goal_id=G, gate_id="g", resolution="approve")),
    )
    assert err.details["authority"] == "maintainer"
    refused(
        goal,
        "not_gate_authority",
        lambda: gates.resolve_gate(
            ctx, ResolveGate(goal_id=G, gate_id="g", resolution="approve", by="someone-else")
        ),
        Conflict,
    )


@pytest.mark.parametrize("first", ["approve", "reject"])
def test_a_decided_gate_cannot_be_resolved_again(goal: Any, first: str) -> None:
    boss = make_ctx(goal, agent="maintainer")
    gates.open_gate(
        boss, OpenGate(goal_id=G, question="Ship?", authority="maintainer", gate_id="g")
    )
    gates.resolve_gate(boss, ResolveGate(goal_id=G, gate_id="g", resolution=first))
    for again in ("approve", "reject", "defer"):
        err = refused(
            goal,
            "gate_resolved",
            lambda a=again: gates.resolve_gate(
                boss, ResolveGate(goal_id=G, gate_id="g", resolution=a)
            ),
        )
        assert err.details["status"] == {"approve": "approved", "reject": "rejected"}[first]


def test_a_deferred_gate_stays_blocking_and_can_be_resolved_later(goal: Any) -> None:
    boss = make_ctx(goal, agent="maintainer")
    gates.open_gate(
        boss,
        OpenGate(
            goal_id=G, question="Ship?", authority="maintainer", gate_id="g", blocks=["publish"]
        ),
    )
    gates.resolve_gate(
        boss, ResolveGate(goal_id=G, gate_id="g", resolution="defer", rationale="Next week")
    )
    assert require_goal(goal, G).gates["g"].status == "deferred"
    refused(
        goal,
        "gate_pending",
        lambda: todos.claim_todo(boss, ClaimTodo(goal_id=G, todo_id="publish")),
    )
    gates.resolve_gate(boss, ResolveGate(goal_id=G, gate_id="g", resolution="defer"))
    gates.resolve_gate(boss, ResolveGate(goal_id=G, gate_id="g", resolution="approve"))
    assert require_goal(goal, G).gates["g"].status == "approved"
    todos.claim_todo(boss, ClaimTodo(goal_id=G, todo_id="publish"))


def test_resolve_refusals(goal: Any) -> None:
    boss = make_ctx(goal, agent="maintainer")
    refused(
        goal,
        "gate_not_found",
        lambda: gates.resolve_gate(
            boss, ResolveGate(goal_id=G, gate_id="ghost", resolution="approve")
        ),
        NotFound,
    )
    gates.open_gate(
        boss, OpenGate(goal_id=G, question="Ship?", authority="maintainer", gate_id="g")
    )
    refused(
        goal,
        "invalid_resolution",
        lambda: gates.resolve_gate(boss, ResolveGate(goal_id=G, gate_id="g", resolution="maybe")),
        InvalidInput,
    )
    refused(
        goal,
        "text_too_long",
        lambda: gates.resolve_gate(
            boss, ResolveGate(goal_id=G, gate_id="g", resolution="approve", rationale="r" * 20_001)
        ),
    )
    refused(
        goal,
        "invalid_id",
        lambda: gates.resolve_gate(
            boss, ResolveGate(goal_id=G, gate_id="Bad Id", resolution="approve")
        ),
    )
