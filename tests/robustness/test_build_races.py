"""Two `loopx build` runs into one folder at once: the folder is always one whole build.

The two builds differ (another `--head`, so evidence freshness, status pages and the manifest
differ). Each output folder is locked from the first look to the last write, so the second
build waits. After every round both exited 0 and the folder equals, file for file, exactly
one of the two complete builds, and its manifest matches every file.

`LOOPX_BUILD_RACE_ROUNDS` (default 50) sets the rounds of the in-process CLI race (two forked
processes released together by a barrier, each running the real `loopx build` entry point);
a few more rounds start two real `loopx` executables.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopx.engine import evidence, goals, todos
from loopx.engine.commands import AddEvidence, AddTodo, CreateGoal
from loopx.store.filestore import FileStore
from tests.conftest import make_ctx, run_cli

ROUNDS = int(os.environ.get("LOOPX_BUILD_RACE_ROUNDS", "50"))
HEADS = ("a" * 40, "b" * 40)
# The installed command of the interpreter running the tests (PATH may find another loopx
# first: a pyenv shim, a second checkout's); PATH's only when it has none.
_BESIDE = Path(sys.executable).with_name("loopx")
LOOPX = str(_BESIDE) if _BESIDE.is_file() else shutil.which("loopx") or "loopx"


def small_project(root: Path) -> None:
    store = FileStore(root)
    store.init()
    ctx = make_ctx(store, agent="maintainer")
    goals.create_goal(
        ctx,
        CreateGoal(goal_id="site", title="Status site", objective="Ship it", visibility="public"),
    )
    for n in range(4):
        todos.add_todo(
            ctx,
            AddTodo(goal_id="site", title=f"Step {n}", todo_id=f"step-{n}", visibility="public"),
        )
    for n, head in enumerate(HEADS):  # evidence at each head: fresh for one build, not the other
        evidence.add_evidence(
            ctx,
            AddEvidence(
                goal_id="site",
                kind="test",
                summary=f"tests pass at {n}",
                revision=head,
                todo_id="step-0",
                visibility="public",
            ),
        )


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() or p.is_symlink()
    }


def whole_build(folder: Path, expected: list[dict[str, bytes]]) -> str | None:
    """None when `folder` is exactly one expected build and its manifest matches every file;
    else what is wrong."""
    files = tree(folder)
    manifest = json.loads(files["manifest.json"])
    listed = set(manifest["files"]) | {"manifest.json"}
    if set(files) != listed:
        return f"files not in the manifest: {sorted(set(files) ^ listed)[:5]}"
    for path, meta in manifest["files"].items():
        if hashlib.sha256(files[path]).hexdigest() != meta["sha256"]:
            return f"{path} does not match the manifest"
    if files not in expected:
        return "a mixed folder"
    return None


@pytest.fixture
def race(tmp_path: Path) -> tuple[Path, Path, list[dict[str, bytes]]]:
    root = tmp_path / "proj"
    small_project(root)
    expected = []
    for head in HEADS:
        ref = tmp_path / f"ref-{head[0]}"
        built = run_cli(["build", "--root", str(root), "--out", str(ref), "--head", head])
        assert built.exit_code == 0, built.stderr
        expected.append(tree(ref))
    assert expected[0] != expected[1]
    return root, tmp_path / "site", expected


def _racer(root: str, out: str, head: str, rounds: int, barrier: Any, codes: Any) -> None:
    for _ in range(rounds):
        barrier.wait()
        result = run_cli(["build", "--root", root, "--out", out, "--head", head])
        codes.put((head, result.exit_code, result.stderr))
        barrier.wait()  # the parent looks at the folder between rounds


def test_two_builds_into_one_folder_never_leave_a_mixed_folder(race: Any) -> None:
    root, out, expected = race
    ctx = multiprocessing.get_context("fork")
    barrier, codes = ctx.Barrier(3, timeout=60), ctx.Queue()
    racers = [
        ctx.Process(target=_racer, args=(str(root), str(out), head, ROUNDS, barrier, codes))
        for head in HEADS
    ]
    for proc in racers:
        proc.start()
    try:
        for n in range(ROUNDS):
            barrier.wait()  # both racers start building now
            barrier.wait()  # both are done
            results = [codes.get(timeout=60) for _ in HEADS]
            assert all(code == 0 for _, code, _ in results), (n, results)
            problem = whole_build(out, expected)
            assert problem is None, f"round {n}: {problem}"
            assert not (out / ".loopx-staging").exists()
            if n % 2:
                shutil.rmtree(out)  # races on a folder that does not exist yet, too
    finally:
        for proc in racers:
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()
    assert all(proc.exitcode == 0 for proc in racers)


def test_two_loopx_processes_into_one_folder(race: Any) -> None:
    root, out, expected = race
    for n in range(4):
        procs = [
            subprocess.Popen(
                [LOOPX, "build", "--root", str(root), "--out", str(out), "--head", head],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for head in HEADS
        ]
        outputs = [proc.communicate(timeout=120) for proc in procs]
        assert [proc.returncode for proc in procs] == [0, 0], outputs
        problem = whole_build(out, expected)
        assert problem is None, f"round {n}: {problem}"


def test_the_lock_is_what_keeps_them_apart(race: Any, tmp_path: Path) -> None:
    """While one process holds a folder's lock, a build into it waits (here: cannot start)."""
    import fcntl

    from loopx.build import outdir

    root, out, _ = race
    out.mkdir()
    lock = outdir.cache_dir(root) / (outdir.sha256(os.path.realpath(out).encode())[:16] + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        proc = subprocess.Popen(
            [LOOPX, "build", "--root", str(root), "--out", str(out), "--head", HEADS[0]],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=2)
        assert not (out / "manifest.json").exists()
    finally:
        os.close(fd)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert (out / "manifest.json").exists()
