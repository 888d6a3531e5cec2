"""A first build into a folder stages each goal's files as they are rendered (but for the
public ones, which the boundary scans first), and is still all-or-nothing: a build the
boundary refuses, a fault or a crash while staging leaves the folder as it was; a file
that appears at a staged path meanwhile is still compared (and refused when not ours)."""

from __future__ import annotations

import errno
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from faultfs import FaultFS, PowerCut

from loopx.build import outdir, writer
from loopx.build.artifacts import Artifact
from loopx.build.pipeline import build, check
from loopx.engine.demo import REV_NEW
from loopx.model.errors import BoundaryViolation, Conflict, LoopxError
from loopx.store import fsio


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _spy_staged(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths given to `stage` in this process, and those `stage_apart` staged in it (a
    unit rendered here: serially; a worker's copy of this list is lost with it)."""
    staged: list[str] = []
    real, real_apart = writer.Staging.stage, writer.Staging.stage_apart

    def stage(self: writer.Staging, artifacts: Any) -> None:
        items = list(artifacts)
        staged.extend(a.path for a in items)
        real(self, items)

    def stage_apart(self: writer.Staging, artifacts: Any) -> list[str]:
        done = real_apart(self, artifacts)
        staged.extend(done)
        return done

    monkeypatch.setattr(writer.Staging, "stage", stage)
    monkeypatch.setattr(writer.Staging, "stage_apart", stage_apart)
    return staged


def test_a_first_build_stages_team_files_early_and_writes_each_file_once(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged = _spy_staged(monkeypatch)
    written: Counter[str] = Counter()
    real_write_new = fsio.write_new

    def write_new(path: Path, data: bytes) -> None:
        written[Path(path).name] += 1
        real_write_new(path, data)

    monkeypatch.setattr(fsio, "write_new", write_new)
    out = tmp_path / "site"
    result = build(demo, out, head=REV_NEW)
    assert staged and all(p.startswith("team/") for p in staged)  # public: scanned first
    assert result.report is not None and set(staged) <= set(result.report.written)
    assert len(result.report.written) == len(_tree(out))
    assert written["status.json"] == len(list(out.glob("*/goals/*/status.json")))  # once each
    assert check(demo, out, head=REV_NEW).ok
    assert not (out / writer.STAGING).exists()
    staged.clear()
    build(demo, out, head=REV_NEW)  # a rebuild compares at the end, stages nothing early
    assert staged == []


def test_a_first_build_the_boundary_refuses_leaves_no_folder(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged = _spy_staged(monkeypatch)
    from loopx.projections import base

    real = base.todo_card

    def leaky(todo: Any, lens: Any, state: Any) -> dict[str, Any]:
        card = real(todo, lens, state)
        if todo.todo_id == "pick-license":
            card["title"] = "Quietly renegotiate the vendor contract"
        return card

    monkeypatch.setattr("loopx.projections.status.todo_card", leaky)
    from loopx.build import boundary

    real_strings = boundary.non_public_strings

    def strings(goals: Any, **kwargs: Any) -> Any:
        found = real_strings(goals, **kwargs)
        return boundary.Forbidden(
            found.texts | {"Quietly renegotiate the vendor contract"}, found.ids, found.allowed
        )

    monkeypatch.setattr("loopx.build.pipeline.non_public_strings", strings)
    out = tmp_path / "site"
    with pytest.raises(BoundaryViolation):
        build(demo, out, head=REV_NEW)
    assert staged  # team files were staged before the scan …
    assert not out.exists()  # … and dropped with the folder made for them
    (out / "keep").mkdir(parents=True)
    (out / "keep" / "mine.txt").write_text("a user's file")
    with pytest.raises(BoundaryViolation):
        build(demo, out, head=REV_NEW)
    assert _tree(out) == {"keep/mine.txt": b"a user's file"}  # a folder that was there stays


@pytest.mark.parametrize("mode", ["eio", "enospc", "short"])
def test_a_fault_while_staging_early_leaves_the_folder_as_it_was(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The first write of the second goal staged fails: the error is `io_error`, and the
    folder made for the build is gone again."""
    calls: list[int] = []
    real = writer.Staging.stage_apart

    def stage_apart(self: writer.Staging, artifacts: Any) -> list[str]:
        calls.append(1)
        if len(calls) == 2:
            fsio.install(FaultFS(mode=mode, keep=3, name="write"))
        return real(self, artifacts)

    monkeypatch.setattr(writer.Staging, "stage_apart", stage_apart)
    out = tmp_path / "site"
    previous = fsio.current()
    try:
        with pytest.raises(LoopxError) as err:
            build(demo, out, head=REV_NEW)
        assert err.value.code == "io_error"
    finally:
        fsio.install(previous)
    assert len(calls) == 2 and not out.exists()
    monkeypatch.setattr(writer.Staging, "stage_apart", real)
    build(demo, out, head=REV_NEW)
    assert check(demo, out, head=REV_NEW).ok


def test_a_crash_while_staging_early_is_discarded_by_the_next_writer(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The machine stops after the first goal is staged (what was not synced is lost): the
    next writer finds no journal, so it removes the staging folder, and the build after it
    writes everything."""
    fs = FaultFS(mode="cut_lose")
    real = writer.Staging.stage_apart

    def stage_apart(self: writer.Staging, artifacts: Any) -> list[str]:
        real(self, artifacts)
        fs._power_cut()
        raise PowerCut("stage")

    monkeypatch.setattr(writer.Staging, "stage_apart", stage_apart)
    out = tmp_path / "site"
    previous = fsio.install(fs)
    try:
        with pytest.raises(PowerCut):
            build(demo, out, head=REV_NEW)
    finally:
        fsio.install(previous)
        fs.release()
    staging = out / writer.STAGING
    assert list(staging.rglob("*.html")) and not (staging / writer.JOURNAL).exists()
    assert not writer.recover(out)  # nothing journaled: only litter, removed
    assert _tree(out) == {}
    monkeypatch.setattr(writer.Staging, "stage_apart", real)
    build(demo, out, head=REV_NEW)
    assert check(demo, out, head=REV_NEW).ok


def _artifact(path: str, data: bytes) -> Artifact:
    return Artifact(path, data, "team")


def test_a_file_that_appears_at_a_staged_path_is_compared_as_any_other(tmp_path: Path) -> None:
    out = tmp_path / "site"
    first = {"team/a.html": _artifact("team/a.html", b"<p>a</p>")}
    began = writer.first_write(out, None, outdir.BUILD, "manifest.json")
    with pytest.raises(Conflict) as err, began as staging:
        assert staging is not None
        staging.stage(first.values())
        (out / "team").mkdir()
        (out / "team" / "a.html").write_bytes(b"a user's page")
        writer.write_tree(staging.folder, first, {}, layout=outdir.BUILD, staging=staging)
    assert err.value.code == "output_not_ours"
    assert _tree(out) == {"team/a.html": b"a user's page"}  # untouched; staging dropped

    with writer.first_write(out, None, outdir.BUILD, "manifest.json") as staging:
        assert staging is not None
        staging.stage(first.values())  # there is a file at its path: left for the write
        assert staging.files == {}
        report = writer.write_tree(
            staging.folder, first, {}, layout=outdir.BUILD, staging=staging, overwrite=True
        )
    assert report.written == ["team/a.html"] and _tree(out) == {"team/a.html": b"<p>a</p>"}


def test_staged_bytes_that_are_not_the_final_ones_are_not_moved_in(tmp_path: Path) -> None:
    out = tmp_path / "site"
    with writer.first_write(out, None, outdir.BUILD, "manifest.json") as staging:
        assert staging is not None
        staging.stage([_artifact("team/g/a.html", b"old"), _artifact("team/g/b.html", b"b")])
        final = {"team/g/a.html": _artifact("team/g/a.html", b"new"), "manifest.json": b"{}"}
        report = writer.write_tree(staging.folder, final, {}, layout=outdir.BUILD, staging=staging)
    assert report.written == ["manifest.json", "team/g/a.html"]
    assert _tree(out) == {"manifest.json": b"{}", "team/g/a.html": b"new"}  # no b.html


class _Syncs(fsio.FileSystem):
    """Records, in order, each flush (and the thread it ran in) and each rename."""

    def __init__(self, fail_first_flush: bool = False) -> None:
        self.log: list[tuple[str, str]] = []
        self.fail = fail_first_flush

    def sync_all(self, path: Path) -> None:
        import threading

        self.log.append(("sync_all", threading.current_thread().name))
        if self.fail:
            self.fail = False
            raise OSError(5, "injected I/O error")
        super().sync_all(path)

    def replace(self, src: Path, dst: Path) -> None:
        self.log.append(("replace", Path(dst).name))
        super().replace(src, dst)


@pytest.mark.parametrize("fail", [False, True])
def test_staged_files_are_flushed_ahead_and_still_before_the_journal(
    demo: Path, tmp_path: Path, fail: bool
) -> None:
    """The early flush runs in a thread while the boundary scans; the writer still flushes
    everything staged before its journal lands. An error of the early flush is the writer's
    own flush's to meet: here the disk recovered, and the build succeeds."""
    fs = _Syncs(fail_first_flush=fail)
    previous = fsio.install(fs)
    try:
        build(demo, tmp_path / "site", head=REV_NEW)
    finally:
        fsio.install(previous)
    ahead = fs.log.index(("sync_all", "loopx-flush"))
    journal = fs.log.index(("replace", writer.JOURNAL))
    assert ("sync_all", "MainThread") not in fs.log[:ahead]  # the first flush
    assert ("sync_all", "MainThread") in fs.log[ahead:journal]  # every staged byte, before it
    assert check(demo, tmp_path / "site", head=REV_NEW).ok


def test_public_files_scanned_as_they_arrive_are_staged_and_not_scanned_again(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With workers, a cold first build scans each public goal's files with this build's
    scanner as they arrive, stages the clean ones, and the boundary's scan then takes them
    as scanned (it scans only the rest: the audience's own files)."""
    monkeypatch.setenv("LOOPX_BUILD_WORKERS", "2")
    staged = _spy_staged(monkeypatch)
    from loopx.build import boundary

    real_scan = boundary.scan_public
    scanned: list[set[str]] = []

    def scan_public(site: Any, forbidden: Any, cache: Any = None) -> Any:
        scanned.append(set(cache.clean) if cache is not None else set())
        return real_scan(site, forbidden, cache)

    monkeypatch.setattr("loopx.build.pipeline.scan_public", scan_public)
    out = tmp_path / "site"
    build(demo, out, head=REV_NEW, reuse=True)
    public = [p for p in staged if p.startswith("public/")]
    assert any(p.startswith("public/goals/") for p in public)
    assert not any(p.count("/") == 1 for p in public)  # the audience's files: at the end
    made = {p: (out / p).read_bytes() for p in public}
    from loopx.build.outdir import sha256

    assert {sha256(data) for data in made.values()} <= scanned[0]  # vouched for, once each
    assert check(demo, out, head=REV_NEW).ok


def test_a_public_file_with_a_finding_is_never_staged(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPX_BUILD_WORKERS", "2")
    staged = _spy_staged(monkeypatch)
    from loopx.build import boundary
    from loopx.projections import base

    real = base.todo_card
    leak = "Quietly renegotiate the vendor contract"

    def leaky(todo: Any, lens: Any, state: Any) -> dict[str, Any]:
        card = real(todo, lens, state)
        if todo.todo_id == "pick-license":
            card["title"] = leak
        return card

    monkeypatch.setattr("loopx.projections.status.todo_card", leaky)
    real_strings = boundary.non_public_strings

    def strings(goals: Any, **kwargs: Any) -> Any:
        found = real_strings(goals, **kwargs)
        return boundary.Forbidden(found.texts | {leak}, found.ids, found.allowed)

    monkeypatch.setattr("loopx.build.pipeline.non_public_strings", strings)
    out = tmp_path / "site"
    with pytest.raises(BoundaryViolation) as err:
        build(demo, out, head=REV_NEW, reuse=True)
    leaking = {f["path"] for f in err.value.details["findings"]}
    assert leaking and all(p.startswith("public/goals/") for p in leaking)
    public = {p for p in staged if p.startswith("public/")}
    assert public  # the public goals' clean files were staged …
    assert not public & leaking  # … never one the scanner found the leak in
    assert not out.exists()


class _Creators(fsio.FileSystem):
    """Records which process created each staged file (`O_EXCL` under the staging folder):
    one line `pid path` appended to `log` per file, so workers' lines survive them. With
    `fail_in_workers`, such a create fails with EIO in any process but the test's own."""

    def __init__(self, log: Path, fail_in_workers: bool = False) -> None:
        self.log = log
        self.parent = os.getpid()
        self.fail = fail_in_workers

    def open(self, path: Path, flags: int, mode: int = 0o644) -> int:
        fd = super().open(path, flags, mode)
        if flags & os.O_EXCL:
            real = os.path.realpath(path)  # /proc/self/fd/N/name → the folder it is in
            if f"/{writer.STAGING}/files/" in real:
                if self.fail and os.getpid() != self.parent:
                    os.close(fd)
                    raise OSError(errno.EIO, os.strerror(errno.EIO))
                rel = real.split(f"/{writer.STAGING}/files/", 1)[1]
                line = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                try:
                    os.write(line, f"{os.getpid()} {rel}\n".encode())
                finally:
                    os.close(line)
        return fd

    def creators(self) -> dict[str, int]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return {rel: int(pid) for pid, rel in (line.split(" ", 1) for line in lines)}


@pytest.mark.parametrize("workers", ["1", "2"])
def test_render_workers_stage_the_team_files_they_render_themselves(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    """With workers, each team file is created in the staging folder by the worker that
    rendered it, never by the parent (which still stages the public files it scanned);
    serially, this process stages them all. Either way each is then moved in as staged."""
    monkeypatch.setenv("LOOPX_BUILD_WORKERS", workers)
    fs = _Creators(tmp_path / "creators.log")
    out = tmp_path / "site"
    previous = fsio.install(fs)
    try:
        result = build(demo, out, head=REV_NEW, reuse=True)
    finally:
        fsio.install(previous)
    made = fs.creators()
    team = {rel: pid for rel, pid in made.items() if rel.startswith("team/goals/")}
    public = {rel: pid for rel, pid in made.items() if rel.startswith("public/")}
    assert team and public
    if workers == "1":
        assert set(made.values()) == {os.getpid()}
    else:
        assert os.getpid() not in team.values()  # each made by a worker …
        assert set(public.values()) == {os.getpid()}  # … the scanned ones by the parent
    assert result.report is not None and set(made) <= set(result.report.written)
    assert check(demo, out, head=REV_NEW).ok
    assert not (out / writer.STAGING).exists()


def test_a_worker_that_fails_while_staging_leaves_no_folder(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A render worker's staging write fails: the build fails with `io_error` and what the
    workers staged goes with the folder made for the build; a folder that was there stays
    as it was."""
    monkeypatch.setenv("LOOPX_BUILD_WORKERS", "2")
    out = tmp_path / "site"
    for existed in (False, True):
        if existed:
            (out / "keep").mkdir(parents=True)
            (out / "keep" / "mine.txt").write_text("a user's file")
        previous = fsio.install(_Creators(tmp_path / "creators.log", fail_in_workers=True))
        try:
            with pytest.raises(LoopxError) as err:
                build(demo, out, head=REV_NEW, reuse=True)
        finally:
            fsio.install(previous)
        assert err.value.code == "io_error"
        assert _tree(out) == {"keep/mine.txt": b"a user's file"} if existed else not out.exists()
    build(demo, out, head=REV_NEW, reuse=True)
    assert check(demo, out, head=REV_NEW).ok


def test_files_staged_apart_are_adopted_and_moved_in_as_staged(tmp_path: Path) -> None:
    """What `stage_apart` wrote is taken as it is once adopted with the same bytes (the very
    staged file is moved in); one the final build changed is written again."""
    out = tmp_path / "site"
    same, changed = _artifact("team/g/a.html", b"a"), _artifact("team/g/b.html", b"old")
    with writer.first_write(out, None, outdir.BUILD, "manifest.json") as staging:
        assert staging is not None
        with pytest.raises(RuntimeError):
            staging.stage_apart([same])  # no staging folder yet: a worker never makes one
        staging.open()
        paths = staging.stage_apart([same, changed])
        assert paths == ["team/g/a.html", "team/g/b.html"] and staging.files == {}
        inode = (out / writer.STAGING / "files" / "team/g/a.html").stat().st_ino
        staging.adopt([same, changed], paths)
        final = {same.path: same, changed.path: _artifact(changed.path, b"new")}
        report = writer.write_tree(staging.folder, final, {}, layout=outdir.BUILD, staging=staging)
    assert report.written == ["team/g/a.html", "team/g/b.html"]
    assert _tree(out) == {"team/g/a.html": b"a", "team/g/b.html": b"new"}
    assert (out / "team/g/a.html").stat().st_ino == inode


def test_a_link_a_worker_meets_while_staging_is_refused_as_the_parent_refuses_it(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`site/team` planted as a link to another folder: a worker staging a team file meets
    it and the build fails with the very error a serial build gives; nothing is written
    through the link, and the staging folder is gone."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    errors = []
    for workers in ("1", "2"):
        monkeypatch.setenv("LOOPX_BUILD_WORKERS", workers)
        out = tmp_path / f"site-{workers}"
        out.mkdir()
        (out / "team").symlink_to(elsewhere, target_is_directory=True)
        with pytest.raises(LoopxError) as err:
            build(demo, out, head=REV_NEW, reuse=True)
        errors.append((err.value.code, err.value.message.replace(f"site-{workers}", "site")))
        assert sorted(p.name for p in out.iterdir()) == ["team"]
    assert errors[0] == errors[1] and errors[0][0] == "unsafe_output_path"
    assert list(elsewhere.iterdir()) == []
