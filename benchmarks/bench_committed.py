"""Committed-output benchmark: the single-projection commands a pre-commit hook or CI runs.

    python -m benchmarks.bench_committed [--runs 9]

Generates the build benchmark's synthetic root (benchmarks/gen_root.py: 50 goals, 10,000
todos, 100,000 events) inside a git work tree with a github.com remote, and times whole
`loopx` processes on one public goal of 200 todos and 2,000 events: the workbench printed for
the team and for the public audience (the latter boundary-scanned), written (which also asks
git whether the work tree may be public), checked, and the public task graph. Prints the
median wall time and CPU time (the process and its git children) of each.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL = "g00"  # public in the generated root


def _run(args: list[str], cwd: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(args)}\n{proc.stderr.decode()}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    from benchmarks.gen_root import generate

    loopx = str(Path(sys.executable).parent / "loopx")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        generate(root)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        subprocess.run(
            ["git", "-C", str(root), "remote", "add", "origin", "https://github.com/acme/app.git"],
            check=True,
        )
        base = [loopx, "workbench", "--goal-id", GOAL]
        _run([loopx, "status"], root)  # warm the snapshot caches
        _run([*base, "--write", "docs/WORKBENCH.md"], root)
        cases = {
            "workbench (team, printed)": base,
            "workbench --audience public (printed, boundary-scanned)": [
                *base,
                "--audience",
                "public",
            ],
            "workbench --write (team; git exposure check)": [*base, "--write", "docs/WORKBENCH.md"],
            "workbench --check": [*base, "--check", "docs/WORKBENCH.md"],
            "graph --audience public (boundary-scanned)": [
                loopx,
                "graph",
                "--goal-id",
                GOAL,
                "--audience",
                "public",
            ],
        }
        print(f"load average {os.getloadavg()[0]:.1f}; median of {args.runs} processes")
        for name, cmd in cases.items():
            runs = [_run(cmd, root) for _ in range(args.runs)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            print(f"{name:58} {wall:6.3f} s wall  {cpu:6.3f} s CPU")


if __name__ == "__main__":
    main()
