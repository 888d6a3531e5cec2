"""What each loopy-loop turn left → runs and evidence: an iteration's run with its prompt,
result, goal check and commit; protocol failures; eval reports. Files loopy-loop writes once,
so their operations are settled (see `loopy_ops.SETTLED`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import orjson

from loopx.engine import evidence as ev
from loopx.engine.commands import RecordRun
from loopx.importers.loopy_model import Iteration, ProtocolFailure, Session
from loopx.importers.loopy_ops import SESSION_TODO, Ops, bind, inline
from loopx.importers.sanitize import has_local_path, slug


def plan_iteration(plan: Ops, s: Session, it: Iteration) -> None:
    """One recorded iteration → its run, with the evidence its files hold, then the
    protocol failures of its attempt."""
    agent = slug(it.workflow, "loopy-")
    at = it.finished_at or it.started_at
    plan.register(agent, f"loopy-loop {it.workflow} role", at=at)
    suffix = f"-r{it.attempt}" if it.attempt > 1 else ""
    where = f"iteration {it.number} ({it.workflow})"
    add = partial(plan.evidence, at=at, agent=agent, todo_id=SESSION_TODO)
    ids = _iteration_evidence(add, it, f"it-{it.number:04d}{suffix}", where)
    run_id = f"iter-{it.number:04d}{suffix}"
    run = bind(
        ev.record_run,
        RecordRun(
            goal_id=plan.goal_id,
            outcome="progress" if it.success else "failed",
            agent_id=agent,
            session_id=plan.session_slug,
            todo_id=SESSION_TODO,
            summary=run_summary(it, where),
            evidence_ids=ids,
            quota_spent=1,
            run_id=run_id,
            visibility="team",
        ),
    )
    plan.op(run_id, "record", run, at=at, agent=agent, label=f"run {run_id}")
    for failure in s.protocol_failures:
        if failure.attempt_id and failure.attempt_id == it.attempt_id:
            plan_failure(plan, failure)


def _iteration_evidence(
    add: Callable[..., str], it: Iteration, prefix: str, where: str
) -> list[str]:
    """The evidence an iteration's files hold: its prompt and result (private logs), its goal
    check and the commit it made. `add` plans one evidence and returns its id."""
    before = it.git_before.head if it.git_before else None
    head = it.git_after.head if it.git_after else None
    body = it.result_text if it.result_text and it.result_text.strip() else it.result_json
    if body is None and (it.error or it.failure_kind):
        body = orjson.dumps({"error": it.error, "failure_kind": it.failure_kind})
    ids: list[str] = []
    for name, text, revision in (("prompt", it.prompt, before), ("result", body, head)):
        if text:
            ids.append(
                add(
                    f"{prefix}-{name}",
                    kind="log",
                    summary=f"{name.capitalize()} of {where}",
                    body=text,
                    revision=revision,
                    visibility="private",
                    label=f"{where} {name}",
                )
            )
    if it.goal_check is not None:
        check = it.goal_check
        ids.append(
            add(
                f"{prefix}-check",
                kind="review",
                summary=f"Goal check after {where}: goal "
                + ("met" if check.goal_met else "not met"),
                body=check.raw,
                refs=[check.eval_receipt_ref] if check.eval_receipt_ref else [],
                revision=head,
                label=f"{where} goal check",
            )
        )
    if head and before and head != before:
        branch = it.git_after.branch if it.git_after else None
        on = f" on {branch}" if branch and not has_local_path(branch) else ""
        ids.append(
            add(
                f"{prefix}-commit",
                kind="commit",
                summary=f"{where.capitalize()} moved HEAD from {before[:12]} to {head[:12]}{on}",
                revision=head,
                label=f"{where} commit",
            )
        )
    return ids


def plan_failure(plan: Ops, failure: ProtocolFailure) -> None:
    """A protocol failure, described from its own file only (whether its attempt is
    recorded yet decides where it goes in the plan, never what it says)."""
    by = ""
    if failure.attempt_id:
        role = f" ({failure.workflow_id})" if failure.workflow_id else ""
        by = f" after attempt {failure.attempt_id}{role}"
    plan.evidence(
        slug(failure.failure_id, "pf-"),
        kind="log",
        summary=f"loopy-loop {failure.kind.replace('_', ' ')}{by} ({failure.path})",
        body=failure.raw,
        visibility="private",
        at=failure.created_at,
        label=f"protocol failure {failure.failure_id}",
    )


def plan_orphan_failures(plan: Ops, s: Session) -> None:
    """Protocol failures whose attempt is not (yet) a recorded iteration."""
    attempts = {it.attempt_id for it in s.iterations if it.attempt_id}
    for failure in s.protocol_failures:
        if not (failure.attempt_id and failure.attempt_id in attempts):
            plan_failure(plan, failure)


def plan_evals(plan: Ops, s: Session) -> None:
    """eval-banana reports and eval receipts → `test` evidence with their verdict."""
    for report in s.evals:
        if report.passed is None:
            verdict = "verdict not recorded"
        else:
            verdict = "passed" if report.passed else "failed"
        if report.checks_total is not None:
            verdict += f" ({report.checks_passed}/{report.checks_total} checks)"
        name = "eval receipt" if report.source == "eval_receipts" else "eval-banana run"
        plan.evidence(
            slug(report.report_id, "eval-"),
            kind="test",
            summary=f"{name} {slug(report.report_id)}: {verdict}",
            body=report.raw,
            revision=report.revision,
            at=report.created_at,
            label=f"eval {report.report_id}",
        )


def run_summary(it: Iteration, where: str) -> str:
    if it.success:
        text = f"{where.capitalize()}: the harness call returned"
    else:
        text = f"{where.capitalize()}: the harness call failed"
        if it.failure_kind:
            text += f" ({inline(it.failure_kind, 60)})"
    facts = []
    if it.duration_s is not None:
        facts.append(f"{it.duration_s:.2f} s")
    if it.prompt_tokens is not None:
        facts.append(f"{it.prompt_tokens} prompt + {it.completion_tokens or 0} completion tokens")
    if facts:
        text += " (" + "; ".join(facts) + ")"
    return text + "."
