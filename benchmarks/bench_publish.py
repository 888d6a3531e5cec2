"""`loopx publish --git-branch` on the synthetic build root, as whole processes.

A git repository holding the root (`benchmarks/gen_root.py`, 50 goals, 10,000 todos,
100,000 events; `--quick` a tenth), then: the first publish (an orphan commit of every
public page), the same publish again (nothing changed: no commit), one publish after one more
event (a new commit on top of the previous one), and the same into a `--prefix` folder of a
branch that holds another site. Each figure is the median of `--rounds` runs; the git part is
the publish minus the same process's build-and-scan (`loopx build --audience public`).

Run: `python -m benchmarks.bench_publish [--quick] [--rounds 3]`; prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import gen_root

GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org"}


def _run(cmd: list[str], cwd: Path) -> float:
    env = {**os.environ, "LOOPX_NOW": gen_root.START, **GIT_ENV}
    env["GIT_COMMITTER_NAME"], env["GIT_COMMITTER_EMAIL"] = "bench", "bench@example.org"
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed: {proc.stderr.strip()}")
    return took


def _loopx(*args: str) -> list[str]:
    return [sys.executable, "-m", "loopx", *args, "--head", gen_root.HEAD]


def _median(times: list[float]) -> str:
    return f"{statistics.median(times):.3f} s ({min(times):.3f}–{max(times):.3f})"


def bench(work: Path, size: tuple[int, int, int], rounds: int) -> list[tuple[str, str]]:
    root = work / "root"
    gen_root.generate(root, goals=size[0], todos=size[1], events=size[2])
    _run(["git", "init", "-q", "-b", "main"], root)
    _run(["git", "add", "-A"], root)
    _run(["git", "commit", "-q", "-m", "the project"], root)
    build = [
        _run(_loopx("build", "--audience", "public", "--out", str(work / f"b{i}"), "--force"), root)
        for i in range(rounds)
    ]
    first, same, next_, prefix = [], [], [], []
    for i in range(rounds):
        # (a message per round: the same pages, clock and identity make the very same commit,
        # and a branch sharing a commit with another is refused)
        publish = ("publish", "--git-branch", f"pages-{i}", "--message", f"round {i}")
        first.append(_run(_loopx(*publish), root))
        same.append(_run(_loopx(*publish), root))
    files = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", "pages-0"], cwd=root, capture_output=True, text=True
    ).stdout.count("\n")
    goal = sorted(p.name for p in (work / "b0/public/goals").iterdir())[0]  # a public goal
    for i in range(rounds):
        title = f"Announce release {i}"
        add = ["todo", "add", "--goal-id", goal, "--title", title, "--visibility", "public"]
        _run([sys.executable, "-m", "loopx", *add], root)
        next_.append(_run(_loopx("publish", "--git-branch", "pages-0"), root))
        prefix.append(
            _run(_loopx("publish", "--git-branch", "pages-0", "--prefix", f"status-{i}"), root)
        )
    plan_t, again_t, commit_t = _git_part(root, rounds)
    return [
        ("files on the branch", f"{files:,}"),
        ("in process: the git part of a first publish (plan: checks and refusals)", plan_t),
        (
            "in process: plan on a published branch (its listing checked: sha256 of every page)",
            again_t,
        ),
        (
            "in process: the git part of a first publish (commit: scan names and message, "
            "blobs, tree, commit, update-ref)",
            commit_t,
        ),
        (
            "`loopx build --audience public --force` (the same build and scan, for reference)",
            _median(build),
        ),
        ("first publish: orphan commit of every public page", _median(first)),
        ("the same publish again: nothing changed, no commit", _median(same)),
        ("publish after one more event: a commit on the previous one", _median(next_)),
        ("publish into a new `--prefix` folder, keeping the rest", _median(prefix)),
    ]


def _git_part(root: Path, rounds: int) -> tuple[str, str, str]:
    """`gitpublish.plan` and `gitpublish.commit` alone, on a site built once in process."""
    from loopx.build import gitpublish
    from loopx.build.boundary import non_public_strings, scan_public
    from loopx.build.pipeline import make_site
    from loopx.build.publish import _public_files

    os.environ["LOOPX_NOW"] = gen_root.START
    site, (goals, _) = make_site(root, ("public",), gen_root.HEAD)
    forbidden = non_public_strings(goals)
    scan_public(site, forbidden)
    files = _public_files(site)
    plans, commits = [], []
    for i in range(rounds):
        start = time.perf_counter()
        planned = gitpublish.plan(root, gitpublish.BranchTarget(f"inproc-{i}", message=f"{i}"))
        plans.append(time.perf_counter() - start)
        start = time.perf_counter()
        gitpublish.commit(
            root, planned, files, scanner=forbidden.scanner(), default_message="bench"
        )
        commits.append(time.perf_counter() - start)
    again = []  # on the branch just published: its listing checked against the tree's blobs
    for _ in range(rounds):
        start = time.perf_counter()
        gitpublish.plan(root, gitpublish.BranchTarget("inproc-0"))
        again.append(time.perf_counter() - start)
    return _median(plans), _median(again), _median(commits)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the size")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    size = (gen_root.GOALS, gen_root.TODOS, gen_root.EVENTS)
    if args.quick:
        size = (10, 1000, 10_000)
    with tempfile.TemporaryDirectory(prefix="loopx-bench-publish-") as tmp:
        rows = bench(Path(tmp), size, args.rounds)
    print("| measure | time (median, min–max) |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    print(f"\nload average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
