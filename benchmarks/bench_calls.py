"""Per-call benchmark (issue 19): the calls an agent makes on every turn, as whole processes.

    python -m benchmarks.bench_calls [--runs 11] [--before DIR] [--installed] [--no-write]

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
`--installed` runs each loopx as users do: installed by `pip install` (not editable: no
import finder of the editable install runs in every process) into a fresh virtualenv of its
own, which finds the dependencies in this interpreter's site-packages (DIR must then be a
checkout with its pyproject.toml, e.g. `git worktree add --detach DIR REV`).
Results go to stdout and, unless --no-write, to the "Per call" section of RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
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
CALLGRIND = ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null")


class Variant:
    """One loopx to time: this checkout's, or an older one found first on PYTHONPATH; or,
    `installed`, either one installed into a virtualenv of its own under `venv`."""

    def __init__(
        self, name: str, path: Path | None, *, installed: bool = False, venv: Path | None = None
    ):
        self.name = name
        self.roots: dict[str, Path] = {}  # its own copy of each goal: snapshots stay its own
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPX_")}
        # Bytecode is written and reused, as for an installed loopx.
        for key in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH"):
            self.env.pop(key, None)
        self.python = sys.executable
        if installed:
            assert venv is not None
            self.python = str(_install(path or Path(__file__).resolve().parents[1], venv))
        elif path is not None:
            self.env["PYTHONPATH"] = str(path)

    def _spawn(
        self, args: list[str], root: Path, now: str | None, prefix: tuple[str, ...] = ()
    ) -> subprocess.CompletedProcess[bytes]:
        env = dict(self.env, LOOPX_ROOT=str(root))
        if now is not None:
            env["LOOPX_NOW"] = now
        cmd = [self.python, *args] if args[0] == "-c" else [self.python, "-m", "loopx", *args]
        done = subprocess.run([*prefix, *cmd], env=env, cwd=root, capture_output=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{self.name}: loopx {' '.join(args)} failed: {done.stderr.decode()}")
        return done

    def run(self, args: list[str], root: Path, now: str | None) -> tuple[float, float]:
        """Wall and CPU seconds of `python -m loopx ARGS` (CPU: the process and its children)."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        self._spawn(args, root, now)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime

    def instructions(self, args: list[str], root: Path, now: str | None) -> int:
        """Instructions the loopx process executes (callgrind; its git children not counted):
        a figure the machine's load does not change."""
        done = self._spawn(args, root, now, CALLGRIND)
        found = re.search(rb"Collected : (\d+)", done.stderr)
        if found is None:
            raise SystemExit(f"no instruction count from valgrind: {done.stderr[-300:]!r}")
        return int(found.group(1))


def _install(source: Path, venv: Path) -> Path:
    """`source` installed (`pip install --no-deps`, bytecode compiled) into a new virtualenv
    at `venv` that finds the other packages where this interpreter does; its python."""
    import sysconfig

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    done = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    deps = Path(sysconfig.get_paths()["purelib"])
    (Path(done.stdout.strip()) / "_bench_deps.pth").write_text(f"{deps}\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps"]
    subprocess.run([*pip, str(source)], check=True, capture_output=True)
    return python


class Row:
    """A measured call on the goal `root` ("small" or "big"): `args(i)` gives the arguments
    of run i; `prepare(root folder)` runs untimed before each."""

    def __init__(
        self,
        key: str,
        label: str,
        args: Callable[[int], list[str]],
        root: str,
        *,
        target: float | None = None,
        now: str | None = None,
        prepare: Callable[[Path], None] | None = None,
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


def _rows(now: str, todo_id: str, claims: list[str], cold_events: int) -> list[Row]:
    goal = ["--goal-id", GOAL]
    inspect = ["handoff", "inspect", *goal, "--todo-id", todo_id, "--agent-id", "agent-next"]
    inspect += ["--session-id", "bench", "--workspace", ".", "--format", "digest"]
    actor = ["--agent-id", AGENT, "--session-id", SESSION]

    def clear_render_cache(root: Path) -> None:
        for sub in ("cache", "private/cache"):
            shutil.rmtree(root / ".loopx" / sub / "handoff", ignore_errors=True)

    def clear_snapshot(root: Path) -> None:
        shutil.rmtree(root / ".loopx" / "cache", ignore_errors=True)

    return [
        Row("pass", "`python -c pass` (interpreter start)", lambda i: ["-c", "pass"], "small"),
        Row("help", "`loopx --help`", lambda i: ["--help"], "small"),
        Row(
            "status",
            "`loopx status --format json`",
            lambda i: ["status", *goal, "--format", "json"],
            "small",
            target=0.10,
        ),
        Row("next", "`loopx next`", lambda i: ["next", *goal], "small", target=0.10),
        Row(
            "claim",
            "`loopx todo claim` (a write: append + fsync)",
            lambda i: ["todo", "claim", *goal, "--todo-id", claims[i], *actor],
            "small",
            target=0.10,
            now=now,
        ),
        Row("review", "`loopx review`", lambda i: ["review", *goal], "small", target=0.15),
        Row(
            "inspect",
            "`loopx handoff inspect --format digest`, rendered",
            lambda i: inspect,
            "small",
            target=0.15,
            prepare=clear_render_cache,
        ),
        Row(
            "inspect_reused",
            "the same, reused from the render cache",
            lambda i: inspect,
            "small",
            target=0.15,
        ),
        Row(
            "cold",
            f"cold `loopx status --format json`, {cold_events:,} events, no snapshot",
            lambda i: ["status", *goal, "--format", "json"],
            "big",
            target=0.35,
            prepare=clear_snapshot,
        ),
    ]


def measure(rows: list[Row], variants: list[Variant], runs: int, count: bool) -> dict[str, Any]:
    """Every row `runs` times per variant, interleaved: run i of each variant back to back;
    with `count`, one more run of each under callgrind for its instruction count."""
    out: dict[str, Any] = {}
    for row in rows:
        samples: dict[str, list[tuple[float, float]]] = {v.name: [] for v in variants}
        for i in range(-1, runs):  # run -1 is the warm-up (bytecode, page cache)
            for variant in variants:
                root = variant.roots[row.root]
                if row.prepare is not None:
                    row.prepare(root)
                timed = variant.run(row.args(i + 1), root, row.now)
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
        for variant in variants if count else ():
            root = variant.roots[row.root]
            if row.prepare is not None:
                row.prepare(root)
            found = variant.instructions(row.args(runs + 1), root, row.now)
            out[row.key][variant.name]["instructions_mi"] = round(found / 1e6)
        print(
            f"  {row.key:<15}",
            "  ".join(
                f"{k} {v['cpu_s']:.3f} cpu / {v['wall_s']:.3f} wall"
                + (f" / {v['instructions_mi']} Mi" if count else "")
                for k, v in out[row.key].items()
            ),
        )
    return out


def render(r: dict[str, Any], rows: list[Row], runs: int, before: str | None) -> str:
    """The RESULTS.md section, between its markers."""
    m = r["measured"]
    counted = "instructions_mi" in m[rows[0].key]["after"]
    flags = (" --before DIR" if before else "") + (" --instructions" if counted else "")
    flags += " --installed" if r["installed"] else ""
    lines = [
        START_MARK,
        "## Per call (issue 19)",
        "",
        f"Command: `python -m benchmarks.bench_calls --runs {runs}{flags}` (loopx "
        f"{git_commit()}, Python {platform.python_version()}, {os.cpu_count()} cores, "
        f"{cpu_model()}; load average {', '.join(map(str, r['load_before']))} at the start and "
        f"{', '.join(map(str, r['load_after']))} at the end: the machine is shared, so CPU "
        "time is the figure to read, wall times carry the load"
        + (", and the instruction counts are the same on any load" if counted else "")
        + ").",
        "",
        f"A goal of {r['small']['todos']:,} todos and {r['small']['events']:,} events in a git "
        "checkout with a prepared handoff; cold status on one of "
        f"{r['big']['todos']:,} todos and {r['big']['events']:,} events. Each figure is the "
        f"median of {runs} whole `python -m loopx` processes after one warm-up"
        + (
            ", each loopx installed by `pip install` (not editable) into a virtualenv of its own"
            if r["installed"]
            else ""
        )
        + "; CPU is user + "
        "system of the process and its git children"
        + (
            "; instructions (Mi = millions) are those of the loopx process alone, one run "
            "under `valgrind --tool=callgrind`"
            if counted
            else ""
        )
        + "."
        + (
            f' "Before" is {before}, timed in the same run, interleaved call by call, each '
            "on its own copy of the goals."
            if before
            else ""
        ),
        "",
    ]
    head = ["call"]
    head += ["before CPU", "after CPU"] if before else ["CPU"]
    head += ["after wall" if before else "wall"]
    if counted:
        head += ["before / after Mi" if before else "Mi"]
    head += ["target", "met (CPU)"]
    lines += ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 3) + "---|---|"]
    for row in rows:
        after = m[row.key]["after"]
        target = "–" if row.target is None else f"≤ {row.target:.2f} s"
        met = "–" if row.target is None else ("yes" if after["cpu_s"] <= row.target else "**no**")
        cells = [row.label]
        if before:
            cells.append(f"{m[row.key]['before']['cpu_s']:.3f} s")
        cells += [f"{after['cpu_s']:.3f} s", f"{after['wall_s']:.3f} s"]
        if counted:
            mi = [str(m[row.key][v]["instructions_mi"]) for v in m[row.key]]
            cells.append(" / ".join(mi))
        cells += [target, met]
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
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions (valgrind)"
    )
    parser.add_argument(
        "--installed", action="store_true", help="time each loopx pip-installed into a venv"
    )
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args(argv)
    if args.runs < 3:
        parser.error("--runs must be at least 3")
    if args.before is not None and not (args.before / "loopx" / "__init__.py").is_file():
        parser.error(f"--before {args.before}: no loopx/ package there")
    if args.installed and args.before and not (args.before / "pyproject.toml").is_file():
        parser.error(f"--installed --before {args.before}: no pyproject.toml there to install")

    from benchmarks.synth import make_goal
    from loopx.engine.clock import add_seconds

    with tempfile.TemporaryDirectory(prefix="loopx-calls-") as tmp:
        venvs = Path(tmp) / "venvs"
        variants = [Variant("after", None, installed=args.installed, venv=venvs / "after")]
        if args.before is not None:
            older = args.before.resolve()
            variants.insert(0, Variant("before", older, installed=args.installed, venv=venvs / "b"))
        small, big = Path(tmp) / "small", Path(tmp) / "big"
        made = make_goal(small, GOAL, todos=args.todos, events=args.events)
        made_big = make_goal(big, GOAL, todos=args.cold_todos, events=args.cold_events)
        todo_id = _prepare_handoff(small, made["end"])
        now = add_seconds(made["end"], 60)
        claims = _ready_todos(small, now, args.runs + 2)
        for variant in variants:  # the same goals, one copy each
            for name, seed in (("small", small), ("big", big)):
                copy = Path(tmp) / variant.name / name
                shutil.copytree(seed, copy, symlinks=True)
                variant.roots[name] = copy
        rows = _rows(now, todo_id, claims, made_big["events"])
        result: dict[str, Any] = {"small": made, "big": made_big, "installed": args.installed}
        result["load_before"] = [round(x, 2) for x in os.getloadavg()]
        print(f"{len(variants)} variant(s), {args.runs} runs each (CPU / wall medians):")
        measured = measure(rows, variants, args.runs, args.instructions)
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
