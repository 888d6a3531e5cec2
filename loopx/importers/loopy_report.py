"""What an import did, per session and in all: counts, where each goal stands, problems."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from loopx.importers.loopy_model import Problem


@dataclass
class SessionReport:
    session_id: str
    goal_id: str
    imported: bool
    applied: int = 0
    replayed: int = 0
    runs: int = 0
    pending_iterations: list[int] = field(default_factory=list)
    events_read: int = 0
    events_duplicates: int = 0
    goal_status: str | None = None
    attention: str | None = None
    stop_state: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["events"] = {"read": out.pop("events_read"), "duplicates": out.pop("events_duplicates")}
        return out


@dataclass
class ImportReport:
    sessions: list[SessionReport] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def applied(self) -> int:
        return sum(s.applied for s in self.sessions)

    @property
    def replayed(self) -> int:
        return sum(s.replayed for s in self.sessions)

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "applied": self.applied,
            "replayed": self.replayed,
            "sessions": [s.to_dict() for s in self.sessions],
            "problems": [p.to_dict() for p in self.problems],
        }
