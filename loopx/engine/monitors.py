"""Monitor write paths: add a todo that watches an external fact, and record an observation
of it (evidence, then the next wake by the backoff, or a typed transition when it changed)."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from loopx.engine import lookup
from loopx.engine.clock import add_seconds, parse
from loopx.engine.commands import AddMonitor, Backoff, ObserveMonitor
from loopx.engine.core import Change, Context, Result, execute
from loopx.engine.evidence import check_revision
from loopx.engine.todos import _check_priority, _owner_check, checked_new, new_todo
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


def check_backoff(backoff: Backoff) -> Backoff:
    """A checked backoff: `fixed` every `seconds`, or `exponential` from `seconds` to `cap`."""
    kind, seconds, cap = backoff.kind, backoff.seconds, backoff.cap
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
    return backoff


def delay(backoff: dict[str, Any], streak: int) -> int:
    """Seconds to the next wake after the `streak`-th observation in a row that found nothing
    new (1 for the first): the interval, doubled per step for an exponential backoff, capped."""
    seconds = int(backoff["seconds"])
    if backoff.get("kind") != "exponential":
        return seconds
    cap = int(backoff.get("cap") or MAX_CAP)
    return min(cap, seconds << min(max(streak - 1, 0), 40))


def add_monitor(ctx: Context, cmd: AddMonitor) -> Result:
    """Add a todo of kind `monitor`: first due at `first_at` (default: now)."""
    cmd, vis = checked_new(cmd)
    cmd = replace(cmd, watch=lookup.text(cmd.watch, "watch", limit=lookup.MAX_TITLE))
    kind_of_watch = watch_kind(cmd.watch)
    policy = check_backoff(cmd.backoff)
    if cmd.first_at is not None:
        parse(cmd.first_at)
    _check_priority(cmd.priority)

    def plan(state: GoalState | None, now: str) -> list[Change]:
        data = new_todo(ctx, lookup.need_state(state), cmd, vis, role="agent", kind="monitor")
        data["monitor"] = {
            "watch": ctx.private_text(cmd.watch, vis),
            "watch_kind": kind_of_watch,
            "next_at": cmd.first_at or now,
            "backoff": {k: v for k, v in asdict(policy).items() if v is not None},
        }
        return [Change("todo.added", data, vis)]

    return execute(ctx, cmd, plan)


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


def observe(ctx: Context, cmd: ObserveMonitor) -> Result:
    """Record one observation of a monitor as one operation: the evidence, the observation
    (its next wake by the backoff when unchanged or failed) and, when changed, the transition
    `then` names — complete the monitor, block it (`reason`), or complete it with a new
    successor todo (`successor_title`). Earlier records are never overwritten."""
    cmd = _checked_observation(cmd)
    todo_id, vis = cmd.todo_id, cmd.evidence_visibility or "private"

    def plan(state: GoalState | None, now: str) -> list[Change]:
        st = lookup.need_state(state)
        item = _monitor(st, todo_id)
        _owner_check(item, ctx.agent_id, now)
        record = item.monitor or {}
        ev_id = lookup.new_id("ev", st.evidence, cmd.evidence_id, "evidence_id")
        evidence = {
            "evidence_id": ev_id,
            "kind": EVIDENCE_KIND[record["watch_kind"]],
            "summary": ctx.private_text(cmd.summary, vis),
            "refs": [ctx.private_text(r, vis) for r in cmd.refs],
            "revision": cmd.revision,
            "todo_id": todo_id,
        }
        observed: dict[str, Any] = {"todo_id": todo_id, "result": cmd.result, "evidence_id": ev_id}
        # The observation first (the receipt's subject is the monitor), then its evidence.
        changes = [
            Change("monitor.observed", observed, item.visibility),
            Change("evidence.added", evidence, vis),
        ]
        if cmd.result != "changed":
            observed["next_at"] = add_seconds(now, delay(record["backoff"], record["streak"] + 1))
            return changes
        observed["transition"] = cmd.then
        return [*changes, *_transition(ctx, cmd, st, item, ev_id, observed)]

    return execute(ctx, cmd, plan)


def _checked_observation(cmd: ObserveMonitor) -> ObserveMonitor:
    """`cmd` checked: a result, the transition a changed one needs (and nothing a transition
    it does not make would use), its texts; with its evidence visibility filled in."""
    check_id(cmd.todo_id, "todo_id")
    result, then = cmd.result, cmd.then
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
    successor_title, reason = cmd.successor_title, cmd.reason
    if then == "successor":
        successor_title = lookup.text(successor_title, "successor title", limit=lookup.MAX_TITLE)
    elif successor_title is not None or cmd.successor_id is not None:
        raise InvalidInput(
            "a successor title or id needs --then successor", code="transition_not_allowed"
        )
    if then == "block":
        reason = lookup.text(reason, "reason")
    elif reason is not None:
        raise InvalidInput("a reason needs --then block", code="transition_not_allowed")
    vis = lookup.visibility(cmd.evidence_visibility, "private")
    summary = lookup.text(cmd.summary, "summary", limit=lookup.MAX_TITLE)
    refs = tuple(lookup.text(r, "ref", limit=2000) for r in cmd.refs)
    if cmd.revision is not None:
        check_revision(cmd.revision)
    return replace(
        cmd,
        successor_title=successor_title,
        reason=reason,
        evidence_visibility=vis,
        summary=summary,
        refs=refs,
    )


def _transition(
    ctx: Context,
    cmd: ObserveMonitor,
    state: GoalState,
    item: Todo,
    ev_id: str,
    observed: dict[str, Any],
) -> list[Change]:
    """What a changed observation does to its monitor: complete it, block it, or complete it
    with a new successor todo (named in `observed`)."""
    todo_id, vis = item.todo_id, item.visibility
    done = {"todo_id": todo_id, "evidence_ids": [ev_id]}
    if cmd.then == "block":
        text = ctx.private_text(cmd.reason or "", vis)
        return [Change("todo.blocked", {"todo_id": todo_id, "reason": text}, vis)]
    if cmd.then != "successor":
        return [Change("todo.completed", done, vis)]
    new = lookup.new_id("todo", state.todos, cmd.successor_id, "todo_id")
    observed["successor"] = new
    added = {
        "todo_id": new,
        "title": ctx.private_text(cmd.successor_title or "", vis),
        "role": "agent",
        "kind": "task",
        "priority": item.priority,
        "depends_on": [],
        "predecessor": todo_id,
    }
    return [
        Change("todo.added", added, vis),
        Change("todo.completed", {**done, "successor": new}, vis),
    ]
