"""Monitor write paths: add a todo that watches an external fact, and record an observation
of it (evidence, then the next wake by the backoff, or a typed transition when it changed)."""

from __future__ import annotations

from typing import Any

from loopx.engine import lookup
from loopx.engine.clock import add_seconds, parse
from loopx.engine.core import Change, Context, Result, execute
from loopx.engine.todos import _owner_check
from loopx.model.errors import Conflict, InvalidInput
from loopx.model.ids import check_id
from loopx.state.entities import GoalState, Todo

RESULTS = ("unchanged", "changed", "failed")
TRANSITIONS = ("complete", "block", "successor")
BACKOFFS = ("fixed", "exponential")
WATCH_KINDS = ("ci", "pr", "url")
MAX_INTERVAL = 30 * 86400
MAX_CAP = 365 * 86400
# Evidence kind of an observation, by what the monitor watches.
EVIDENCE_KIND = {"ci": "ci", "pr": "pr", "url": "monitor", "text": "monitor"}


def watch_kind(watch: str) -> str:
    """The typed part of a watch ref: `ci:…`, `pr:…`, `url:…`, else free `text`."""
    prefix, sep, rest = watch.partition(":")
    if sep and prefix in WATCH_KINDS:
        if not rest.strip():
            raise InvalidInput(
                f"watch ref '{prefix}:' names nothing after the colon", code="invalid_watch"
            )
        return prefix
    return "text"


def backoff_policy(kind: str, seconds: int, cap: int | None) -> dict[str, Any]:
    """A checked backoff: `fixed` every `seconds`, or `exponential` from `seconds` to `cap`."""
    if kind not in BACKOFFS:
        raise InvalidInput("backoff must be fixed or exponential", code="invalid_backoff")
    if not 1 <= seconds <= MAX_INTERVAL:
        raise InvalidInput("interval must be 1 second to 30 days", code="invalid_backoff")
    if cap is not None:
        if kind == "fixed":
            raise InvalidInput(
                "a cap only applies to an exponential backoff", code="invalid_backoff"
            )
        if not seconds <= cap <= MAX_CAP:
            raise InvalidInput(
                "cap must be at least the interval and at most 365 days", code="invalid_backoff"
            )
    return {"kind": kind, "seconds": seconds, "cap": cap}


def delay(backoff: dict[str, Any], streak: int) -> int:
    """Seconds to the next wake after the `streak`-th observation in a row that found nothing
    new (1 for the first): the interval, doubled per step for an exponential backoff, capped."""
    seconds = int(backoff["seconds"])
    if backoff.get("kind") != "exponential":
        return seconds
    cap = int(backoff.get("cap") or MAX_CAP)
    return min(cap, seconds << min(max(streak - 1, 0), 40))


def add_monitor(
    ctx: Context,
    goal_id: str,
    *,
    title: str,
    watch: str,
    every: int,
    backoff: str = "fixed",
    cap: int | None = None,
    first_at: str | None = None,
    todo_id: str | None = None,
    priority: int = 2,
    depends_on: list[str] | None = None,
    visibility: str | None = None,
    operation_id: str | None = None,
    expected_revision: int | None = None,
) -> Result:
    """Add a todo of kind `monitor`: first due at `first_at` (default: now)."""
    vis = lookup.visibility(visibility, "team")
    title = lookup.text(title, "title", limit=lookup.MAX_TITLE)
    watch = lookup.text(watch, "watch", limit=lookup.MAX_TITLE)
    kind_of_watch = watch_kind(watch)
    policy = backoff_policy(backoff, every, cap)
    if first_at is not None:
        parse(first_at)
    if not 0 <= priority <= 4:
        raise InvalidInput("priority must be 0 (highest) to 4 (lowest)", code="invalid_priority")
    request = {
        "cmd": "monitor.add",
        "title": title,
        "watch": watch,
        "backoff": policy,
        "first_at": first_at,
        "todo_id": todo_id,
        "priority": priority,
        "depends_on": depends_on or [],
        "visibility": vis,
    }

    def plan(state: GoalState | None, now: str) -> list[Change]:
        from loopx.engine.todos import _check_deps

        st = lookup.need_state(state)
        new = lookup.new_id("todo", st.todos, todo_id, "todo_id")
        data = {
            "todo_id": new,
            "title": ctx.private_text(title, vis),
            "role": "agent",
            "kind": "monitor",
            "priority": priority,
            "depends_on": _check_deps(st, new, depends_on or []),
            "monitor": {
                "watch": ctx.private_text(watch, vis),
                "watch_kind": kind_of_watch,
                "next_at": first_at or now,
                "backoff": {k: v for k, v in policy.items() if v is not None},
            },
        }
        return [Change("todo.added", data, vis)]

    return execute(
        ctx, goal_id, request, plan, operation_id=operation_id, expected_revision=expected_revision
    )


def _monitor(state: GoalState, todo_id: str) -> Todo:
    item = lookup.todo(state, todo_id)
    if item.monitor is None:
        raise Conflict(
            "todo is not a monitor (add one with: loopx monitor add)",
            code="not_a_monitor",
            todo_id=todo_id,
        )
    lookup.open_todo(item)
    if item.status == "blocked":
        raise Conflict("monitor is blocked; unblock it first", code="todo_blocked", todo_id=todo_id)
    return item


def observe(
    ctx: Context,
    goal_id: str,
    todo_id: str,
    *,
    result: str,
    summary: str,
    refs: list[str] | None = None,
    revision: str | None = None,
    then: str | None = None,
    successor_title: str | None = None,
    successor_id: str | None = None,
    reason: str | None = None,
    evidence_id: str | None = None,
    evidence_visibility: str | None = None,
    operation_id: str | None = None,
    expected_revision: int | None = None,
) -> Result:
    """Record one observation of a monitor as one operation: the evidence, the observation
    (its next wake by the backoff when unchanged or failed) and, when changed, the transition
    `then` names — complete the monitor, block it (`reason`), or complete it with a new
    successor todo (`successor_title`). Earlier records are never overwritten."""
    check_id(todo_id, "todo_id")
    if result not in RESULTS:
        raise InvalidInput("result must be unchanged, changed or failed", code="invalid_result")
    if result == "changed" and then not in TRANSITIONS:
        raise InvalidInput(
            "a changed observation needs --then complete, block or successor",
            code="transition_required",
        )
    if result != "changed" and then is not None:
        raise InvalidInput(
            "only a changed observation makes a transition", code="transition_not_allowed"
        )
    if then == "successor":
        successor_title = lookup.text(successor_title, "successor title", limit=lookup.MAX_TITLE)
    elif successor_title is not None or successor_id is not None:
        raise InvalidInput(
            "a successor title or id needs --then successor", code="transition_not_allowed"
        )
    if then == "block":
        reason = lookup.text(reason, "reason")
    elif reason is not None:
        raise InvalidInput("a reason needs --then block", code="transition_not_allowed")
    vis = lookup.visibility(evidence_visibility, "private")
    summary = lookup.text(summary, "summary", limit=lookup.MAX_TITLE)
    refs = [lookup.text(r, "ref", limit=2000) for r in refs or []]
    if revision is not None:
        check_revision(revision)
    request = {
        "cmd": "monitor.observe",
        "todo_id": todo_id,
        "result": result,
        "summary": summary,
        "refs": refs,
        "revision": revision,
        "then": then,
        "successor_title": successor_title,
        "successor_id": successor_id,
        "reason": reason,
        "evidence_id": evidence_id,
        "visibility": vis,
    }

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        item = _monitor(st, todo_id)
        _owner_check(item, ctx.agent_id, now)
        record = item.monitor or {}
        ev_id = lookup.new_id("ev", st.evidence, evidence_id, "evidence_id")
        evidence = {
            "evidence_id": ev_id,
            "kind": EVIDENCE_KIND[record["watch_kind"]],
            "summary": ctx.private_text(summary, vis),
            "refs": [ctx.private_text(r, vis) for r in refs],
            "revision": revision,
            "todo_id": todo_id,
        }
        observed: dict[str, Any] = {"todo_id": todo_id, "result": result, "evidence_id": ev_id}
        # The observation first (the receipt's subject is the monitor), then its evidence.
        changes = [
            Change("monitor.observed", observed, item.visibility),
            Change("evidence.added", evidence, vis),
        ]
        if result != "changed":
            observed["next_at"] = add_seconds(now, delay(record["backoff"], record["streak"] + 1))
            return changes
        observed["transition"] = then
        done = {"todo_id": todo_id, "evidence_ids": [ev_id]}
        if then == "block":
            text = ctx.private_text(reason or "", item.visibility)
            after = [Change("todo.blocked", {"todo_id": todo_id, "reason": text}, item.visibility)]
        elif then == "successor":
            new = lookup.new_id("todo", st.todos, successor_id, "todo_id")
            observed["successor"] = new
            added = {
                "todo_id": new,
                "title": ctx.private_text(successor_title or "", item.visibility),
                "role": "agent",
                "kind": "task",
                "priority": item.priority,
                "depends_on": [],
                "predecessor": todo_id,
            }
            after = [
                Change("todo.added", added, item.visibility),
                Change("todo.completed", {**done, "successor": new}, item.visibility),
            ]
        else:
            after = [Change("todo.completed", done, item.visibility)]
        return [*changes, *after]

    return execute(
        ctx,
        goal_id,
        request,
        plan,
        operation_id=operation_id,
        expected_revision=expected_revision,
        revision_of=lookup.todo_revision(todo_id),
    )


def check_revision(revision: str) -> None:
    from loopx.engine.evidence import _REV

    if not _REV.match(revision):
        raise InvalidInput(
            "revision must be a git commit hash (7-64 hex digits)", code="invalid_revision"
        )
