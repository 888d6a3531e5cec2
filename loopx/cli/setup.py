"""`loopx init` and `loopx demo`."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import common, emit


@click.command("init")
@click.option(
    "--store",
    "store_url",
    default=None,
    help="Keep the ledgers in PostgreSQL: a postgresql:// URL without a password "
    "(libpq supplies it). Default: files under .loopx/.",
)
@common()
def init_cmd(store_url: str | None, root: Path | None, fmt: str) -> None:
    """Create .loopx/ (ledgers, private blob store, cache) in the project folder.

    Writes .loopx/.gitignore so private/ and cache/ never reach git. Safe to run twice.
    With --store, records the database in .loopx/store.json (never a password) after
    connecting to it and creating or upgrading its tables.
    """
    from loopx.store.filestore import FileStore
    from loopx.store.root import init_root
    from loopx.store.select import check_url, close, open_store, record

    folder = init_root(root)
    if store_url is not None:
        check_url(store_url)  # before anything is written
        chosen = open_store(folder, store_url)
        try:
            chosen.goal_ids()  # connects, and creates or upgrades the schema
        finally:
            close(chosen)
    created = FileStore(folder).init()
    data: dict[str, object] = {"root": str(folder), "created": created}
    text = f"{'initialised' if created else 'already initialised'}: {folder}/.loopx"
    if store_url is not None:
        record(folder, store_url)
        data["store"] = "file" if store_url == "file" else "postgresql"
        left = FileStore(folder).goal_ids() if store_url != "file" else []
        if left:  # they stay in the files; say how to move them
            data["file_goals"] = len(left)
            text += (
                f"\nthe ledgers now live in PostgreSQL; this folder's files still hold "
                f"{len(left)} goal(s): copy them with `loopx store import --from {folder}`"
            )
    emit(fmt, data, text)


@click.command("demo")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), required=False)
@common()
def demo_cmd(directory: Path | None, root: Path | None, fmt: str) -> None:
    """Create a realistic demo project in DIRECTORY, or in --root (default: ./loopx-demo).

    Several goals, todos with dependencies, a pending gate, evidence, runs, a claim and a
    handoff, written with a pinned clock so every run produces the same ledger. Running it
    again on the same folder changes nothing. LOOPX_ROOT is not used here: the demo goes
    into your project only when you name it.
    """
    from click.core import ParameterSource

    from loopx.engine.demo import create_demo
    from loopx.model.errors import InvalidInput

    given = click.get_current_context().get_parameter_source("root")
    if given is not ParameterSource.COMMANDLINE:
        root = None  # from LOOPX_ROOT: a project's root, not a place asked for the demo
    if directory is not None and root is not None:
        raise InvalidInput(
            "give the demo folder as DIRECTORY or --root, not both", code="usage_error"
        )
    directory = directory or root or Path("loopx-demo")
    summary = create_demo(directory)
    lines = [f"demo project in {directory}/.loopx with {len(summary['goals'])} goals:"]
    lines += [
        f"  {g['goal_id']:<18} {g['visibility']:<8} {g['events']:>3} events"
        for g in summary["goals"]
    ]
    lines.append(f"next: loopx status --root {directory}")
    emit(fmt, summary, "\n".join(lines))
