"""`loopx scan`: the public-boundary scan, on any files or folders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from loopx.cli.common import common, echo, emit
from loopx.cli.terminal import field


@click.command("scan")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=False))
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
    help="Also look for this machine's user and host names.",
)
@common()
def scan_cmd(
    paths: tuple[Path, ...], ledger: bool, machine: bool, root: Path | None, fmt: str, debug: bool
) -> None:
    """Scan PATHS (files or folders) as `loopx build` scans public output: credentials,
    personal and machine data, and everything the ledger marks non-public, in plain, JSON-,
    HTML- and URL-encoded form. Reports file, line, column and kind — never the match.

    Exits 7 when anything is found.
    """
    from loopx.model.errors import BoundaryViolation, NotFound
    from loopx.privacy.scanner import Scanner, scan_paths

    scanner = None
    if ledger:
        try:
            scanner = _ledger_scanner(root, machine)
        except NotFound:
            if root is not None:
                raise
    used_ledger = scanner is not None
    if scanner is None:
        scanner = Scanner(machine=machine)
    findings = [f.to_dict() for f in scan_paths(paths, scanner)]
    data: dict[str, Any] = {"clean": not findings, "findings": findings, "ledger": used_ledger}
    if findings:
        if fmt != "json":  # JSON mode: the findings travel in the error envelope
            for f in findings:
                echo(f"{field(f['path'])}:{f['line']}:{f['column']}: {f['kind']} ({f['encoding']})")
        raise BoundaryViolation(
            f"{len(findings)} finding(s) in the scanned paths",
            count=len(findings),
            findings=findings[:1000],
        )
    emit(fmt, data, "clean: nothing found" + (" (ledger included)" if used_ledger else ""))


def _ledger_scanner(root: Path | None, machine: bool) -> Any:
    from loopx.build.boundary import non_public_strings
    from loopx.build.pipeline import gather
    from loopx.privacy.scanner import Scanner
    from loopx.store.filestore import FileStore
    from loopx.store.root import find_root

    store = FileStore(find_root(root))
    forbidden = non_public_strings(gather(store), store.get_blob)
    return Scanner(sorted(forbidden.texts), forbidden_ids=sorted(forbidden.ids), machine=machine)
