"""The MCP server: the tools of `tools.py` registered on the SDK's `MCPServer`, served over
stdio.

Each call runs under one lock (the SDK runs sync tools in worker threads; loopx writes one at
a time per process, as the CLI does). A result is the JSON the CLI prints with `--format
json`, as structured content and as text (Markdown for `prime` and `handoff_inspect`). A
`LoopxError` is a tool error carrying `{"error": {"code", "message", "details"}}`, the CLI's
JSON envelope; anything unexpected is `internal_error` without a traceback or input echoed.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from loopx import __version__
from loopx.mcp.tools import Project, make_tools
from loopx.model.errors import LoopxError

INSTRUCTIONS = (
    "loopx keeps this project's agent work (goals, todos, gates, evidence, handoffs) in an "
    "append-only ledger. Call `prime` first in every session and follow its protocol: claim "
    "before you work, renew the lease, record evidence, complete with it, and hand off "
    "before you stop. Never resolve a gate: gates are decisions for people."
)
READS = {
    "prime",
    "status",
    "next",
    "todo_show",
    "handoff_inspect",
    "wake",
    "turn_list",
    "turn_resume",
}


def _json(data: Any) -> str:
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).decode("utf-8")


def tool_result(out: dict[str, Any]) -> CallToolResult:
    text = out.get("text") or _json(out["data"])
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=out["data"]
    )


def tool_error(err: LoopxError) -> CallToolResult:
    envelope = {"error": err.to_dict()}
    return CallToolResult(
        content=[TextContent(type="text", text=_json(envelope))],
        structured_content=envelope,
        is_error=True,
    )


def _governed(fn: Callable[..., dict[str, Any]], lock: threading.Lock) -> Callable[..., Any]:
    """`fn` as a tool: one call at a time, errors as structured tool errors."""

    @functools.wraps(fn)
    def call(**kwargs: Any) -> CallToolResult:
        with lock:
            try:
                return tool_result(fn(**kwargs))
            except LoopxError as err:
                return tool_error(err)
            except Exception as err:  # the boundary: no traceback, no input echoed
                return tool_error(
                    LoopxError(f"internal error ({type(err).__name__})", code="internal_error")
                )

    signature = inspect.signature(fn, eval_str=True)
    call.__signature__ = signature.replace(return_annotation=CallToolResult)  # type: ignore[attr-defined]
    return call


def build_server(root: Path | None = None) -> MCPServer:
    server: MCPServer = MCPServer(
        name="loopx",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )
    lock = threading.Lock()
    for fn in make_tools(Project(root)):
        read = fn.__name__ in READS
        server.add_tool(
            _governed(fn, lock),
            name=fn.__name__,
            description=inspect.getdoc(fn),
            annotations=ToolAnnotations(read_only_hint=read, idempotent_hint=read),
        )
    return server


def serve(root: Path | None = None) -> None:
    """Serve over stdio until the client closes the connection."""
    build_server(root).run("stdio")
