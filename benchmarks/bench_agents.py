"""What an agent pays for loopx's agent-facing surface, on a synthetic goal of 5,000 todos and
50,000 events (benchmarks/synth.py) with the agent holding a live claim:

- `loopx --help` (must stay fast: the MCP SDK is never imported by it), and the SDK's import;
- `loopx prime` (Markdown and JSON) as whole processes;
- shell completion of todo ids (a whole `_LOOPX_COMPLETE=bash_complete` process);
- `loopx mcp`: start to first `tools/list` answer, then `prime`, `todo_show` and a
  `todo_renew` write over the open stdio session (the SDK's own client).

    python -m benchmarks.bench_agents [--runs 21]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.synth import make_goal


def _wall(args: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(args, env=env, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(args)}\n{proc.stderr.decode()}")
    return wall


def _median(args: list[str], env: dict[str, str], cwd: Path, runs: int) -> tuple[float, float]:
    _wall(args, env, cwd)  # warm caches once
    walls = [_wall(args, env, cwd) for _ in range(runs)]
    return statistics.median(walls), min(walls)


def _holder(root: Path, goal_id: str, now: str) -> tuple[str, str]:
    from loopx.engine.core import load_state
    from loopx.state.frontier import lease_live
    from loopx.store.filestore import FileStore

    state = load_state(FileStore(root), goal_id).state
    assert state is not None
    for todo in sorted(state.todos.values(), key=lambda t: t.todo_id):
        if todo.claim and lease_live(todo, now):
            return todo.todo_id, todo.claim["agent_id"]
    raise SystemExit("the synthetic goal has no live claim")


async def _mcp(root: Path, env: dict[str, str], runs: int, todo_id: str) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "loopx", "mcp"], env=env, cwd=str(root)
    )
    starts = []
    for _ in range(3):
        start = time.perf_counter()
        async with Client(params) as client:
            await client.list_tools()
            starts.append(time.perf_counter() - start)
    out: dict[str, Any] = {"start": statistics.median(starts)}
    async with Client(params) as client:
        for name, args in (
            ("prime", {}),
            ("todo_show", {"todo_id": todo_id}),
            ("todo_renew", {"todo_id": todo_id}),
        ):
            await client.call_tool(name, args)  # warm
            walls = []
            for _ in range(runs):
                start = time.perf_counter()
                result = await client.call_tool(name, args)
                walls.append(time.perf_counter() - start)
                assert not result.is_error, result.content[0].text
            out[name] = (statistics.median(walls), min(walls))
    return out


def main(argv: list[str] | None = None) -> None:
    import anyio

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    opts = parser.parse_args(argv)
    runs = opts.runs
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        summary = make_goal(root, "bench", todos=5000, events=50000)
        now = summary["end"]
        todo_id, agent = _holder(root, "bench", now)
        env = {
            **os.environ,
            "LOOPX_NOW": now,
            "LOOPX_ROOT": str(root),
            "LOOPX_AGENT_ID": agent,
            "LOOPX_GOAL_ID": "bench",
        }
        env.pop("NO_COLOR", None)
        py = [sys.executable]
        rows = [
            ("`python -c pass` (interpreter start)", _median([*py, "-c", "pass"], env, root, runs)),
            ("`loopx --help`", _median([*py, "-m", "loopx", "--help"], env, root, runs)),
            (
                "`import loopx.mcp.server` (the SDK)",
                _median([*py, "-c", "import loopx.mcp.server"], env, root, runs),
            ),
            ("`loopx prime` (Markdown)", _median([*py, "-m", "loopx", "prime"], env, root, runs)),
            (
                "`loopx prime --format json`",
                _median([*py, "-m", "loopx", "prime", "--format", "json"], env, root, runs),
            ),
        ]
        complete = {
            **env,
            "_LOOPX_COMPLETE": "bash_complete",
            "COMP_WORDS": "loopx todo show --todo-id t01",
            "COMP_CWORD": "4",
        }
        rows.append(
            (
                "completion of todo ids (`--todo-id t01<TAB>`)",
                _median([*py, "-m", "loopx"], complete, root, runs),
            )
        )
        mcp = anyio.run(_mcp, root, env, runs, todo_id)
    print(
        f"goal: {summary['todos']} todos, {summary['events']} events, "
        f"{summary['bytes'] / 1e6:.1f} MB of ledger; {runs} runs after one warm-up; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    print(f"| {'measure':<52} | wall median | wall best |")
    print(f"|{'-' * 54}|------------:|----------:|")
    for name, (median, best) in rows:
        print(f"| {name:<52} | {median:9.3f} s | {best:7.3f} s |")
    label = "`loopx mcp`: start to first tools/list answer"
    print(f"| {label:<52} | {mcp['start']:9.3f} s | {'':>9} |")
    for name in ("prime", "todo_show", "todo_renew"):
        median, best = mcp[name]
        label = f"MCP `{name}` over an open session"
        print(f"| {label:<52} | {median:9.3f} s | {best:7.3f} s |")


if __name__ == "__main__":
    main()
