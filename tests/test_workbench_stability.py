"""What moves a committed workbench: what it shows, never a heartbeat or the clock alone."""

from __future__ import annotations

from pathlib import Path

from loopx.build.single import workbench_markdown
from loopx.engine import goals, todos
from loopx.engine.clock import FixedClock
from loopx.engine.commands import AddNote, AddTodo, ClaimTodo, CreateGoal, RenewTodo
from loopx.engine.core import Context, require_goal
from loopx.store.filestore import FileStore
from tests.conftest import run_cli


def _md(store: FileStore) -> str:
    return workbench_markdown(require_goal(store, "g"), head=None, visible={"g"})


def test_a_heartbeat_never_changes_the_workbench(file_store: FileStore) -> None:
    """Agent A's lease on `x` has run out by the time agent B renews `y`; the renewal is a
    heartbeat, so the workbench still shows the state as of the last real change. The next
    real event does show the expiry (and puts `x` back in the frontier)."""

    def ctx(agent: str, at: str) -> Context:
        return Context(file_store, FixedClock(at, 1), agent_id=agent, session_id="s")

    t0 = "2026-03-01T12:00:00Z"
    goals.create_goal(ctx("lead", t0), CreateGoal(goal_id="g", title="Goal", objective="Do it"))
    todos.add_todo(ctx("lead", t0), AddTodo(goal_id="g", title="Task x", todo_id="x"))
    todos.add_todo(ctx("lead", t0), AddTodo(goal_id="g", title="Task y", todo_id="y"))
    todos.claim_todo(ctx("agent-a", t0), ClaimTodo(goal_id="g", todo_id="x", lease_seconds=3600))
    todos.claim_todo(ctx("agent-b", t0), ClaimTodo(goal_id="g", todo_id="y", lease_seconds=3600))
    before = _md(file_store)
    assert "claimed by agent-a" in before and "(lease expired)" not in before
    for at in ("2026-03-01T12:50:00Z", "2026-03-01T13:40:00Z", "2026-03-01T14:30:00Z"):
        todos.renew_todo(
            ctx("agent-b", at), RenewTodo(goal_id="g", todo_id="y", lease_seconds=3600)
        )
        assert _md(file_store) == before
    goals.add_note(
        ctx("lead", "2026-03-01T14:31:00Z"),
        AddNote(goal_id="g", kind="decision", text="Go", visibility="team"),
    )
    after = _md(file_store)
    assert "claimed by agent-a (lease expired)" in after and after != before


def test_a_workbench_from_an_earlier_version_reads_as_stale_not_edited(
    file_store: FileStore, tmp_path: Path
) -> None:
    """Files written before the header lost its revision and head still parse: an intact one
    is stale (with the command to regenerate it), a changed body is a hand edit."""
    from loopx.projections.workbench import body_digest

    ctx = Context(file_store, FixedClock("2026-03-01T12:00:00Z", 1), agent_id="u", session_id="s")
    goals.create_goal(ctx, CreateGoal(goal_id="g", title="Goal", objective="Do it"))
    body = "# Goal\n\nold body\n"
    old = f"<!-- loopx:workbench goal=g revision=1 head={'a' * 64} digest={body_digest(body)} -->\n"
    path = tmp_path / "WORKBENCH.md"
    path.write_text(old + body)
    args = ["workbench", "--root", str(tmp_path), "--goal-id", "g", "--check", str(path)]
    stale = run_cli(args)
    assert stale.exit_code == 6 and "workbench_stale" in stale.stderr
    assert f"`loopx workbench --goal-id g --write {path}`" in stale.stderr
    path.write_text(old + body.replace("old", "new"))
    assert "workbench_edited" in run_cli(args).stderr
