"""Reviewed allow entries at the boundary: what the scan honours, and the commands that add one.

The ledger's entries (see `loopx.state.allowances`) become `Allowance`s for the scanner: the
id, with the entry's kind. For a finding an id explains, `commands` prints `loopx allow
finding …` naming the entity by the seq of the event that created it, never by its id: the id
may itself be what was found, and the command is printed where anyone may read it (a CI log).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from loopx.model.errors import InvalidInput
from loopx.privacy.allowed import Allowance
from loopx.privacy.rules import NON_PUBLIC_ID, NON_PUBLIC_TEXT
from loopx.privacy.scanner import Scanner
from loopx.state.allowances import created_seq, entries
from loopx.state.entities import GoalState
from loopx.state.tables import entity_tables
from loopx.store.base import Store

if TYPE_CHECKING:  # the write side is imported by `confirm` only: a scan never runs it
    from loopx.engine.commands import AllowFinding


def allowances_of(state: GoalState) -> frozenset[Allowance]:
    """The scanner's view of the goal's allow entries."""
    return frozenset(Allowance(a["kind"], a["entity_id"]) for a in entries(state))


def command(goal_id: str, entity: str, seq: int, kind: str) -> str:
    parts = ["loopx", "allow", "finding", "--goal-id", goal_id, "--entity", entity]
    parts += ["--seq", str(seq), "--kind", kind]
    return shlex.join(parts) + ' --reason "<why>"'


def ids(state: GoalState) -> Iterator[tuple[str, str]]:
    """(entity, id) of every entity of the goal, the goal first."""
    for entity, table in entity_tables(state).items():
        for entity_id in sorted(table):
            yield entity, entity_id


def commands(state: GoalState, scanner: Scanner) -> dict[str, list[str]]:
    """Finding kind → the `loopx allow finding` commands for the ids that hold one."""
    found: dict[str, list[str]] = {}
    for entity, entity_id in ids(state):
        kinds = sorted({hit.kind for hit in scanner.hits(entity_id)})
        seq = created_seq(state, entity, entity_id) if kinds else None
        if seq is None:
            continue
        for kind in kinds:
            found.setdefault(kind, []).append(command(state.goal_id, entity, seq, kind))
    return found


def finder(project: Path | None, store: Store, kind: str) -> Callable[[str, str], bool]:
    """(text, kind) → whether the build's boundary scan finds `kind` in `text`, allow entries
    aside. The ledger's non-public strings are gathered only for the kinds that need them."""
    from loopx.build.boundary import non_public_strings, project_names
    from loopx.build.pipeline import gather

    names = project_names(project) if project is not None else frozenset()
    texts: list[str] = []
    ids: list[str] = []
    if kind in (NON_PUBLIC_TEXT, NON_PUBLIC_ID):
        forbidden = non_public_strings(gather(store))
        texts, ids = sorted(forbidden.texts), sorted(forbidden.ids)
    scanner = Scanner(texts, forbidden_ids=ids, name_hashes=names)

    def finds(text: str, wanted: str) -> bool:
        return any(hit.kind == wanted for hit in scanner.hits(text))

    return finds


def confirm(store: Store, cmd: AllowFinding) -> None:
    """Refuse `cmd` (`no_such_finding`) unless the boundary scan finds its kind in the id it
    names: an entry that covers nothing is a typo. Ids and the seq that created an entity
    never change, so what this says still holds when the entry is written."""
    from loopx.engine.allowances import checked, named_id
    from loopx.engine.core import require_goal

    cmd = checked(cmd)
    entity_id = named_id(require_goal(store, cmd.goal_id), cmd)
    project = getattr(store, "root", None)
    if not finder(project, store, cmd.kind)(entity_id, cmd.kind):
        raise InvalidInput(
            f"the boundary scan finds no {cmd.kind} in that {cmd.entity}'s id (user and host "
            "names: this host's, $LOOPX_PRIVATE_NAMES and .loopx/names)",
            code="no_such_finding",
        )
