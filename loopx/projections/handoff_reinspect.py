"""What a handoff digest's reader must re-inspect before acting: what the ledger cannot vouch for.

`reinspect` runs each check of `CHECKS` in order over the digest built so far (its `handoff`,
`workspace`, `evidence` and `todo` parts) and the folded state; each check says zero or more
`(code, message)` pairs. The codes are stable (the budget may shorten a message to its code).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from loopx.model.records import Value
from loopx.state.entities import GoalState, Handoff, Todo
from loopx.state.frontier import lease_live
from loopx.state.handoff import PENDING
from loopx.state.turns import RESUME_ADVICE, open_turns

Finding = tuple[str, str]  # (code, message)


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Facts(Value):
    """What the checks read: the digest so far, and the folded facts it was made from."""

    digest: dict[str, Any]
    state: GoalState
    todo: Todo
    handoff: Handoff
    now: str
    omitted: Counter[str]

    @property
    def shown(self) -> dict[str, Any]:
        """The digest's part about the handoff: status, staleness, git revision, the note."""
        shown: dict[str, Any] = self.digest["handoff"]
        return shown

    @property
    def workspace(self) -> dict[str, Any]:
        shown: dict[str, Any] = self.digest["workspace"]
        return shown


def reinspect(facts: Facts) -> list[dict[str, str]]:
    """Every finding of every check, in `CHECKS` order."""
    return [
        {"code": code, "message": message} for check in CHECKS for code, message in check(facts)
    ]


def _paths(paths: list[str], limit: int = 3) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def _short(rev: str | None) -> str:
    return rev[:10] if rev else "none"


def _note_current(f: Facts) -> Iterator[Finding]:
    h = f.shown
    if h["status"] == "superseded":
        yield "note_superseded", f"A newer note ({h['superseded_by']}) replaced this one."
    elif h["stale"]:
        yield (
            "note_stale",
            f"The todo changed after this note was written (note at revision "
            f"{h['prepared_seq']}, todo now at {f.todo.revision}): check the todo before "
            "trusting the note.",
        )


def _checkout(f: Facts) -> Iterator[Finding]:
    h, ws = f.shown, f.workspace
    if not ws["checked"]:
        yield "checkout_not_inspected", "No checkout was inspected: compare HEAD, status and files."
    elif ws["head"] is None:
        yield "not_a_checkout", "The workspace is not a git checkout: nothing could be compared."
    elif h["git_revision"] is None:
        yield "note_unbound", "The note is not bound to a git revision: re-read the files."
    elif ws["moved"]:
        how = {"ahead": "moved ahead", "diverged": "diverged", "unknown": "moved"}.get(
            ws["relation"] or "unknown", "moved"
        )
        yield (
            "checkout_moved",
            f"The checkout {how} since the note: HEAD is {_short(ws['head'])}, the note was "
            f"written at {_short(h['git_revision'])}. Re-read the files touched and re-run checks.",
        )


def _uncommitted(f: Facts) -> Iterator[Finding]:
    if f.shown["workspace_dirty"]:
        yield (
            "note_dirty",
            "The note was written from a checkout with uncommitted changes; they may not be here.",
        )
    if f.workspace["dirty"]:
        yield "dirty_tree", "This checkout has uncommitted changes to tracked files."


def _files(f: Facts) -> Iterator[Finding]:
    note = f.shown["note"]
    if note is None or not f.workspace["checked"]:
        return
    touched = note["files_touched"]
    missing = [x["path"] for x in touched if x["exists"] is False and x["action"] != "deleted"]
    back = [x["path"] for x in touched if x["exists"] and x["action"] == "deleted"]
    if missing:
        yield (
            "files_missing",
            f"{len(missing)} file(s) the note lists are missing here: {_paths(missing)}.",
        )
    if back:
        yield (
            "files_reappeared",
            f"{len(back)} file(s) the note says were deleted exist here: {_paths(back)}.",
        )


def _evidence(f: Facts) -> Iterator[Finding]:
    fresh = Counter(e["freshness"] for e in f.digest["evidence"])
    if fresh["historical"] and f.workspace["head"]:
        yield (
            "evidence_historical",
            f"{fresh['historical']} evidence item(s) were observed at another revision: "
            "re-run them before relying on them.",
        )
    elif fresh["bound"]:
        yield (
            "evidence_unverified",
            f"{fresh['bound']} evidence item(s) are bound to a revision that was not "
            "compared with a checkout.",
        )
    if fresh["unbound"]:
        yield (
            "evidence_unbound",
            f"{fresh['unbound']} evidence item(s) are not bound to any revision.",
        )


def _claim(f: Facts) -> Iterator[Finding]:
    claim, live = f.todo.claim, lease_live(f.todo, f.now)
    if claim is None:
        return
    if not live:
        yield "lease_expired", f"The claim's lease expired at {claim['lease_expires_at']}."
    elif (
        claim["agent_id"] not in (f.handoff.source_agent_id, f.handoff.target_agent_id)
        and f.shown["status"] == PENDING
    ):
        yield "claimed_by_other", f"{claim['agent_id']} holds the todo under a live lease."


def _gates(f: Facts) -> Iterator[Finding]:
    blocking = [g["gate_id"] for g in f.digest["todo"]["gates"] if g["blocking"]]
    if blocking:
        yield (
            "gate_pending",
            f"Pending gate(s) {', '.join(blocking)} must be resolved before the todo can be "
            "completed.",
        )


def _turns(f: Facts) -> Iterator[Finding]:
    for turn in open_turns(f.state):
        if turn["todo_id"] == f.todo.todo_id:
            yield (
                "turn_open",
                f"Turn {turn['turn_id']} by {turn['agent_id']} stopped at {turn['phase']} "
                f"(last progress {turn['updated_at']}): {RESUME_ADVICE.get(turn['phase'], '')}. "
                f"Continue it (loopx turn resume --turn-id {turn['turn_id']}); settle it once.",
            )


def _dependencies(f: Facts) -> Iterator[Finding]:
    open_deps = [d["todo_id"] for d in f.digest["todo"]["dependencies"] if d["status"] != "done"]
    if open_deps:
        yield "dependency_open", f"Dependencies not done: {', '.join(open_deps)}."


def _private(f: Facts) -> Iterator[Finding]:
    hidden = sum(n for what, n in f.omitted.items() if what.startswith("private"))
    if hidden and f.digest["audience"] != "private":
        yield "private_omitted", f"{hidden} private fact(s) are not shown to this audience."
    elif hidden:
        yield "private_not_on_host", f"{hidden} private fact(s) are not on this host."


# The checks, in the order their findings are listed.
CHECKS: tuple[Callable[[Facts], Iterator[Finding]], ...] = (
    _note_current,
    _checkout,
    _uncommitted,
    _files,
    _evidence,
    _claim,
    _gates,
    _turns,
    _dependencies,
    _private,
)
