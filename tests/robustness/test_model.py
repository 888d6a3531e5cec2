"""A stateful model test: random command sequences against an in-memory model of the rules.

Hypothesis drives add / claim / complete / block / unblock / release / reopen / cancel, gate
open / resolve, goal close and the passing of time through the engine's write paths. A
plain-Python model predicts, for every command, either the exact refusal code or success;
after every step the folded state (replayed from the ledger, and from the snapshot cache)
must equal the model: statuses, claims, dependencies, gates, the goal's status and revision,
and the frontier. A refused command must leave the ledger byte-identical.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)
from scratch import scratch

from loopx.engine import gates, goals, todos
from loopx.engine.clock import add_seconds
from loopx.engine.commands import (
    AddTodo,
    BlockTodo,
    CancelTodo,
    ClaimTodo,
    CloseGoal,
    CompleteTodo,
    CreateGoal,
    OpenGate,
    ReleaseTodo,
    ReopenTodo,
    ResolveGate,
    UnblockTodo,
)
from loopx.engine.core import Context, load_state
from loopx.model.errors import LoopxError
from loopx.state.frontier import frontier
from loopx.store.filestore import FileStore
from loopx.store.memorystore import MemoryStore

GOAL = "model"
AGENTS = ("a1", "a2")
LEASE = 1800
T0 = "2026-03-01T12:00:00Z"
STEPS = int(os.environ.get("LOOPX_MODEL_STEPS", "30"))
EXAMPLES = int(os.environ.get("LOOPX_MODEL_EXAMPLES", "100"))


class ManualClock:
    def __init__(self) -> None:
        self.now_value = T0

    def now(self) -> str:
        return self.now_value


@dataclass
class MTodo:
    deps: list[str]
    status: str = "open"
    claim: str | None = None
    expires: str = ""

    def live(self, now: str) -> bool:
        return self.claim is not None and self.expires > now


@dataclass
class MGate:
    authority: str
    blocks: list[str]
    goal_wide: bool
    status: str = "pending"


@dataclass
class Model:
    todos: dict[str, MTodo] = field(default_factory=dict)
    gates: dict[str, MGate] = field(default_factory=dict)
    status: str = "active"
    revision: int = 1

    @property
    def terminal(self) -> bool:
        return self.status != "active"

    def holding_gates(self, todo_id: str) -> list[str]:
        return [
            g
            for g, gate in self.gates.items()
            if gate.status in ("pending", "deferred") and (gate.goal_wide or todo_id in gate.blocks)
        ]

    def ready_error(self, todo_id: str) -> str | None:
        item = self.todos[todo_id]
        if any(self.todos[d].status != "done" for d in item.deps):
            return "dependency_open"
        if self.holding_gates(todo_id):
            return "gate_pending"
        return None

    def frontier(self, now: str) -> set[str]:
        return {
            t
            for t, item in self.todos.items()
            if item.status in ("open", "active")
            and not self.terminal
            and self.ready_error(t) is None
            and not item.live(now)
        }


class LedgerRules(RuleBasedStateMachine):
    """The rules, as the engine enforces them, written out independently."""

    store_factory: Any = MemoryStore

    todo_ids = Bundle("todo_ids")
    gate_ids = Bundle("gate_ids")

    def __init__(self) -> None:
        super().__init__()
        self.store = self.store_factory()
        self.clock = ManualClock()
        self.model = Model()
        self.n = 0
        goals.create_goal(
            self.ctx("user"), CreateGoal(goal_id=GOAL, title="Model", objective="Match the rules")
        )

    def ctx(self, agent: str) -> Context:
        return Context(self.store, self.clock, agent_id=agent, session_id="s1")

    def raw(self) -> bytes:
        return bytes(self.store.raw(GOAL))

    def attempt(self, expected: str | None, call: Any) -> bool:
        """Run `call`; it must fail with `expected`, or succeed when that is None."""
        before = self.raw()
        self.n += 1
        try:
            result = call()
        except LoopxError as err:
            assert err.code == expected, f"expected {expected or 'success'}, got {err.code}"
            assert self.raw() == before, "a refused command changed the ledger"
            return False
        assert expected is None, f"expected {expected}, but it succeeded"
        assert result.status == "applied"
        self.model.revision += 1
        assert result.receipt["revision"] == self.model.revision
        return True

    def terminal_or(self, code: str | None) -> str | None:
        return "goal_terminal" if self.model.terminal else code

    # -- rules --------------------------------------------------------------------------

    @rule(target=todo_ids, deps=st.lists(todo_ids, max_size=3, unique=True))
    def add(self, deps: list[str]) -> Any:
        todo_id = f"t{self.n}"
        expected = self.terminal_or(None)
        ok = self.attempt(
            expected,
            lambda: todos.add_todo(
                self.ctx("user"),
                AddTodo(goal_id=GOAL, title=f"todo {todo_id}", todo_id=todo_id, depends_on=deps),
            ),
        )
        if not ok:
            return multiple()
        self.model.todos[todo_id] = MTodo(deps=list(deps))
        return todo_id

    @rule(todo=todo_ids, agent=st.sampled_from(AGENTS))
    def claim(self, todo: str, agent: str) -> None:
        item, now = self.model.todos[todo], self.clock.now_value
        if item.status not in ("open", "active", "blocked"):
            code: str | None = "todo_closed"
        elif item.status == "blocked":
            code = "todo_blocked"
        elif item.live(now) and item.claim != agent:
            code = "claim_owner_mismatch"
        else:
            code = self.model.ready_error(todo)
        if self.attempt(
            self.terminal_or(code),
            lambda: todos.claim_todo(self.ctx(agent), ClaimTodo(goal_id=GOAL, todo_id=todo)),
        ):
            item.status, item.claim, item.expires = "active", agent, add_seconds(now, LEASE)

    @rule(todo=todo_ids, agent=st.sampled_from(AGENTS))
    def complete(self, todo: str, agent: str) -> None:
        item, now = self.model.todos[todo], self.clock.now_value
        if item.status not in ("open", "active", "blocked"):
            code: str | None = "todo_closed"
        elif item.status == "blocked":
            code = "todo_blocked"
        elif item.live(now) and item.claim != agent:
            code = "claim_owner_mismatch"
        else:
            code = self.model.ready_error(todo)
        if self.attempt(
            self.terminal_or(code),
            lambda: todos.complete_todo(self.ctx(agent), CompleteTodo(goal_id=GOAL, todo_id=todo)),
        ):
            item.status, item.claim = "done", None

    @rule(todo=todo_ids, agent=st.sampled_from(AGENTS))
    def block(self, todo: str, agent: str) -> None:
        item, now = self.model.todos[todo], self.clock.now_value
        if item.status not in ("open", "active", "blocked"):
            code: str | None = "todo_closed"
        elif item.status == "blocked":
            code = "todo_blocked"
        elif item.live(now) and item.claim != agent:
            code = "claim_owner_mismatch"
        else:
            code = None
        call = lambda: todos.block_todo(  # noqa: E731
            self.ctx(agent), BlockTodo(goal_id=GOAL, todo_id=todo, reason="waiting")
        )
        if self.attempt(self.terminal_or(code), call):
            item.status = "blocked"

    @rule(todo=todo_ids, agent=st.sampled_from(AGENTS))
    def unblock(self, todo: str, agent: str) -> None:
        item = self.model.todos[todo]
        code = None if item.status == "blocked" else "todo_not_blocked"
        if self.attempt(
            self.terminal_or(code),
            lambda: todos.unblock_todo(self.ctx(agent), UnblockTodo(goal_id=GOAL, todo_id=todo)),
        ):
            item.status = "active" if item.claim else "open"

    @rule(todo=todo_ids, agent=st.sampled_from(AGENTS))
    def release(self, todo: str, agent: str) -> None:
        item = self.model.todos[todo]
        if item.status not in ("open", "active", "blocked"):
            code: str | None = "todo_closed"
        elif item.claim is None:
            code = "not_claimed"
        elif item.claim != agent:
            code = "claim_owner_mismatch"
        else:
            code = None
        if self.attempt(
            self.terminal_or(code),
            lambda: todos.release_todo(self.ctx(agent), ReleaseTodo(goal_id=GOAL, todo_id=todo)),
        ):
            item.status, item.claim = "open", None

    @rule(todo=todo_ids, agent=st.sampled_from(AGENTS))
    def reopen(self, todo: str, agent: str) -> None:
        item = self.model.todos[todo]
        code = "todo_not_closed" if item.status in ("open", "active", "blocked") else None
        call = lambda: todos.reopen_todo(  # noqa: E731
            self.ctx(agent), ReopenTodo(goal_id=GOAL, todo_id=todo, reason="again")
        )
        if self.attempt(self.terminal_or(code), call):
            item.status, item.claim = "open", None

    @rule(todo=todo_ids, agent=st.sampled_from(AGENTS))
    def cancel(self, todo: str, agent: str) -> None:
        item, now = self.model.todos[todo], self.clock.now_value
        if item.status not in ("open", "active", "blocked"):
            code: str | None = "todo_closed"
        elif item.live(now) and item.claim != agent:
            code = "claim_owner_mismatch"
        else:
            code = None
        if self.attempt(
            self.terminal_or(code),
            lambda: todos.cancel_todo(self.ctx(agent), CancelTodo(goal_id=GOAL, todo_id=todo)),
        ):
            item.status, item.claim = "cancelled", None

    @rule(
        target=gate_ids,
        blocks=st.lists(todo_ids, max_size=2, unique=True),
        authority=st.sampled_from(AGENTS),
    )
    def open_gate(self, blocks: list[str], authority: str) -> Any:
        gate_id = f"g{self.n}"
        ok = self.attempt(
            self.terminal_or(None),
            lambda: gates.open_gate(
                self.ctx("user"),
                OpenGate(
                    goal_id=GOAL,
                    question="May we?",
                    authority=authority,
                    blocks=blocks,
                    gate_id=gate_id,
                ),
            ),
        )
        if not ok:
            return multiple()
        self.model.gates[gate_id] = MGate(authority, list(blocks), goal_wide=not blocks)
        return gate_id

    @rule(
        gate=gate_ids,
        resolution=st.sampled_from(["approve", "reject", "defer"]),
        by=st.sampled_from(AGENTS),
    )
    def resolve(self, gate: str, resolution: str, by: str) -> None:
        item = self.model.gates[gate]
        if item.status in ("approved", "rejected"):
            code: str | None = "gate_resolved"
        elif by != item.authority:
            code = "not_gate_authority"
        else:
            code = None
        call = lambda: gates.resolve_gate(  # noqa: E731
            self.ctx(by), ResolveGate(goal_id=GOAL, gate_id=gate, resolution=resolution, by=by)
        )
        if self.attempt(self.terminal_or(code), call):
            item.status = {"approve": "approved", "reject": "rejected", "defer": "deferred"}[
                resolution
            ]

    @rule(agent=st.sampled_from(AGENTS))
    def ghost(self, agent: str) -> None:
        """Commands on a todo that does not exist."""
        self.attempt(
            self.terminal_or("todo_not_found"),
            lambda: todos.claim_todo(
                self.ctx(agent), ClaimTodo(goal_id=GOAL, todo_id="no-such-todo")
            ),
        )

    @rule(seconds=st.sampled_from([1, 600, 1799, 1800, 3600]))
    def wait(self, seconds: int) -> None:
        self.clock.now_value = add_seconds(self.clock.now_value, seconds)

    @precondition(lambda self: self.n > 8)
    @rule(outcome=st.sampled_from(["achieved", "abandoned"]))
    def close(self, outcome: str) -> None:
        open_ = any(t.status in ("open", "active", "blocked") for t in self.model.todos.values())
        code = "todos_open" if outcome == "achieved" and open_ else None
        if self.attempt(
            self.terminal_or(code),
            lambda: goals.close_goal(self.ctx("user"), CloseGoal(goal_id=GOAL, outcome=outcome)),
        ):
            self.model.status = outcome

    @rule(todo=consumes(todo_ids))
    def forget(self, todo: str) -> None:
        """Drop a todo from the pool of ids rules pick from (keeps sequences varied)."""

    # -- the check after every step -----------------------------------------------------

    @invariant()
    def folded_state_matches_the_model(self) -> None:
        replayed = load_state(self.store, GOAL, cache=False).state
        cached = load_state(self.store, GOAL).state
        assert replayed is not None and cached is not None
        assert replayed == cached, "the snapshot cache disagrees with a full replay"
        model = self.model
        assert replayed.status == model.status
        assert replayed.revision == model.revision
        assert set(replayed.todos) == set(model.todos)
        for todo_id, item in model.todos.items():
            real = replayed.todos[todo_id]
            assert real.status == item.status, todo_id
            assert (real.claim or {}).get("agent_id") == item.claim, todo_id
            assert real.depends_on == item.deps, todo_id
        assert {g: gate.status for g, gate in replayed.gates.items()} == {
            g: gate.status for g, gate in model.gates.items()
        }
        now = self.clock.now_value
        assert {t.todo_id for t in frontier(replayed, now)} == model.frontier(now)
        assert self.store.verify(GOAL).ok


class FileLedgerRules(LedgerRules):
    """The same rules on the real file store (fewer examples: every write fsyncs)."""

    folder: Path | None = None

    @staticmethod
    def store_factory() -> Any:  # type: ignore[override]
        assert FileLedgerRules.folder is not None
        FileLedgerRules.folder_count = getattr(FileLedgerRules, "folder_count", 0) + 1
        root = FileLedgerRules.folder / f"p{FileLedgerRules.folder_count}"
        store = FileStore(root)
        store.init()
        return store


_SETTINGS = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "stateful_step_count": STEPS,
    "suppress_health_check": list(HealthCheck),
}


def test_the_rules_on_the_memory_store() -> None:
    run_state_machine_as_test(LedgerRules, settings=settings(max_examples=EXAMPLES, **_SETTINGS))


def test_the_rules_on_the_file_store(tmp_path: Path) -> None:
    with scratch(tmp_path) as folder:
        FileLedgerRules.folder = folder
        try:
            few = settings(max_examples=max(EXAMPLES // 5, 10), **_SETTINGS)
            run_state_machine_as_test(FileLedgerRules, settings=few)
        finally:
            FileLedgerRules.folder = None


def test_the_model_catches_a_wrong_rule() -> None:
    """The model is not vacuous: a model that forgets dependencies disagrees with loopx."""

    class Lax(LedgerRules):
        pass

    lax = Model.ready_error
    Model.ready_error = lambda self, todo_id: None  # type: ignore[method-assign]
    try:
        with pytest.raises(AssertionError):
            quick = settings(max_examples=200, phases=[Phase.generate], **_SETTINGS)
            run_state_machine_as_test(Lax, settings=quick)
    finally:
        Model.ready_error = lax  # type: ignore[method-assign]
