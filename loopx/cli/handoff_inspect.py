"""What `loopx handoff inspect` does, without click: its options are declared in
`loopx.cli.handoff` and parsed again, in the exact forms agents use, by `loopx.cli.quick`."""

from __future__ import annotations

import sys
from pathlib import Path

from loopx.cli.output import echo
from loopx.cli.stores import open_store


def show_inspected(
    goal_id: str,
    todo_id: str,
    handoff_id: str | None,
    workspace: Path,
    audience: str,
    max_chars: int | None,
    agent_id: str,
    session_id: str,
    root: Path | None,
    fmt: str,
    *,
    named: bool,
) -> None:
    """Print a todo's latest handoff note with the current facts. The reader is known when
    `named` (flag or LOOPX_AGENT_ID); the default `user` is not a reader, and the adopt
    command then says <agent-id> rather than suggesting `user`."""
    from loopx.build.handoff import inspect_handoff, render_inspected
    from loopx.engine.clock import from_env

    store = open_store(root)
    digest = inspect_handoff(
        store,
        goal_id,
        todo_id,
        workspace=workspace,
        audience=audience,
        now=from_env().now(),
        reader={"agent_id": agent_id, "session_id": session_id} if named else None,
        handoff_id=handoff_id,
    )
    out = render_inspected(store, digest, fmt, max_chars)
    if fmt == "json":
        sys.stdout.write(out)
        sys.stdout.flush()
    else:
        echo(out, nl=False)
