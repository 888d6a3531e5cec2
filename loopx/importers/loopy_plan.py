"""Plan the writes that import one loopy-loop session: source facts → engine calls.

Nothing is written here: `SessionPlan(...).build()` returns `Op`s (see `loopy_ops`), each an
engine call with an operation id derived from the source, the source's own time and an actor.
What each op asks for is a function of the source alone. The ledger (`Imported`) only decides
which reconciling ops are added: closing a user update loopy-loop has since cleared, and
whether a met goal is closed or left for the user to review.

The mapping, per session → one goal (id from the session id, or `--goal-id`), `team` visibility:

- `goal.md` (else `goal_contract.json`'s goal, else `state.json`'s snapshot, else the project's
  goal file) → title (first line) and objective; completion criteria → acceptance;
  `max_turns` → the goal's run quota. Local paths are scrubbed from inline text; the text as
  written is kept as private evidence (`goal-text`).
- a todo `loopy-session` (agent, kind `monitor`) stands for loopy-loop working the goal: open
  while the session runs, done when it meets its goal, blocked when it stops short.
- each recorded iteration → a run `iter-NNNN` by agent `loopy-<workflow>`, outcome `progress`
  when the harness call returned and `failed` when it did not. A harness success is not a goal
  success: the goal's status comes only from the session's stop state (below). The prompt and
  the result text become private `log` evidence, `goal_check.json` a `review` evidence with its
  verdict (the judge's reason stays private), a HEAD move between git receipts a `commit`.
  `protocol_failures/` and `control_rejected/` → private `log` evidence, after the run of the
  attempt they name; `eval_results/<run>/report.json` and `eval_receipts/` → `test` evidence.
  (All three in `loopy_runs`.)
- each `project_state/finished.md` entry → a done todo `fin-NNN` with an `review` evidence
  (the entry, body private) and one evidence per delivery fact: `pr`, `branch`, `commit`, `ci`.
- non-empty `updates_from_user.md` and pending `inputs/user_updates.jsonl` inputs → user todos
  (done once loopy-loop clears or acknowledges them).
- child sessions → goals of their own, linked both ways: the parent gets a todo `child-…`
  (kind `child`, done with a `goal` evidence citing `loopx:goal/<child>` once the child meets
  its goal, blocked if it stops short) and the child a note naming its parent goal.
- `project_state/handoff.json` (0.12) → the session todo's handoff note: the orchestrating
  role (`loopy-<workflow>`) claims the todo and prepares the note after the session's history
  and before its stop state, so the note is recorded while the todo is open. That role then
  holds the todo, so it is also the one that closes it.
- the stop state (`loopy_stop`): goal met *with evidence* → `achieved`, when no todo is left
  open; goal met without evidence → active with a user todo to confirm; stopped by its
  operator → `abandoned`; stopped short (max_turns, failures, caps) or on an unresolvable
  error → active, the session todo blocked, and a user todo to decide how to continue;
  running → active.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loopx.engine import goals, todos
from loopx.engine.commands import (
    AddNote,
    ClaimTodo,
    CloseGoal,
    CreateGoal,
    PrepareHandoff,
    SetQuota,
)
from loopx.engine.handoff import check_note, prepare_handoff
from loopx.importers.loopy_model import LayerHandoff, Problem, Session
from loopx.importers.loopy_ops import (
    AGENT,
    EPOCH,
    SESSION_TODO,
    TITLE_MAX,
    Op,
    Ops,
    bind,
    inline,
    json_body,
    safe_refs,
)
from loopx.importers.loopy_runs import plan_evals, plan_iteration, plan_orphan_failures
from loopx.importers.loopy_stop import Stop, goal_evidence, stop_state
from loopx.importers.sanitize import clip, first_line, short_hash, slug
from loopx.model.errors import InvalidInput
from loopx.state.entities import GoalState

OPEN = ("open", "active")
_UUID = re.compile(
    r"[0-9A-Fa-f]{8}-?[0-9A-Fa-f]{4}-?[0-9A-Fa-f]{4}-?[0-9A-Fa-f]{4}-?[0-9A-Fa-f]{12}"
)


@dataclass(frozen=True)
class Imported:
    """What the goal's ledger holds that planning may look at: each todo's status.

    It decides only which reconciling writes a plan adds, never what a write asks for."""

    todos: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, state: GoalState | None) -> Imported:
        if state is None:
            return cls()
        return cls({t.todo_id: t.status for t in state.todos.values()})


def session_key(s: Session) -> str:
    """The session's identity in operation ids: its uuid, else a hash of its id (or of an
    uuid that is not one, which could not go into an operation id as it is)."""
    if s.uuid and _UUID.fullmatch(s.uuid):
        return s.uuid[:12].lower()
    return short_hash(s.uuid or s.session_id, 12)


class SessionPlan(Ops):
    """The writes for one session, decided before any of them is made."""

    def __init__(
        self,
        s: Session,
        goal_id: str,
        goal_ids: Mapping[str, str],
        sessions: Mapping[str, Session],
        parent_goal: str | None,
        imported: Imported | None = None,
    ):
        super().__init__(goal_id, session_key(s), slug(s.session_id))
        self.s = s
        self.goal_ids = goal_ids
        self.sessions = sessions
        self.parent_goal = parent_goal
        self.imported = imported or Imported()
        self.problems: list[Problem] = []  # found while planning (a handoff note refused)
        self.holder = AGENT  # who holds the session todo (the handoff's role, once it claims)
        times = s.times
        self.start = times[0] if times else None
        self.last = times[-1] if times else None

    def status(self, todo_id: str) -> str | None:
        """A todo's status once the plan is written: closed by the plan, else as the ledger
        has it, else open when the plan adds it."""
        if todo_id in self.closed:
            return self.closed[todo_id]
        if todo_id in self.imported.todos:
            return self.imported.todos[todo_id]
        return "open" if todo_id in self.added else None

    # -- the session -----------------------------------------------------------------

    def build(self) -> list[Op]:
        self.goal()
        self.user_updates()
        for it in self.s.iterations:
            plan_iteration(self, self.s, it)
        plan_orphan_failures(self, self.s)
        plan_evals(self, self.s)
        self.finished()
        self.children()
        self.handoff()
        self.stop()
        return self.ordered(self.start)

    def goal(self) -> None:
        s, at = self.s, self.start
        assert s.goal_text is not None
        parts = [s.goal_text]
        for heading, items in (("Constraints", s.constraints), ("Deliverables", s.deliverables)):
            if items:
                parts.append(f"{heading}:\n" + "\n".join(f"- {i}" for i in items))
        original = "\n\n".join(parts)
        objective = inline(original, 20_000)
        create = bind(
            goals.create_goal,
            CreateGoal(
                goal_id=self.goal_id,
                title=inline(first_line(s.goal_text, TITLE_MAX), TITLE_MAX) or s.session_id,
                objective=objective,
                acceptance=[inline(c, 2000) for c in s.criteria][:100],
                visibility="team",
            ),
        )
        self.op("goal", "create", create, at=at, label="goal", phase=0)
        if objective != original.strip():
            self.evidence(
                "goal-text",
                kind="note",
                summary="The session's goal as written",
                body=original.encode("utf-8"),
                visibility="private",
                at=at,
                label="goal text",
                phase=0,
            )
        self.goal_setup()

    def goal_setup(self) -> None:
        """The goal's run quota, its coordinator, its parent link and the session todo."""
        s, at = self.s, self.start
        max_turns = s.state.max_turns if s.state else None
        if max_turns is not None and max_turns >= 0:
            quota = bind(
                goals.set_quota, SetQuota(goal_id=self.goal_id, quota=max_turns, unit="runs")
            )
            self.op(f"quota-{max_turns}", "set", quota, at=at, label="quota", phase=0)
        self.register(AGENT, "loopy-loop coordinator", at=at, phase=0)
        if self.parent_goal is not None:
            note = bind(
                goals.add_note,
                AddNote(
                    goal_id=self.goal_id,
                    text=f"Child of goal {self.parent_goal} (loopy-loop session "
                    f"{inline(s.parent_session_id or '?', 200)}).",
                    kind="note",
                    visibility="team",
                    note_id="parent-link",
                ),
            )
            self.op("parent-link", "add", note, at=at, label="parent link", phase=0)
        self.add_todo(
            SESSION_TODO,
            f"loopy-loop works toward this goal (session {s.session_id})",
            kind="monitor",
            at=at,
            phase=0,
        )

    def user_updates(self) -> None:
        s, at = self.s, self.last
        current = None
        if s.updates_text:
            current = f"user-update-{short_hash(s.updates_text)}"
            self.add_todo(
                current,
                "Update from the user for loopy-loop: " + first_line(s.updates_text, 150),
                role="user",
                at=at,
            )
            self.evidence(
                f"{current}-text",
                kind="note",
                summary="updates_from_user.md as written",
                body=s.updates_text.encode("utf-8"),
                visibility="private",
                todo_id=current,
                at=at,
                label="user update text",
            )
        for todo_id, status in sorted(self.imported.todos.items()):
            if todo_id.startswith("user-update-") and todo_id != current and status == "open":
                self.close_todo(todo_id, "complete", at=at)  # loopy-loop cleared the file
        for item in s.user_inputs:
            todo_id = slug(item.input_id, "user-input-")
            self.add_todo(
                todo_id,
                "User input for loopy-loop: " + (first_line(item.text, 150) or item.input_id),
                role="user",
                at=item.created_at,
            )
            if item.text:
                self.evidence(
                    slug(f"{todo_id}-text"),
                    kind="note",
                    summary="user input as written",
                    body=item.text.encode("utf-8"),
                    visibility="private",
                    todo_id=todo_id,
                    at=item.created_at,
                    label="user input text",
                )
            if item.acknowledged:
                self.close_todo(todo_id, "complete", at=item.acknowledged_at or item.created_at)

    def finished(self) -> None:
        for entry in self.s.finished:
            todo_id = f"fin-{entry.index:03d}"
            at = entry.timestamp
            title = inline(entry.title, TITLE_MAX) or f"Finished work {entry.index}"
            self.add_todo(todo_id, title, at=at)
            d = entry.delivery
            revision = next((sha for label, sha in d.commits if label == "merge commit"), None)
            revision = revision or (d.commits[0][1] if d.commits else None)
            urls = [p for p in d.prs if p.startswith("http")]
            ids = [
                self.evidence(
                    f"{todo_id}-accepted",
                    kind="review",
                    summary=f"Accepted in finished.md: {title}",
                    body=entry.text.encode("utf-8"),
                    refs=d.refs + urls,
                    revision=revision,
                    todo_id=todo_id,
                    at=at,
                    label=f"finished entry {entry.index}",
                )
            ]
            facts: list[tuple[str, str, list[str], str | None]] = []
            facts += [
                ("pr", f"Pull request {p}", [p] if p.startswith("http") else [], revision)
                for p in d.prs
            ]
            facts += [("branch", f"Branch {b}", [f"branch:{b}"], None) for b in d.branches]
            facts += [
                ("commit", f"{label.capitalize()} {sha}", [], sha) for label, sha in d.commits
            ]
            facts += [("ci", f"Checks: {c}", [], revision) for c in d.checks]
            counts: dict[str, int] = {}
            for kind, summary, refs, rev in facts[:40]:
                counts[kind] = counts.get(kind, 0) + 1
                ids.append(
                    self.evidence(
                        f"{todo_id}-{kind}-{counts[kind]}",
                        kind=kind,
                        summary=summary,
                        refs=refs,
                        revision=rev,
                        todo_id=todo_id,
                        at=at,
                        label=f"finished entry {entry.index} {kind}",
                    )
                )
            self.close_todo(todo_id, "complete", evidence_ids=ids, at=at)

    def children(self) -> None:
        s = self.s
        known = {c.session_id: c for c in s.children}
        nested = sorted(
            sid for sid, other in self.sessions.items() if other.parent_session_id == s.session_id
        )
        for sid in sorted(set(known) | set(nested)):
            record = known.get(sid)
            child = self.sessions.get(sid)
            goal_id = self.goal_ids.get(sid, slug(sid))
            todo_id = slug(sid, "child-")
            title = first_line(child.goal_text or "", 150) if child and child.goal_text else sid
            at = (record.created_at if record else None) or (child.created_at if child else None)
            self.add_todo(todo_id, f"Child session: {title}", kind="child", at=at)
            if child is not None and not child.fatal:
                stop = stop_state(child)
                state, reason = stop.state, stop.reason
            elif record is not None and record.status not in (None, "running"):
                state = "achieved" if record.status == "goal_met" else "stopped_early"
                reason = record.stop_reason or record.status or "stopped"
            else:
                continue
            done_at = (record.completed_at if record else None) or (
                child.times[-1] if child and child.times else at
            )
            if state == "achieved":
                proof = self.evidence(
                    slug(f"{todo_id}-met"),
                    kind="goal",
                    summary=f"Child goal {goal_id} met",
                    refs=[f"loopx:goal/{goal_id}"],
                    todo_id=todo_id,
                    at=done_at,
                    label=f"child {sid} outcome",
                )
                self.close_todo(todo_id, "complete", evidence_ids=[proof], at=done_at)
            elif state != "running":
                self.close_todo(
                    todo_id, "block", reason=f"child session stopped: {reason}", at=done_at
                )

    def handoff(self) -> None:
        """The orchestrator's `project_state/handoff.json` → a handoff note on the session
        todo, prepared by that role after claiming the todo (as the engine requires).

        Planned after the session's history and before its stop state, so the note is
        recorded while the todo is open and bound to its latest revision. Whether the todo is
        open is the engine's to check, not the plan's: on a reimport both writes replay."""
        h = self.s.handoff
        if h is None:
            return
        try:
            note = check_note(_handoff_note(h))  # checked before anything is written
        except InvalidInput as err:
            self.problems.append(
                Problem(
                    f"{self.s.rel}/project_state/handoff.json",
                    f"handoff revision {h.revision} was not imported: {err.message}",
                    "error",
                    self.s.session_id,
                )
            )
            return
        agent = slug(h.workflow, "loopy-")
        at = h.updated_at or self.last or self.start or EPOCH
        mark = next(
            (
                it.git_after
                for it in self.s.iterations
                if h.attempt_id and it.attempt_id == h.attempt_id and it.git_after
            ),
            None,
        )
        head, dirty = (mark.head, mark.dirty) if mark else (None, None)
        self.register(agent, f"loopy-loop {h.workflow} role", at=at)
        claim = bind(todos.claim_todo, ClaimTodo(goal_id=self.goal_id, todo_id=SESSION_TODO))
        prepare = bind(
            prepare_handoff,
            PrepareHandoff(
                goal_id=self.goal_id,
                todo_id=SESSION_TODO,
                note=note,
                git_revision=head,
                workspace_dirty=dirty if head else None,
            ),
        )
        entity, label = f"handoff-r{h.revision}", f"handoff revision {h.revision}"
        self.op(entity, "claim", claim, at=at, agent=agent, label=label, group=entity)
        self.op(entity, "prepare", prepare, at=at, agent=agent, label=label, group=entity)
        self.holder = agent  # its claim stands until the todo closes: the holder closes it

    def stop(self) -> None:
        """The session's stop state → the session todo closed, and the goal closed or a
        question for the user."""
        s, stop = self.s, stop_state(self.s)
        if stop.state == "running":
            if self.imported.todos.get(SESSION_TODO, "open") not in OPEN:
                self.problems.append(
                    Problem(
                        f"{s.rel}/state.json",
                        "the session runs again after it was imported as stopped; its "
                        "session todo is left as it was",
                        "warning",
                        s.session_id,
                    )
                )
            return
        at = (s.state.terminal_at if s.state else None) or self.last
        words = _stop_words(stop)
        outcome_id = self.outcome(stop, words, at)
        if stop.state == "achieved":
            self.achieved(outcome_id, at)
        elif stop.state == "user_stopped":
            self.abandoned(at)
        else:
            self.stopped_short(stop, words, at)

    def outcome(self, stop: Stop, words: str, at: str | None) -> str:
        """The session's outcome as a `review` evidence on the session todo (its control and
        outcome files kept private)."""
        s, control, outcome = self.s, self.s.control, self.s.outcome
        refs = goal_evidence(s) if stop.state == "achieved" else []
        refs = [r for r in refs if ":" in r and not r.startswith(("goal_check:", "eval:"))]
        by = ""
        if control and control.producer_workflow and control.state == "stopped":
            by = f" (control by {control.producer_workflow}"
            by += f" attempt {control.producer_attempt})" if control.producer_attempt else ")"
        heads = [it.git_after.head for it in s.iterations if it.git_after and it.git_after.head]
        return self.evidence(
            "outcome",
            kind="review",
            summary=f"loopy-loop {words}{by}",
            body=json_body(
                ("control.json", control.raw if control else None),
                ("session_outcome.json", outcome.raw if outcome else None),
            ),
            refs=refs,
            revision=heads[-1] if heads else None,
            todo_id=SESSION_TODO,
            at=at,
            label="session outcome",
            phase=2,
        )

    def achieved(self, outcome_id: str, at: str | None) -> None:
        """The goal met with evidence: close the goal, unless todos are left open (or the
        user was asked to confirm before): closing it is then the user's to do."""
        passing = [
            f"it-{it.number:04d}{f'-r{it.attempt}' if it.attempt > 1 else ''}-check"
            for it in self.s.iterations
            if it.goal_check and it.goal_check.goal_met
        ]
        self.close_todo(
            SESSION_TODO,
            "complete",
            evidence_ids=[outcome_id, *passing],
            at=at,
            phase=2,
            agent=self.holder,
        )
        asked = "confirm-goal-met" in self.imported.todos
        known = sorted(set(self.imported.todos) | self.added)
        if asked or any(self.status(t) in (*OPEN, "blocked") for t in known):
            self.add_todo(
                "confirm-goal-met",
                "loopy-loop reports the goal met, but todos are still open: review them, "
                "then close the goal",
                role="user",
                at=at,
                phase=2,
            )
            return
        control = self.s.control
        reason = inline(control.reason, 2000) if control and control.reason else None
        close = bind(
            goals.close_goal, CloseGoal(goal_id=self.goal_id, outcome="achieved", reason=reason)
        )
        self.op("goal", "achieve", close, at=at, label="close goal (achieved)", phase=2)

    def abandoned(self, at: str | None) -> None:
        self.close_todo(
            SESSION_TODO,
            "cancel",
            reason="stopped by its operator",
            at=at,
            phase=2,
            agent=self.holder,
        )
        abandon = bind(
            goals.close_goal,
            CloseGoal(
                goal_id=self.goal_id,
                outcome="abandoned",
                reason="The loopy-loop session was stopped by its operator.",
            ),
        )
        self.op("goal", "abandon", abandon, at=at, label="close goal (abandoned)", phase=2)

    def stopped_short(self, stop: Stop, words: str, at: str | None) -> None:
        """Blocked, unevidenced or stopped early: the session todo blocked, and a user todo
        to decide what comes next."""
        control = self.s.control
        self.close_todo(
            SESSION_TODO,
            "block",
            reason=f"loopy-loop {words}",
            at=at,
            phase=2,
            agent=self.holder,
        )
        if stop.state == "unevidenced":
            todo_id = "confirm-goal-met"
            title = "Confirm loopy-loop's goal_met claim: the session cites no evidence"
        elif stop.state == "blocker":
            todo_id = "resolve-blocker"
            title = "Resolve the blocker loopy-loop could not"
            if control and control.reason:
                title += ": " + clip(control.reason, 300)
        else:
            todo_id = "decide-after-stop"
            title = (
                f"loopy-loop stopped ({stop.reason}) before the goal was met: resume the "
                "session or close this goal"
            )
        self.add_todo(todo_id, title, role="user", at=at, phase=2)


def _handoff_note(h: LayerHandoff) -> dict[str, Any]:
    """loopy-loop's handoff as a loopx handoff note, its text fit for the shared ledger."""
    summary = h.summary or f"loopy-loop handoff revision {h.revision}"
    return {
        "work_summary": inline(summary, 4000),
        "approaches_tried": [
            {"approach": inline(a, 500), "outcome": "accepted"} for a in h.accepted[:30]
        ],
        "next_steps": [inline(i, 1000) for i in h.open_work[:30]],
        "key_decisions": [inline(i, 1000) for i in h.decisions[:30]],
        "open_questions": [inline(i, 1000) for i in h.risks[:30]],
        "source_refs": safe_refs(h.refs)[:50],
    }


def _stop_words(stop: Stop) -> str:
    """What the session did, as the end of a sentence starting "loopy-loop …"."""
    return {
        "achieved": "reports the goal met",
        "unevidenced": "reports the goal met but cites no evidence",
        "user_stopped": "was stopped by its operator",
        "blocker": "stopped on an error it cannot resolve",
        "stopped_early": f"stopped before meeting the goal ({stop.reason})",
    }[stop.state]
