"""The build's durability flush (`fsio.FileSystem.sync_all`): libc's syncfs where there is
one, found without a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from loopx.store import fsio


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs(2) is Linux's")
def test_syncfs_is_found_without_running_a_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a subprocess was started")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(fsio, "_SYNCFS", [])
    assert callable(fsio._syncfs())
    (tmp_path / "f").write_bytes(b"x")
    fsio.current().sync_all(tmp_path)
