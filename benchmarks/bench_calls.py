"""Per-call benchmark (issue 19): the calls an agent makes on every turn, as whole processes.

    python -m benchmarks.bench_calls [--runs 11] [--before DIR] [--no-write]

A goal of 1,000 todos and 10,000 events (`benchmarks/synth.py`) in a git checkout, with a
handoff prepared on one of its claimed todos; each row is a fresh `python -m loopx …`
process (interpreter start, imports, snapshot load, the call, exit), timed `--runs` times
after one warm-up: the median CPU time (user + system of the process and its git children)
and the median wall time. Cold `status` runs on a goal of 5,000 todos and 50,000 events with
no snapshot (`.loopx/cache/` removed before each run: it replays, verifies every line and
writes the snapshot).

`--before DIR` times an older loopx in the same run, interleaved call by call with this
checkout's (DIR holds its `loopx/`, `templates/` and `schemas/`, e.g. made with
`git archive REV loopx templates schemas | tar -x -C DIR`), so both see the same load.
Results go to stdout and, unless --no-write, to the "Per call" section of RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.bench_engine import cpu_model, git_commit, write_results
from benchmarks.bench_handoff import _claimed_todo, _git_checkout

START_MARK, END_MARK = "<!-- bench_calls:start -->", "<!-- bench_calls:end -->"
AGENT, SESSION = "bench-agent", "bench"
GOAL = "bench"


class Variant:
    """One loopx to time: this checkout's, or an older one found first on PYTHONPATH."""

    def __init__(self, name: str, path: Path | None):
        self.name = name
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPX_")}
        # Bytecode is written and reused, as for an installed loopx.
        for key in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH"):
            self.env.pop(key, None)
        if path is not None:
            self.env["PYTHONPATH"] = str(path)

    def run(self, args: list[str], root: Path, now: str | None) -> tuple[float, float]:
        """Wall and CPU seconds of `python -m loopx ARGS` (CPU: the process and its children)."""
        env = dict(self.env, LOOPX_ROOT=str(root))
        if now is not None:
            env["LOOPX_NOW"] = now
        cmd = [sys.executable, *args] if args[0] == "-c" else [sys.executable, "-m", "loopx", *args]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, env=env, cwd=root, capture_output=True, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"{self.name}: loopx {' '.join(args)} failed: {done.stderr.decode()}")
        return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


class Row:
    """A measured call: `args(i)` gives the arguments of run i; `prepare` runs untimed first."""

    def __init__(
        self,
        key: str,
        label: str,
        args: Callable[[int], list[str]],
        root: Path,
        *,
        target: float | None = None,
        now: str | None = None,
        prepare: Callable[[], None] | None = None,
    ):
        self.key, self.label, self.args, self.root = key, label, args, root
        self.target, self.now, self.prepare = target, now, prepare


def _ready_todos(root: Path, now: str, count: int) -> list[str]:
    from loopx.engine.core import require_goal
    from loopx.state.frontier import frontier
    from loopx.store.filestore import FileStore

    state = require_goal(FileStore(root), GOAL)
    ready = [t.todo_id for t in frontier(state, now, AGENT, role="agent")]
    if len(ready) < count:
        raise SystemExit(f"only {len(ready)} ready todos; the claims need {count}")
    return ready[:count]


def _prepare_handoff(root: Path, now: str) -> str:
    """A handoff note on a claimed todo, prepared through the CLI by its holder."""
    todo_id, agent, session = _claimed_todo(root, GOAL, now)
    _git_checkout(root)
    context = root / "context.json"
    context.write_text(
        '{"work_summary": "Benchmark note", "next_steps": ["Continue"], '
        '"files_touched": [{"path": "src/parser.py", "action": "modified"}]}'
    )
    args = ["handoff", "prepare", "--goal-id", GOAL, "--todo-id", todo_id, "--agent-id", agent]
    args += ["--session-id", session, "--from-context", str(context), "--workspace", "."]
    Variant("setup", None).run([*args, "--operation-id", "bench-prepare"], root, now)
    return todo_id


def _rows(small: Path, big: Path, now: str, todo_id: str, claims: list[str]) -> list[Row]:
    goal = ["--goal-id", GOAL]
    inspect = ["handoff", "inspect", *goal, "--todo-id", todo_id, "--agent-id", "agent-next"]
    inspect += ["--session-id", "bench", "--workspace", ".", "--format", "digest"]
    actor = ["--agent-id", AGENT, "--session-id", SESSION]

    def clear_render_cache() -> None:
        for sub in ("cache", "private/cache"):
            shutil.rmtree(small / ".loopx" / sub / "handoff", ignore_errors=True)

    def clear_snapshot() -> None:
        shutil.rmtree(big / ".loopx" / "cache", ignore_errors=True)

    return [
        Row("pass", "`python -c pass` (interpreter start)", lambda i: ["-c", "pass"], small),
        Row("help", "`loopx --help`", lambda i: ["--help"], small),
        Row(
            "status",
            "`loopx status --format json`",
            lambda i: ["status", *goal, "--format", "json"],
            small,
            target=0.10,
        ),
        Row("next", "`loopx next`", lambda i: ["next", *goal], small, target=0.10),
        Row(
            "claim",
            "`loopx todo claim` (a write: append + fsync)",
            lambda i: ["todo", "claim", *goal, "--todo-id", claims[i], *actor],
            small,
            target=0.10,
            now=now,
        ),
        Row("review", "`loopx review`", lambda i: ["review", *goal], small, target=0.15),
        Row(
            "inspect",
            "`loopx handoff inspect --format digest`, rendered",
            lambda i: inspect,
            small,
            target=0.15,
            prepare=clear_render_cache,
        ),
        Row(
            "inspect_reused",
            "the same, reused from the render cache",
            lambda i: inspect,
            small,
            target=0.15,
        ),
        Row(
            "cold",
            "cold `loopx status --format json`, 50,000 events, no snapshot",
            lambda i: ["status", *goal, "--format", "json"],
            big,
            target=0.35,
            prepare=clear_snapshot,
        ),
    ]


def measure(rows: list[Row], variants: list[Variant], runs: int) -> dict[str, Any]:
    """Every row `runs` times per variant, interleaved: run i of each variant back to back."""
    out: dict[str, Any] = {}
    for row in rows:
        samples: dict[str, list[tuple[float, float]]] = {v.name: [] for v in variants}
        for i in range(-1, runs):  # run -1 is the warm-up (bytecode, page cache)
            for n, variant in enumerate(variants):
                if row.prepare is not None:
                    row.prepare()
                timed = variant.run(row.args((i + 1) * len(variants) + n), row.root, row.now)
                if i >= 0:
                    samples[variant.name].append(timed)
        out[row.key] = {
            name: {
                "wall_s": round(statistics.median(w for w, _ in s), 4),
                "cpu_s": round(statistics.median(c for _, c in s), 4),
                "cpu_best_s": round(min(c for _, c in s), 4),
            }
            for name, s in samples.items()
        }
        print(
            f"  {row.key:<15}",
            "  ".join(
                f"{k} {v['cpu_s']:.3f} cpu / {v['wall_s']:.3f} wall"
                for k, v in out[row.key].items()
            ),
        )
    return out


def render(r: dict[str, Any], rows: list[Row], runs: int, before: str | None) -> str:
    """The RESULTS.md section, between its markers."""
    m = r["measured"]
    lines = [
        START_MARK,
        "## Per call (issue 19)",
        "",
        f"Command: `python -m benchmarks.bench_calls --runs {runs}"
        + (" --before DIR`" if before else "`")
        + f" (loopx {git_commit()}, Python {platform.python_version()}, {os.cpu_count()} "
        f"cores, {cpu_model()}; load average {', '.join(map(str, r['load_before']))} at the "
        f"start and {', '.join(map(str, r['load_after']))} at the end: the machine is shared, "
        "so the CPU time is the figure to read and wall times carry the load).",
        "",
        f"A goal of {r['small']['todos']:,} todos and {r['small']['events']:,} events in a git "
        "checkout with a prepared handoff; cold status on one of "
        f"{r['big']['todos']:,} todos and {r['big']['events']:,} events. Each figure is the "
        f"median of {runs} whole `python -m loopx` processes after one warm-up; CPU is user + "
        "system of the process and its git children."
        + (
            f' "Before" is {before}, timed in the same run, interleaved call by call.'
            if before
            else ""
        ),
        "",
    ]
    if before:
        lines += [
            "| call | before CPU | after CPU | after wall | target | met (CPU) |",
            "|---|---:|---:|---:|---|---|",
        ]
    else:
        lines += ["| call | CPU | wall | target | met (CPU) |", "|---|---:|---:|---|---|"]
    for row in rows:
        after = m[row.key]["after"]
        target = "–" if row.target is None else f"≤ {row.target:.2f} s"
        met = "–" if row.target is None else ("yes" if after["cpu_s"] <= row.target else "**no**")
        cells = [row.label]
        if before:
            cells.append(f"{m[row.key]['before']['cpu_s']:.3f} s")
        cells += [f"{after['cpu_s']:.3f} s", f"{after['wall_s']:.3f} s", target, met]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", END_MARK]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_calls")
    parser.add_argument("--runs", type=int, default=11, help="calls per figure (median)")
    parser.add_argument("--todos", type=int, default=1000)
    parser.add_argument("--events", type=int, default=10000)
    parser.add_argument("--cold-todos", type=int, default=5000)
    parser.add_argument("--cold-events", type=int, default=50000)
    parser.add_argument("--before", type=Path, default=None, help="an older loopx to compare")
    parser.add_argument("--before-label", default=None, help="how RESULTS.md names it")
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args(argv)
    if args.runs < 3:
        parser.error("--runs must be at least 3")
    if args.before is not None and not (args.before / "loopx" / "__init__.py").is_file():
        parser.error(f"--before {args.before}: no loopx/ package there")

    from benchmarks.synth import make_goal
    from loopx.engine.clock import add_seconds

    variants = [Variant("after", None)]
    if args.before is not None:
        variants.insert(0, Variant("before", args.before.resolve()))
    with tempfile.TemporaryDirectory(prefix="loopx-calls-") as tmp:
        small, big = Path(tmp) / "small", Path(tmp) / "big"
        made = make_goal(small, GOAL, todos=args.todos, events=args.events)
        made_big = make_goal(big, GOAL, todos=args.cold_todos, events=args.cold_events)
        todo_id = _prepare_handoff(small, made["end"])
        now = add_seconds(made["end"], 60)
        claims = _ready_todos(small, now, (args.runs + 1) * len(variants))
        rows = _rows(small, big, now, todo_id, claims)
        result: dict[str, Any] = {"small": made, "big": made_big}
        result["load_before"] = [round(x, 2) for x in os.getloadavg()]
        print(f"{len(variants)} variant(s), {args.runs} runs each (CPU / wall medians):")
        measured = measure(rows, variants, args.runs)
        result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    result["measured"] = measured
    before = None
    if args.before is not None:
        before = args.before_label or f"the loopx in `{args.before.name}`"
    text = render(result, rows, args.runs, before)
    print(text)
    if not args.no_write:
        write_results(text, START_MARK, END_MARK)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
