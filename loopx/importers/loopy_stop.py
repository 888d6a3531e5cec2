"""How a loopy-loop session stands, from its files alone: running, or why it stopped.

`state.json` is loopy-loop's source of truth, then `session_outcome.json`, `control.json` and
a `session_stopped` event. A goal_met claim counts as achieved only with evidence: control or
outcome refs, a passing goal check or a passing eval.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopx.importers.loopy_model import Session

USER_STOPS = frozenset({"stopped", "user_stop", "stop_requested", "user_requested", "operator"})


@dataclass(frozen=True)
class Stop:
    """`running`, `achieved`, `unevidenced`, `user_stopped`, `blocker` or `stopped_early`,
    with loopy-loop's own reason."""

    state: str
    reason: str


def stop_state(s: Session) -> Stop:
    st, control, outcome = s.state, s.control, s.outcome
    if st is not None:
        status, reason = st.status, st.stop_reason or st.status
        claims_met = status == "goal_met" or st.goal_met
        terminal = status != "running" or claims_met
    elif outcome is not None and outcome.lifecycle == "terminal":
        reason = outcome.stop_reason or outcome.terminal_status or "stopped"
        status, claims_met, terminal = reason, reason == "goal_met", True
    elif control is not None and control.state == "stopped":
        reason = control.stop_reason or "stopped"
        status, claims_met, terminal = reason, reason == "goal_met", True
    elif s.events.stopped is not None:
        reason = str(s.events.stopped.get("stop_reason") or s.events.stopped.get("status"))
        status, claims_met, terminal = reason, reason == "goal_met", True
    else:
        return Stop("running", "session active")
    if not terminal:
        return Stop("running", "session active")
    if claims_met:
        return Stop("achieved" if goal_evidence(s) else "unevidenced", "goal_met")
    if reason == "unresolvable_error" or (st is not None and st.unresolvable_error):
        return Stop("blocker", "unresolvable_error")
    if (st is not None and st.stop_requested) or reason in USER_STOPS or status == "stopped":
        return Stop("user_stopped", reason)
    return Stop("stopped_early", reason)


def goal_evidence(s: Session) -> list[str]:
    """What backs a goal_met claim: control/outcome refs, passing goal checks or evals."""
    refs: list[str] = []
    if s.control is not None and s.control.stop_reason == "goal_met":
        refs += s.control.evidence_refs + s.control.eval_refs
    if s.outcome is not None and (s.outcome.terminal_status or s.outcome.stop_reason) == "goal_met":
        refs += s.outcome.evidence_refs
    refs += [
        f"goal_check:{it.number}" for it in s.iterations if it.goal_check and it.goal_check.goal_met
    ]
    refs += [f"eval:{e.report_id}" for e in s.evals if e.passed]
    return list(dict.fromkeys(refs))
