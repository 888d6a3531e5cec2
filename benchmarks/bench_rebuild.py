"""What a user waits for after one event, for one or more loopx checkouts side by side.

    python -m benchmarks.bench_rebuild                       # this checkout
    git worktree add --detach /tmp/before <rev>
    python -m benchmarks.bench_rebuild --checkout /tmp/before --checkout .

On the root of `benchmarks/gen_root.py` (50 goals, 10,000 todos, 100,000 events), each
checkout gets its own copy of the root and its own output folder, and runs, each a fresh
process (`python -m loopx` from that checkout, PYTHONPATH set, from a neutral folder, its
modules compiled beforehand as an installed package's are): a cold `loopx build` of public
and team and a `loopx scan` of the public partition (`--cold` times, each from nothing into a
new output folder), a rebuild with nothing new; then per event
(`--events`, at most 9: a governed `loopx todo complete` on a public goal, written the same
way into every copy) the rebuild, the files it rewrote (checked on disk) and a standalone
`loopx scan` of the public partition. The checkouts take turns at every step, so they see
the same load; the report gives medians of CPU time (user + system, children included) and
wall time.

`--installed` runs each checkout as users run loopx: installed by `pip install` (not
editable) into a virtualenv of its own (`bench_calls`' installation), without this
interpreter's `.pth` start-up hooks (an editable install's import finder, a sandbox's
certificate hook), which a bare `python -c pass` pays for here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks import gen_root
from benchmarks.bench_build import (
    HEAD,
    Measured,
    _compare,
    _must,
    _tree,
    complete,
    git_out,
    run,
    workdir,
)
from benchmarks.bench_calls import _install
from benchmarks.bench_engine import pace
from benchmarks.bench_hugo import _cold

REPO = Path(__file__).resolve().parent.parent


def _label(checkout: Path) -> str:
    rev = git_out(checkout, "rev-parse", "--short", "HEAD")
    dirty = git_out(checkout, "status", "--porcelain", "--untracked-files=no")
    return (rev or checkout.name) + ("+changes" if dirty else "")


class Side:
    """One checkout: its root copy, output folder and measurements."""

    def __init__(
        self, checkout: Path, work: Path, pristine: Path, n: int, installed: bool = False
    ) -> None:
        self.checkout = checkout.resolve()
        self.label = _label(self.checkout)
        self.root = work / f"root-{n}"
        self.out = work / f"site-{n}"
        shutil.copytree(pristine, self.root, symlinks=True)
        self.python = sys.executable
        if installed:  # its own virtualenv; pip compiles the modules
            self.env: dict[str, str] = {"PYTHONPATH": ""}  # none inherited: its own loopx
            self.python = str(_install(self.checkout, work / f"venv-{n}"))
        else:
            self.env = {"PYTHONPATH": str(self.checkout)}
            # Compiled once beforehand, as an installed package is: with
            # PYTHONDONTWRITEBYTECODE set, every process would otherwise compile every
            # module of loopx again (~0.1 s).
            compileall = [sys.executable, "-m", "compileall", "-q", str(self.checkout / "loopx")]
            subprocess.run(compileall, capture_output=True, check=True)
        self.cwd = work  # not a checkout: `-m loopx` must import this side's package
        self.runs: dict[str, list[Measured]] = {}
        self.rewritten: list[int] = []

    def loopx(self, what: str, *args: str) -> Measured:
        cmd = [self.python, "-m", "loopx", *args, "--root", str(self.root)]
        m = _must(run(cmd, cwd=self.cwd, env=self.env), f"{self.label}: loopx {args[0]}")
        self.runs.setdefault(what, []).append(m)
        return m

    def cold_start(self, n: int) -> None:
        """Nothing cached, and a new output folder (`_cold` of `bench_hugo`: removing the
        last one right before a build would make it scan past freed inodes on ext4)."""
        _cold(self.root)
        self.out = self.out.with_name(f"{self.out.name.split('.')[0]}.{n}")

    def build(self, what: str) -> Measured:
        return self.loopx(what, "build", "--out", str(self.out), "--head", HEAD)

    def scan(self, what: str) -> Measured:
        return self.loopx(what, "scan", str(self.out / "public"))


def bench(
    work: Path,
    checkouts: list[Path],
    events: int,
    size: tuple[int, int, int],
    cold: int = 3,
    installed: bool = False,
) -> Any:
    pristine = work / "pristine"
    goals, todos, n_events = size
    generated = gen_root.generate(pristine, goals=goals, todos=todos, events=n_events)
    probes = generated["probes"][:events]
    sides = [Side(c, work, pristine, i, installed) for i, c in enumerate(checkouts)]
    load = [os.getloadavg()]
    paces = [pace()]
    for n in range(cold):  # each round from nothing: no snapshot, memo or scan memo
        for side in sides:
            side.cold_start(n)
            side.build("cold")
            side.scan("first scan")
    for _ in range(3):
        for side in sides:
            side.build("no-event rebuild")
    for n, probe in enumerate(probes):
        for side in sides:
            before = _tree(side.out)
            complete(side.root, probe, 100 + n)
            side.build("one-event rebuild")
            side.rewritten.append(_compare(before, _tree(side.out))["rewritten"])
            side.scan("scan after the event")
    load.append(os.getloadavg())
    paces.append(pace())
    return sides, load, paces, generated


def report(
    sides: list[Side], load: list[Any], paces: list[float], generated: dict[str, Any]
) -> str:
    steps = list(sides[0].runs)
    head = "| step | " + " | ".join(f"`{s.label}` CPU / wall" for s in sides) + " |"
    rows = [head, "|---|" + "---:|" * len(sides)]
    for step in steps:
        cells = []
        for s in sides:
            runs = s.runs[step]
            cpu = statistics.median(m.cpu for m in runs)
            wall = statistics.median(m.seconds for m in runs)
            cells.append(f"{cpu:.2f} s / {wall:.2f} s")
        count = len(sides[0].runs[step])
        rows.append(f"| {step} ({count}×) | " + " | ".join(cells) + " |")
    rows.append(
        "| files rewritten per event | "
        + " | ".join(str(statistics.median(s.rewritten)) for s in sides)
        + " |"
    )
    peak = " | ".join(f"{max(m.maxrss for m in s.runs['cold']) / 2**20:.0f} MB" for s in sides)
    rows.append(f"| peak memory, cold build (largest process) | {peak} |")
    loads = "; ".join(", ".join(f"{x:.1f}" for x in la) for la in load)
    return "\n".join(
        [
            f"Root: {generated['goals']} goals, {generated['todos']} todos, "
            f"{generated['events']} events; load average at the start and the end: {loads}; "
            f"the machine's pace (`bench_engine.pace`) {paces[0]:.0f} ms and {paces[1]:.0f} ms.",
            "",
            *rows,
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--checkout", type=Path, action="append", help="a loopx checkout (repeat to compare)"
    )
    parser.add_argument("--events", type=int, default=5, help="one-event rebuilds (at most 9)")
    parser.add_argument(
        "--cold", type=int, default=3, help="cold builds, each followed by a first scan"
    )
    parser.add_argument("--work", type=Path, help="working folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--quick", action="store_true", help="a tenth of the size (smoke run)")
    parser.add_argument(
        "--installed",
        action="store_true",
        help="each checkout pip-installed into a virtualenv of its own, as users run loopx",
    )
    args = parser.parse_args(argv)
    checkouts = args.checkout or [REPO]
    size = (10, 1000, 10_000) if args.quick else (gen_root.GOALS, gen_root.TODOS, gen_root.EVENTS)
    with workdir(args.work, args.keep) as work:
        sides, load, paces, generated = bench(
            work, checkouts, min(args.events, 9), size, max(1, args.cold), args.installed
        )
        print(report(sides, load, paces, generated))
    return 0


if __name__ == "__main__":
    sys.exit(main())
