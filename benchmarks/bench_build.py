"""Benchmark of `loopx build` against MkDocs on a synthetic root, side by side in one run.

    pip install -e '.[bench]'          # MkDocs
    python -m benchmarks.bench_build   # a few minutes on 2 cores; writes benchmarks/RESULTS.md

On the root of `benchmarks/gen_root.py` (50 goals, 10,000 todos, 100,000 events; public,
team and private goals) and the equivalent MkDocs project (one page per visible todo, an
index per goal):

(a) full cold build of the public and team partitions: `loopx build` as a subprocess into
    an empty folder with no snapshot or build cache, vs `mkdocs build` (target: ≥ 3×);
(b) one more event (a governed `loopx todo complete` on a public goal), then a rebuild:
    `loopx build` again as a subprocess (what a CLI user, CI or a pre-commit hook runs),
    the same `build()` in-process, and — when the API has one — in-process with the build
    cache `loopx serve` keeps; how many files were rewritten, checked on disk (inode and
    mtime) against the files whose bytes changed; vs `mkdocs build --dirty` after one page
    changed (target < 0.3 s, only changed files rewritten);
(c) peak memory: the largest single process (wait4 ru_maxrss) and the whole process tree
    (sum of PSS of the build and its workers, sampled every 20 ms) (target < 300 MB);
(d) the boundary scan's share of an in-process build: `non_public_strings` and
    `scan_public` timed separately on the same site (target < 20%);
(e) fresh processes, medians of wall and CPU time: a `loopx build` with nothing new, then
    per event (`--rebuilds`, default 5) a governed write, the rebuild (target < 0.3 s, only
    changed files rewritten) and a standalone `loopx scan` of the public partition, the
    first after the change (target < 0.3 s) and once more.

`--profile` prints where an in-process serial build spends its time (cProfile, by
file:function, as a share of the build). `--quick` runs a tenth of the size (a smoke run).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import gen_root

AUDIENCES = ("public", "team")
HEAD = gen_root.HEAD
REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "RESULTS.md"
START_MARK = "<!-- bench_build:start -->"
END_MARK = "<!-- bench_build:end -->"
MB = 1024 * 1024


# -- running a child and measuring it -----------------------------------------------------------


@dataclass
class Measured:
    seconds: float
    maxrss: int  # bytes, the largest single process of the tree (wait4)
    peak_pss: int  # bytes, the largest sum of PSS over the process tree seen
    code: int
    stdout: str
    stderr: str
    cpu: float = 0.0  # user + system seconds of the process and the children it waited for


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        with contextlib.suppress(OSError):
            out += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
    return out


def _pss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _tree_pss(pid: int) -> int:
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        total += _pss(p)
        stack += _children(p)
    return total


def run(
    cmd: list[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    sample: bool = True,
) -> Measured:
    """Run `cmd`, timing it and (with `sample`) sampling the memory of its process tree every
    20 ms, which reads each process's page tables: a benchmark that compares the times of
    tools with different numbers of processes turns it off (`peak_pss` is then 0)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=cwd, env={**os.environ, **(env or {})}, stdout=out, stderr=err
        )
        peak = 0
        stop = threading.Event()

        def sample_pss() -> None:
            nonlocal peak
            while not stop.is_set():
                peak = max(peak, _tree_pss(proc.pid))
                stop.wait(0.02)

        sampler = threading.Thread(target=sample_pss, daemon=True)
        if sample:
            sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        stop.set()
        if sample:
            sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Measured(
            seconds,
            usage.ru_maxrss * 1024,
            peak,
            proc.returncode,
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
            usage.ru_utime + usage.ru_stime,
        )


def _loopx() -> list[str]:
    return [sys.executable, "-m", "loopx"]


def _must(m: Measured, what: str) -> Measured:
    if m.code != 0:
        raise SystemExit(f"{what} failed ({m.code}):\n{m.stderr[-3000:]}{m.stdout[-2000:]}")
    return m


def _build_cmd(root: Path, out: Path) -> list[str]:
    return [*_loopx(), "build", "--root", str(root), "--out", str(out), "--head", HEAD]


# -- files on disk ----------------------------------------------------------------------------


def _tree(folder: Path) -> dict[str, tuple[int, int, str]]:
    """path → (inode, mtime_ns, sha256) of every file under `folder`."""
    out = {}
    for path in folder.rglob("*"):
        if path.is_file():
            st = path.stat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            out[path.relative_to(folder).as_posix()] = (st.st_ino, st.st_mtime_ns, digest)
    return out


def _compare(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    common = before.keys() & after.keys()
    touched = {p for p in common if before[p][:2] != after[p][:2]}
    changed = {p for p in common if before[p][2] != after[p][2]}
    return {
        "rewritten": len(touched) + len(after.keys() - before.keys()),
        "content_changed": len(changed),
        "added": sorted(after.keys() - before.keys()),
        "removed": sorted(before.keys() - after.keys()),
        "rewritten_unchanged": sorted(touched - changed),  # should be empty
        "changed_paths": sorted(changed),
    }


# -- the steps -----------------------------------------------------------------------------------


def _clear_caches(root: Path) -> None:
    cache = root / ".loopx" / "cache"
    if cache.exists():
        shutil.rmtree(cache)
    cache.mkdir()


def complete(root: Path, probe: dict[str, Any], n: int) -> Measured:
    """One governed write: the lease holder completes its todo (one event)."""
    cmd = [
        *_loopx(),
        "todo",
        "complete",
        "--root",
        str(root),
        "--goal-id",
        probe["goal_id"],
        "--todo-id",
        probe["todo_id"],
        "--agent-id",
        probe["agent_id"],
        "--session-id",
        f"bench-{n}",
        "--summary",
        f"Benchmark completion {n} of {probe['todo_id']}.",
        "--operation-id",
        f"bench-complete-{n}",
    ]
    return _must(run(cmd, env={"LOOPX_NOW": probe["now"]}), "loopx todo complete")


def _in_process_stages(root: Path, work: Path) -> dict[str, float]:
    """An in-process full build, then its stages on the same site (d)."""
    from loopx.build import pipeline
    from loopx.store.filestore import FileStore

    # Time the boundary's two stages inside the very build they belong to (first build of
    # this process, so nothing is warm that a `loopx build` process would not have warm).
    timed: dict[str, float] = {}
    counted: dict[str, Any] = {}

    def timer(name: str, fn: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            value = fn(*args, **kwargs)
            timed[name] = timed.get(name, 0.0) + time.perf_counter() - t
            counted.setdefault(name, value)
            return value

        return wrapped

    real_strings, real_scan = pipeline.non_public_strings, pipeline.scan_public
    pipeline.non_public_strings = timer("non_public_strings", real_strings)
    pipeline.scan_public = timer("scan_public", real_scan)
    try:
        t0 = time.perf_counter()
        result = pipeline.build(root, work / "inproc", audiences=AUDIENCES, head=HEAD)
        t_build = time.perf_counter() - t0
    finally:
        pipeline.non_public_strings, pipeline.scan_public = real_strings, real_scan
    site = result.site
    t_strings, t_scan = timed["non_public_strings"], timed["scan_public"]
    forbidden = counted["non_public_strings"]
    assert not counted["scan_public"], counted["scan_public"][:5]

    store = FileStore(root)
    t0 = time.perf_counter()
    pipeline.gather(store)
    t_gather = time.perf_counter() - t0
    public = [a for a in site.artifacts.values() if a.audience == "public"]
    return {
        "build": t_build,
        "gather": t_gather,
        "non_public_strings": t_strings,
        "scan_public": t_scan,
        "forbidden_strings": _count(forbidden),
        "public_files": len(public),
        "public_bytes": sum(len(a.data) for a in public),
    }


def _count(forbidden: Any) -> int:
    """Size of the forbidden set, whatever shape `non_public_strings` returns."""
    if hasattr(forbidden, "texts"):
        return len(forbidden.texts) + len(getattr(forbidden, "ids", ()))
    return len(forbidden)


def _cached_rebuild(root: Path, work: Path, probe: dict[str, Any]) -> dict[str, Any] | None:
    """The `loopx serve` path: a build cache kept in the process, one event, a rebuild."""
    import inspect

    from loopx.build import pipeline

    if "cache" not in inspect.signature(pipeline.build).parameters:
        return None
    from loopx.build.work import BuildCache

    out = work / "cached"
    cache = BuildCache()
    pipeline.build(root, out, audiences=AUDIENCES, head=HEAD, cache=cache)
    before = _tree(out)
    complete(root, probe, 2)
    t0 = time.perf_counter()
    result = pipeline.build(root, out, audiences=AUDIENCES, head=HEAD, cache=cache)
    seconds = time.perf_counter() - t0
    disk = _compare(before, _tree(out))
    assert result.report is not None
    return {"seconds": seconds, "reported_written": len(result.report.written), **disk}


def _mkdocs_available() -> bool:
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        return False
    return True


def bench(
    work: Path, *, goals: int, todos: int, events: int, rounds: int, rebuilds: int = 5
) -> dict[str, Any]:
    r: dict[str, Any] = {"machine": _machine(), "size": [goals, todos, events]}
    root, md = work / "root", work / "md"

    t0 = time.perf_counter()
    r["generated"] = gen_root.generate(root, goals=goals, todos=todos, events=events)
    r["generate_s"] = time.perf_counter() - t0
    probes = r["generated"]["probes"]
    assert len(probes) >= 3, "the first public goal needs three claimed public todos"
    verify = _must(run([*_loopx(), "verify", "--root", str(root)]), "loopx verify")
    r["verify"] = {"seconds": verify.seconds, "goals_ok": verify.stdout.count(": ok")}
    r["markdown"] = gen_root.write_markdown(root, md)
    mkdocs = _mkdocs_available()

    # (a) + (c): cold full builds, alternating, best of `rounds`
    loopx_runs, mkdocs_runs = [], []
    for i in range(rounds):
        _clear_caches(root)
        out = work / f"cold-{i}"
        loopx_runs.append(_must(run(_build_cmd(root, out)), "loopx build"))
        if mkdocs:
            site = work / f"mkdocs-{i}"
            cmd = [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(md / "mkdocs.yml")]
            mkdocs_runs.append(_must(run([*cmd, "-d", str(site)]), "mkdocs build"))
    out = work / f"cold-{rounds - 1}"
    r["files"] = sum(1 for p in out.rglob("*") if p.is_file())
    r["cold"] = min(m.seconds for m in loopx_runs)
    r["cold_all"] = [m.seconds for m in loopx_runs]
    r["cold_maxrss"] = max(m.maxrss for m in loopx_runs)
    r["cold_pss"] = max(m.peak_pss for m in loopx_runs)
    if mkdocs_runs:
        r["mkdocs"] = min(m.seconds for m in mkdocs_runs)
        r["mkdocs_all"] = [m.seconds for m in mkdocs_runs]
        r["mkdocs_maxrss"] = max(m.maxrss for m in mkdocs_runs)
        r["mkdocs_pages"] = sum(1 for _ in (work / "mkdocs-0").rglob("*.html"))

    # (b): one governed write, then rebuild the same folder
    before = _tree(out)
    r["write_s"] = complete(root, probes[0], 1).seconds
    inc = _must(run([*_build_cmd(root, out), "--format", "json"]), "loopx rebuild")
    disk = _compare(before, _tree(out))
    reported = json.loads(inc.stdout)
    r["rebuild"] = {
        "seconds": inc.seconds,
        "maxrss": inc.maxrss,
        "peak_pss": inc.peak_pss,
        "reported_written": len(reported.get("written", [])),
        **disk,
    }
    r["fresh"] = _fresh_rebuilds(root, out, probes[3 : 3 + rebuilds])
    startup = _must(run([*_loopx(), "--help"]), "loopx --help")
    r["startup_s"] = startup.seconds
    if mkdocs:
        page = md / "docs" / "public" / probes[0]["goal_id"] / f"{probes[0]['todo_id']}.md"
        page.write_text(page.read_text("utf-8").replace("**active**", "**done**"), "utf-8")
        site = work / "mkdocs-0"
        cmd = [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "-q",
            "--dirty",
            "-f",
            str(md / "mkdocs.yml"),
        ]
        r["mkdocs_dirty"] = _must(run([*cmd, "-d", str(site)]), "mkdocs --dirty").seconds

    # (d) and the in-process figures (the interpreter and imports already paid)
    r["stages"] = _in_process_stages(root, work)
    before_inproc = _tree(out)
    complete(root, probes[1], 3)
    t0 = time.perf_counter()
    from loopx.build import pipeline

    res = pipeline.build(root, out, audiences=AUDIENCES, head=HEAD)
    r["rebuild_inproc"] = {
        "seconds": time.perf_counter() - t0,
        "reported_written": len(res.report.written) if res.report else None,
        **_compare(before_inproc, _tree(out)),
    }
    r["rebuild_cached"] = _cached_rebuild(root, work, probes[2])
    return r


def _fresh_rebuilds(root: Path, out: Path, probes: list[dict[str, Any]]) -> dict[str, Any]:
    """(e) What a CLI user, CI or a pre-commit hook waits for, each a fresh process: a
    rebuild with nothing new, then per probe one governed write, the rebuild after it (files
    rewritten checked on disk) and a standalone `loopx scan` of the public partition (the
    first after the change, then once more)."""
    noop = [_must(run(_build_cmd(root, out)), "loopx build") for _ in range(3)]
    builds, rewritten, scans, again = [], [], [], []
    scan_cmd = [*_loopx(), "scan", "--root", str(root), str(out / "public")]
    for n, probe in enumerate(probes, 10):
        before = _tree(out)
        complete(root, probe, n)
        builds.append(_must(run(_build_cmd(root, out)), "loopx rebuild"))
        disk = _compare(before, _tree(out))
        rewritten.append((disk["rewritten"], len(disk["rewritten_unchanged"])))
        scans.append(_must(run(scan_cmd), "loopx scan"))
        again.append(_must(run(scan_cmd), "loopx scan"))

    def med(runs: list[Measured]) -> dict[str, float]:
        return {
            "wall": statistics.median(m.seconds for m in runs),
            "cpu": statistics.median(m.cpu for m in runs),
            "maxrss": max(m.maxrss for m in runs),
        }

    return {
        "events": len(probes),
        "noop": med(noop),
        "rebuild": med(builds),
        "rebuild_cpus": [round(m.cpu, 2) for m in builds],
        "rewritten": rewritten,
        "scan": med(scans),
        "scan_cpus": [round(m.cpu, 2) for m in scans],
        "scan_again": med(again),
    }


def git_out(repo: Path, *args: str) -> str:
    """What `git -C REPO ARGS` prints, stripped (empty if git fails: a label, not a check)."""
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    return done.stdout.strip()


def _machine() -> dict[str, Any]:
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    rev = git_out(REPO, "rev-parse", "--short", "HEAD")
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "load": os.getloadavg(),
        "loopx_commit": rev,
    }


# -- reporting -------------------------------------------------------------------------------------


def _verdict(ok: bool) -> str:
    return "yes" if ok else "**no**"


def table(r: dict[str, Any]) -> str:
    st = r["stages"]
    scan = st["non_public_strings"] + st["scan_public"]
    share = scan / st["build"]
    reb = r["rebuild"]
    rows = [("measure", "loopx", "peer / target", "met")]
    if "mkdocs" in r:
        ratio = r["mkdocs"] / r["cold"]
        rows.append(
            (
                f"(a) cold full build, public+team ({r['files']} files; MkDocs "
                f"{r['mkdocs_pages']} pages)",
                f"{r['cold']:.1f} s",
                f"MkDocs {r['mkdocs']:.1f} s → loopx {ratio:.1f}× faster (target ≥ 3×)",
                _verdict(ratio >= 3),
            )
        )
    else:
        rows.append(("(a) cold full build", f"{r['cold']:.1f} s", "MkDocs not installed", "–"))
    rows.append(
        (
            "(b) rebuild after one event, `loopx build` (subprocess)",
            f"{reb['seconds']:.2f} s",
            "< 0.3 s"
            + (f"; MkDocs --dirty {r['mkdocs_dirty']:.1f} s" if "mkdocs_dirty" in r else ""),
            _verdict(reb["seconds"] < 0.3),
        )
    )
    inp = r["rebuild_inproc"]
    rows.append(
        (
            "(b) same rebuild, `build()` in-process (no interpreter start-up)",
            f"{inp['seconds']:.2f} s",
            "< 0.3 s",
            _verdict(inp["seconds"] < 0.3),
        )
    )
    cached = r.get("rebuild_cached")
    if cached:
        rows.append(
            (
                "(b) same rebuild with the in-process build cache (`loopx serve`)",
                f"{cached['seconds']:.2f} s",
                "< 0.3 s",
                _verdict(cached["seconds"] < 0.3),
            )
        )
    fr = r.get("fresh")
    if fr:
        reb_f, scan_f = fr["rebuild"], fr["scan"]
        rows.append(
            (
                f"(e) one-event rebuild, fresh `loopx build` process (median of {fr['events']})",
                f"{reb_f['cpu']:.2f} s CPU, {reb_f['wall']:.2f} s wall",
                "< 0.3 s",
                _verdict(reb_f["cpu"] < 0.3),
            )
        )
        rows.append(
            (
                "(e) no-event rebuild, fresh process (median of 3)",
                f"{fr['noop']['cpu']:.2f} s CPU, {fr['noop']['wall']:.2f} s wall",
                "–",
                "–",
            )
        )
        rows.append(
            (
                "(e) `loopx scan` of the public partition, first after the change (median)",
                f"{scan_f['cpu']:.2f} s CPU, {scan_f['wall']:.2f} s wall; again: "
                f"{fr['scan_again']['cpu']:.2f} s CPU",
                "< 0.3 s",
                _verdict(scan_f["cpu"] < 0.3),
            )
        )
    rows.append(
        (
            "(b) files rewritten by the rebuild (checked on disk)",
            f"{reb['rewritten']} of {r['files']}",
            f"{reb['content_changed']} changed content; "
            f"{len(reb['rewritten_unchanged'])} rewritten without a change",
            _verdict(not reb["rewritten_unchanged"]),
        )
    )
    rows.append(
        (
            "(c) peak memory, cold build: largest process / whole tree (PSS)",
            f"{r['cold_maxrss'] / MB:.0f} MB / {r['cold_pss'] / MB:.0f} MB",
            "< 300 MB"
            + (f"; MkDocs {r['mkdocs_maxrss'] / MB:.0f} MB" if "mkdocs_maxrss" in r else ""),
            _verdict(max(r["cold_maxrss"], r["cold_pss"]) < 300 * MB),
        )
    )
    rows.append(
        (
            "(d) boundary scan: `non_public_strings` + `scan_public`",
            f"{st['non_public_strings']:.2f} s + {st['scan_public']:.2f} s "
            f"= {share:.0%} of a {st['build']:.1f} s in-process build",
            "< 20%",
            _verdict(share < 0.2),
        )
    )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def details(r: dict[str, Any]) -> str:
    st = r["stages"]
    reb, inp = r["rebuild"], r["rebuild_inproc"]
    g = r["generated"]
    lines = [
        f"- Root: {g['goals']} goals ({g['goal_visibility']}), {g['todos']} todos, "
        f"{g['events']} events, {g['ledger_bytes'] / MB:.0f} MB of ledger, {g['blobs']} "
        f"private blobs; generated in {r['generate_s']:.1f} s; `loopx verify`: "
        f"{r['verify']['goals_ok']} goals ok in {r['verify']['seconds']:.1f} s.",
        f"- Cold builds (all rounds): loopx {', '.join(f'{s:.1f}' for s in r['cold_all'])} s"
        + (
            f"; MkDocs {', '.join(f'{s:.1f}' for s in r['mkdocs_all'])} s"
            if "mkdocs_all" in r
            else ""
        )
        + ".",
        f"- In-process build stages: gather (fold all goals, snapshots warm) "
        f"{st['gather']:.2f} s; non_public_strings "
        f"{st['non_public_strings']:.2f} s ({st['forbidden_strings']} strings); scan_public "
        f"{st['scan_public']:.2f} s over {st['public_files']} public files "
        f"({st['public_bytes'] / MB:.1f} MB); full build() {st['build']:.2f} s.",
        f"- Rebuild after one event: subprocess {reb['seconds']:.2f} s (peak "
        f"{reb['maxrss'] / MB:.0f} MB / tree {reb['peak_pss'] / MB:.0f} MB), "
        f"{reb['rewritten']} files rewritten, {reb['content_changed']} with new content, "
        f"build reported {reb['reported_written']} written; in-process "
        f"{inp['seconds']:.2f} s, {inp['rewritten']} rewritten. `loopx --help` alone: "
        f"{r['startup_s']:.2f} s; "
        f"the governed write itself: {r['write_s']:.2f} s.",
        *(
            [
                f"- Fresh processes (e): one-event rebuilds, CPU {r['fresh']['rebuild_cpus']} s, "
                f"files rewritten (all, without a change) {r['fresh']['rewritten']}; first scan "
                f"after each, CPU {r['fresh']['scan_cpus']} s; peak memory of a rebuild "
                f"{r['fresh']['rebuild']['maxrss'] / MB:.0f} MB."
            ]
            if r.get("fresh")
            else []
        ),
        "- Files the one-event rebuild changed: "
        + ", ".join(f"`{p}`" for p in reb["changed_paths"][:12])
        + (f" … (+{len(reb['changed_paths']) - 12})" if len(reb["changed_paths"]) > 12 else "")
        + ".",
    ]
    if reb["rewritten_unchanged"]:
        lines.append(
            "- Rewritten without a change: "
            + ", ".join(f"`{p}`" for p in reb["rewritten_unchanged"][:10])
        )
    return "\n".join(lines)


def section(r: dict[str, Any]) -> str:
    m = r["machine"]
    load = ", ".join(f"{x:.1f}" for x in m["load"])
    return "\n".join(
        [
            START_MARK,
            "## Build",
            "",
            "Command: `pip install -e '.[bench]' && python -m benchmarks.bench_build` "
            f"(loopx {m['loopx_commit']}, Python {m['python']}, {m['cores']} cores, "
            f"{m['cpu'] or 'unknown CPU'}; load average at start {load}: the machine is "
            "shared, so wall times carry noise).",
            "",
            table(r),
            "",
            details(r),
            END_MARK,
        ]
    )


def write_results(text: str) -> None:
    old = RESULTS.read_text("utf-8") if RESULTS.exists() else "# Benchmark results\n"
    if START_MARK in old and END_MARK in old:
        a = old.index(START_MARK)
        b = old.index(END_MARK) + len(END_MARK)
        new = old[:a] + text + old[b:]
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    RESULTS.write_text(new, "utf-8")


# -- profile -----------------------------------------------------------------------------------


def profile(root: Path, work: Path, top: int = 30) -> str:
    """Where a serial in-process build spends its time, by file:function."""
    import cProfile
    import pstats

    from loopx.build import pipeline

    os.environ["LOOPX_BUILD_WORKERS"] = "1"
    prof = cProfile.Profile()
    prof.enable()
    t0 = time.perf_counter()
    pipeline.build(root, work / "profiled", audiences=AUDIENCES, head=HEAD)
    total = time.perf_counter() - t0
    prof.disable()
    stats = pstats.Stats(prof)
    rows = []
    for (file, line, fn), (_cc, _nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        short = file.replace(str(REPO) + "/", "")
        if "site-packages/" in short:
            short = short.split("site-packages/", 1)[1]
        elif "/lib/python" in short:
            short = "stdlib/" + short.split("/lib/python", 1)[1].split("/", 1)[-1]
        rows.append((tt, ct, f"{short}:{line}:{fn}"))
    out = [f"serial in-process build: {total:.1f} s (profiled)", "", "by own time:"]
    for tt, ct, name in sorted(rows, reverse=True)[:top]:
        out.append(f"  {tt / total:6.1%} own  {ct / total:6.1%} cum  {name}")
    out += ["", "by cumulative time (loopx functions):"]
    mine = [row for row in rows if row[2].startswith("loopx/")]
    for tt, ct, name in sorted(mine, key=lambda x: -x[1])[:top]:
        out.append(f"  {ct / total:6.1%} cum  {tt / total:6.1%} own  {name}")
    return "\n".join(out)


@contextlib.contextmanager
def workdir(path: Path | None, keep: bool) -> Iterator[Path]:
    if path is not None:
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        yield path
        return
    tmp = Path(tempfile.mkdtemp(prefix="loopx-bench-"))
    try:
        yield tmp
    finally:
        if keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--work", type=Path, help="working folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--rounds", type=int, default=1, help="cold builds of each tool")
    parser.add_argument(
        "--rebuilds", type=int, default=5, help="one-event fresh-process rebuilds (at most 6)"
    )
    parser.add_argument("--quick", action="store_true", help="a tenth of the size (smoke run)")
    parser.add_argument("--profile", action="store_true", help="profile a serial build only")
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    parser.add_argument("--json", type=Path, help="also write all figures as JSON here")
    args = parser.parse_args(argv)
    size = (gen_root.GOALS, gen_root.TODOS, gen_root.EVENTS)
    if args.quick:
        size = (10, 1000, 10_000)
    with workdir(args.work, args.keep) as work:
        if args.profile:
            root = work / "root"
            gen_root.generate(root, goals=size[0], todos=size[1], events=size[2])
            print(profile(root, work))
            return 0
        r = bench(
            work,
            goals=size[0],
            todos=size[1],
            events=size[2],
            rounds=args.rounds,
            rebuilds=min(args.rebuilds, 6),
        )
    text = section(r)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(r, indent=1, default=str), "utf-8")
    if not args.no_write and not args.quick:
        write_results(text)
        print(f"\nwrote {RESULTS.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
