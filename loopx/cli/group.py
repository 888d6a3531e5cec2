"""The `loopx` click group: every command, loaded lazily, and click's errors said loopx's way.

Subcommand modules are imported only when invoked, so `loopx --help` stays fast; the
every-turn calls do not import this module at all when `loopx.cli.quick` parses them.
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import Any

import click

COMMANDS: dict[str, tuple[str, str, str]] = {
    "init": ("loopx.cli.setup", "init_cmd", "Create .loopx/ in a project folder."),
    "allow": ("loopx.cli.allow", "allow", "Allow a boundary finding in an id (an entry)."),
    "demo": ("loopx.cli.setup", "demo_cmd", "Create a realistic demo project."),
    "goal": ("loopx.cli.goal", "goal", "Create, show, list and close goals."),
    "agent": ("loopx.cli.goal", "agent", "Register agents on a goal."),
    "quota": ("loopx.cli.goal", "quota", "Set a goal's quota."),
    "note": ("loopx.cli.goal", "note", "Record lessons, decisions and notes."),
    "todo": ("loopx.cli.todo", "todo", "Add, claim, complete and inspect todos."),
    "gate": ("loopx.cli.gate", "gate", "Open and resolve human decision gates."),
    "monitor": (
        "loopx.cli.monitor",
        "monitor",
        "Watch CI, a pull request or a URL, with a backoff.",
    ),
    "wake": ("loopx.cli.monitor", "wake_cmd", "What is due now, and the next wake."),
    "turn": ("loopx.cli.turn", "turn", "Journal a turn's phases; resume an interrupted one."),
    "evidence": ("loopx.cli.evidence", "evidence", "Record and list evidence."),
    "run": ("loopx.cli.evidence", "run", "Record and list agent runs."),
    "status": ("loopx.cli.status_cmd", "status_cmd", "Attention, frontier, gates and leases."),
    "next": ("loopx.cli.status_cmd", "next_cmd", "The ready queue, and why the rest waits."),
    "log": ("loopx.cli.ledger", "log_cmd", "List a goal's events."),
    "verify": ("loopx.cli.ledger", "verify_cmd", "Walk each ledger's hash chain."),
    "build": ("loopx.cli.build", "build_cmd", "Build every projection into a folder."),
    "scan": ("loopx.cli.scan", "scan_cmd", "Scan files for anything that must stay private."),
    "redact": (
        "loopx.cli.redact",
        "redact",
        "Redact a field in the ledger (a correction).",
    ),
    "diff": ("loopx.cli.build", "diff_cmd", "Explain what changed between two builds."),
    "publish": ("loopx.cli.build", "publish_cmd", "Ship the public partition only."),
    "serve": ("loopx.cli.build", "serve_cmd", "Preview the build on 127.0.0.1, live."),
    "workbench": ("loopx.cli.projection", "workbench_cmd", "Write or check a workbench."),
    "review": ("loopx.cli.projection", "review_cmd", "A review packet for a decision."),
    "graph": ("loopx.cli.projection", "graph_cmd", "A goal's task graph."),
    "import": ("loopx.cli.importer", "import_group", "Import foreign state (loopy-loop sessions)."),
    "handoff": ("loopx.cli.handoff", "handoff", "Hand a todo to the next agent, with a digest."),
    "store": ("loopx.cli.store", "store", "Move a project between the file and PostgreSQL stores."),
    "prime": ("loopx.cli.prime", "prime_cmd", "A briefing an agent reads at session start."),
    "agents-md": ("loopx.cli.prime", "agents_md_cmd", "The loopx block for AGENTS.md/CLAUDE.md."),
    "mcp": ("loopx.cli.mcp", "mcp_cmd", "Serve the loopx tools over MCP (stdio)."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        spec = COMMANDS.get(name)
        if spec is None:
            return None
        from loopx.cli.ergonomics import adapt

        module = importlib.import_module(spec[0])
        cmd: click.Command = getattr(module, spec[1])
        return adapt(cmd)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="loopx", prog_name="loopx")
def cli() -> None:
    """loopx: canonical, verifiable state for long-running coding-agent work.

    The ledger under .loopx/ is the only authority; status pages, workbenches and digests
    are projections of it. Exit codes: 0 ok, 1 internal error, 2 invalid input, 3 not found,
    4 conflict, 5 ledger damage, 6 check failed, 7 public boundary violation, 8 store
    unavailable.
    """


def click_error(err: Exception, as_json: bool, debug: bool) -> None:
    """End the call as click's error `err` asks (abort, help, a usage error); return when
    `err` is not one of click's."""
    from loopx.cli.main import report
    from loopx.model.errors import InvalidInput

    if isinstance(err, click.exceptions.Abort):
        click.echo("loopx: aborted", err=True)
        sys.exit(130)
    if isinstance(err, _NO_ARGS):  # `loopx` or `loopx todo` alone: a request for help
        if err.ctx is not None:
            click.echo(err.ctx.get_help())
        sys.exit(0)
    if isinstance(err, click.ClickException):
        if debug:
            raise err
        usage = InvalidInput(_click_message(err), code="usage_error")
        report(usage, as_json)
        sys.exit(2)


_OPTION_NAME = re.compile(r"--?[a-z][a-z-]{0,24}")
# click >= 8.2 raises this for a group called without a command (8.1 prints help itself).
_NO_ARGS: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


def _click_message(err: click.ClickException) -> str:
    """Click's message without echoing the offending value (it may be a secret)."""
    if isinstance(err, click.BadParameter | click.MissingParameter) and err.param is not None:
        name = err.param.opts[0] if getattr(err.param, "opts", None) else err.param.name
        if isinstance(err, click.MissingParameter):
            return f"missing {name}"
        choices = getattr(err.param.type, "choices", None)
        if choices:
            return f"invalid value for {name}: choose from {', '.join(map(str, choices))}"
        return f"invalid value for {name} (expected {err.param.type.name})"
    ctx = getattr(err, "ctx", None)
    where = f"{ctx.command_path} --help" if ctx is not None else "--help"
    if isinstance(err, click.NoSuchOption):
        # Name the option only when it looks like one (a pasted token is not echoed); the
        # suggestions are the command's own option names.
        hint = _did_you_mean(err.possibilities or [])
        if _OPTION_NAME.fullmatch(err.option_name or ""):
            return f"no such option: {err.option_name}{hint} (see {where})"
        return f"no such option{hint} (see {where})"
    if isinstance(err, click.UsageError):
        message = err.format_message()
        if message.startswith("No such command"):
            return f"no such command{_command_hint(err)} (see {where})"
        if message.startswith("Got unexpected extra argument"):
            return f"unexpected extra argument (see {where})"
        return message.split("\n")[0]
    return err.format_message()


def _did_you_mean(names: list[str]) -> str:
    return f"; did you mean {' or '.join(names[:3])}?" if names else ""


def _command_hint(err: click.UsageError) -> str:
    """`; did you mean status?` for a mistyped command: the closest of the group's own
    command names (the typed name itself is not repeated)."""
    import difflib

    typed = getattr(err, "command_name", None)
    ctx = err.ctx
    if not isinstance(typed, str) or ctx is None or not isinstance(ctx.command, click.Group):
        return ""
    names = ctx.command.list_commands(ctx)
    return _did_you_mean(difflib.get_close_matches(typed, names, n=3, cutoff=0.6))
