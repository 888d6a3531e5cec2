"""`loopx handoff …`: prepare a continuation note, inspect it with current facts, adopt it,
and list the notes still waiting for an agent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from loopx.cli.common import (
    VISIBILITY_CHOICE,
    actor,
    audience_option,
    common,
    emit,
    lease_option,
    max_chars_option,
    open_store,
    workspace_option,
)
from loopx.cli.write import write
from loopx.engine import handoff as handoffs
from loopx.engine.core import Context, Result

if TYPE_CHECKING:  # the write commands are imported when a write is declared (cli.write)
    from loopx.engine import commands


@click.group()
def handoff() -> None:
    """Hand a todo from one agent to the next: prepare, inspect, adopt, list."""


# -- prepare ------------------------------------------------------------------------------


# The options that write the note (with --from-context, none of them may be given).
NOTE_FLAGS = (
    "work_summary",
    "rationale",
    "next_steps",
    "tried",
    "files",
    "decisions",
    "questions",
    "source_refs",
)


def _done(result: Result, verb: str) -> str:
    return verb if result.status == "applied" else f"already {verb} (replayed)"


def _prepared(
    command: commands.PrepareHandoff, result: Result, ctx: Context
) -> tuple[dict[str, Any], Callable[[], str]]:
    """The receipt with the new note's id, and the command the next agent runs."""
    data = result.to_dict()
    data["handoff_id"] = result.receipt["subject"]
    goal_id, todo_id = command.goal_id, command.todo_id

    def text() -> str:
        r = result.receipt
        return (
            f"handoff {data['handoff_id']} for todo {todo_id} {_done(result, 'prepared')} at "
            f"revision {r['revision']} (goal {goal_id}, operation {r['operation_id']})\n"
            f"next agent: loopx handoff inspect --goal-id {goal_id} --todo-id {todo_id}"
        )

    return data, text


@write(handoff, "prepare", handoffs.prepare_handoff, report=_prepared)
@click.option("--todo-id", required=True)
@click.option(
    "--from-context",
    "from_context",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=None,
    help="The note as JSON (schemas/handoff-context.schema.json); '-' reads stdin.",
)
@click.option("--work-summary", default=None, help="What was done and where the work stands.")
@click.option("--next-step", "next_steps", multiple=True, help="What to do next (repeatable).")
@click.option(
    "--tried",
    multiple=True,
    help="An approach tried: 'APPROACH::OUTCOME[::REASON]' (repeatable).",
)
@click.option(
    "--file",
    "files",
    multiple=True,
    help="A file touched: 'PATH::ACTION[::SUMMARY]', ACTION one of created, modified, "
    "deleted, renamed, read (repeatable).",
)
@click.option("--decision", "decisions", multiple=True, help="A key decision (repeatable).")
@click.option("--question", "questions", multiple=True, help="An open question (repeatable).")
@click.option("--source-ref", "source_refs", multiple=True, help="A reference (repeatable).")
@click.option("--rationale", default=None, help="Legacy name for --work-summary.")
@click.option(
    "--visibility",
    type=VISIBILITY_CHOICE,
    default=None,
    help="The note's visibility (default team; private when the todo is private). A private "
    "note is kept in this host's blob store; the ledger holds its hash.",
)
@click.option("--target-agent-id", default=None, help="The agent meant to adopt (optional).")
@workspace_option("The checkout whose git HEAD (and dirtiness) the note is bound to")
def prepare(from_context: str | None, **fields: Any) -> commands.PrepareHandoff:
    """Write a continuation note for a todo you hold (only the claim holder may).

    The note (work summary, approaches tried, next steps, files touched, key decisions, open
    questions, source refs) comes from --from-context JSON or from flags. It is bound to the
    todo's revision (--expected-revision guards it) and to the git HEAD of --workspace.
    """
    from loopx.model.errors import InvalidInput

    flags = {name: fields.pop(name) for name in NOTE_FLAGS}
    if from_context is None:
        note = handoffs.note_from_flags(**flags)
    elif any(flags.values()):
        raise InvalidInput(
            "pass the note either with --from-context or with flags, not both", code="usage_error"
        )
    else:
        note = handoffs.read_context(from_context)
    from loopx.engine.commands import PrepareHandoff

    return PrepareHandoff(note=note, **fields)


# -- inspect ------------------------------------------------------------------------------


@handoff.command("inspect")
@click.option("--goal-id", required=True)
@click.option("--todo-id", required=True)
@click.option("--handoff-id", default=None, help="A specific note (default: the latest).")
@workspace_option("The checkout to compare with the note: HEAD, dirtiness, files touched")
@audience_option(
    "team",
    "private",
    default="private",
    help="team: team facts only, private ones counted; private: all that is on this host.",
)
@max_chars_option("Fit the output into N characters, dropping the least important material first.")
@actor
@common(formats=("digest", "text", "markdown", "json"))
def inspect(
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
) -> None:
    """Show a todo's latest handoff note with the current facts.

    The goal and its acceptance, the todo with its dependencies and gates, evidence with its
    freshness against the workspace's HEAD, whether the note is stale, whether the files it
    lists exist, whether the checkout moved or is dirty, and what to re-inspect before
    acting. --format digest (default) is Markdown to paste into any agent, text the same
    digest as plain text (no Markdown syntax), markdown the full report, json the
    loopx.handoff/v1 document. --max-chars budgets every format.
    """
    from loopx.cli.handoff_inspect import show_inspected

    source = click.get_current_context().get_parameter_source("agent_id")
    named = source is not click.core.ParameterSource.DEFAULT
    show_inspected(
        goal_id,
        todo_id,
        handoff_id,
        workspace,
        audience,
        max_chars,
        agent_id,
        session_id,
        root,
        fmt,
        named=named,
    )


# -- adopt --------------------------------------------------------------------------------


def _adopted(
    command: commands.AdoptHandoff, result: Result, ctx: Context
) -> tuple[dict[str, Any], Callable[[], str]]:
    """The receipt, said as the claim moving to the acting agent."""

    def text() -> str:
        r, todo_id = result.receipt, command.todo_id
        return (
            f"todo {todo_id} {_done(result, 'adopted')} by {ctx.agent_id}: claim transferred at "
            f"revision {r['revision']} (goal {command.goal_id}, operation {r['operation_id']}, "
            f"events {r['seq_first']}-{r['seq_last']})"
        )

    return result.to_dict(), text


@write(handoff, "adopt", handoffs.adopt_handoff, report=_adopted)
@click.option("--todo-id", required=True)
@click.option(
    "--target-agent-id",
    default=None,
    help="The agent taking the todo over; must be --agent-id (default: --agent-id).",
)
@click.option("--handoff-id", default=None, help="A specific note (default: the latest).")
@lease_option("The new claim's lease (default: the goal's policy).")
@workspace_option("The adopting checkout; its HEAD is recorded with the adoption")
def adopt() -> None:
    """Adopt a todo's pending handoff: its claim moves to you through a transfer grant.

    Refused when the todo is done (todo_closed), there is no pending note
    (handoff_not_found), the note is stale (handoff_stale), a third agent holds a live claim
    (claim_owner_mismatch), or --expected-revision is not the todo's revision
    (revision_conflict). Retrying with the same --operation-id replays the receipt.
    """


# -- list ---------------------------------------------------------------------------------


@handoff.command("list")
@click.option("--goal-id", default=None, help="One goal (default: every goal).")
@common()
def list_cmd(goal_id: str | None, root: Path | None, fmt: str) -> None:
    """Pending handoffs (prepared, not adopted), newest first: what was the last session
    working on, and what did it leave for the next one?"""
    from loopx.build.handoff import list_pending
    from loopx.engine.clock import from_env

    data = list_pending(open_store(root), goal_id, from_env().now())
    emit(fmt, data, lambda: _pending_text(data))


def _pending_text(data: dict[str, Any]) -> str:
    lines = [] if data["handoffs"] else ["no pending handoffs"]
    for h in data["handoffs"]:
        flags = []
        if h["stale"]:
            flags.append("stale")
        if h["target_agent_id"]:
            flags.append(f"for {h['target_agent_id']}")
        extra = f" [{', '.join(flags)}]" if flags else ""
        lines.append(
            f"{h['prepared_at']}  {h['goal_id']}/{h['todo_id']}  {h['handoff_id']} from "
            f"{h['source_agent_id']} ({h['source_session_id']}){extra}"
        )
        lines.append(f"    {h['todo_title']}: {h['summary'] or '[note not readable here]'}")
    for p in data["problems"]:
        lines.append(f"{p['goal_id']}: skipped ({p['code']}): {p['message']}")
    return "\n".join(lines)
