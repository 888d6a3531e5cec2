"""What a fresh `loopx build` costs before it does any work: the floor under the one-event
rebuild (issue 19), in instructions, which the machine's load does not change.

    python -m benchmarks.bench_floor [--quick] [--work DIR --keep]

On the root of `benchmarks/gen_root.py` (50 goals, 10,000 todos, 100,000 events), built once
cold and once more with nothing new, it runs under `valgrind --tool=callgrind`
(`PYTHONHASHSEED=0`, this checkout's modules compiled beforehand, as an installed package's
are), each a fresh process:

- `python -c pass`: the interpreter's own start;
- the import, and nothing else, of every module outside loopx that a one-event rebuild
  imports (the Python library, jinja2, orjson, ...), then of every module it
  imports (loopx's own too): the list is read off `python -X importtime` of that very
  rebuild;
- `loopx build` with nothing new, then after one event (a governed `loopx todo complete` on a
  public goal, as `bench_rebuild` writes it).

The report gives each figure, what it adds to the imports under it, and roughly the CPU
seconds it comes to on this machine at the rate `python -c pass` runs (its CPU time, median
of 11; a process that runs longer runs faster than its start, so this errs high). Under
valgrind, OpenSSL hashes without the CPU's SHA instructions, so a figure that hashes a lot
counts more than it costs natively.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks import gen_root
from benchmarks.bench_build import HEAD, complete, workdir

REPO = Path(__file__).resolve().parent.parent
_IMPORTED = re.compile(r"import time:\s+\d+ \|\s+\d+ \| +(\S+)")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPX_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package: compiled once
    env["PYTHONPATH"] = str(REPO)
    env["PYTHONHASHSEED"] = "0"
    return env


def _python(args: list[str], work: Path, prefix: tuple[str, ...] = ()) -> str:
    """Run `python ARGS` from `work` (not a checkout); its stderr."""
    done = subprocess.run(
        [*prefix, sys.executable, *args], cwd=work, env=_env(), capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"python {' '.join(args[:3])} failed: {done.stderr[-2000:]}")
    return done.stderr


def instructions(args: list[str], work: Path) -> int:
    """Instructions `python ARGS` executes (callgrind's total)."""
    out = work / "callgrind.out"
    log = _python(args, work, ("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"))
    out.unlink(missing_ok=True)
    found = re.search(r"Collected : (\d+)", log)
    if found is None:
        raise SystemExit(f"no instruction count from valgrind: {log[-300:]!r}")
    return int(found.group(1))


def _importer(modules: list[str]) -> list[str]:
    """`python -c` arguments that import `modules` in order (one that fails is skipped, as
    a module only some platforms have is)."""
    code = (
        "import importlib\n"
        f"for name in {modules!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception:\n"
        "        pass\n"
    )
    return ["-c", code]


def _pass_seconds(work: Path, runs: int = 11) -> float:
    """Median CPU seconds of `python -c pass`."""
    import resource

    times = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", "pass"], cwd=work, env=_env(), check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times)


@dataclass
class Floor:
    counts: dict[str, int]  # instructions, by what ran
    outside: int  # modules outside loopx a one-event rebuild imports
    own: int  # loopx's own
    pass_seconds: float  # CPU seconds of `python -c pass`
    load: tuple[float, float, float]


def measure(work: Path, size: tuple[int, int, int]) -> Floor:
    goals, todos, events = size
    root, out = work / "root", work / "site"
    generated = gen_root.generate(root, goals=goals, todos=todos, events=events)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "loopx")], check=True)
    build = ["-m", "loopx", "build", "--out", str(out), "--head", HEAD, "--root", str(root)]
    _python(build, work)  # cold
    _python(build, work)  # the memo as a rebuild finds it
    probes = generated["probes"]
    counts: dict[str, int] = {"pass": instructions(["-c", "pass"], work)}
    counts["no-event rebuild"] = instructions(build, work)
    complete(root, probes[0], 100)
    imported = _python(["-X", "importtime", *build], work)
    modules = _IMPORTED.findall(imported)
    outside = [m for m in modules if m != "loopx" and not m.startswith("loopx.")]
    complete(root, probes[1], 101)
    counts["one-event rebuild"] = instructions(build, work)
    counts["imports outside loopx"] = instructions(_importer(outside), work)
    counts["every import"] = instructions(_importer(modules), work)
    own = len(modules) - len(outside)
    return Floor(counts, len(outside), own, _pass_seconds(work), os.getloadavg())


def report(r: Floor) -> str:
    counts, seconds = r.counts, r.pass_seconds
    rate = counts["pass"] / seconds  # instructions a CPU second, at the interpreter's start
    rows = [
        ("`python -c pass`", "pass", None),
        (f"+ importing the {r.outside} modules outside loopx", "imports outside loopx", "pass"),
        (f"+ importing loopx's own {r.own}", "every import", "imports outside loopx"),
        ("`loopx build`, nothing new", "no-event rebuild", None),
        ("`loopx build` after one event", "one-event rebuild", "every import"),
    ]
    lines = [
        "| process | M instructions | adds | ≈ CPU s here |",
        "|---|---:|---:|---:|",
    ]
    for label, key, base in rows:
        total = counts[key]
        added = f"{(total - counts[base]) / 1e6:,.0f}" if base else "–"
        lines.append(f"| {label} | {total / 1e6:,.0f} | {added} | {total / rate:.2f} |")
    load = ", ".join(f"{x:.1f}" for x in r.load)
    lines.append("")
    lines.append(
        f"`python -c pass`: {seconds:.3f} s of CPU (median of 11), so ≈ {rate / 1e9:.1f} G "
        f"instructions a CPU second; load average at the end {load}."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=None, help="working folder")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--quick", action="store_true", help="a tenth of the size (smoke run)")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_floor needs valgrind (Debian: apt-get install valgrind)")
    size = (50, 1_000, 10_000) if args.quick else (50, 10_000, 100_000)
    with workdir(args.work, args.keep) as work:
        print(report(measure(work, size)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
