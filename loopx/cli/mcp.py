"""`loopx mcp`: serve the loopx tools to an agent over MCP (stdio)."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import debug_option, root_option


@click.command("mcp")
@root_option(show_envvar=True)
@debug_option
def mcp_cmd(root: Path | None) -> None:
    """Serve prime, status, next, todo, evidence, run and handoff tools over the Model
    Context Protocol on stdin/stdout (register it with your agent; see README, Agents).
    Needs the optional extra: pip install 'loopx[mcp]'."""
    from loopx.model.errors import InvalidInput
    from loopx.store.root import find_root

    project = find_root(root)  # refuse before the session starts, as one clean line
    try:
        from loopx.mcp.server import serve
    except ImportError:
        raise InvalidInput(
            "the MCP server needs the `mcp` package: pip install 'loopx[mcp]'",
            code="mcp_not_installed",
        ) from None
    serve(project)
