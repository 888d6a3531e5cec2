"""`loopx workbench`, `loopx review`, `loopx graph`: one projection at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from loopx.cli.build import COMMITTED_HEAD_HELP
from loopx.cli.build_run import parse_head
from loopx.cli.common import audience_option, common, count, echo, emit, open_store, path_option


def _load(root: Path | None, goal_id: str, audience: str) -> tuple[Any, Any, dict[str, str]]:
    """The goal as committed artifacts see it (`goal_truth`; refused as not found when
    `audience` may not see it) and the visibility of the goals its projections may name:
    itself and its predecessor."""
    from loopx.engine.core import load_state, require_goal
    from loopx.model.errors import NotFound
    from loopx.model.ids import visible_to
    from loopx.state.turns import goal_truth

    store = open_store(root)
    state = require_goal(store, goal_id)
    if not visible_to(state.visibility, audience):
        raise NotFound(
            f"goal is {state.visibility}: it has no {audience} projections",
            code="goal_not_found",
            goal_id=goal_id,
        )
    goals = {goal_id: state.visibility}
    if state.predecessor and store.exists(state.predecessor):
        predecessor = load_state(store, state.predecessor).state
        if predecessor is not None:
            goals[state.predecessor] = predecessor.visibility
    return store, goal_truth(state), goals


def _resolved_head(store: Any, head: str | None) -> str | None:
    """Committed artifacts compare evidence with no checkout unless `--head` names one."""
    from loopx.engine.git import resolve_head

    return resolve_head(store.root, parse_head(head, default=None))


def _public_scan(store: Any, audience: str, name: str, text: str, goals: dict[str, str]) -> None:
    """Public output goes through the boundary scan before it is printed or written, against
    the non-public text of the goals it was projected from."""
    if audience == "public":
        from loopx.build.single import scan_public_output

        scan_public_output(store, name, text.encode("utf-8"), goals)


AUDIENCE_HELP = (
    "Who the output is for: public (public facts only, boundary-scanned) or team (team facts)."
)


@click.command("workbench")
@click.option("--goal-id", required=True)
@audience_option("public", "team", help=AUDIENCE_HELP)
@path_option(
    "--write",
    "write_to",
    help="Write the workbench to this file (relative to the current folder).",
)
@path_option(
    "--check", "check_path", help="Exit 6 if this committed file is stale or was edited by hand."
)
@click.option("--head", default=None, help=COMMITTED_HEAD_HELP)
@click.option(
    "--overwrite",
    is_flag=True,
    help="With --write: replace a file that is not a loopx workbench (never one in .loopx/).",
)
@common(formats=("markdown", "json", "text"))
def workbench_cmd(
    goal_id: str,
    audience: str,
    write_to: Path | None,
    check_path: Path | None,
    head: str | None,
    overwrite: bool,
    root: Path | None,
    fmt: str,
) -> None:
    """The workbench of a goal, as Markdown to commit for review.

    It changes only when something it shows changes: a heartbeat (`todo renew`) or a git
    commit leaves it byte-identical.
    """
    from loopx.build.committed import check_workbench, write_workbench
    from loopx.build.single import visible_goals, workbench_markdown

    store, state, goals = _load(root, goal_id, audience)
    text = workbench_markdown(
        state,
        head=_resolved_head(store, head),
        visible=visible_goals(goals, audience),
        audience=audience,
    )
    _public_scan(store, audience, "workbench.md", text, goals)
    flags = f"--goal-id {goal_id}" + (" --audience public" if audience == "public" else "")
    if check_path is not None:
        check_workbench(check_path, text, flags, state.revision)
        emit(fmt, {"ok": True, "path": str(check_path)}, f"{check_path} is up to date")
        return
    if write_to is not None:
        written = write_workbench(
            store.root,
            write_to,
            text,
            audience=audience,
            overwrite=overwrite,
            warn=lambda line: echo(line, err=True),
        )
        about = {"path": str(write_to), "revision": state.revision, "audience": audience}
        emit(
            fmt,
            {**about, "written": written},
            f"{'wrote' if written else 'unchanged'} {write_to} (goal {goal_id}, ledger "
            f"revision {state.revision})",
        )
        return
    if fmt == "json":
        about = {"goal_id": goal_id, "revision": state.revision, "audience": audience}
        emit(fmt, {**about, "markdown": text})
    else:
        echo(text, nl=False)


@click.command("review")
@click.option("--goal-id", required=True)
@click.option("--todo-id", default=None, help="A packet for one todo.")
@click.option(
    "--since",
    type=count(1),
    default=None,
    help="List what changed since this ledger revision.",
)
@audience_option("team", "private")
@click.option("--head", default=None, help=COMMITTED_HEAD_HELP)
@common(formats=("markdown", "json"))
def review_cmd(
    goal_id: str,
    todo_id: str | None,
    since: int | None,
    audience: str,
    head: str | None,
    root: Path | None,
    fmt: str,
) -> None:
    """A review packet: the question, what changed, the evidence and its freshness, open gates
    and the exact commands to resolve them."""
    from loopx.build import review
    from loopx.engine import lookup
    from loopx.model.errors import InvalidInput
    from loopx.model.ids import visible_goals
    from loopx.state.fold import replay

    store, state, goals = _load(root, goal_id, audience)
    if todo_id is not None:
        lookup.todo(state, todo_id)
    before = None
    if since is not None:
        if since > state.revision:
            raise InvalidInput(f"--since must be at most {state.revision}", code="invalid_revision")
        before = replay(store.read(goal_id).events[:since])
    how: dict[str, Any] = {
        "head": _resolved_head(store, head),
        "visible": visible_goals(goals, audience),
        "audience": audience,
        "read_blob": store.get_blob if audience == "private" else None,
        "todo_id": todo_id,
        "since": before,
    }
    rp = review.packet(state, **how)
    if fmt == "json":
        emit(fmt, rp)
    else:
        echo(review.markdown(store, state, rp, **how), nl=False)


@click.command("graph")
@click.option("--goal-id", required=True)
@audience_option(
    "public", "team", "private", help=AUDIENCE_HELP + " private: everything on this host."
)
@common(formats=("mermaid", "dot", "svg", "json", "text"))
def graph_cmd(goal_id: str, audience: str, root: Path | None, fmt: str) -> None:
    """A goal's task graph as Mermaid (default for text), DOT, SVG or JSON."""
    from loopx.build.single import graph_text

    store, state, goals = _load(root, goal_id, audience)
    blobs = store.get_blob if audience == "private" else None
    out = graph_text(state, audience, fmt, blobs)
    _public_scan(store, audience, f"graph.{fmt}", out, goals)
    if fmt == "json":
        click.echo(out, nl=False)
    else:  # DOT, SVG, Mermaid: nothing in a label may drive the terminal
        echo(out, nl=False)
