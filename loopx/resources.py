"""Locate the shipped `templates/` and `schemas/` folders, installed or from a checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@cache
def resource_dir(name: str) -> Path:
    """The folder `name` ("templates" or "schemas"): inside the wheel, or beside the package."""
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"loopx resource folder {name!r} is missing from this installation")
