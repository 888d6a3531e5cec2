"""`loopx prime` (the session primer) and `loopx agents-md` (the block that tells an agent to
read it)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import click

from loopx.cli.common import (
    common,
    echo,
    emit,
    max_chars_option,
    open_store,
    path_option,
    text_resolver,
)

AGENTS_MD_CAP = 1 << 20  # an instructions file larger than 1 MiB is not one loopx should edit


def primer_for(store: Any, goal_id: str | None, agent_id: str | None, now: str) -> dict[str, Any]:
    """The primer for `goal_id` (default: the project's sole active goal), or, when the
    project has several, the protocol and the goals to choose from."""
    from loopx.engine.core import require_goal
    from loopx.engine.defaults import sole_goal
    from loopx.engine.goals_all import health_of, load_all
    from loopx.model.errors import LoopxError
    from loopx.model.ids import check_id
    from loopx.projections.prime import goal_primer, index_primer, one_line
    from loopx.state.frontier import attention

    if agent_id is not None:
        check_id(agent_id, "agent_id")
    if goal_id is None:
        goal_id = sole_goal(store)
    resolve = text_resolver(store)
    if goal_id is not None:
        return goal_primer(require_goal(store, goal_id), now, resolve, agent_id)
    goals = []
    for gid, loaded in load_all(store):
        if isinstance(loaded, LoopxError):
            goals.append(
                {"goal_id": gid, "title": "", "status": health_of(loaded), "attention": "-"}
            )
        elif loaded.state is not None:
            s = loaded.state
            goals.append(
                {
                    "goal_id": gid,
                    "title": one_line(resolve(s.title)),
                    "status": s.status,
                    "attention": attention(s, now)["state"],
                }
            )
    return index_primer(goals, now, agent_id)


@click.command("prime")
@click.option(
    "--goal-id",
    envvar="LOOPX_GOAL_ID",
    show_envvar=True,
    default=None,
    help="The goal (default: the project's only active goal; else a list to choose from).",
)
@click.option(
    "--agent-id",
    envvar="LOOPX_AGENT_ID",
    show_envvar=True,
    default=None,
    help="The agent reading it: its claims, handoffs meant for it, what it may take.",
)
@max_chars_option("Fit the primer into N characters (default: 6000), shortening lists first.")
@common(formats=("markdown", "text", "json"))
def prime_cmd(
    goal_id: str | None,
    agent_id: str | None,
    max_chars: int | None,
    root: Path | None,
    fmt: str,
) -> None:
    """A briefing to read at the start of a session: the protocol (claim, renew, evidence,
    complete, hand off) with its commands, your live claims, handoffs waiting for you, the
    frontier you may take and the gates you must not cross. Size-budgeted."""
    from loopx.engine.clock import from_env
    from loopx.projections.prime import DEFAULT_MAX_CHARS
    from loopx.render.prime import render_prime

    primer = primer_for(open_store(root), goal_id, agent_id, from_env().now())
    out = render_prime(
        primer, "json" if fmt == "json" else "markdown", max_chars or DEFAULT_MAX_CHARS
    )
    if fmt == "json":
        click.echo(out, nl=False)
    else:  # Markdown for a terminal or an agent: nothing in it may drive the terminal
        echo(out, nl=False)


# -- agents-md ----------------------------------------------------------------------------


def _inside(root: Path, path: Path) -> Path:
    """`path` made absolute, refused unless its folder lies inside the project `root`
    (symlinked folders are resolved first, so none can lead outside)."""
    from loopx.model.errors import InvalidInput

    absolute = path if path.is_absolute() else Path.cwd() / path
    folder = Path(os.path.realpath(absolute.parent))
    if folder != root and root not in folder.parents:
        raise InvalidInput("the file must lie inside the project", code="path_outside_project")
    return folder / absolute.name


def read_instructions(path: Path) -> str | None:
    """The text of an instructions file, None when it does not exist. Refuses a symlink, a
    non-regular file, a file over 1 MiB and bytes that are not UTF-8."""
    from loopx.model.errors import InvalidInput
    from loopx.store import fsio

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise InvalidInput("the file is a symlink", code="not_regular_file") from None
        with fsio.guard("read the instructions file"):
            raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInput("the file is not a regular file", code="not_regular_file")
        if info.st_size > AGENTS_MD_CAP:
            raise InvalidInput("the file is over 1 MiB", code="file_too_large")
        with fsio.guard("read the instructions file"):
            data = fsio.current().read_from(fd)
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("the file is not UTF-8 text", code="invalid_input") from None


@click.command("agents-md")
@path_option(
    "--write",
    "write_to",
    help="Put the block into this file (e.g. AGENTS.md, CLAUDE.md), replacing an older one.",
)
@click.option(
    "--check",
    "check",
    is_flag=True,
    help="With --write FILE: exit 6 if its block is missing or stale, write nothing.",
)
@click.option(
    "--goal-id",
    envvar="LOOPX_GOAL_ID",
    show_envvar=True,
    default=None,
    help="Name this goal in the block's commands.",
)
@common()
def agents_md_cmd(
    write_to: Path | None,
    check: bool,
    goal_id: str | None,
    root: Path | None,
    fmt: str,
) -> None:
    """The loopx block for AGENTS.md / CLAUDE.md: tells any agent to run `loopx prime` and
    follow the protocol. Printed, or written between markers, leaving the rest of the file
    alone."""
    from loopx.model.errors import CheckFailed, InvalidInput
    from loopx.model.ids import check_id
    from loopx.projections.agents_md import current_block, splice
    from loopx.render.prime import agents_block
    from loopx.store import fsio
    from loopx.store.root import find_root

    if goal_id is not None:
        check_id(goal_id, "goal_id")
    block = agents_block(goal_id)
    if write_to is None:
        if check:
            raise InvalidInput("--check needs --write FILE", code="usage_error")
        emit(fmt, {"block": block}, lambda: block.rstrip("\n"))
        return
    path = _inside(find_root(root), write_to)
    existing = read_instructions(path)
    if check:
        if existing is None:
            raise CheckFailed("the file does not exist", code="agents_md_missing")
        if current_block(existing) != block:
            raise CheckFailed(
                "the file's loopx block is missing or stale; rerun `loopx agents-md --write`",
                code="agents_md_stale",
            )
        emit(fmt, {"ok": True, "path": str(write_to)}, f"{write_to}: the loopx block is current")
        return
    updated = splice(existing, block)
    changed = updated != existing
    if changed:
        with fsio.guard("write the instructions file"):
            fsio.current().write_atomic(path, updated.encode("utf-8"))
    what = ("created" if existing is None else "updated") if changed else "unchanged"
    emit(fmt, {"path": str(write_to), "result": what}, f"{write_to}: loopx block {what}")
