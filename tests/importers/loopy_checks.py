"""What the importer tests compare: ledgers, private blobs and problems, as plain values."""

from __future__ import annotations

from pathlib import Path

from loopx.importers.loopy_loop import ImportReport
from loopx.store.filestore import FileStore


def new_store(root: Path) -> FileStore:
    store = FileStore(root)
    store.init()
    return store


def ledgers(store: FileStore) -> dict[str, bytes]:
    """Every goal's ledger, byte for byte."""
    return {g: store.raw(g) for g in store.goal_ids()}


def blobs(store: FileStore) -> dict[str, bytes]:
    """Every private blob, by its path under the store."""
    private = store.state_dir / "private"
    return {
        p.relative_to(private).as_posix(): p.read_bytes()
        for p in sorted(private.rglob("*"))
        if p.is_file()
    }


def problem_lines(report: ImportReport, severity: str | None = None) -> list[str]:
    return [
        f"{p.path}: {p.message}"
        for p in report.problems
        if severity is None or p.severity == severity
    ]
