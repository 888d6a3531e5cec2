"""What a build produces before anything is written: artifacts held in memory."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any


@dataclass(frozen=True)
class Artifact:
    path: str  # relative, POSIX
    data: bytes
    audience: str | None  # None for shared, audience-less files (the manifest)
    schema: str | None = None
    goal_id: str | None = None

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass
class Site:
    """Every artifact of one build, plus the sources it was built from."""

    artifacts: dict[str, Artifact] = field(default_factory=dict)
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    head: str | None = None
    validate: bool = False  # check every JSON artifact against its schema (tests, --validate)

    def add(self, artifact: Artifact) -> None:
        if artifact.path in self.artifacts:
            raise ValueError(f"two artifacts for {artifact.path}")
        self.artifacts[artifact.path] = artifact

    def files(self) -> dict[str, bytes]:
        return {path: a.data for path, a in self.artifacts.items()}
