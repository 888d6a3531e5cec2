"""The PostgreSQL store beside the file store, in one run, on the same events.

    python -m benchmarks.bench_postgres [--todos 5000] [--events 50000] [--runs 7]
        [--writers 8] [--appends 250] [--no-build] [--no-write]

A goal of 5,000 todos / 50,000 events is generated into a file-store project
(`benchmarks/synth.py`) and imported into a scratch PostgreSQL database
(`LOOPX_BENCH_PG`, default 127.0.0.1:5432 as postgres; created and dropped here), which a
second project folder points at. Then, interleaved so machine noise hits both alike:
`loopx todo claim` and `loopx status` as whole processes against each project; in-process
appends from 8 threads (each on its own goal, and all on one goal); a full `build()` of
public+team from each. Results go to stdout, benchmarks/out/bench_postgres.json and (unless
--no-write) the "PostgreSQL store" section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import secrets
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_engine import GOAL, Runner, cpu_model, git_commit, ready_todos, write_results
from benchmarks.synth import make_goal
from loopx.engine.clock import add_seconds
from loopx.store.filestore import FileStore
from loopx.store.postgres import PostgresStore
from loopx.store.select import record
from loopx.store.transfer import copy_store

START_MARK, END_MARK = "<!-- bench_postgres:start -->", "<!-- bench_postgres:end -->"
ADMIN = os.environ.get("LOOPX_BENCH_PG", "host=127.0.0.1 port=5432 user=postgres dbname=postgres")
TARGETS = {"todo claim": 1.5, "status": 1.5, "build": 1.2}


def timed(run: Runner, args: list[str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system of the loopx process) of one whole call.

    On a shared machine the wall time mostly measures the queue for a core; the CPU time
    is what the call itself costs (the database server's own CPU is not in it)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = run.once(args)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def median(values: list[float]) -> float:
    return round(statistics.median(values), 4)


def envelope(goal: str, agent: str, n: int) -> dict[str, Any]:
    op = f"{agent}-{n}"
    return {
        "operation_id": op,
        "op_hash": hashlib.sha256(op.encode()).hexdigest(),
        "type": "note.added",
        "v": 1,
        "goal_id": goal,
        "actor": {"agent_id": agent, "session_id": agent},
        "recorded_at": "2026-03-01T12:00:00Z",
        "visibility": "team",
        "data": {"note_id": op, "kind": "note", "text": f"{agent} note {n}"},
    }


def appends(store: Any, writers: int, count: int, shared: bool, tag: str) -> float:
    """Appends per second from `writers` threads, each making `count` separate locked appends
    (on its own goal, or all on one goal), from the last head each thread saw."""
    start_line = threading.Barrier(writers + 1)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        goal = f"{tag}-shared" if shared else f"{tag}-{i}"
        agent = f"w{i}"
        cursor = None
        start_line.wait()
        try:
            for n in range(count):
                with store.writing(goal, cursor) as writer:
                    writer.append([envelope(goal, agent, n)])
                    cursor = writer.cursor
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    start_line.wait()
    began = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    if errors:
        raise errors[0]
    goals = [f"{tag}-shared"] if shared else [f"{tag}-{i}" for i in range(writers)]
    total = sum(len(store.read(g).events) for g in goals)
    assert total == writers * count, (total, writers * count)
    assert all(store.verify(g).ok for g in goals)
    return round(total / elapsed, 1)


def main(argv: list[str] | None = None) -> int:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_postgres")
    parser.add_argument("--todos", type=int, default=5000)
    parser.add_argument("--events", type=int, default=50000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--appends", type=int, default=250)
    parser.add_argument("--no-build", action="store_true", help="skip the full builds")
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/bench_postgres.json"))
    args = parser.parse_args(argv)

    name = f"loopx_bench_{secrets.token_hex(4)}"
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_conninfo(ADMIN, dbname=name)
    params = conninfo_to_dict(url)
    as_url = f"postgresql://{params.get('user', 'postgres')}@{params.get('host', '127.0.0.1')}"
    as_url += f":{params.get('port', 5432)}/{name}"
    tmp = Path(tempfile.mkdtemp(prefix="loopx-bench-pg-"))
    results: dict[str, Any] = {"load_average_before": [round(x, 2) for x in os.getloadavg()]}
    try:
        results |= measure(args, url, as_url, tmp)
    finally:
        from loopx.store.broker_client import stop

        stop(as_url)  # the broker this run started (it would leave by itself when idle)
        shutil.rmtree(tmp, ignore_errors=True)
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    text = render(results, args)
    print(text)
    if not args.no_write:
        write_section(text)
    return 0


def measure(args: argparse.Namespace, url: str, as_url: str, tmp: Path) -> dict[str, Any]:
    """The goal in both stores, then every figure, each store's interleaved with the other's."""
    results: dict[str, Any] = {}
    files, pg = tmp / "files", tmp / "postgres"
    made = make_goal(files, GOAL, todos=args.todos, events=args.events)
    results["goal"] = made
    (pg / ".loopx").mkdir(parents=True)
    record(pg, as_url)
    began = time.perf_counter()
    with PostgresStore(url) as store:
        copy_store(FileStore(files), store)
    results["import_s"] = round(time.perf_counter() - began, 2)
    print(f"goal: {made['events']} events; imported into PostgreSQL in {results['import_s']} s")

    now = add_seconds(made["end"], 60)
    todos = ready_todos(files, now, 3 * args.runs)
    cli_todos, direct_todos = todos[: args.runs], todos[args.runs : 2 * args.runs]
    results["cli"] = whole_processes(files, pg, now, cli_todos, direct_todos, args.runs)
    results["in_process"] = in_process(files, pg, now, todos[2 * args.runs :], args.runs)
    results["startup"] = startup(args.runs)
    with PostgresStore(url) as store:
        assert store.raw(GOAL) == FileStore(files).raw(GOAL), "the two ledgers differ"
    if not args.no_build:
        results |= builds(files, pg, tmp)
    results["appends_per_s"] = append_rates(url, tmp, args)
    return results


STATUS = ["status", "--goal-id", GOAL, "--format", "json"]


def claim_args(todo: str) -> list[str]:
    """A claim with the same operation id in both stores: the ledgers stay byte-identical."""
    actor = ["--agent-id", "bench-agent", "--session-id", "bench"]
    return ["todo", "claim", "--goal-id", GOAL, "--todo-id", todo, *actor]


def calls(todos: list[str], runs: int) -> list[tuple[str, list[str]]]:
    claims = [claim_args(t) + ["--operation-id", f"bench-claim-{t}"] for t in todos]
    return [("status", STATUS)] * runs + [("todo claim", c) for c in claims]


def whole_processes(
    files: Path, pg: Path, now: str, todos: list[str], direct_todos: list[str], runs: int
) -> dict[str, dict[str, float]]:
    """`status` and `todo claim` as whole processes: median wall and CPU time, on files,
    on PostgreSQL through the store broker (the default), and on PostgreSQL connecting
    directly (`LOOPX_PG_BROKER=0`). The direct claims take other todos, which the file
    store then claims too (untimed), so the two ledgers stay byte-identical."""
    runners = {"files": Runner(files, now), "postgres": Runner(pg, now), "direct": Runner(pg, now)}
    runners["direct"].env["LOOPX_PG_BROKER"] = "0"
    for run in runners.values():
        # What a user runs: an installed loopx has its bytecode (written by the warm-up).
        run.env.pop("PYTHONDONTWRITEBYTECODE", None)
        run.once(STATUS)  # warm each host's snapshot cache (and start the broker)
    times: dict[str, dict[str, list[float]]] = {k: {} for k in runners}
    direct = calls(direct_todos, runs)
    for (name, args), (_, direct_args) in zip(calls(todos, runs), direct, strict=True):
        for kind, run in runners.items():
            wall, cpu = timed(run, direct_args if kind == "direct" else args)
            times[kind].setdefault(name, []).append(wall)
            times[kind].setdefault(f"{name} cpu", []).append(cpu)
        if name == "todo claim":
            runners["files"].once(direct_args)
    return {k: {c: median(v) for c, v in t.items()} for k, t in times.items()}


def in_process(
    files: Path, pg: Path, now: str, todos: list[str], runs: int
) -> dict[str, dict[str, float]]:
    """The same commands through `loopx.cli.main.main` in this process, as a long-running
    caller (an MCP server) runs them: no interpreter start, no imports. Each call still opens
    its store (a new connection) and closes it."""
    import contextlib
    import io

    from loopx.cli.main import main as loopx_main

    saved = dict(os.environ)
    times: dict[str, dict[str, list[float]]] = {"files": {}, "postgres": {}}
    try:
        for key in [k for k in os.environ if k.startswith("LOOPX_")]:
            del os.environ[key]
        os.environ["LOOPX_NOW"] = now
        for name, args in [("warm-up", STATUS), *calls(todos, runs)]:
            for kind, root in (("files", files), ("postgres", pg)):
                os.environ["LOOPX_ROOT"] = str(root)
                began, cpu = time.perf_counter(), time.process_time()
                with contextlib.redirect_stdout(io.TextIOWrapper(io.BytesIO())):
                    loopx_main(args)
                times[kind].setdefault(name, []).append(time.perf_counter() - began)
                times[kind].setdefault(f"{name} cpu", []).append(time.process_time() - cpu)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return {
        k: {c: median(v) for c, v in t.items() if not c.startswith("warm-up")}
        for k, t in times.items()
    }


def startup(runs: int) -> dict[str, float]:
    """CPU time of a process that only starts the interpreter, imports loopx's CLI, or
    imports the PostgreSQL driver (median)."""
    import resource
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    codes = {
        "interpreter": "pass",
        "loopx CLI": "import loopx.cli.main",
        "psycopg": "import psycopg",
    }
    cpu: dict[str, list[float]] = {name: [] for name in codes}
    for _ in range(runs):
        for name, code in codes.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, "-c", code], env=env, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            cpu[name].append(used)
    return {name: median(values) for name, values in cpu.items()}


def builds(files: Path, pg: Path, tmp: Path) -> dict[str, Any]:
    """A full public+team build from each store, in-process (median of 3), compared."""
    from loopx.build.pipeline import build

    took: dict[str, list[float]] = {"files": [], "postgres": []}
    outputs: dict[str, Path] = {}
    for i in range(3):
        for kind, root in (("files", files), ("postgres", pg)):
            out = tmp / f"site-{kind}-{i}"
            began = time.perf_counter()
            build(root, out, head=None)
            took[kind].append(time.perf_counter() - began)
            outputs[kind] = out
    trees = [
        {f.relative_to(o): f.read_bytes() for f in o.rglob("*") if f.is_file()}
        for o in (outputs["files"], outputs["postgres"])
    ]
    return {
        "build_s": {k: median(v) for k, v in took.items()},
        "build_files": len(trees[0]),
        "build_identical": bool(trees[0]) and trees[0] == trees[1],
    }


def append_rates(url: str, tmp: Path, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Appends per second from `--writers` threads, on their own goals and on one goal.
    Last: these goals hold bare notes (no goal.created), which a build would refuse."""
    rates: dict[str, dict[str, float]] = {"files": {}, "postgres": {}}
    scratch = tmp / "appends"
    FileStore(scratch).init()
    for shared in (False, True):
        key = "one goal" if shared else "own goals"
        tag = "shared" if shared else "own"
        rates["files"][key] = appends(FileStore(scratch), args.writers, args.appends, shared, tag)
        with PostgresStore(url, max_connections=args.writers + 2) as store:
            rates["postgres"][key] = appends(store, args.writers, args.appends, shared, tag)
    return rates


def render(r: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        START_MARK,
        "## PostgreSQL store",
        "",
        f"Command: `python -m benchmarks.bench_postgres --runs {args.runs}` (loopx "
        f"{git_commit()}, {os.cpu_count()} cores, {cpu_model()}, PostgreSQL on 127.0.0.1 with "
        f"its default durable commits; load average at start "
        f"{', '.join(map(str, r['load_average_before']))}: the machine is shared).",
        "",
        f"The same goal ({r['goal']['todos']:,} todos, {r['goal']['events']:,} events) in a "
        f"file store and, imported in {r['import_s']} s, in PostgreSQL; CLI figures are whole "
        f"processes (bytecode compiled, snapshot cache warm), median of {args.runs}, "
        "interleaved; in-process figures are the same commands through `loopx.cli.main.main` "
        "in one process (as the MCP server runs them), each opening and closing its store.",
        "",
        "| measure | file store | PostgreSQL | ratio | target | met |",
        "|---|---|---|---|---|---|",
        *command_rows(r),
        *store_rows(r, args),
        "",
        *notes(r),
        f"- Load average at the end: {', '.join(map(str, r['load_average_after']))}.",
        END_MARK,
    ]
    return "\n".join(lines)


def row(measure: str, f: float, p: float, target: float | None) -> str:
    ratio = round(p / f, 2)
    met = "–" if target is None else ("yes" if ratio <= target else "**no**")
    return (
        f"| {measure} | {f:.3f} s | {p:.3f} s | {ratio}× | {f'≤ {target}×' if target else '–'} "
        f"| {met} |"
    )


def command_rows(r: dict[str, Any]) -> list[str]:
    lines = []
    for name in ("todo claim", "status"):
        for kind, where, pg in (
            ("cli", "process, broker", "postgres"),
            ("cli", "process, direct", "direct"),
            ("in_process", "in-process", "postgres"),
        ):
            fig = r[kind]
            target = TARGETS[name] if where == "process, broker" else None
            lines.append(row(f"`loopx {name}` ({where}), wall", *pair(fig, name, pg), target))
            cpu = pair(fig, f"{name} cpu", pg)
            lines.append(row(f"`loopx {name}` ({where}), CPU", *cpu, None))
    return lines


def pair(fig: dict[str, dict[str, float]], key: str, pg: str = "postgres") -> tuple[float, float]:
    return fig["files"][key], fig[pg][key]


def store_rows(r: dict[str, Any], args: argparse.Namespace) -> list[str]:
    lines = []
    rates = r["appends_per_s"]
    for key in ("own goals", "one goal"):
        f, p = rates["files"][key], rates["postgres"][key]
        target = "≥ 500/s" if key == "own goals" else "–"
        met = ("yes" if p >= 500 else "**no**") if key == "own goals" else "–"
        lines.append(
            f"| in-process appends, {args.writers} writers × {args.appends}, {key} "
            f"| {f:.0f}/s | {p:.0f}/s | – | {target} | {met} |"
        )
    if "build_s" in r:
        f, p = r["build_s"]["files"], r["build_s"]["postgres"]
        files = f"{r['build_files']:,} files"
        lines.append(row(f"full build, public+team, {files} (in-process, median of 3)", f, p, 1.2))
        same = "yes" if r["build_identical"] else "**no**"
        lines.append(f"| the two builds byte-identical | – | – | – | yes | {same} |")
    return lines


def notes(r: dict[str, Any]) -> list[str]:
    cli, inp, up = r["cli"], r["in_process"], r["startup"]
    driver = up["psycopg"] - up["interpreter"]
    extra = {
        n: cli["direct"][f"{n} cpu"] - cli["files"][f"{n} cpu"] for n in ("status", "todo claim")
    }
    return [
        '- "broker" is the default: a CLI process on a PostgreSQL store talks over a Unix '
        "socket to this user's store broker (`loopx/store/broker.py`), which keeps the driver "
        'imported and its connections open; "direct" is `LOOPX_PG_BROKER=0`, each process '
        "importing the driver and opening a server backend of its own.",
        f"- Where a direct process's extra time goes: its CPU exceeds the file store's by "
        f"{extra['status']:.3f} s for `status` and {extra['todo claim']:.3f} s for a claim; "
        f"importing the driver alone accounts for {driver:.3f} s of it (a process that only "
        f"runs `import psycopg`: {up['psycopg']:.3f} s of CPU, against {up['interpreter']:.3f} s "
        f"for an empty interpreter and {up['loopx CLI']:.3f} s for one importing loopx's CLI). "
        "psycopg imports its whole package (its C extension, libpq, hundreds of error classes, "
        "every type adapter, asyncio, and `importlib.metadata` for its version) whatever is "
        "used; the broker is how a short-lived process avoids it.",
        "- The queries themselves are few: `status` is one round trip (the schema check rides "
        "in the pipeline of the read) and a claim three (the goal's existence; `BEGIN`, the "
        "goal's lock and the tail; the insert, its durable `COMMIT` and the NOTIFY), counted "
        "from libpq's protocol trace in `tests/test_postgres_round_trips.py`; through the "
        "broker each is also one message over the socket. In-process, a PostgreSQL `status` "
        f"takes {inp['postgres']['status']:.3f} s against {inp['files']['status']:.3f} s and a "
        f"claim {inp['postgres']['todo claim']:.3f} s against "
        f"{inp['files']['todo claim']:.3f} s.",
        "- Each in-process append is its own locked write: `BEGIN`, the goal's transaction lock "
        "and the read of the tail in one round trip, then the insert and its `COMMIT` in "
        "another, with the NOTIFY in an asynchronous transaction of its own; the file store's "
        "is flock + read + append + fsync. On one goal the writers queue on the goal's lock in "
        "both stores.",
    ]


def write_section(text: str) -> None:
    import benchmarks.bench_engine as engine

    saved = engine.START_MARK, engine.END_MARK
    engine.START_MARK, engine.END_MARK = START_MARK, END_MARK
    try:
        write_results(text)
    finally:
        engine.START_MARK, engine.END_MARK = saved


if __name__ == "__main__":
    raise SystemExit(main())
