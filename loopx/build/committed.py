"""A projection committed into a repository (the workbench): written by the output-file rules
(`loopx.build.outdir`), and checked for staleness and hand edits (`--check`)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from loopx.build.exposure import guard_team_output
from loopx.build.outdir import write_file
from loopx.model.errors import CheckFailed
from loopx.projections.workbench import body_digest, read_header
from loopx.store import fsio


def write_workbench(
    root: Path,
    path: Path,
    text: str,
    *,
    audience: str,
    overwrite: bool,
    warn: Callable[[str], None],
) -> bool:
    """Write `text` to `path`; False when the file already held it (it is not touched, so its
    mtime stays). Never in .loopx/, never through a link, never over a file that is not a
    workbench (without `overwrite`); team text bound for a public-looking tree is `warn`ed."""
    if audience != "public":
        guard_team_output(path, warn)
    return write_file(
        root,
        path,
        text.encode("utf-8"),
        ours=lambda data: read_header(data.decode("utf-8", "replace")) is not None,
        overwrite=overwrite,
    )


def check_workbench(path: Path, text: str, flags: str, revision: int) -> None:
    """Raise `CheckFailed` unless the file at `path` is exactly `text`; the message names the
    exact command that regenerates it."""
    fix = f"`loopx workbench {flags} --write {shlex.quote(str(path))}`"
    try:
        # Through the I/O seam: no link followed, regular files only, the read capped (a link,
        # FIFO or folder in its place is `unsafe_path`, never read through or waited on).
        on_disk = fsio.current().read_file(path).decode("utf-8")
    except (FileNotFoundError, NotADirectoryError):
        raise CheckFailed(
            f"{path} does not exist; write it with {fix}", code="workbench_missing", path=str(path)
        ) from None
    except UnicodeDecodeError:
        on_disk = ""  # not text at all: certainly not what loopx wrote
    except OSError as err:
        with fsio.guard("read the workbench file"):
            raise err
    if on_disk == text:
        return
    header = read_header(on_disk)
    if header is None or body_digest(header["body"]) != header["digest"]:
        raise CheckFailed(
            f"{path} was edited by hand (a workbench is generated); regenerate it with {fix}",
            code="workbench_edited",
            path=str(path),
        )
    raise CheckFailed(
        f"{path} is stale: the ledger (now at revision {revision}) changed what it shows; "
        f"regenerate it with {fix}",
        code="workbench_stale",
        path=str(path),
        ledger_revision=revision,
    )
