"""Micro-benchmark of the build's writer with the output-folder rules (`loopx.build.outdir`):
what the per-file checks (an `lstat` per file and per new folder, `O_NOFOLLOW` reads, hashing
a file before it is replaced or deleted) cost on a build-sized folder.

Writes N small files (default 10,000, in 50 goal folders) into a fresh folder, then times
three passes of `write_tree` as a build makes them: the cold write, a rebuild where nothing
changed (every file compared), and a rebuild where 24 files changed and 24 stale ones go
(each hash-checked before it is deleted). Best of `--rounds`. Run:
``python -m benchmarks.bench_writer [--files N] [--rounds R]``. Wall time suffers when other
processes share the machine; the cold pass is dominated by the two `syncfs` calls.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path

from loopx.build import outdir
from loopx.build.writer import Entry, write_tree


def site(n: int) -> dict[str, bytes]:
    files = {
        f"public/goals/g{i % 50:02d}/todos/t{i:05d}.html": b"<p>todo %d</p>\n" % i * 40
        for i in range(n)
    }
    files["manifest.json"] = b"{}\n"
    return files


def listed(files: dict[str, bytes]) -> dict[str, Entry]:
    return {p: (hashlib.sha256(d).hexdigest(), len(d)) for p, d in files.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    first = site(args.files)
    second = dict(first)
    for i in range(24):
        second[f"public/goals/g00/todos/t{i * 50:05d}.html"] = b"<p>changed %d</p>" % i
        del second[f"public/goals/g01/todos/t{i * 50 + 1:05d}.html"]
    best = {
        "cold write": 1e9,
        "rebuild, nothing changed": 1e9,
        "rebuild, 24 changed + 24 gone": 1e9,
    }
    for _ in range(args.rounds):
        out = Path(tempfile.mkdtemp(prefix="bench-writer-"))
        try:
            folder = outdir.open_folder(out, None)
            passes = [
                ("cold write", first, {}),
                ("rebuild, nothing changed", first, listed(first)),
                ("rebuild, 24 changed + 24 gone", second, listed(first)),
            ]
            for name, files, previous in passes:
                started = time.perf_counter()
                report = write_tree(folder.path, files, previous, layout=outdir.BUILD)
                best[name] = min(best[name], time.perf_counter() - started)
            assert len(report.written) == 24 and len(report.removed) == 24, report
        finally:
            shutil.rmtree(out)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"write_tree, {args.files} files, best of {args.rounds} (load average {load}):")
    for name, seconds in best.items():
        print(f"  {name:32} {seconds:.3f} s")


if __name__ == "__main__":
    main()
