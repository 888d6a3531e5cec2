"""`loopx scan`: the public-boundary scan, on any files or folders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from loopx.cli.common import common, emit, open_store, print_findings


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
    from loopx.model.errors import BoundaryViolation, InvalidInput
    from loopx.privacy.scanner import Scanner, name_hash, scan_paths

    if hash_names:
        lines = [name_hash(n) for n in hash_names]
        emit(fmt, {"hashes": lines}, "\n".join(lines))
        return
    if not paths:
        raise InvalidInput("missing PATHS (files or folders to scan)", code="usage_error")

    scan = _with_ledger(root, paths, machine) if ledger else None
    found = scan.findings if scan is not None else scan_paths(paths, Scanner(machine=machine))
    findings = [f.to_dict() for f in found]
    data: dict[str, Any] = {"clean": not findings, "findings": findings, "ledger": bool(scan)}
    if findings:
        shown = findings[:1000]
        if scan is not None:
            from loopx.build.corrections import add_commands

            add_commands(shown[:100], scan.goals(), scan.scanner())
        if fmt != "json":  # JSON mode: the findings travel in the error envelope
            print_findings(findings)
        raise BoundaryViolation(
            f"{len(findings)} finding(s) in the scanned paths",
            count=len(findings),
            findings=shown,
        )
    emit(fmt, data, "clean: nothing found" + (" (ledger included)" if scan else ""))


def _with_ledger(root: Path | None, paths: tuple[Path, ...], machine: bool) -> Any:
    """The scan with the project's ledger (see `loopx.build.folderscan`), or None when no
    project is found and none was named."""
    from loopx.build.folderscan import scan_folder
    from loopx.model.errors import NotFound
    from loopx.store.root import find_root

    try:
        project = find_root(root)
    except NotFound:
        if root is not None:
            raise
        return None
    return scan_folder(project, open_store(project), paths, machine)
