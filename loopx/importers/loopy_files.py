"""Reading one session's files: every failure becomes a `Problem`, never an exception."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from loopx.importers import loopy_paths
from loopx.importers.loopy_model import Problem, Session
from loopx.store import fsio

# The schema versions this importer understands, per file kind.
VERSIONS: dict[str, tuple[int, ...]] = {
    "state.json": (1, 2),
    "control.json": (1, 2, 3),
    "session.json": (1, 2),
    "session_outcome.json": (1,),
    "goal_contract.json": (1,),
    "children.json": (1, 2),
    "goal_check.json": (1, 2),
    "protocol failure": (1,),
    "event": (1,),
    "git receipt": (1, 2),
    "eval receipt": (1,),
    "user input": (1,),
    "handoff.json": (1,),
}


class SessionFiles:
    """Reads a session's files, turning every failure into a `Problem`."""

    def __init__(self, session: Session):
        self.s = session

    def rel(self, path: Path) -> str:
        """`path` relative to the import's base, never absolute (the project's goal file
        lies outside the session folder)."""
        inside = os.path.relpath(path, self.s.directory)
        return posixpath.normpath(f"{self.s.rel}/{Path(inside).as_posix()}")

    def problem(self, path: Path | str, message: str, severity: str = "error") -> None:
        where = self.rel(path) if isinstance(path, Path) else f"{self.s.rel}/{path}"
        self.s.problems.append(Problem(where, message, severity, self.s.session_id))

    def read(self, path: Path) -> bytes | None:
        try:
            return loopy_paths.read(path)
        except FileNotFoundError:
            return None
        except fsio.UnsafePath:
            self.problem(path, "is a link or a special file; not followed")
            return None
        except fsio.TooLarge:
            limit = loopy_paths.MAX_SOURCE_BYTES
            self.problem(path, f"is larger than the import limit of {limit} bytes; not read")
            return None
        except OSError:
            self.problem(path, "cannot be read")
            return None

    def text(self, path: Path) -> str | None:
        data = self.read(path)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self.problem(path, "is not UTF-8 text")
            return None

    def json(
        self,
        path: Path,
        kind: str,
        *,
        versions: tuple[int, ...] | None = None,
        severity: str = "error",
    ) -> tuple[dict[str, Any], bytes] | None:
        """The JSON object at `path` with a supported schema version, or None (reported).

        `versions` overrides the versions known for `kind`; `()` skips the version check.
        """
        raw = self.read(path)
        if raw is None:
            return None
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as err:
            where = f" (line {err.lineno}, column {err.colno})" if err.lineno else ""
            self.problem(path, f"{kind} is not valid JSON{where}", severity)
            return None
        if not isinstance(data, dict):
            self.problem(path, f"{kind} is not a JSON object", severity)
            return None
        allowed = versions if versions is not None else VERSIONS.get(kind, (1,))
        version = data.get("schema_version", 1)
        if allowed and (
            not isinstance(version, int) or isinstance(version, bool) or version not in allowed
        ):
            shown = version if isinstance(version, int) else "unreadable"
            self.problem(
                path,
                f"{kind} has schema_version {shown}, which this importer does not read "
                f"(it reads {_versions(allowed)}); is it from a newer loopy-loop?",
                severity,
            )
            return None
        return data, raw

    def jsons(
        self, folder: Path, kind: str, *, severity: str = "error"
    ) -> Iterator[tuple[Path, dict[str, Any], bytes]]:
        """Each `*.json` file in `folder` that holds a readable JSON object, by name, with its
        data and bytes (the others reported and skipped; no folder, no files)."""
        for path in loopy_paths.files(folder, ".json"):
            got = self.json(path, kind, severity=severity)
            if got is not None:
                yield path, got[0], got[1]


def _versions(allowed: tuple[int, ...]) -> str:
    return ", ".join(str(v) for v in allowed)


def text_of(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def texts_of(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str) and v.strip()] if isinstance(value, list) else []


def int_of(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
