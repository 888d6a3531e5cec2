"""Choosing the default goal: a command that names no goal, on a root of many goals.

    python -m benchmarks.bench_default_goal [--goals 10] [--todos 2000] [--events 20000]
                                            [--runs 15] [--keep DIR | --measure DIR]

Builds GOALS synthetic goals (benchmarks/synth.py) and closes all but the first, so the one
active goal is the default. Prints the CPU time of `default_goal` in this process (which
goal a command means when none is named; it reads each goal's snapshot header and the events
since, and decodes no goal's state), and of whole `loopx next` processes naming no goal.
`--keep DIR` builds into DIR and keeps it; `--measure DIR` only measures a kept root (so an
older loopx on PYTHONPATH can be measured on the same goals).
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from loopx.engine.defaults import default_goal
from loopx.store.filestore import FileStore

NOW = "2026-06-01T00:00:00Z"


def build(root: Path, goals: int, todos: int, events: int) -> None:
    from benchmarks.synth import make_goal
    from loopx.engine.clock import FixedClock
    from loopx.engine.commands import CloseGoal
    from loopx.engine.core import Context
    from loopx.engine.goals import close_goal

    store = FileStore(root)
    store.init()
    ctx = Context(store, FixedClock(NOW), agent_id="user", session_id="bench")
    for n in range(goals):
        goal_id = f"goal-{n:02d}"
        make_goal(root, goal_id, todos=todos, events=events, seed=n)
        if n:
            close_goal(ctx, CloseGoal(goal_id=goal_id, outcome="abandoned"))


def in_process(root: Path, runs: int) -> float:
    """Median CPU seconds of `default_goal` (after one call that writes the snapshots)."""
    store = FileStore(root)
    assert default_goal(store) == "goal-00"
    gc.disable()
    samples = []
    for _ in range(runs):
        start = time.process_time()
        default_goal(store)
        samples.append(time.process_time() - start)
    gc.enable()
    return statistics.median(samples)


def cli(root: Path, runs: int) -> float:
    """Median CPU seconds of a `loopx next` process that names no goal."""
    env = {**os.environ, "LOOPX_NOW": NOW}
    args = [sys.executable, "-m", "loopx", "next", "--root", str(root), "--format", "json"]
    subprocess.run(args, env=env, check=True, capture_output=True)
    samples = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(args, env=env, check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        samples.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--goals", type=int, default=10)
    parser.add_argument("--todos", type=int, default=2000)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--keep", type=Path, default=None, help="Build into this folder.")
    parser.add_argument("--measure", type=Path, default=None, help="Only measure this root.")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = opts.measure or opts.keep or Path(folder)
        if opts.measure is None:
            build(root, opts.goals, opts.todos, opts.events)
        print(f"default_goal: {in_process(root, opts.runs) * 1000:.1f} ms CPU (median)")
        print(f"loopx next, no --goal-id: {cli(root, opts.runs) * 1000:.0f} ms CPU (median)")


if __name__ == "__main__":
    main()
