"""`loopx store export` and `loopx store import`: move a project between stores."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import common, emit, open_store


@click.group("store")
def store() -> None:
    """Move ledgers and private blobs between the file store and PostgreSQL."""


def _summary(data: dict[str, object], verb: str) -> str:
    goals = data["goals"]
    assert isinstance(goals, list)
    events = sum(g["events"] for g in goals)
    return f"{verb} {len(goals)} goals ({events} events) and {data['blobs']} private blobs"


@store.command("export")
@click.option(
    "--to",
    "to",
    required=True,
    type=click.Path(path_type=Path),
    help="A new (absent or empty) folder: becomes a project with a file store.",
)
@common()
def export_cmd(to: Path, root: Path | None, fmt: str) -> None:
    """Copy this project's ledgers and blobs into a new file-store project folder.

    The exported ledgers are byte-identical to the store's; every ledger is verified first.
    """
    from loopx.store.transfer import export_to

    data = export_to(open_store(root), to)
    emit(fmt, data, _summary(data, f"exported to {to}:"))


@store.command("import")
@click.option(
    "--from",
    "source",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A project folder with a file store (.loopx/goals/…).",
)
@common()
def import_cmd(source: Path, root: Path | None, fmt: str) -> None:
    """Copy a file-store project's ledgers and blobs into this project's store.

    Goals already there byte for byte are skipped (run it again to finish an interrupted
    import); a goal there with other events is refused (goal_exists) before anything is
    written.
    """
    from loopx.model.errors import NotFound
    from loopx.store.filestore import FileStore
    from loopx.store.root import STATE_DIR
    from loopx.store.transfer import copy_store

    if source.is_symlink() or not (source / STATE_DIR / "goals").is_dir():
        raise NotFound("the import folder holds no loopx file store", code="root_not_found")
    data = copy_store(FileStore(source), open_store(root))
    emit(fmt, data, _summary(data, "imported"))
