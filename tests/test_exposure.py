"""Where team output would leave the team (`loopx.build.exposure`): outside any git
repository no process is started to ask; anywhere git could find one, git is asked."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from loopx.build import exposure

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

REMOTE = "https://github.com/acme/app.git"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, check=True)


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every process started (git's included), counted and still run."""
    started: list[Any] = []
    real = subprocess.run

    def run(*args: Any, **kwargs: Any) -> Any:
        started.append(args[0] if args else kwargs.get("args"))
        return real(*args, **kwargs)

    monkeypatch.setattr(subprocess, "run", run)
    return started


def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("GIT_")]:
        monkeypatch.delenv(name)


def test_outside_any_repository_no_process_is_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clean_env(monkeypatch)
    real = Path(os.path.realpath(tmp_path))
    if any((p / n).exists() for p in (real, *real.parents) for n in (".git", "HEAD")):
        pytest.skip("the temporary folder is inside a git repository")
    started = _counting(monkeypatch)
    assert exposure.exposure(real / "site", directory=True) is None
    # Variables that cannot give git a repository (CI machines set many) change nothing.
    monkeypatch.setenv("GIT_SSL_CAINFO", "/etc/ssl/certs/ca-certificates.crt")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(real.parent))
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    assert exposure.exposure(real / "site", directory=True) is None
    assert started == []
    for name in ("GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE"):  # each may point git at one
        monkeypatch.setenv(name, str(real / "elsewhere"))
        assert exposure._outside_any_repository(real) is False
        monkeypatch.delenv(name)


def test_a_repository_is_found_however_the_folder_is_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through a link to a folder inside the work tree, inside a folder that is a git
    directory, or pointed to by GIT_DIR and GIT_WORK_TREE: git is asked, and says."""
    _clean_env(monkeypatch)
    repo = Path(os.path.realpath(tmp_path)) / "repo"
    (repo / "docs").mkdir(parents=True)
    _git(repo, "init", "-q")
    _git(repo, "remote", "add", "origin", REMOTE)
    found = exposure.exposure(repo / "docs" / "site", directory=True)
    assert found is not None and not found.declared and "github.com" in found.reason
    link = tmp_path / "elsewhere"
    link.symlink_to(repo / "docs")
    assert exposure.exposure(link / "site", directory=True) == found
    started = _counting(monkeypatch)
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(outside))
    assert exposure.exposure(outside / "site", directory=True) == found
    assert started  # asked
    assert exposure._outside_any_repository(repo / ".git" / "refs") is False
