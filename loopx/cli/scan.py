"""`loopx scan`: the public-boundary scan, on any files or folders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from loopx.cli.common import common, emit, print_findings


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

    Each finding names the `loopx redact field` command that clears it when a ledger field
    holds it. Exits 7 when anything is found.
    """
    from loopx.model.errors import BoundaryViolation, InvalidInput, NotFound
    from loopx.privacy.scanner import Scanner, name_hash, scan_paths

    if hash_names:
        lines = [name_hash(n) for n in hash_names]
        emit(fmt, {"hashes": lines}, "\n".join(lines))
        return
    if not paths:
        raise InvalidInput("missing PATHS (files or folders to scan)", code="usage_error")

    goals = None
    scanner = None
    if ledger:
        try:
            scanner, goals = _ledger_scanner(root, machine)
        except NotFound:
            if root is not None:
                raise
    used_ledger = scanner is not None
    if scanner is None:
        scanner = Scanner(machine=machine)
    findings = [f.to_dict() for f in scan_paths(paths, scanner)]
    data: dict[str, Any] = {"clean": not findings, "findings": findings, "ledger": used_ledger}
    if findings:
        shown = findings[:1000]
        if goals is not None:
            from loopx.build.corrections import add_commands

            add_commands(shown[:100], goals(), scanner)
        if fmt != "json":  # JSON mode: the findings travel in the error envelope
            print_findings(findings)
        raise BoundaryViolation(
            f"{len(findings)} finding(s) in the scanned paths",
            count=len(findings),
            findings=shown,
        )
    emit(fmt, data, "clean: nothing found" + (" (ledger included)" if used_ledger else ""))


def _ledger_scanner(root: Path | None, machine: bool) -> tuple[Any, Any]:
    """A scanner for the project's non-public strings (cached between runs, see
    `loopx.build.scancache`), and a function that gathers the goals (for clearing commands)."""
    from loopx.build import scancache
    from loopx.build.boundary import non_public_strings, project_names
    from loopx.build.pipeline import gather
    from loopx.privacy.scanner import Scanner
    from loopx.store.root import find_root
    from loopx.store.select import open_store

    project = find_root(root)
    store = open_store(project)
    wanted = scancache.key(store)
    forbidden = scancache.load(project, wanted)
    if forbidden is None:
        forbidden = non_public_strings(gather(store), store.get_blob)
        scancache.save(project, wanted, forbidden)
    scanner = Scanner(
        sorted(forbidden.texts),
        forbidden_ids=sorted(forbidden.ids),
        machine=machine,
        name_hashes=project_names(project),
    )
    return scanner, lambda: gather(store)
