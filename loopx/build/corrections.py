"""For each boundary finding, the governed correction that clears it.

A finding names a file, a place and a kind, never the text. To say how to clear it, every text
field of the goal the file belongs to (every goal, for pages that are about all of them) is
scanned on its own with the same scanner; each field whose own text yields a hit of the
finding's kind is a candidate, and the finding gets the `loopx redact field …` command for it.
Ids cannot be redacted: for a finding in an id (or in a field one would rather keep), the
finding also gets the `loopx allow finding …` command of each place that explains it (see
`loopx.build.allowances`). A finding no place explains (generated or configured text) gets none.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from typing import Any

from loopx.build import allowances
from loopx.model.events import REDACTABLE_FIELDS
from loopx.privacy.scanner import Scanner
from loopx.state.entities import GoalState
from loopx.state.redactions import current, is_redacted
from loopx.state.tables import entity_tables

MAX_COMMANDS = 3  # per finding: enough to act on, short enough to read
_GOAL_PATH = re.compile(r"(?:^|/)goals/([^/]+)/")


def fields(state: GoalState) -> Iterator[tuple[str, str, str, list[str]]]:
    """(entity, entity id, field, its texts) for every redactable field that holds text."""
    for entity, table in entity_tables(state).items():
        for entity_id, item in sorted(table.items()):
            for field in REDACTABLE_FIELDS[entity]:
                value = current(item, entity, field)
                if value is None or is_redacted(value):
                    continue
                yield entity, entity_id, field, _texts(value)


def _texts(value: Any) -> list[str]:
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    if isinstance(value, dict):
        if "blob" in value:
            return []  # private: in no public byte, and not on every host
        return [str(v) for v in value.values() if isinstance(v, str)]
    return [str(value)]


def command(goal_id: str, entity: str, entity_id: str, field: str) -> str:
    parts = ["loopx", "redact", "field", "--goal-id", goal_id, "--entity", entity]
    if entity != "goal":
        parts += ["--entity-id", entity_id]
    parts += ["--field", field]
    return shlex.join(parts) + ' --reason "<why>"'


def _by_kind(state: GoalState, scanner: Scanner) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for entity, entity_id, field, texts in fields(state):
        kinds = {hit.kind for text in texts for hit in scanner.hits(text)}
        for kind in sorted(kinds):
            found.setdefault(kind, []).append(command(state.goal_id, entity, entity_id, field))
    return found


def add_commands(
    findings: list[dict[str, Any]], goals: dict[str, GoalState], scanner: Scanner
) -> None:
    """Give each finding a `clear` list: the commands that would clear it (maybe none)."""
    cache: dict[str, tuple[dict[str, list[str]], dict[str, list[str]]]] = {}
    for finding in findings:
        match = _GOAL_PATH.search(finding["path"])
        owners = [match.group(1)] if match and match.group(1) in goals else sorted(goals)
        commands: list[str] = []
        allows: list[str] = []
        for goal_id in owners:
            if goal_id not in cache:
                state = goals[goal_id]
                cache[goal_id] = (_by_kind(state, scanner), allowances.commands(state, scanner))
            commands += cache[goal_id][0].get(finding["kind"], [])
            allows += cache[goal_id][1].get(finding["kind"], [])
        finding["clear"] = [
            *list(dict.fromkeys(commands))[:MAX_COMMANDS],
            *list(dict.fromkeys(allows))[:MAX_COMMANDS],
        ]
