"""`loopx scan`: the public-boundary scan, on any files or folders (its click declaration;
the command runs `loopx.cli.scan_run.run_scan`, which the quick parser calls too)."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import common
from loopx.cli.scan_run import run_scan


@click.command("scan")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path, exists=False))
@click.option(
    "--ledger/--no-ledger",
    default=True,
    show_default=True,
    help="Also look for the text and ids the project's ledger marks non-public "
    "(when a loopx project is found).",
)
@click.option(
    "--machine/--no-machine",
    default=True,
    show_default=True,
    help="Also look for this machine's user and host names (and $LOOPX_PRIVATE_NAMES).",
)
@click.option(
    "--hash-name",
    "hash_names",
    multiple=True,
    help="Print the line that lists NAME in .loopx/names (its sha256) and scan nothing.",
)
@common()
def scan_cmd(
    paths: tuple[Path, ...],
    ledger: bool,
    machine: bool,
    hash_names: tuple[str, ...],
    root: Path | None,
    fmt: str,
) -> None:
    """Scan PATHS (files or folders) as `loopx build` scans public output: credentials,
    personal and machine data, and everything the ledger marks non-public, in plain, JSON-,
    HTML- and URL-encoded form. Reports file, line, column and kind — never the match.

    Each finding names the commands that clear it (`loopx redact field`, `loopx allow
    finding`) when a ledger field or id holds it. Exits 7 when anything is found.
    """
    run_scan(paths=paths, ledger=ledger, machine=machine, hash_names=hash_names, root=root, fmt=fmt)
