"""State engine benchmark: a goal of 5,000 todos and 50,000 events.

    python -m benchmarks.bench_engine [--todos 5000] [--events 50000] [--runs 7] [--keep DIR]

Every CLI figure is a whole fresh process (the installed `loopx` entry point, run with
subprocess), the median of --runs calls on a warm snapshot cache; one cold call (no cache)
of status and next is reported too. The cold replay of the ledger (no cache) is compared
with merely reading and orjson-parsing the same file, in the same run, interleaved.
Results go to stdout, to benchmarks/out/bench_engine.json, and (unless --no-write) to the
"State engine" section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from benchmarks.synth import make_goal
from loopx.engine.clock import add_seconds
from loopx.engine.core import load_state
from loopx.state.frontier import frontier
from loopx.store.filestore import FileStore

GOAL = "bench"
REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "RESULTS.md"
START_MARK, END_MARK = "<!-- bench_engine:start -->", "<!-- bench_engine:end -->"
AGENT = "bench-agent"
TARGETS = {"status": 0.25, "next": 0.25, "todo add": 0.25, "todo claim": 0.25}
TARGETS |= {"todo complete": 0.25, "--help": 0.15}


def entry_point() -> list[str]:
    """The installed console script beside this interpreter (what a user runs), else -m."""
    script = Path(sys.executable).with_name("loopx")
    return [str(script)] if script.exists() else [sys.executable, "-m", "loopx"]


class Runner:
    def __init__(self, root: Path, now: str):
        self.cmd = entry_point()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPX_")}
        # Bytecode written and reused, as for an installed loopx: with this set, every call
        # would compile loopx from source (~40 ms more).
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env.update({"LOOPX_ROOT": str(root), "LOOPX_NOW": now})

    def once(self, args: list[str]) -> float:
        start = time.perf_counter()
        done = subprocess.run(
            [*self.cmd, *args], env=self.env, capture_output=True, text=True, check=False
        )
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"loopx {' '.join(args)} failed: {done.stderr or done.stdout}")
        return elapsed


def summary(times: list[float]) -> dict[str, Any]:
    return {
        "median_s": round(statistics.median(times), 4),
        "min_s": round(min(times), 4),
        "max_s": round(max(times), 4),
        "runs": len(times),
    }


def interleaved(tasks: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    """Time each task `rounds` times, alternating, so machine noise hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in tasks}
    for _ in range(rounds):
        for name, task in tasks.items():
            gc.collect()
            start = time.perf_counter()
            task()
            times[name].append(time.perf_counter() - start)
    return times


def replay_vs_parse(root: Path, rounds: int) -> dict[str, Any]:
    """Cold replay (read, check every checksum and the chain, fold) against merely reading
    and orjson-parsing the same file: both with the garbage collector on (a library caller),
    and both with it off (how a CLI call runs)."""
    store = FileStore(root)
    path = store.ledger_path(GOAL)

    def parse() -> Any:
        return [orjson.loads(line) for line in path.read_bytes().splitlines()]

    def replay() -> Any:
        loaded = load_state(store, GOAL, cache=False)
        assert loaded.state is not None
        return loaded.state

    def gc_off(task: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            gc.disable()
            try:
                return task()
            finally:
                gc.enable()

        return run

    tasks = {"parse": parse, "replay": replay}
    tasks |= {"parse_gc_off": gc_off(parse), "replay_gc_off": gc_off(replay)}
    times = interleaved(tasks, rounds)
    out: dict[str, Any] = {name: summary(values) for name, values in times.items()}
    for mode in ("", "_gc_off"):
        replayed, parsed = out[f"replay{mode}"], out[f"parse{mode}"]
        out[f"ratio{mode}"] = round(replayed["median_s"] / parsed["median_s"], 2)
        out[f"ratio{mode}_best"] = round(replayed["min_s"] / parsed["min_s"], 2)
    out["ledger_bytes"] = path.stat().st_size
    return out


def ready_todos(root: Path, now: str, count: int) -> list[str]:
    state = load_state(FileStore(root), GOAL).state
    assert state is not None
    ready = [t.todo_id for t in frontier(state, now, AGENT, role="agent")]
    if len(ready) < count:
        raise SystemExit(f"only {len(ready)} ready todos; need {count}")
    return ready[:count]


def git_commit() -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "unknown"


_PACE = (
    "import time\nt = time.process_time()\nfor i in range(3_000_000): pass\n"
    "print(time.process_time() - t)"
)


def pace(runs: int = 3) -> float:
    """The machine's pace now: CPU milliseconds a fresh interpreter takes for a fixed
    pure-Python loop (median of `runs`). A shared machine's speed moves by tens of percent
    within an hour; two runs of a benchmark compare only at the same pace."""
    times = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", _PACE], capture_output=True, text=True, check=True
        )
        times.append(float(done.stdout) * 1000)
    return statistics.median(times)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def render_results(r: dict[str, Any], runs: int) -> str:
    """The RESULTS.md section, between its markers."""
    g, warm, rp = r["goal"], r["warm"], r["replay_vs_parse"]
    rows = [
        ("`loopx status --goal-id G --format json`", "status", "< 0.25 s; peer 0.65 s at 1,000"),
        ("`loopx next --goal-id G`", "next", "< 0.25 s"),
        ("`loopx todo add`", "todo add", "< 0.25 s; peer ~0.7 s at 1,000"),
        ("`loopx todo claim`", "todo claim", "< 0.25 s; peer ~0.7 s at 1,000"),
        ("`loopx todo complete`", "todo complete", "< 0.25 s; peer ~0.7 s at 1,000"),
        ("`loopx --help`", "--help", "< 0.15 s"),
    ]
    lines = [
        START_MARK,
        "## State engine",
        "",
        f"Command: `python -m benchmarks.bench_engine --runs {runs}` (loopx {git_commit()}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores, {cpu_model()}; load "
        f"average at start {', '.join(map(str, r['load_average_before']))}: the machine is "
        "shared, so wall times carry noise).",
        "",
        f"A goal of {g['todos']:,} todos and {g['events']:,} events "
        f"({g['bytes'] / 1e6:.1f} MB of ledger), written by `benchmarks/synth.py`. Each CLI "
        f"figure is a whole fresh process of the installed entry point (`{r['entry_point'][0]}`),"
        f" the median of {runs} calls with the snapshot cache warm (min–max in brackets); "
        "the writes are real appends with fsync.",
        "",
        "| measure | loopx | target / peer | met |",
        "|---|---|---|---|",
    ]
    for label, key, target in rows:
        fig = warm[key]
        limit = TARGETS[key]
        met = "yes" if fig["median_s"] < limit else "**no**"
        lines.append(
            f"| {label} | {fig['median_s']:.3f} s ({fig['min_s']:.3f}–{fig['max_s']:.3f}) "
            f"| {target} | {met} |"
        )
    lines += [
        f"| `loopx status`, cold (no cache: replays and writes the snapshot) "
        f"| {r['cold']['status']:.3f} s | peer: over 1 s at 1,000 todos | – |",
        f"| `loopx next`, cold | {r['cold']['next']:.3f} s | – | – |",
    ]
    for mode, label in (("", "collector on (a library caller)"), ("_gc_off", "collector off")):
        ratio = rp[f"ratio{mode}"]
        lines.append(
            f"| cold replay of {g['events']:,} events vs read + orjson parse, {label} "
            f"| {rp[f'replay{mode}']['median_s']:.3f} s vs {rp[f'parse{mode}']['median_s']:.3f}"
            f" s = **{ratio}×** (best to best {rp[f'ratio{mode}_best']}×) | ≤ 3× "
            f"| {'yes' if ratio <= 3 else '**no**'} |"
        )
    lines += [
        "",
        "- Replay = read the file, check every line's sha256 and the hash chain, and fold all "
        "events into state; parse = read the file and `orjson.loads` each line, nothing else. "
        "A CLI call runs with the cyclic garbage collector off (it is short-lived and the fold "
        "makes no cycles), so the second row is the CLI's case.",
        "- A warm call loads `.loopx/cache/goals/G/state.json` (folded state as rows plus the "
        "operation index as one unparsed block), checks that the line before its cursor is "
        "intact, and folds only the events after it; the snapshot is rewritten every N/1000 "
        "events (here 50). About 45 ms of every call is the interpreter starting.",
        f"- Load average at the end: {', '.join(map(str, r['load_average_after']))}.",
        END_MARK,
    ]
    return "\n".join(lines)


def write_results(text: str, start_mark: str = START_MARK, end_mark: str = END_MARK) -> None:
    """Replace the section between the marks in RESULTS.md (or append it)."""
    old = RESULTS.read_text("utf-8") if RESULTS.exists() else "# Benchmark results\n"
    if start_mark in old and end_mark in old:
        a, b = old.index(start_mark), old.index(end_mark) + len(end_mark)
        new = old[:a] + text + old[b:]
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    RESULTS.write_text(new, "utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_engine")
    parser.add_argument("--todos", type=int, default=5000)
    parser.add_argument("--events", type=int, default=50000)
    parser.add_argument("--runs", type=int, default=7, help="calls per figure (median)")
    parser.add_argument("--keep", type=Path, default=None, help="build the goal here, keep it")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/bench_engine.json"))
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args(argv)
    if args.runs < 5:
        parser.error("--runs must be at least 5")

    root = args.keep or Path(tempfile.mkdtemp(prefix="loopx-bench-"))
    if (root / ".loopx").exists():
        shutil.rmtree(root / ".loopx")
    started = time.perf_counter()
    made = make_goal(root, GOAL, todos=args.todos, events=args.events)
    built = time.perf_counter() - started
    now = add_seconds(made["end"], 60)
    run = Runner(root, now)
    print(
        f"goal {GOAL}: {made['todos']} todos, {made['events']} events, "
        f"{made['bytes'] / 1e6:.1f} MB ledger (generated in {built:.1f} s) in {root}"
    )
    print(
        f"entry point: {' '.join(run.cmd)}; {platform.python_implementation()} "
        f"{platform.python_version()}, {os.cpu_count()} CPUs"
    )

    results: dict[str, Any] = {"goal": made, "now": now, "entry_point": run.cmd}
    results["load_average_before"] = [round(x, 2) for x in os.getloadavg()]
    cache = root / ".loopx" / "cache"

    # Cold calls: no snapshot, so each replays the whole ledger (and writes the snapshot).
    status_args = ["status", "--goal-id", GOAL, "--format", "json"]
    next_args = ["next", "--goal-id", GOAL]
    shutil.rmtree(cache, ignore_errors=True)
    results["cold"] = {"status": round(run.once(status_args), 4)}
    shutil.rmtree(cache, ignore_errors=True)
    results["cold"]["next"] = round(run.once(next_args), 4)

    warm: dict[str, list[float]] = {}
    warm["status"] = [run.once(status_args) for _ in range(args.runs)]
    warm["next"] = [run.once(next_args) for _ in range(args.runs)]
    ids = ready_todos(root, now, args.runs)
    warm["todo add"] = [
        run.once(["todo", "add", "--goal-id", GOAL, "--title", f"Bench todo {i}"])
        for i in range(args.runs)
    ]
    actor = ["--agent-id", AGENT, "--session-id", "bench"]
    warm["todo claim"] = [
        run.once(["todo", "claim", "--goal-id", GOAL, "--todo-id", t, *actor]) for t in ids
    ]
    warm["todo complete"] = [
        run.once(["todo", "complete", "--goal-id", GOAL, "--todo-id", t, *actor]) for t in ids
    ]
    warm["--help"] = [run.once(["--help"]) for _ in range(args.runs)]
    results["warm"] = {name: summary(times) for name, times in warm.items()}

    results["replay_vs_parse"] = replay_vs_parse(root, args.runs)
    verify = FileStore(root).verify(GOAL)
    assert verify.ok, verify.damage
    results["events_after"] = verify.events

    print(f"\nwhole-process calls, warm cache (median of {args.runs}; min-max):")
    for name, fig in results["warm"].items():
        target = TARGETS.get(name)
        mark = "" if target is None else ("  ok" if fig["median_s"] < target else "  MISSED")
        print(
            f"  {name:<14} {fig['median_s']:.3f} s  ({fig['min_s']:.3f}-{fig['max_s']:.3f})"
            f"  target < {target} s{mark}"
        )
    print(
        f"cold (no cache): status {results['cold']['status']:.3f} s, "
        f"next {results['cold']['next']:.3f} s"
    )
    rp = results["replay_vs_parse"]
    for mode, label in (("", "gc on (library)"), ("_gc_off", "gc off (as the CLI runs)")):
        print(
            f"cold replay of {made['events']} events, {label}: "
            f"{rp[f'replay{mode}']['median_s']:.3f} s; read+orjson parse "
            f"{rp[f'parse{mode}']['median_s']:.3f} s; replay/parse {rp[f'ratio{mode}']}x "
            f"(best to best {rp[f'ratio{mode}_best']}x; target <= 3x)"
        )

    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(
        f"load average (1, 5, 15 min) before {results['load_average_before']}, "
        f"after {results['load_average_after']}: other work on the machine slows every figure"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {args.out}")
    if not args.no_write:
        write_results(render_results(results, args.runs))
        print(f"wrote {RESULTS.relative_to(REPO)} (section State engine)")
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
