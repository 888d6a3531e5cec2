"""A scratch folder on tmpfs (/dev/shm) for tests that check logic, not durability.

Tests of races and of damage parsing run thousands of appends; on ext4 each costs two device
flushes (the ledger's fsync and the snapshot's rename), which would make them take minutes
while proving nothing more. Durability itself is proven on the real disk by test_crash and
test_faults. `LOOPX_TEST_ON_DISK=1` runs everything on pytest's tmp folder instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

SHM = Path("/dev/shm")


@contextlib.contextmanager
def scratch(fallback: Path) -> Iterator[Path]:
    if os.environ.get("LOOPX_TEST_ON_DISK") or not SHM.is_dir() or not os.access(SHM, os.W_OK):
        yield fallback
        return
    folder = Path(tempfile.mkdtemp(prefix="loopx-test-", dir=SHM))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
