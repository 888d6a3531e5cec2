"""`loopx scan` as a plain function, without click: what its click command
(`loopx.cli.scan.scan_cmd`) and the quick parser (`loopx.cli.quick`) both call with the
arguments as read, so the two ways in cannot drift."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loopx.cli.output import emit, print_findings
from loopx.cli.stores import open_store


def run_scan(
    *,
    paths: Sequence[Path],
    ledger: bool,
    machine: bool,
    hash_names: Sequence[str],
    root: Path | None,
    fmt: str,
) -> None:
    """Scan `paths` as a build scans public output (with `ledger`, for what the project's
    ledger marks non-public too) and print the verdict; `BoundaryViolation` (exit 7) when
    anything is found. With `hash_names`, print their `.loopx/names` lines instead."""
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


def _with_ledger(root: Path | None, paths: Sequence[Path], machine: bool) -> Any:
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
