"""`loopx workbench`, `loopx review`, `loopx graph`: one projection at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from loopx.cli.build import COMMITTED_HEAD_HELP, _head
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
    """Committed artifacts compare evidence with no checkout unless `--head` names one."""
    from loopx.build.pipeline import resolve_head

    return resolve_head(store.root, _head(head, default=None))


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
@click.option(
    "--audience",
    type=click.Choice(["public", "team"]),
    default="team",
    show_default=True,
    help=AUDIENCE_HELP,
)
@click.option(
    "--write",
    "write_to",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the workbench to this file (relative to the current folder).",
)
@click.option(
    "--check",
    "check_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Exit 6 if this committed file is stale or was edited by hand.",
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
        _check_workbench(check_path, text, flags, state.revision)
        emit(fmt, {"ok": True, "path": str(check_path)}, f"{check_path} is up to date")
        return
    if write_to is not None:
        if audience != "public":
            from loopx.build.exposure import guard_team_output

            guard_team_output(write_to, lambda line: echo(line, err=True))
        from loopx.build.outdir import write_file
        from loopx.projections.workbench import read_header

        # The output-file rules (`loopx.build.outdir`): never in .loopx/, never through a
        # link, never over a file that is not a workbench (without --overwrite); an
        # unchanged file is not touched (its mtime stays).
        unchanged = not write_file(
            store.root,
            write_to,
            text.encode("utf-8"),
            ours=lambda data: read_header(data.decode("utf-8", "replace")) is not None,
            overwrite=overwrite,
        )
        verb = "unchanged" if unchanged else "wrote"
        emit(
            fmt,
            {
                "path": str(write_to),
                "revision": state.revision,
                "audience": audience,
                "written": not unchanged,
            },
            f"{verb} {write_to} (goal {goal_id}, ledger revision {state.revision})",
        )
        return
    if fmt == "json":
        about = {"goal_id": goal_id, "revision": state.revision, "audience": audience}
        emit(fmt, {**about, "markdown": text})
    else:
        echo(text, nl=False)


def _check_workbench(path: Path, text: str, flags: str, revision: int) -> None:
    """Raise `CheckFailed` unless the file at `path` is exactly `text`; the message names the
    exact command that regenerates it."""
    import shlex

    from loopx.model.errors import CheckFailed
    from loopx.projections.workbench import body_digest, read_header
    from loopx.store import fsio

    fix = f"`loopx workbench {flags} --write {shlex.quote(str(path))}`"
    try:
        # Through the I/O seam: no link followed, regular files only, the read capped (a link,
        # FIFO or folder in its place is `unsafe_path`, never read through or waited on).
        on_disk = fsio.current().read_file(path).decode("utf-8")
    except (FileNotFoundError, NotADirectoryError):
        raise CheckFailed(
            f"{path} does not exist; write it with {fix}", code="workbench_missing", path=str(path)
        ) from None
    except UnicodeDecodeError:
        on_disk = ""  # not text at all: certainly not what loopx wrote
    except OSError as err:
        with fsio.guard("read the workbench file"):
            raise err
    if on_disk == text:
        return
    header = read_header(on_disk)
    if header is None or body_digest(header["body"]) != header["digest"]:
        raise CheckFailed(
            f"{path} was edited by hand (a workbench is generated); regenerate it with {fix}",
            code="workbench_edited",
            path=str(path),
        )
    raise CheckFailed(
        f"{path} is stale: the ledger (now at revision {revision}) changed what it shows; "
        f"regenerate it with {fix}",
        code="workbench_stale",
        path=str(path),
        ledger_revision=revision,
    )


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
    help=AUDIENCE_HELP + " private: everything on this host.",
)
@common(formats=("mermaid", "dot", "svg", "json", "text"))
def graph_cmd(goal_id: str, audience: str, root: Path | None, fmt: str) -> None:
    """A goal's task graph as Mermaid (default for text), DOT, SVG or JSON."""
    from loopx.build.single import task_graph
    from loopx.model.errors import InvalidInput
    from loopx.render import graph as graph_source
    from loopx.render.svg import to_svg

    store, state, goals = _load(root, goal_id, audience)
    gr = task_graph(state, audience, store.get_blob if audience == "private" else None)
    if fmt == "json":
        from loopx.render.jsonout import dumps

        out = dumps(gr).decode("utf-8")
    elif fmt == "dot":
        out = graph_source.to_dot(gr)
    elif fmt == "svg":
        svg = to_svg(gr)
        if svg is None:
            raise InvalidInput(
                "graph is too large to lay out; use --format dot or mermaid", code="graph_too_large"
            )
        out = svg + "\n"
    else:
        out = graph_source.to_mermaid(gr)
    _public_scan(store, audience, f"graph.{fmt}", out, goals)
    if fmt == "json":
        click.echo(out, nl=False)
    else:  # DOT, SVG, Mermaid: nothing in a label may drive the terminal
        echo(out, nl=False)
