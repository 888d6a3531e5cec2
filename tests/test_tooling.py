"""The project's own checks run as part of the test command: ruff (lint + format) and mypy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return _run(sys.executable, "-m", "ruff", *args)


def test_ruff_lint() -> None:
    proc = _ruff("check", "loopx", "tests", "benchmarks")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format() -> None:
    proc = _ruff("format", "--check", "loopx", "tests", "benchmarks")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy() -> None:
    proc = _run(sys.executable, "-m", "mypy", "loopx")
    assert proc.returncode == 0, proc.stdout + proc.stderr
