"""What a first build into a folder does with each goal's files as its workers finish them,
instead of after the last one: it stages them for the writer (`writer.Staging`).

Team and private files are staged at once, by the worker that rendered them (`apart`, in
that process: creating thousands of files was most of what the parent did while the
workers rendered, and they waited for it); the parent adopts them as it receives them. A
public file is staged only once the boundary has scanned it, so the parent stages it: when
this build's scanner is ready (the parent builds it while the workers render) and the
build scans cold (no earlier scan vouches for any file), each public file is scanned as it
arrives with that very scanner, and one found clean is staged and recorded;
`vouch` then hands those to `boundary.scan_public` as scanned, which scans every other
public file as before (and the whole partition again before it fails a build). Every public
byte is still scanned once before it is written, by the scanner of exactly this build's
forbidden set; a file with a finding is never staged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loopx.build.boundary import Forbidden, ScanCache
from loopx.build.writer import Staging


class Ahead:
    """`work.run_units`'s `made` for a first build (see the module docstring). `scanning()`:
    the build's forbidden set, its scanner built, once it may scan ahead; None before (or
    when this build does not scan cold: its public files are then all scanned at the end)."""

    def __init__(self, staging: Staging, scanning: Callable[[], Forbidden | None]) -> None:
        self.staging = staging
        self.scanning = scanning
        self.scanned: tuple[Forbidden, set[str]] | None = None  # the set, what it found clean
        staging.open()  # before any worker forks: they stage into it

    def apart(self, unit: tuple[str, str], result: Any) -> list[str] | None:
        """`work.run_units`'s `apart`, in the process that rendered `unit`: a team or
        private unit's files are staged there (the paths staged); a public one's are left
        for this process to scan first (None)."""
        if unit[0] == "public":
            return None
        return self.staging.stage_apart(result[0])

    def made(self, unit: tuple[str, str], result: Any, staged: list[str] | None) -> None:
        files = result[0]
        if unit[0] != "public":
            self.staging.adopt(files, staged or ())
            return
        forbidden = self.scanning()
        if forbidden is None:
            return  # scanned, then written, with the rest at the end
        if self.scanned is None or self.scanned[0] is not forbidden:
            self.scanned = (forbidden, set())
        scanner = forbidden.scanner()
        clean = [a for a in files if not scanner.scan_bytes(a.data, a.path)]
        self.scanned[1].update(a.sha256 for a in clean)
        self.staging.stage(clean)

    def vouch(self, scan: ScanCache | None, forbidden: Forbidden) -> None:
        """Before `scan_public(site, forbidden, scan)`: the public files found clean as they
        arrived, by the scanner of this very set, are the scan's clean ones (only for a
        cold scan, whose cache vouches for nothing yet)."""
        if scan is None or scan.covered is not None or self.scanned is None:
            return
        if self.scanned[0] is not forbidden:
            return  # made for another set (a build made again): everything is scanned
        scan.covered, scan.scanners = forbidden, [forbidden.scanner()]
        scan.clean = set(self.scanned[1])
