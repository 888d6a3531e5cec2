"""`loopx workbench`, `loopx review`, `loopx graph`: one projection at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from loopx.cli.build import HEAD_HELP, _head
from loopx.cli.common import common, count, echo, emit, open_store


def _load(root: Path | None, goal_id: str, audience: str) -> tuple[Any, Any, dict[str, str]]:
    """The goal (refused as not found when `audience` may not see it) and the visibility of
    the goals its projections may name: itself and its predecessor."""
    from loopx.engine.core import load_state, require_goal
    from loopx.model.errors import NotFound
    from loopx.model.ids import visible_to

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
    return store, state, goals


def _resolved_head(store: Any, head: str | None) -> str | None:
    from loopx.build.pipeline import resolve_head

    return resolve_head(store.root, _head(head))


@click.command("workbench")
@click.option("--goal-id", required=True)
@click.option(
    "--write",
    "write_to",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the workbench to this file (e.g. docs/WORKBENCH.md).",
)
@click.option(
    "--check",
    "check_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Exit 6 if this committed file is stale or was edited by hand.",
)
@click.option("--head", default=None, help=HEAD_HELP)
@common(formats=("markdown", "json", "text"))
def workbench_cmd(
    goal_id: str,
    write_to: Path | None,
    check_path: Path | None,
    head: str | None,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """The team workbench of a goal, as Markdown to commit for review."""
    from loopx.build.single import visible_goals, workbench_markdown
    from loopx.model.errors import CheckFailed
    from loopx.projections.workbench import read_header
    from loopx.store import fsio

    store, state, goals = _load(root, goal_id, "team")
    text = workbench_markdown(
        state, head=_resolved_head(store, head), visible=visible_goals(goals, "team")
    )
    if check_path is not None:
        try:
            on_disk = check_path.read_text("utf-8")
        except (FileNotFoundError, NotADirectoryError):
            raise CheckFailed(
                "workbench file does not exist; write it with --write",
                code="workbench_missing",
                path=str(check_path),
            ) from None
        except UnicodeDecodeError:
            on_disk = ""  # not text at all: certainly not what loopx wrote
        except OSError as err:
            with fsio.guard("read the workbench file"):
                raise err
        if on_disk == text:
            emit(fmt, {"ok": True, "path": str(check_path)}, f"{check_path} is up to date")
            return
        header = read_header(on_disk)
        from loopx.projections.workbench import body_digest

        if header is None or body_digest(header["body"]) != header["digest"]:
            raise CheckFailed(
                f"{check_path} was edited by hand; regenerate it with "
                f"`loopx workbench --goal-id {goal_id} --write {check_path}`",
                code="workbench_edited",
                path=str(check_path),
            )
        raise CheckFailed(
            f"{check_path} is stale (revision {header['revision']}, ledger is at "
            f"{state.revision}); regenerate it with --write",
            code="workbench_stale",
            path=str(check_path),
            file_revision=header["revision"],
            ledger_revision=state.revision,
        )
    if write_to is not None:
        with fsio.guard("write the workbench file"):
            write_to.parent.mkdir(parents=True, exist_ok=True)
            fsio.current().write_atomic(write_to, text.encode("utf-8"))
        emit(
            fmt,
            {"path": str(write_to), "revision": state.revision},
            f"wrote {write_to} (revision {state.revision})",
        )
        return
    if fmt == "json":
        emit(fmt, {"goal_id": goal_id, "revision": state.revision, "markdown": text})
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
@click.option(
    "--audience", type=click.Choice(["team", "private"]), default="team", show_default=True
)
@click.option("--head", default=None, help=HEAD_HELP)
@common(formats=("markdown", "json"))
def review_cmd(
    goal_id: str,
    todo_id: str | None,
    since: int | None,
    audience: str,
    head: str | None,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """A review packet: the question, what changed, the evidence and its freshness, open gates
    and the exact commands to resolve them."""
    from loopx.build.single import review, visible_goals
    from loopx.engine import lookup
    from loopx.model.errors import InvalidInput
    from loopx.state.fold import replay

    store, state, goals = _load(root, goal_id, audience)
    if todo_id is not None:
        lookup.todo(state, todo_id)
    before = None
    if since is not None:
        if since > state.revision:
            raise InvalidInput(f"--since must be at most {state.revision}", code="invalid_revision")
        before = replay(store.read(goal_id).events[:since])
    rp, markdown = review(
        state,
        head=_resolved_head(store, head),
        visible=visible_goals(goals, audience),
        audience=audience,
        read_blob=store.get_blob if audience == "private" else None,
        todo_id=todo_id,
        since=before,
    )
    if fmt == "json":
        emit(fmt, rp)
    else:
        echo(markdown, nl=False)


@click.command("graph")
@click.option("--goal-id", required=True)
@click.option(
    "--audience",
    type=click.Choice(["public", "team", "private"]),
    default="team",
    show_default=True,
)
@common(formats=("mermaid", "dot", "svg", "json", "text"))
def graph_cmd(goal_id: str, audience: str, root: Path | None, fmt: str, debug: bool) -> None:
    """A goal's task graph as Mermaid (default for text), DOT, SVG or JSON."""
    from loopx.build.single import task_graph
    from loopx.model.errors import InvalidInput
    from loopx.render import graph as graph_source
    from loopx.render.svg import to_svg

    store, state, _ = _load(root, goal_id, audience)
    gr = task_graph(state, audience, store.get_blob if audience == "private" else None)
    if fmt == "json":
        emit(fmt, gr)
    elif fmt == "dot":
        echo(graph_source.to_dot(gr), nl=False)
    elif fmt == "svg":
        svg = to_svg(gr)
        if svg is None:
            raise InvalidInput(
                "graph is too large to lay out; use --format dot or mermaid", code="graph_too_large"
            )
        echo(svg)
    else:
        echo(graph_source.to_mermaid(gr), nl=False)
