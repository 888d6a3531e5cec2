"""What a build produces before anything is written: artifacts held in memory."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from loopx.model.records import Mutable, Value

MANIFEST = "manifest.json"  # every file of a build, with its hash (`pipeline._add_manifest`)


@dataclass(frozen=True, repr=False, eq=False)
class Artifact(Value):
    path: str  # relative, POSIX
    data: bytes
    audience: str | None  # None for shared, audience-less files (the manifest)
    schema: str | None = None
    goal_id: str | None = None
    key: str | None = None  # the digest of its inputs, when its output declares them

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(slots=True, eq=False)
class DiskArtifact:
    """An artifact an earlier build wrote and this one carries over unchanged: known by its
    hash and size; its bytes are read only if something needs them (the boundary scan).
    (Not frozen, as nothing changes one: a rebuild makes one per carried file, and a frozen
    dataclass costs five times as much to make.)"""

    path: str
    out: Path  # the output folder it is in
    sha256: str
    size: int
    audience: str | None
    schema: str | None = None
    goal_id: str | None = None
    seen: tuple[int, ...] | list[int] | None = None  # its identity on disk, when carried over
    key: str | None = None  # the digest of its inputs, when its output declares them

    @property
    def file(self) -> Path:
        return self.out / self.path

    @property
    def data(self) -> bytes:
        """Its bytes, read without following a link, capped at its size, and checked to be the
        file the build memo vouched for: a file swapped since (by a link, a special file or
        other bytes) is `output_changed`, never scanned or published in its place."""
        from loopx.model.errors import Conflict
        from loopx.store import fsio

        data = fsio.read_regular(self.file, self.size)
        if data is None or hashlib.sha256(data).hexdigest() != self.sha256:
            raise Conflict(
                f"an output file changed while this build ran: {self.path} (build again)",
                code="output_changed",
                path=self.path,
            )
        return data


AnyArtifact = Artifact | DiskArtifact


@dataclass(repr=False, eq=False)
class Site(Mutable):
    """Every artifact of one build, plus the sources it was built from and, per (audience,
    goal), the key and index row of its files (what the build memo records)."""

    artifacts: dict[str, AnyArtifact] = field(default_factory=dict)
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    units: dict[tuple[str, str], tuple[str, dict[str, Any]]] = field(default_factory=dict)
    # per (audience, goal): what the audience's own files took from the goal (`AudienceContext`)
    parts: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    head: str | None = None
    validate: bool = False  # check every JSON artifact against its schema (tests, --validate)

    def add(self, artifact: AnyArtifact) -> None:
        if artifact.path in self.artifacts:
            raise ValueError(f"two artifacts for {artifact.path}")
        self.artifacts[artifact.path] = artifact
