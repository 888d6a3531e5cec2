"""Write a build folder so that it is all-old or all-new, and only ever touch our own files.

New and changed files are first written under `<out>/.loopx-staging/`; a journal listing them
is written last (the commit point); then each staged file replaces its target, the files of
the previous build that are gone are removed, and the staging folder is dropped. An error
before the journal leaves the old folder untouched; an error after it is finished by rolling
forward, immediately or by the next writer (`recover`). Unchanged files are never rewritten.

What may be replaced or deleted follows `loopx.build.outdir`: no link is followed, an existing
file is replaced only if the previous manifest lists it (or with `overwrite`), and a file is
deleted only if it still has the hash its manifest listed. The journal records
those hashes, so a roll-forward (or a journal planted in a checkout) can do no more.

A cold build may start staging before every file is made (`Staging`: each goal's files as
they are rendered, by the worker that rendered them, when nothing is at their paths yet; a
worker's failure stops the build like any other error); nothing is journaled until
`write_tree`, so an error or a crash before leaves only the staging folder, which `discard`
(or the next writer's `recover`) removes, and the old folder untouched.

Every file operation goes through `loopx.store.fsio`, so fault tests can break any of them;
an `OSError` comes out as `StorageError` (`io_error`). Durability costs two syncs per write,
not one per file: the staged bytes are flushed before the journal lands (so a power cut can
never roll forward an empty file), and the renames before the journal is removed.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from loopx.build import outdir
from loopx.build.outdir import (
    ANY,
    STAGING,
    Folder,
    Identity,
    Layout,
    UnsafeOutput,
    identity,
    not_ours,
    parts_of,
    sha256,
)
from loopx.model.errors import LoopxError
from loopx.model.records import Mutable
from loopx.store import fsio

__all__ = ["STAGING", "Staging", "WriteReport", "recover", "write_tree"]

JOURNAL = "JOURNAL.json"
JOURNAL_FORMAT = 2

# What the previous manifest says of a file: (sha256, size); (None, None) for a file that is
# ours by its content (the manifest itself, checked when it was read).
Entry = tuple[str | None, int | None]


@dataclass(repr=False, eq=False)
class WriteReport(Mutable):
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # listed before, but changed or unsafe: left
    recovered: bool = False


def recover(out: Path | Folder, layout: Layout = ANY) -> bool:
    """Finish (roll forward) or discard an interrupted write. True when it rolled forward."""
    folder = out if isinstance(out, Folder) else Folder(out)
    try:
        with fsio.guard("finish an interrupted write of the output folder"):
            return _recover(folder, layout)
    finally:
        if folder is not out:
            folder.close()


def _recover(folder: Folder, layout: Layout) -> bool:
    staging = folder.must(STAGING)
    kind = fsio.kind(staging)
    if kind == "missing":
        return False
    fs = fsio.current()
    if kind != "dir":  # a link or file planted under our name: removed, never followed
        fs.unlink(staging)
        return False
    plan = _read_plan(staging, layout)
    if plan is not None:
        _apply(folder, staging, plan, verify=True)
        fs.sync_all(folder.path)
    _discard(fs, staging)
    return plan is not None


def _read_plan(staging: Path, layout: Layout) -> dict[str, Any] | None:
    """The journal, if it is one of ours and names only paths this writer may touch."""
    raw = fsio.read_regular(staging / JOURNAL, 64 << 20)
    try:
        plan = orjson.loads(raw) if raw is not None else None
    except orjson.JSONDecodeError:
        return None
    if not isinstance(plan, dict) or plan.get("format") != JOURNAL_FORMAT:
        return None
    write, remove = plan.get("write"), plan.get("remove")
    if not isinstance(write, dict) or not isinstance(remove, dict):
        return None
    for rel, value in write.items():
        if not (layout.admits(rel) and isinstance(value, list) and len(value) == 2):
            return None
    if not all(layout.admits(rel) and isinstance(sha, str) for rel, sha in remove.items()):
        return None
    return plan


def _discard(fs: fsio.FileSystem, staging: Path) -> None:
    """Drop the staging folder, its journal first: without a journal it is only litter."""
    with contextlib.suppress(FileNotFoundError):
        fs.unlink(staging / JOURNAL)
    fs.remove_tree(staging)


def _apply(folder: Folder, staging: Path, plan: dict[str, Any], *, verify: bool) -> None:
    """Move the staged files into place and remove the stale ones. With `verify` (a
    roll-forward of a journal found on disk), each staged file must still have its journal
    hash and each target the hash the journal saw, or it is left alone."""
    with Folder(staging / "files") as staged:
        _move(folder, staged, plan["write"], verify)
    fs = fsio.current()
    for rel, sha in sorted(plan["remove"].items()):
        try:
            if folder.digest(rel) != sha:
                continue
        except UnsafeOutput:
            continue
        with contextlib.suppress(FileNotFoundError):
            fs.unlink(folder.must(rel))


def _move(folder: Folder, staged: Folder, write: dict[str, Any], verify: bool) -> None:
    fs = fsio.current()
    moved: list[str] = []  # staged folders moved whole, as `x/`
    for rel, (new, old) in sorted(write.items()):
        if moved and rel.startswith(moved[-1]):
            continue  # went with its folder (sorted: a folder's files follow one another)
        try:
            if not verify and (top := _missing_folder(folder, rel)) is not None:
                # Nothing of the folder is in the output yet: one rename moves its staged
                # copy (only files of this plan) instead of one per file.
                fs.replace(staged.must(top), folder.must(top))
                moved.append(top + "/")
                continue
            if staged.stat(rel) is None:
                continue  # already moved by an earlier, interrupted roll-forward
            if verify:
                if staged.digest(rel) != new:
                    continue
                current = folder.digest(rel)
                if current is not None and current not in (new, old):
                    continue
        except UnsafeOutput:
            if not verify:
                raise
            continue
        folder.makedirs(rel.rpartition("/")[0])
        folder.stat(rel)  # the target is still a file or nothing, never a link
        fs.replace(staged.must(rel), folder.must(rel))


def _missing_folder(folder: Folder, rel: str) -> str | None:
    """The outermost folder on the way to `rel` that the output folder lacks, if any (a
    link on the way is `unsafe_output_path`, never followed)."""
    parts = rel.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        if not folder.check_dirs(parts[:depth]):
            return "/".join(parts[:depth])
    return None


class Staging:
    """Files staged before the write that journals them (`write_tree(..., staging=…)`).

    Opening it finishes or discards an interrupted write first (`recover`), as a write does.
    `stage` writes each file whose path in the output folder holds nothing under
    `.loopx-staging/files/` at once; files already there are left for `write_tree` to compare.
    A forked render worker stages its own files (`stage_apart`, into the folder `open` made
    before the fork) and the parent `adopt`s them, so creating thousands of files is spread
    over the workers instead of falling on the parent alone.
    `write_tree` then takes each staged file it still has to write with the same bytes as it
    is, and removes from the staging folder any other (a folder moved whole holds only its
    plan). An error before it: `discard` drops the staging folder, and the output folder is
    as it was.
    """

    def __init__(self, folder: Folder, layout: Layout = ANY) -> None:
        self.folder = folder
        self.layout = layout
        with fsio.guard("finish an interrupted write of the output folder"):
            self.recovered = _recover(folder, layout)
        self.files: dict[str, tuple[bytes, str]] = {}  # path → (bytes staged, their sha256)
        self._staged: Folder | None = None
        self._absent = _Absent(folder)
        self._flush: tuple[threading.Thread, list[BaseException]] | None = None

    def stage(self, artifacts: Iterable[Any]) -> None:
        """Stage each artifact (`.path`, `.data`, `.sha256`) whose target is missing."""
        for a in self._write(artifacts):
            self.files[a.path] = (a.data, a.sha256)

    def stage_apart(self, artifacts: Iterable[Any]) -> list[str]:
        """`stage` in a forked render worker, into the staging folder the parent opened
        before forking (`open`): the paths it staged, which the parent then `adopt`s with
        the very artifacts it receives. Nothing is recorded here: this process's copy of
        the staging is dropped with it."""
        if self._staged is None:  # created here, the parent could never discard it
            raise RuntimeError("the staging folder is opened before the workers fork")
        return [a.path for a in self._write(artifacts)]

    def adopt(self, artifacts: Iterable[Any], staged: Iterable[str]) -> None:
        """Record the artifacts a worker staged (`stage_apart`: their paths `staged`) as if
        `stage` had staged them: `hand_over` takes each only if it is still to be written
        with these bytes, the very ones the worker wrote and sent."""
        paths = set(staged)
        for a in artifacts:
            if a.path in paths:
                self.files[a.path] = (a.data, a.sha256)

    def _write(self, artifacts: Iterable[Any]) -> list[Any]:
        """Write each artifact whose target is missing and that is not staged yet under the
        staging folder; the ones written."""
        written = []
        with fsio.guard("write the output folder"):
            for a in artifacts:
                rel = a.path
                if rel in self.files or not self.layout.admits(rel):
                    continue  # a path this writer may not touch is refused by write_tree
                if self._absent.stat(rel) is not None:
                    continue  # write_tree compares it with what is there
                staged = self._open()
                staged.makedirs(rel.rpartition("/")[0])
                fsio.write_new(staged.must(rel), a.data)  # discarded unless journaled
                written.append(a)
        return written

    def open(self) -> None:
        """Create the staging folder now (it is otherwise made with the first file staged):
        before render workers fork, so they stage into it and `discard` drops it."""
        with fsio.guard("write the output folder"):
            self._open()

    def _open(self) -> Folder:
        if self._staged is None:
            fs = fsio.current()
            staging = self.folder.must(STAGING)
            fs.mkdir(staging)
            fs.mkdir(staging / "files")
            self._staged = Folder(staging / "files")
        return self._staged

    def flush_ahead(self) -> None:
        """Start flushing what is staged so far to disk in a thread, while the build goes on
        (the scan, the audience files): the flush `write_tree` must finish before its
        journal then has little left to wait for. Only a head start: that flush still
        happens, and reports any error (one here is left for it to meet again)."""
        if self._staged is None or self._flush is not None:
            return
        staging = self.folder.must(STAGING)
        done: list[BaseException] = []

        def flush() -> None:
            try:
                fsio.current().sync_all(staging)
            except BaseException as err:  # kept: the writer's own flush meets it again
                done.append(err)

        thread = threading.Thread(target=flush, name="loopx-flush", daemon=True)
        thread.start()
        self._flush = (thread, done)

    def _flushed(self) -> None:
        """Wait for `flush_ahead`'s flush; a machine stopped meanwhile stops this too."""
        if self._flush is None:
            return
        thread, done = self._flush
        self._flush = None
        thread.join()
        if done and not isinstance(done[0], Exception):
            raise done[0]

    def hand_over(self, changed: dict[str, bytes]) -> tuple[set[str], bool]:
        """For `write_tree`, which then owns the staging folder: the staged files it takes as
        they are (each it still has to write, with the very bytes staged; the others are
        removed from the staging folder), and whether there is a staging folder."""
        self._flushed()
        if self._staged is None:
            return set(), False
        kept: set[str] = set()
        fs, staged = fsio.current(), self._staged
        for rel, (data, _) in sorted(self.files.items()):
            new = changed.get(rel)
            if new is not None and (new is data or new == data):
                kept.add(rel)
            else:
                fs.unlink(staged.must(rel))
        staged.close()
        self._staged = None
        self.files.clear()
        return kept, True

    def discard(self) -> None:
        """Drop what was staged (nothing was journaled: the output folder is as it was)."""
        self._flushed()
        if self._staged is None:
            return
        self._staged.close()
        self._staged = None
        self.files.clear()
        with fsio.guard("write the output folder"):
            _discard(fsio.current(), self.folder.must(STAGING))


@contextlib.contextmanager
def first_write(
    out: Path, root: Path | None, layout: Layout, marker: str
) -> Iterator[Staging | None]:
    """A `Staging` on the output folder `out` (created if missing) when nothing is written
    there yet (no `marker`, the manifest of a build, in it); None otherwise (a rebuild
    compares every file at the end instead). On any error in the block, what was staged is
    dropped and a folder this made is removed again: a build that fails (the boundary
    refusing it) leaves the output folder as it was. The folder is `staging.folder`."""
    with outdir.open_folder(out, root, create=False) as probe, fsio.guard("read the output"):
        existed = probe.check_dirs([])
        written = existed and probe.stat(marker) is not None
    if written:
        yield None
        return
    with outdir.open_folder(out, root) as folder:
        staging = Staging(folder, layout)
        try:
            yield staging
        except BaseException:
            staging.discard()
            fs = fsio.current()
            if not existed:
                with contextlib.suppress(OSError):  # not empty: something else is there now
                    fs.rmdir(folder.path)
            raise


class _Absent:
    """`Folder.stat` for the many files of one write: a folder missing on the way is looked
    up once, not once per file in it (the output folder does not change while a write
    decides: it holds the folder's lock)."""

    def __init__(self, folder: Folder) -> None:
        self.folder = folder
        self.missing: dict[str, bool] = {}  # folder → whether it is missing

    def stat(self, rel: str) -> os.stat_result | None:
        parts_of(rel)
        parent = rel.rpartition("/")[0]
        gone = self.missing.get(parent)
        if gone is None:
            gone = bool(parent) and not self.folder.check_dirs(parts_of(parent))
            self.missing[parent] = gone
        return None if gone else self.folder.stat(rel)


def write_tree(
    out: Path | Folder,
    files: Mapping[str, Any],
    previous: Mapping[str, Entry],
    *,
    trusted: frozenset[str] | set[str] = frozenset(),
    checked: frozenset[str] | set[str] = frozenset(),
    was: Mapping[str, tuple[str, Identity]] | None = None,
    overwrite: bool = False,
    layout: Layout = ANY,
    staging: Staging | None = None,
) -> WriteReport:
    """Make `out` hold exactly `files` (plus anything no manifest of ours listed), all at once.

    Values are bytes, or artifacts whose `.data` is read only when the file must be compared.
    `previous` is what the last manifest listed. `trusted` names files this process itself
    wrote with the same content in its last build (`loopx serve`), or that the build memo
    vouched for: they are not read back. `checked`: those of them this very build found on
    disk as the memo recorded them (a regular file of its size, mtime, ctime and inode, no
    link on the way: `reuse.load`): they are not even looked at again. `was`: what the
    build memo says of other files it wrote (their sha256 and identity on disk then): a
    file still of that identity holds those bytes, so it is not read to be compared or
    hashed for the journal.
    `out` is a checked `Folder` (`outdir.open_folder`), or a path to open as one.
    `staging`: what was staged already for this write (`Staging`, opened on the same folder).
    """
    folder = out if isinstance(out, Folder) else Folder(out)
    try:
        with fsio.guard("write the output folder"):
            return _write_tree(
                folder, files, previous, trusted, checked, was or {}, overwrite, layout, staging
            )
    finally:
        if folder is not out:
            folder.close()


def _owned(folder: Folder, rel: str, entry: Entry | None) -> str | None:
    """The hash of the file at `rel` when the previous manifest wrote it as it is now."""
    if entry is None:
        return None
    sha, size = entry
    current = folder.digest(rel, size)
    return current if sha is None or current == sha else None


def _write_tree(
    folder: Folder,
    files: Mapping[str, Any],
    previous: Mapping[str, Entry],
    trusted: frozenset[str] | set[str],
    checked: frozenset[str] | set[str],
    was: Mapping[str, tuple[str, Identity]],
    overwrite: bool,
    layout: Layout,
    staging: Staging | None = None,
) -> WriteReport:
    if staging is not None:
        report = WriteReport(recovered=staging.recovered)
    else:
        report = WriteReport(recovered=_recover(folder, layout))
    changed: dict[str, bytes] = {}
    replaced: dict[str, str | None] = {}  # path → hash of the file it replaces (None: new)
    refused: list[str] = []
    sums: dict[str, str] = {}  # path → sha256 of a changed file, when its artifact knows it
    absent = _Absent(folder)
    for rel, value in files.items():
        if rel in checked and rel in trusted and not report.recovered:
            continue  # found as written moments ago; nothing since has touched it
        if not layout.admits(rel):
            raise LoopxError("artifact path escapes the output folder", code="invalid_path")
        st = absent.stat(rel)  # refuses a link anywhere on the way, trusted or not
        if rel in trusted and st is not None:
            continue  # not even read: an artifact carried over may never be loaded
        data = value if isinstance(value, bytes) else value.data
        if not isinstance(value, bytes):
            sums[rel] = value.sha256  # the manifest's: hashed once per build
        if st is None:
            changed[rel], replaced[rel] = data, None
            continue
        known = was.get(rel) if rel in previous and rel in sums else None
        if known is not None and identity(st) == known[1]:  # as the memo's build wrote it
            if known[0] != sums[rel]:
                changed[rel], replaced[rel] = data, known[0]
            continue
        if st.st_size == len(data) and folder.read_checked(rel, len(data)) == data:
            continue
        if rel not in previous and not overwrite:
            refused.append(rel)  # no manifest of ours wrote it: a user's file
            continue
        changed[rel], replaced[rel] = data, folder.digest(rel) or ""
    if refused:
        raise not_ours(sorted(refused))
    report.unchanged = len(files) - len(changed)
    remove = _removals(folder, previous, files, layout, report.kept)
    early, started = staging.hand_over(changed) if staging is not None else (set(), False)
    if changed or remove:
        _commit(folder, changed, replaced, remove, sums, early, started)
        report.written = sorted(changed)
        report.removed = sorted(remove)
    elif started:
        _discard(fsio.current(), folder.must(STAGING))
    return report


def _removals(
    folder: Folder,
    previous: Mapping[str, Entry],
    files: Mapping[str, Any],
    layout: Layout,
    kept: list[str],
) -> dict[str, str]:
    """The files the previous manifest listed and this build does not, with their hash, when
    they are still as written; the others (changed since, or behind a link) go to `kept`."""
    remove: dict[str, str] = {}
    for rel in sorted(previous.keys() - files.keys()):
        mine = None
        if layout.admits(rel):  # a manifest naming `../x` or `.git/x` never deletes it
            try:
                if folder.stat(rel) is None:
                    continue  # already gone
                mine = _owned(folder, rel, previous[rel])
            except UnsafeOutput:
                pass  # a link in the way: never followed, never deleted
        if mine is None:
            kept.append(rel)
        else:
            remove[rel] = mine
    return remove


def _commit(
    folder: Folder,
    changed: dict[str, bytes],
    replaced: dict[str, str | None],
    remove: dict[str, str],
    sums: dict[str, str] | None = None,
    early: set[str] | frozenset[str] = frozenset(),
    started: bool = False,
) -> None:
    """Stage the changed files and journal the plan (the commit point), then roll it forward:
    a crash before the journal leaves all-old, after it `_recover` finishes the job.
    `sums`: the sha256 of changed files known already; `early`: the changed files staged
    before (`Staging`), whose staging folder then exists (`started`)."""
    fs = fsio.current()
    staging = folder.must(STAGING)
    known = sums or {}
    plan = {
        "format": JOURNAL_FORMAT,
        "write": {
            rel: [known.get(rel) or sha256(data), replaced[rel]]
            for rel, data in sorted(changed.items())
        },
        "remove": remove,
    }
    try:
        if not started:
            fs.mkdir(staging)
            fs.mkdir(staging / "files")
        with Folder(staging / "files") as staged:
            for rel in sorted(changed):
                if rel in early:
                    continue  # staged already, with these very bytes
                staged.makedirs(rel.rpartition("/")[0])
                fsio.write_new(staged.must(rel), changed[rel])  # discarded unless journaled
        fs.sync_all(staging)  # every staged byte is durable before the commit point
        fs.write_atomic(staging / JOURNAL, orjson.dumps(plan), sync=True)
    except Exception:
        with contextlib.suppress(OSError):
            _discard(fs, staging)  # nothing replaced yet: all-old
        raise
    _apply(folder, staging, plan, verify=False)  # after the journal: roll forward
    fs.sync_all(folder.path)  # the renames are durable before the journal goes
    _discard(fs, staging)
    _prune_empty_dirs(fs, folder, sorted(remove))


def _prune_empty_dirs(fs: fsio.FileSystem, folder: Folder, removed: list[str]) -> None:
    for rel in removed:
        parent = rel.rpartition("/")[0]
        while parent:
            try:
                fs.rmdir(folder.must(parent))  # not empty, gone, or not a folder: stop
            except OSError:
                break
            folder.forget(parent)
            parent = parent.rpartition("/")[0]
