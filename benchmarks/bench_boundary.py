"""The boundary scan's share of a build, and a standalone `loopx scan` against the build.

On the build benchmark's synthetic root (50 goals, 10,000 todos, 100,000 events; see
`benchmarks/gen_root.py`), measures CPU time (user + system, this process or the child), which a
shared machine disturbs far less than wall time:

- in-process, best of N: `non_public_strings` and `scan_public` over a public+team site, and a
  whole `build()` into a fresh folder (its worker processes included);
- as whole processes, best of N, after a ledger change (a governed write: a private note on
  a public goal, which also adds a blob): `loopx build --audience public --force` into a fresh
  folder, then `loopx scan OUT/public` on what it wrote (the first scan after the change), the
  same scan repeated, and the scan with its cache removed (`.loopx/private/cache/scan/`: every
  goal folded and every private blob read again, nothing vouched for).

Run: ``python -m benchmarks.bench_boundary [--root DIR] [--runs 3]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _child(args: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="an existing synthetic root (default: make one)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="loopx-boundary-"))
    try:
        root = args.root
        if root is None:
            from benchmarks.gen_root import generate

            root = work / "root"
            generate(root)
        from loopx.build.boundary import non_public_strings, scan_public
        from loopx.build.pipeline import build, make_site

        site, (goals, _) = make_site(root, ("public", "team"), None)
        strings = scan = whole = float("inf")
        for n in range(args.runs):
            t = _cpu()
            forbidden = non_public_strings(goals)
            strings = min(strings, _cpu() - t)
            t = _cpu()
            scan_public(site, forbidden)
            scan = min(scan, _cpu() - t)
            t = _cpu()
            build(root, work / f"site-{n}", head=None)
            whole = min(whole, _cpu() - t)
        loopx = [sys.executable, "-m", "loopx"]
        cache = root / ".loopx" / "private" / "cache" / "scan"
        public_build = first = warm = cold = float("inf")
        for n in range(args.runs):
            out = work / f"public-{n}"
            _child(
                [
                    *loopx,
                    "note",
                    "add",
                    "--root",
                    str(root),
                    "--goal-id",
                    "g00",
                    "--text",
                    f"Bench change {n}: a private detail",
                    "--visibility",
                    "private",
                ]
            )
            public_build = min(
                public_build,
                _child([*loopx, "build", "--root", str(root), "--out", str(out),
                        "--audience", "public", "--force"]),
            )  # fmt: skip
            scan_args = [*loopx, "scan", str(out / "public"), "--root", str(root)]
            first = min(first, _child(scan_args))
            warm = min(warm, _child(scan_args))
            shutil.rmtree(cache, ignore_errors=True)
            cold = min(cold, _child(scan_args))
        share = 100 * (strings + scan) / whole
        print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores (CPU time, not wall time)")
        print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
        print(
            f"in-process CPU, best of {args.runs}: non_public_strings {strings:.2f} s + "
            f"scan_public {scan:.2f} s = {share:.0f}% of a {whole:.2f} s build (public+team)"
        )
        print(
            f"whole processes, CPU, best of {args.runs}: `loopx build --audience public --force` "
            f"{public_build:.2f} s after a ledger change; `loopx scan OUT/public` first after "
            f"it {first:.2f} s ({100 * first / public_build:.0f}%), repeated {warm:.2f} s "
            f"({100 * warm / public_build:.0f}%), without its cache {cold:.2f} s "
            f"({100 * cold / public_build:.0f}%)"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
