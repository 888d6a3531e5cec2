"""`loopx init` and `loopx demo`."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import common, emit


@click.command("init")
@common()
def init_cmd(root: Path | None, fmt: str, debug: bool) -> None:
    """Create .loopx/ (ledgers, private blob store, cache) in the project folder.

    Writes .loopx/.gitignore so private/ and cache/ never reach git. Safe to run twice.
    """
    from loopx.store.filestore import FileStore
    from loopx.store.root import init_root

    folder = init_root(root)
    store = FileStore(folder)
    created = store.init()
    data = {"root": str(folder), "created": created}
    emit(fmt, data, f"{'initialised' if created else 'already initialised'}: {folder}/.loopx")


@click.command("demo")
@click.argument(
    "directory", type=click.Path(file_okay=False, path_type=Path), default=Path("loopx-demo")
)
@common()
def demo_cmd(directory: Path, root: Path | None, fmt: str, debug: bool) -> None:
    """Create a realistic demo project in DIRECTORY (default: ./loopx-demo).

    Several goals, todos with dependencies, a pending gate, evidence, runs, a claim and a
    handoff, written with a pinned clock so every run produces the same ledger. Running it
    again on the same folder changes nothing.
    """
    from loopx.engine.demo import create_demo

    summary = create_demo(directory)
    lines = [f"demo project in {directory}/.loopx with {len(summary['goals'])} goals:"]
    lines += [
        f"  {g['goal_id']:<18} {g['visibility']:<8} {g['events']:>3} events"
        for g in summary["goals"]
    ]
    lines.append(f"next: loopx status --root {directory}")
    emit(fmt, summary, "\n".join(lines))
