"""What the file rules of `loopx.store.fsio` cost: writes, reads and appends with the project
root confined (every folder reached from the root with `O_NOFOLLOW`, `fstat` checks) against
the same calls on a root that is not confined (final component only).

A build-shaped workload: N files of ~2 KB in folders 4 deep (`team/goals/gNN/todos/x.html`),
written with `write_atomic` (temp file, rename), read back with `read_file`, then a ledger of
N lines appended one `open`/`write`/`close` at a time. Run:
``python -m benchmarks.bench_fsio [--files N] [--rounds R]``; the best of R rounds is shown,
since the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from loopx.store import fsio


def _paths(root: Path, n: int) -> list[Path]:
    return [
        root / "team" / "goals" / f"g{i % 50:02d}" / "todos" / f"t{i:05d}.html" for i in range(n)
    ]


def _workload(root: Path, n: int) -> dict[str, float]:
    fs = fsio.current()
    paths = _paths(root, n)
    data = b"<p>" + b"x" * 2000 + b"</p>\n"
    out = {}
    start = time.perf_counter()
    for path in paths:
        fs.makedirs(path.parent)
        fs.write_atomic(path, data)
    out["write_atomic"] = time.perf_counter() - start
    start = time.perf_counter()
    for path in paths:
        fs.read_file(path)
    out["read_file"] = time.perf_counter() - start
    ledger = root / ".loopx" / "goals" / "g" / "ledger.jsonl"
    fs.makedirs(ledger.parent)
    start = time.perf_counter()
    for _ in range(n):
        fd = fs.open(ledger, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        fs.write_all(fd, b'{"line":1}\n')
        fs.close(fd)
    out["append"] = time.perf_counter() - start
    return out


def _best(rounds: int, run: Callable[[], dict[str, float]]) -> dict[str, float]:
    best: dict[str, float] = {}
    for _ in range(rounds):
        for key, value in run().items():
            best[key] = min(best.get(key, value), value)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=8630)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-fsio-"))
    try:

        def run(confined: bool) -> dict[str, float]:
            root = Path(tempfile.mkdtemp(dir=base))
            if confined:
                fsio.confine(root)
            try:
                return _workload(root, args.files)
            finally:
                shutil.rmtree(root)

        free = _best(args.rounds, lambda: run(False))
        ruled = _best(args.rounds, lambda: run(True))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"{args.files} files, best of {args.rounds} rounds, load {os.getloadavg()[0]:.1f}")
    print(f"| operation ({args.files} times) | root not confined | root confined | per call |")
    print("|---|---:|---:|---:|")
    for key in free:
        extra = (ruled[key] - free[key]) / args.files * 1e6
        print(f"| `{key}` | {free[key]:.3f} s | {ruled[key]:.3f} s | {extra:+.1f} µs |")


if __name__ == "__main__":
    main()
