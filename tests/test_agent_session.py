"""The "done when" of agents-use-loopx: one scripted agent session — prime, claim, evidence,
complete, hand off to a second agent who adopts — run once through `loopx` subprocesses and
once through `loopx mcp` with the SDK's client, in two identical git checkouts. The two
ledgers must hold the same events apart from operation ids, hash chain and times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import T0, run_cli

pytest.importorskip("mcp")
from tests.test_mcp import call, connect  # noqa: E402

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_AUTHOR_DATE": "2026-03-01T11:00:00Z",
    "GIT_COMMITTER_DATE": "2026-03-01T11:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}
LOG = "12 passed in 0.4s\n"


def checkout(base: Path) -> Path:
    """A git checkout (the same commit hash every time) holding a loopx project: goal demo,
    todos parse (priority 1) and render."""
    base.mkdir()
    (base / "src").mkdir()
    (base / "src" / "p.py").write_text("print('p')\n", encoding="utf-8")
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q"], ["add", "src"], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", "-C", str(base), *args], env=env, check=True)
    (base / ".gitignore").write_text(".loopx/\n", encoding="utf-8")
    r = ["--root", str(base)]
    for args in (
        ["init", *r],
        ["goal", "create", *r, "--goal-id", "demo", "--title", "Demo", "--objective", "Ship"],
        ["todo", "add", *r, "--goal-id", "demo", "--todo-id", "parse", "--title", "Parse"]
        + ["--priority", "1"],
        ["todo", "add", *r, "--goal-id", "demo", "--todo-id", "render", "--title", "Render"],
    ):
        assert run_cli(args).exit_code == 0
    return base


def loopx(root: Path, agent: str, *args: str) -> Any:
    """One `loopx … --format json` process run by `agent` in the checkout."""
    env = {
        **os.environ,
        "LOOPX_NOW": T0,
        "LOOPX_AGENT_ID": agent,
        "LOOPX_SESSION_ID": f"{agent}-s1",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "loopx", *args, "--format", "json"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return json.loads(proc.stdout)


def cli_session(root: Path) -> None:
    primed = loopx(root, "agent-a", "prime")
    todo = primed["frontier"][0]["todo_id"]
    assert (todo, primed["claims"]) == ("parse", [])
    loopx(root, "agent-a", "todo", "claim", "--todo-id", todo)
    log = root / "pytest.log"
    log.write_text(LOG, encoding="utf-8")
    ev = loopx(
        root,
        "agent-a",
        "evidence",
        "add",
        "--todo-id",
        todo,
        "--kind",
        "test",
        "--summary",
        "12 passed",
        "--file",
        str(log),
    )
    log.unlink()
    evidence_id = ev["receipt"]["subject"]
    loopx(root, "agent-a", "todo", "complete", "--todo-id", todo, "--evidence-id", evidence_id)
    loopx(root, "agent-a", "todo", "claim", "--todo-id", "render")
    loopx(
        root,
        "agent-a",
        "handoff",
        "prepare",
        "--todo-id",
        "render",
        "--work-summary",
        "Renderer half done",
        "--next-step",
        "Finish the table layout",
        "--target-agent-id",
        "agent-b",
    )
    assert [h["todo_id"] for h in loopx(root, "agent-b", "prime")["handoffs"]] == ["render"]
    digest = loopx(root, "agent-b", "handoff", "inspect", "--todo-id", "render")
    assert digest["handoff"]["note"]["next_steps"] == ["Finish the table layout"]
    loopx(root, "agent-b", "handoff", "adopt", "--todo-id", "render")
    assert loopx(root, "agent-b", "todo", "show", "--todo-id", "render")["claim"]["agent_id"] == (
        "agent-b"
    )


async def mcp_session(root: Path) -> None:
    async with connect(root, {"LOOPX_AGENT_ID": "agent-a", "LOOPX_SESSION_ID": "agent-a-s1"}) as a:
        primed = await call(a, "prime")
        todo = primed["frontier"][0]["todo_id"]
        assert (todo, primed["claims"]) == ("parse", [])
        await call(a, "todo_claim", todo_id=todo)
        ev = await call(a, "evidence_add", todo_id=todo, kind="test", summary="12 passed", body=LOG)
        evidence_id = ev["receipt"]["subject"]
        await call(a, "todo_complete", todo_id=todo, evidence_ids=[evidence_id])
        await call(a, "todo_claim", todo_id="render")
        await call(
            a,
            "handoff_prepare",
            todo_id="render",
            work_summary="Renderer half done",
            next_steps=["Finish the table layout"],
            target_agent_id="agent-b",
        )
    async with connect(root, {"LOOPX_AGENT_ID": "agent-b", "LOOPX_SESSION_ID": "agent-b-s1"}) as b:
        assert [h["todo_id"] for h in (await call(b, "prime"))["handoffs"]] == ["render"]
        digest = await call(b, "handoff_inspect", todo_id="render")
        assert digest["handoff"]["note"]["next_steps"] == ["Finish the table layout"]
        await call(b, "handoff_adopt", todo_id="render")
        assert (await call(b, "todo_show", todo_id="render"))["claim"]["agent_id"] == "agent-b"


VARIES = {"operation_id", "prev", "sum", "recorded_at"}  # ids, the hash chain, times


def comparable(root: Path) -> list[dict[str, Any]]:
    lines = (root / ".loopx" / "goals" / "demo" / "ledger.jsonl").read_text("utf-8").splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in VARIES} for line in lines]


def test_the_same_session_through_the_cli_and_through_mcp_writes_the_same_ledger(
    tmp_path: Path,
) -> None:
    by_cli = checkout(tmp_path / "cli")
    by_mcp = checkout(tmp_path / "mcp")
    cli_session(by_cli)
    anyio.run(mcp_session, by_mcp)
    cli_events, mcp_events = comparable(by_cli), comparable(by_mcp)
    types = [e["type"] for e in cli_events]
    assert types[3:] == [
        "todo.claimed",
        "evidence.added",
        "todo.completed",
        "todo.claimed",
        "handoff.prepared",
        "handoff.adopted",
        "todo.claimed",
    ]
    assert cli_events == mcp_events
    # the evidence is bound to the checkout's HEAD, its body kept in the private blob store
    evidence = next(e for e in cli_events if e["type"] == "evidence.added")["data"]
    head = subprocess.run(
        ["git", "-C", str(by_cli), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert evidence["revision"] == head and evidence["body_bytes"] == len(LOG)
