"""One todo, gate and evidence shape: `loopx status --format json` (and `next`, `todo show`,
`gate list`, `evidence list`) and status.json show each the same way; the CLI's view is the
private audience's card plus what only the operator reads (revisions, times, summary,
monitor, body reference), never a second shape."""

from __future__ import annotations

from pathlib import Path

from loopx.cli.common import text_resolver
from loopx.engine.core import require_goal
from loopx.engine.demo import create_demo
from loopx.privacy.audience import Lens
from loopx.projections.base import evidence_item, gate_item, ledger_now, todo_card
from loopx.state.views import evidence_view, gate_view, status_view, todo_view
from loopx.store.filestore import FileStore
from tests.conftest import run_cli


def test_the_cli_view_of_a_todo_is_its_card_and_more(tmp_path: Path) -> None:
    create_demo(tmp_path)
    store = FileStore(tmp_path)
    state = require_goal(store, "launch")
    now = ledger_now(state)
    claimed = 0
    for todo in state.todos.values():
        card = todo_card(todo, Lens("private", store.get_blob), state, now)
        view = todo_view(todo, text_resolver(store), now)
        for key, value in card.items():
            if key == "claim":
                assert value.items() <= view["claim"].items()
                claimed += 1
            else:
                assert view[key] == value, (todo.todo_id, key)
    assert claimed  # the demo has claimed todos: the claim was compared
    frontier = status_view(state, now, text_resolver(store))["frontier"]
    assert frontier and all("hidden_dependencies" in t for t in frontier)


def test_the_cli_view_of_a_gate_or_evidence_is_its_card_and_more(tmp_path: Path) -> None:
    create_demo(tmp_path)
    store = FileStore(tmp_path)
    state = require_goal(store, "launch")
    assert state.gates
    for gate in state.gates.values():
        card = gate_item(gate, Lens("private", store.get_blob), state)
        view = gate_view(gate, text_resolver(store))
        assert {k: view[k] for k in card} == card
        assert {"visibility", "revision"} <= view.keys()
    assert state.evidence
    for ev in state.evidence.values():
        card = evidence_item(ev, Lens("private", store.get_blob), "abc1234")
        view = evidence_view(ev, text_resolver(store), "abc1234")
        assert {k: view[k] for k in card} == card


def test_status_json_of_the_cli_carries_the_card_keys(tmp_path: Path) -> None:
    create_demo(tmp_path)
    got = run_cli(["status", "--goal-id", "launch", "--format", "json", "--root", str(tmp_path)])
    assert got.exit_code == 0, got.stderr
    [goal] = got.json()["goals"]
    card_keys = {"todo_id", "title", "status", "role", "kind", "priority", "depends_on",
                 "hidden_dependencies", "visibility"}  # fmt: skip
    for item in goal["frontier"]:
        assert card_keys <= item.keys()
        if "claim" in item:
            assert {"agent_id", "session_id", "lease_expires_at", "live"} <= item["claim"].keys()
