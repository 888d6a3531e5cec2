"""Fixtures for the importer tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from loopx.store import fsio


class _NoSync(fsio.FileSystem):
    """These tests exercise the mapping, not durability: skip fsync so they stay fast."""

    def fsync(self, fd: int) -> None:
        pass


@pytest.fixture(autouse=True)
def _no_fsync() -> Iterator[None]:
    previous = fsio.install(_NoSync())
    try:
        yield
    finally:
        fsio.install(previous)
