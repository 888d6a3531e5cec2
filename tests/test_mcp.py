"""`loopx mcp` through the SDK's own client over stdio: a real `loopx mcp` subprocess."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import T0, run_cli

mcp = pytest.importorskip("mcp")
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

TOOLS = {
    "prime",
    "status",
    "next",
    "todo_show",
    "todo_claim",
    "todo_renew",
    "todo_complete",
    "todo_block",
    "evidence_add",
    "run_record",
    "handoff_prepare",
    "handoff_inspect",
    "handoff_adopt",
    "wake",
    "monitor_add",
    "monitor_observe",
    "turn_begin",
    "turn_phase",
    "turn_end",
    "turn_list",
    "turn_resume",
}


@asynccontextmanager
async def connect(root: Path, env: dict[str, str] | None = None) -> AsyncIterator[Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "loopx", "mcp", "--root", str(root)],
        env={"LOOPX_NOW": T0, **(env or {})},
        cwd=str(root),
    )
    async with Client(params) as client:
        yield client


def run(fn: Callable[[], Awaitable[None]]) -> None:
    anyio.run(fn)


async def call(client: Any, name: str, **arguments: Any) -> dict[str, Any]:
    """A successful call's structured content (the text says the same)."""
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def refused(client: Any, name: str, **arguments: Any) -> dict[str, Any]:
    """A refused call's error envelope."""
    result = await client.call_tool(name, arguments)
    assert result.is_error
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content["error"]


@pytest.fixture
def todos(project: Path) -> Path:
    for todo_id in ("alpha", "beta"):
        args = ["todo", "add", "--root", str(project), "--goal-id", "demo", "--todo-id", todo_id]
        assert run_cli([*args, "--title", f"Do {todo_id}"]).exit_code == 0
    return project


def test_tools_are_listed_with_json_schemas_and_prime_reads_first(todos: Path) -> None:
    async def session() -> None:
        async with connect(todos) as client:
            listed = (await client.list_tools()).tools
            assert {t.name for t in listed} == TOOLS
            for tool in listed:
                assert tool.input_schema["type"] == "object", tool.name
                assert tool.description, tool.name
            claim = next(t for t in listed if t.name == "todo_claim")
            assert claim.input_schema["required"] == ["todo_id"]
            assert {"operation_id", "expected_revision"} <= set(claim.input_schema["properties"])
            primed = await client.call_tool("prime", {"agent_id": "agent-a"})
            assert primed.content[0].text.startswith("# loopx primer: demo\n")
            assert primed.structured_content["schema"] == "loopx.prime/v1"
            status = await call(client, "status")
            assert [g["goal_id"] for g in status["goals"]] == ["demo"]

    run(session)


def test_claims_conflicts_guards_and_retries_are_the_engines(todos: Path) -> None:
    async def session() -> None:
        async with connect(todos) as client:
            first = await call(
                client, "todo_claim", todo_id="alpha", agent_id="agent-a", operation_id="c-1"
            )
            assert first["status"] == "applied"
            again = await call(
                client, "todo_claim", todo_id="alpha", agent_id="agent-a", operation_id="c-1"
            )
            assert again["status"] == "replayed" and again["receipt"] == first["receipt"]
            other = await refused(client, "todo_claim", todo_id="alpha", agent_id="agent-b")
            assert other["code"] == "claim_owner_mismatch"
            stale = await refused(
                client, "todo_renew", todo_id="alpha", agent_id="agent-a", expected_revision=1
            )
            assert stale["code"] == "revision_conflict"
            assert stale["details"]["current_revision"] == first["receipt"]["revision"]
            reused = await refused(
                client, "todo_claim", todo_id="beta", agent_id="agent-a", operation_id="c-1"
            )
            assert reused["code"] == "operation_id_reused"
            bad = await refused(client, "todo_show", todo_id="NOT AN ID")
            assert bad["code"] == "invalid_id" and "NOT AN ID" not in bad["message"]
            missing = await refused(client, "todo_show", todo_id="nope")
            assert missing["code"] == "todo_not_found"
            shown = await call(client, "todo_show", todo_id="alpha")
            assert shown["claim"]["agent_id"] == "agent-a"
        # the ledger holds exactly the one claim (nothing from the refused calls)
        log = run_cli(["log", "--root", str(todos), "--goal-id", "demo", "--format", "json"])
        types = [e["type"] for e in log.json()["events"]]
        assert types.count("todo.claimed") == 1

    run(session)


def test_handoff_round_trip_between_two_agents(todos: Path) -> None:
    async def session() -> None:
        async with connect(todos) as client:
            await call(client, "todo_claim", todo_id="beta", agent_id="agent-a")
            prepared = await call(
                client,
                "handoff_prepare",
                todo_id="beta",
                agent_id="agent-a",
                work_summary="Half done",
                next_steps=["Finish the parser"],
                files_touched=[{"path": "src/p.py", "action": "modified"}],
                target_agent_id="agent-b",
            )
            assert prepared["handoff_id"]
            bad_note = await refused(
                client, "handoff_prepare", todo_id="beta", agent_id="agent-a", work_summary=" "
            )
            assert bad_note["code"] == "invalid_note"
        async with connect(todos, {"LOOPX_AGENT_ID": "agent-b"}) as client:
            primed = await call(client, "prime")
            assert [h["todo_id"] for h in primed["handoffs"]] == ["beta"]
            inspected = await client.call_tool("handoff_inspect", {"todo_id": "beta"})
            assert not inspected.is_error
            assert "Finish the parser" in inspected.content[0].text
            assert inspected.structured_content["schema"] == "loopx.handoff/v1"
            adopted = await call(client, "handoff_adopt", todo_id="beta")
            assert adopted["status"] == "applied"
            shown = await call(client, "todo_show", todo_id="beta")
            assert shown["claim"]["agent_id"] == "agent-b"

    run(session)


def test_mcp_without_a_project_is_one_clean_line(tmp_path: Path) -> None:
    result = run_cli(["mcp", "--root", str(tmp_path)])
    assert result.exit_code == 3 and "root_not_found" in result.stderr
    assert "Traceback" not in result.stderr


def test_every_write_tool_goes_through_the_engine(todos: Path) -> None:
    async def session() -> None:
        async with connect(todos, {"LOOPX_AGENT_ID": "agent-a"}) as client:
            ready = await call(client, "next", agent_id="agent-a")
            assert [t["todo_id"] for t in ready["frontier"]] == ["alpha", "beta"]
            await call(client, "todo_claim", todo_id="alpha", lease_seconds=600)
            renewed = await call(client, "todo_renew", todo_id="alpha", lease_seconds=1200)
            assert renewed["status"] == "applied"
            ev = await call(
                client, "evidence_add", kind="ci", summary="green", refs=["https://ci/1"]
            )
            run = await call(
                client,
                "run_record",
                outcome="progress",
                todo_id="alpha",
                evidence_ids=[ev["receipt"]["subject"]],
            )
            assert run["receipt"]["subject"].startswith("run")
            blocked = await call(client, "todo_block", todo_id="beta", reason="Waits for API")
            assert blocked["status"] == "applied"
            wrong = await refused(client, "run_record", outcome="nonsense")
            assert wrong["code"] == "invalid_outcome"
            explained = await call(client, "next", explain=True)
            assert any(r["todo_id"] == "beta" for r in explained["not_ready"])
            status = await call(client, "status", goal_id="demo")
            assert status["goals"][0]["counts"]["blocked"] == 1

    run(session)


def test_an_unexpected_failure_is_internal_error_without_its_text() -> None:
    import threading

    from loopx.mcp.server import _governed

    def broken(todo_id: str) -> dict[str, Any]:
        raise ValueError(f"boom {todo_id}")

    result = _governed(broken, threading.Lock())(todo_id="sk-secret-value")
    assert result.is_error
    assert result.structured_content["error"]["code"] == "internal_error"
    assert "sk-secret-value" not in result.content[0].text


def test_mcp_without_the_sdk_says_how_to_install_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "loopx.mcp.server", None)  # import now fails
    result = run_cli(["mcp", "--root", str(project)])
    assert result.exit_code == 2 and "mcp_not_installed" in result.stderr
    assert "pip install 'loopx[mcp]'" in result.stderr


def test_monitors_wake_and_the_turn_journal_through_mcp(todos: Path) -> None:
    """A monitor added, found due by wake, observed unchanged (its wake moves by the backoff)
    then changed; a turn begun, phased, found open and resumed, settled once."""

    async def session() -> None:
        async with connect(todos, {"LOOPX_AGENT_ID": "agent-a"}) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            schema = listed["monitor_add"].input_schema
            assert schema["$defs"]["BackoffArgument"]["required"] == ["kind", "seconds"]
            assert listed["wake"].annotations.read_only_hint
            added = await call(
                client, "monitor_add", title="CI on the branch", watch="ci:github/actions/run/42",
                backoff={"kind": "exponential", "seconds": 600, "cap": 3600}, todo_id="ci",
            )  # fmt: skip
            assert added["receipt"]["subject"] == "ci"
            bad = await refused(
                client, "monitor_add", title="t", watch="ci:", backoff={"kind": "fixed",
                "seconds": 60},
            )  # fmt: skip
            assert bad["code"] == "invalid_watch"
            woke = await call(client, "wake")
            assert [d["todo_id"] for d in woke["due"]] == ["ci"]
            seen = await call(
                client, "monitor_observe", todo_id="ci", result="unchanged", summary="queued"
            )
            assert seen["status"] == "applied"
            later = await call(client, "wake", goal_id="demo")
            assert later["due"] == [] and later["next_wake"]["todo_id"] == "ci"
            needs = await refused(
                client, "monitor_observe", todo_id="ci", result="changed", summary="passed"
            )
            assert needs["code"] == "transition_required"
            done = await call(
                client, "monitor_observe", todo_id="ci", result="changed", then="complete",
                summary="passed",
            )  # fmt: skip
            assert done["status"] == "applied"

            await call(client, "todo_claim", todo_id="alpha")
            begun = await call(client, "turn_begin", todo_id="alpha", turn_id="t1")
            assert begun["receipt"]["subject"] == "t1"
            await call(client, "turn_phase", turn_id="t1", phase="write_back", ref="pushed")
            back = await refused(client, "turn_phase", turn_id="t1", phase="execute")
            assert back["code"] == "turn_phase_order"
            opened = await call(client, "turn_list", only_open=True)
            assert [(t["turn_id"], t["phase"]) for t in opened["turns"]] == [("t1", "write_back")]
            resumed = await call(client, "turn_resume", turn_id="t1")
            assert resumed["status"] == "open" and "check the remote" in resumed["resume"]
            other = await refused(client, "turn_end", turn_id="t1", outcome="progress",
                                  agent_id="agent-b")  # fmt: skip
            assert other["code"] == "turn_owner_mismatch"
            end = dict(turn_id="t1", outcome="completed", operation_id="end-t1")
            settled = await call(client, "turn_end", **end)
            assert (await call(client, "turn_end", **end))["status"] == "replayed"
            assert settled["status"] == "applied"
            twice = await refused(client, "turn_end", turn_id="t1", outcome="completed")
            assert twice["code"] == "turn_settled"
            missing = await refused(client, "turn_resume", turn_id="nope")
            assert missing["code"] == "turn_not_found"
            status = await call(client, "status", goal_id="demo")
            assert status["goals"][0]["quota"]["spent"] == 1
            assert status["goals"][0]["open_turns"] == []

    run(session)
