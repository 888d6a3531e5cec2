"""`loopx store export` and `loopx store import`: move a project between stores; `loopx store
broker`: the PostgreSQL store broker of this user."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import common, emit, open_store


@click.group("store")
def store() -> None:
    """Move a project (ledgers, private blobs, configuration) between stores; show or stop
    the PostgreSQL store broker."""


_PLACED = {
    "copied": "copied",
    "same": "already the same here",
    "kept": "this project's own kept (it differs from the source's)",
}


def _summary(data: dict[str, object], verb: str) -> str:
    goals, files = data["goals"], data["project_files"]
    assert isinstance(goals, list) and isinstance(files, dict)
    events = sum(g["events"] for g in goals)
    lines = [f"{verb} {len(goals)} goals ({events} events) and {data['blobs']} private blobs"]
    lines += [f"{name}: {_PLACED[what]}" for name, what in files.items()]
    return "\n".join(lines)


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
    """Copy this project's ledgers, blobs and project files into a new file-store project.

    The exported ledgers are byte-identical to the store's (every ledger is verified first);
    loopx.toml (or the pyproject.toml holding [tool.loopx]) and .loopx/names come along, so
    builds from the export are the same. Snapshots and caches are rebuilt, not copied.
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
    written. The source's loopx.toml (or pyproject.toml with [tool.loopx]) and .loopx/names
    are copied where this project has none of its own.
    """
    from loopx.model.errors import NotFound
    from loopx.store.root import STATE_DIR
    from loopx.store.transfer import import_project

    if source.is_symlink() or not (source / STATE_DIR / "goals").is_dir():
        raise NotFound("the import folder holds no loopx file store", code="root_not_found")
    target = open_store(root)
    data = import_project(source, target, target.root)
    emit(fmt, data, _summary(data, "imported"))


@store.command("broker")
@click.option("--stop", is_flag=True, help="Ask the running broker to exit.")
@common()
def broker_cmd(stop: bool, root: Path | None, fmt: str) -> None:
    """Show (or stop) the broker that serves this project's PostgreSQL store.

    Short-lived loopx processes on a PostgreSQL store talk to a per-user broker process
    that keeps the driver loaded and connections open (started on first use, exits after
    LOOPX_BROKER_IDLE seconds without a client, 600 by default; LOOPX_PG_BROKER=0 turns it
    off). Stop it after changing libpq credentials only to close its connections at once: a
    process with other PG* variables already gets a broker of its own.
    """
    from loopx.store import broker_client
    from loopx.store.root import find_root
    from loopx.store.select import configured

    url = configured(find_root(root))
    if url == "file":
        data: dict[str, object] = {"store": "file", "broker": None}
        emit(fmt, data, "this project uses the file store: no broker")
        return
    found = broker_client.stop(url) if stop else broker_client.status(url)
    data = {"store": "postgresql", "broker": found}
    if not found["enabled"]:
        text = (
            "the broker is off (LOOPX_PG_BROKER=0, or no private folder or too long a path "
            "for its socket)"
        )
    elif found["running"]:
        verb = "asked to stop" if stop else "running"
        text = f"broker {verb}: pid {found['pid']}, socket {found['socket']}"
    else:
        text = "no broker is running (the next loopx call starts one)"
    emit(fmt, data, text)
