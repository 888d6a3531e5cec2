"""Move a project between stores (`loopx store export/import`).

What moves: every ledger (byte for byte), every private blob, and the project-folder files a
build reads besides the store: the configuration (`loopx.toml`, or the `pyproject.toml` that
holds `[tool.loopx]`) and `.loopx/names`. So a build from the copy is byte-identical to one
from the source (tested). What does not: snapshots, build, scan and render caches (each
host derives them from the ledgers again, and the cursors they hold are store positions);
quarantined tails (bytes no writer acknowledged, kept for inspection where they were cut);
the store choice `.loopx/store.json` (each host chooses for itself).

Events are re-appended through the target's own writer: `stamp` gives them the same seq,
chain and canonical bytes they had, so the copy is byte-identical to the source (checked
after each goal, never assumed). Every source ledger and project file is read and checked
before anything is written.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from loopx.model.errors import Conflict, InvalidInput, LedgerDamage
from loopx.store import fsio
from loopx.store.blobs import _HEX64
from loopx.store.config import CONFIG_FILE, PYPROJECT, config_source
from loopx.store.filestore import FileStore
from loopx.store.root import STATE_DIR

_STAMPED = ("seq", "prev", "sum", "event_id", "more")
# The hashed names a public build refuses (`loopx.build.boundary`), with its size limit.
NAMES = f"{STATE_DIR}/names"
NAMES_CAP = 256 * 1024


def project_files(root: Path | None) -> dict[str, bytes]:
    """The files of the project folder at `root` a build reads besides the store, by path
    from the root: the configuration (see `config_source`) and `.loopx/names`."""
    if root is None:
        return {}
    files = {}
    config = config_source(root)
    if config is not None:
        files[config[0]] = config[1]
    with fsio.guard("read .loopx/names"):
        if fsio.current().lstat(root / NAMES) is not None:
            data = fsio.read_regular(root / NAMES, NAMES_CAP)
            if data is None:
                raise InvalidInput(
                    ".loopx/names must be a regular file of at most 256 KiB",
                    code="invalid_names_file",
                )
            files[NAMES] = data
    return files


def plan_files(files: dict[str, bytes], root: Path) -> dict[str, str]:
    """What placing `files` in the project at `root` does to each: `copied`, `same` (there
    byte for byte) or `kept` (the project has its own file or configuration, which stays: a
    checkout's configuration is its own)."""
    have = project_files(root)
    configured = CONFIG_FILE in have or PYPROJECT in have
    fs = fsio.current()
    plan = {}
    for name, data in sorted(files.items()):
        with fsio.guard(f"read {name}"):
            present = fs.lstat(root / name) is not None
        if have.get(name) == data:
            plan[name] = "same"
        elif present or (name != NAMES and configured):
            plan[name] = "kept"
        else:
            plan[name] = "copied"
    return plan


def place_files(files: dict[str, bytes], plan: dict[str, str], root: Path) -> None:
    fs = fsio.current()
    for name, what in plan.items():
        if what == "copied":
            with fsio.guard(f"write {name}"):
                fs.write_atomic(root / name, files[name], sync=True)


def import_project(source: Path, target: Any, root: Path) -> dict[str, Any]:
    """Copy the file-store project at `source` into `target`, the store of the project at
    `root`, with the project files `root` does not have yet."""
    files = project_files(source)
    plan = plan_files(files, root)
    summary = copy_store(FileStore(source), target)
    place_files(files, plan, root)
    summary["project_files"] = plan
    return summary


def blob_refs(store: Any) -> list[str]:
    """Every private blob a store holds (the file store's are walked without following links)."""
    if isinstance(store, FileStore):
        base = store.blobs.base / "sha256"
        refs = []
        if base.is_dir() and not base.is_symlink():
            for top in sorted(base.iterdir()):
                if top.is_symlink() or not top.is_dir() or len(top.name) != 2:
                    continue
                for item in sorted(top.iterdir()):
                    name = top.name + item.name
                    if not item.is_symlink() and item.is_file() and _HEX64.match(name):
                        refs.append("sha256:" + name)
        return refs
    if hasattr(store, "blob_refs"):
        return list(store.blob_refs())
    return sorted(store.blobs)


def check_source(source: Any) -> list[str]:
    """The source's goal ids, after verifying every ledger (all problems reported at once)."""
    goals = source.goal_ids()
    damaged = [g for g in goals if not source.verify(g).ok]
    if damaged:
        raise LedgerDamage(
            f"{len(damaged)} ledger(s) fail verification; run `loopx verify` and repair first",
            code="ledger_corrupt",
            goals=damaged,
        )
    return list(goals)


def copy_store(source: Any, target: Any) -> dict[str, Any]:
    """Copy every goal and blob of `source` into `target`.

    A goal the target already holds byte for byte is skipped (so an interrupted import is
    finished by running it again); one it holds with other events is a conflict.
    """
    goals = check_source(source)
    same = {g for g in goals if target.exists(g) and target.raw(g) == source.raw(g)}
    clash = [g for g in goals if g not in same and target.exists(g)]
    if clash:
        raise Conflict(
            f"{len(clash)} goal(s) already exist in the target store",
            code="goal_exists",
            goals=clash,
        )
    copied: list[dict[str, Any]] = []
    for ref in blob_refs(source):  # blobs first: a ledger never names a blob that is missing
        data = source.get_blob(ref)
        if data is not None:
            target.put_blob(data)
    for goal_id in goals:
        if goal_id in same:
            copied.append({"goal_id": goal_id, "events": 0, "bytes": 0, "skipped": True})
            continue
        data = source.raw(goal_id)
        events = source.read(goal_id).events
        with target.writing(goal_id) as writer:
            if writer.cursor.seq:
                raise Conflict("goal already exists in the target store", code="goal_exists")
            writer.append([{k: v for k, v in e.items() if k not in _STAMPED} for e in events])
        if target.raw(goal_id) != data:
            raise LedgerDamage(  # pragma: no cover - stamp is deterministic; a guard, not a path
                "a copied ledger differs from its source", code="ledger_changed", goal_id=goal_id
            )
        copied.append({"goal_id": goal_id, "events": len(events), "bytes": len(data)})
    return {"goals": copied, "blobs": len(blob_refs(source))}


def export_to(source: Any, folder: Path) -> dict[str, Any]:
    """Write `source`, with its project files, as a new file-store project in `folder`
    (absent or empty)."""
    files = project_files(getattr(source, "root", None))
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise InvalidInput("the export folder is not a folder", code="invalid_export")
    if folder.is_dir() and any(folder.iterdir()):
        raise InvalidInput("the export folder is not empty", code="export_not_empty")
    # Built beside the folder and moved in whole: a failure leaves no half-written export.
    scratch = folder.parent / f".{folder.name}.loopx-export-{os.getpid()}"
    fs = fsio.current()
    try:
        with fsio.guard("create the export folder"):
            fs.makedirs(scratch)
        target = FileStore(scratch)
        target.init()
        summary = copy_store(source, target)
        plan = {name: "copied" for name in sorted(files)}
        place_files(files, plan, scratch)
        summary["project_files"] = plan
        with fsio.guard("move the export into place"):
            if folder.is_dir():
                fs.rmdir(folder)
            fs.replace(scratch, folder)
            fs.sync_dir(folder.parent)
    finally:
        with contextlib.suppress(OSError):
            fs.remove_tree(scratch)
    summary["to"] = os.fspath(folder)
    return summary
