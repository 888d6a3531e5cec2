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
    from psycopg.conninfo import make_conninfo

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
    params = psycopg.conninfo.conninfo_to_dict(url)
    as_url = f"postgresql://{params.get('user', 'postgres')}@{params.get('host', '127.0.0.1')}"
    as_url += f":{params.get('port', 5432)}/{name}"
    tmp = Path(tempfile.mkdtemp(prefix="loopx-bench-pg-"))
    results: dict[str, Any] = {"load_average_before": [round(x, 2) for x in os.getloadavg()]}
    try:
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
        runners = {"files": Runner(files, now), "postgres": Runner(pg, now)}
        status = ["status", "--goal-id", GOAL, "--format", "json"]
        for run in runners.values():
            run.once(status)  # warm each host's snapshot cache
        times: dict[str, dict[str, list[float]]] = {k: {} for k in runners}
        for _ in range(args.runs):
            for kind, run in runners.items():
                wall, cpu = timed(run, status)
                times[kind].setdefault("status", []).append(wall)
                times[kind].setdefault("status cpu", []).append(cpu)
        ids = ready_todos(files, now, args.runs)
        actor = ["--agent-id", "bench-agent", "--session-id", "bench"]
        for todo in ids:
            for kind, run in runners.items():
                # The same operation id in both: the two ledgers stay byte for byte the same.
                claim = ["todo", "claim", "--goal-id", GOAL, "--todo-id", todo, *actor]
                claim += ["--operation-id", f"bench-claim-{todo}"]
                wall, cpu = timed(run, claim)
                times[kind].setdefault("todo claim", []).append(wall)
                times[kind].setdefault("todo claim cpu", []).append(cpu)
        results["cli"] = {k: {c: median(v) for c, v in t.items()} for k, t in times.items()}
        with PostgresStore(url) as store:
            assert store.raw(GOAL) == FileStore(files).raw(GOAL), "the two ledgers differ"

        if not args.no_build:
            from loopx.build.pipeline import build

            builds: dict[str, list[float]] = {"files": [], "postgres": []}
            outputs: dict[str, Path] = {}
            for i in range(3):
                for kind, root in (("files", files), ("postgres", pg)):
                    out = tmp / f"site-{kind}-{i}"
                    began = time.perf_counter()
                    build(root, out, head=None)
                    builds[kind].append(time.perf_counter() - began)
                    outputs[kind] = out
            results["build_s"] = {k: median(v) for k, v in builds.items()}
            trees = [
                {f.relative_to(o): f.read_bytes() for f in o.rglob("*") if f.is_file()}
                for o in (outputs["files"], outputs["postgres"])
            ]
            results["build_files"] = len(trees[0])
            results["build_identical"] = bool(trees[0]) and trees[0] == trees[1]
        # Last: these goals hold bare notes (no goal.created), which a build would refuse.
        rates: dict[str, dict[str, float]] = {"files": {}, "postgres": {}}
        scratch = tmp / "appends"
        FileStore(scratch).init()
        for shared in (False, True):
            key = "one goal" if shared else "own goals"
            tag = "shared" if shared else "own"
            rates["files"][key] = appends(
                FileStore(scratch), args.writers, args.appends, shared, tag
            )
            with PostgresStore(url, max_connections=args.writers + 2) as store:
                rates["postgres"][key] = appends(store, args.writers, args.appends, shared, tag)
        results["appends_per_s"] = rates

    finally:
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


def render(r: dict[str, Any], args: argparse.Namespace) -> str:
    cli, rates = r["cli"], r["appends_per_s"]
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
        f"processes, median of {args.runs}, interleaved.",
        "",
        "| measure | file store | PostgreSQL | ratio | target | met |",
        "|---|---|---|---|---|---|",
    ]
    for name in ("todo claim", "status"):
        f, p = cli["files"][name], cli["postgres"][name]
        ratio = round(p / f, 2)
        met = "yes" if ratio <= TARGETS[name] else "**no**"
        lines.append(
            f"| `loopx {name}` (process), wall | {f:.3f} s | {p:.3f} s | {ratio}× "
            f"| ≤ {TARGETS[name]}× | {met} |"
        )
        fc, pc = cli["files"][f"{name} cpu"], cli["postgres"][f"{name} cpu"]
        lines.append(
            f"| `loopx {name}` (process), CPU of the process | {fc:.3f} s | {pc:.3f} s "
            f"| {round(pc / fc, 2)}× | – | – |"
        )
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
        ratio = round(p / f, 2)
        met = "yes" if ratio <= TARGETS["build"] else "**no**"
        lines.append(
            f"| full build, public+team, {r['build_files']:,} files (in-process, median of 3) "
            f"| {f:.2f} s | {p:.2f} s | {ratio}× | ≤ {TARGETS['build']}× | {met} |"
        )
        lines.append(
            f"| the two builds byte-identical | – | – | – | yes "
            f"| {'yes' if r['build_identical'] else '**no**'} |"
        )
    lines += [
        "",
        "- Each append is its own locked write: `BEGIN`, the goal's transaction lock and the "
        "read of the tail since the thread's last head in one round trip, then the INSERT and"
        " its `COMMIT` (durable) in another, with the NOTIFY in an asynchronous transaction "
        "of its own; the file store's is flock + read + append + fsync. On one goal the "
        "writers queue on the goal's lock in both stores.",
        "- What a PostgreSQL CLI call adds: importing the driver (psycopg and psycopg_binary,"
        " which pull in asyncio, ssl and importlib.metadata: about 0.1 s of CPU here) and a "
        "new server backend for its connection; the queries themselves are 2 round trips for "
        "`status` and 4 for a claim. That floor is why the whole-process ratios miss 1.5×; on"
        " this machine's load (8+ runnable tasks on 2 cores) wall times stretch it further.",
        f"- Load average at the end: {', '.join(map(str, r['load_average_after']))}.",
        END_MARK,
    ]
    return "\n".join(lines)


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
