"""`loopx handoff …`: prepare a continuation note, inspect it with current facts, adopt it,
and list the notes still waiting for an agent."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from loopx.cli.common import (
    VISIBILITY_CHOICE,
    actor,
    common,
    count,
    echo,
    emit,
    open_store,
    workspace_option,
)
from loopx.cli.write import write
from loopx.engine import commands
from loopx.engine import handoff as handoffs
from loopx.engine.core import Context, Result
from loopx.engine.lookup import LEASE_RANGE
from loopx.store import fsio


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
    return commands.PrepareHandoff(note=note, **fields)


# -- inspect ------------------------------------------------------------------------------


def inspect_handoff(
    store: Any,
    goal_id: str,
    todo_id: str,
    *,
    workspace: Path | None,
    audience: str = "private",
    now: str | None = None,
    reader: dict[str, str] | None = None,
    handoff_id: str | None = None,
) -> dict[str, Any]:
    """The digest of a todo's latest note, with facts observed in `workspace` (no budget)."""
    from loopx.engine import lookup
    from loopx.engine.core import require_goal
    from loopx.engine.handoff import pick_handoff, workspace_facts
    from loopx.projections.handoff import handoff_digest

    state = require_goal(store, goal_id)
    lookup.todo(state, todo_id)
    found = pick_handoff(state, todo_id, handoff_id)  # refuses another todo's note
    facts = None
    if workspace is not None:
        paths: list[str] = []
        revision = None
        if found is not None:
            revision = found.get("git_revision")
            paths = _note_paths(found["note"], store.get_blob)
        facts = workspace_facts(workspace, revision, paths)
    return handoff_digest(
        state,
        todo_id,
        audience=audience,
        read_blob=store.get_blob,
        workspace_facts=facts,
        now=now,
        reader=reader,
        handoff_id=handoff_id,
    )


def _note_paths(note: Any, read_blob: Any) -> list[str]:
    from loopx.privacy.audience import BlobText, note_body

    body = note_body(note, BlobText(read_blob))
    return [] if body is None else [f["path"] for f in body.get("files_touched", [])]


@handoff.command("inspect")
@click.option("--goal-id", required=True)
@click.option("--todo-id", required=True)
@click.option("--handoff-id", default=None, help="A specific note (default: the latest).")
@workspace_option("The checkout to compare with the note: HEAD, dirtiness, files touched")
@click.option(
    "--audience",
    type=click.Choice(["team", "private"]),
    default="private",
    show_default=True,
    help="team: team facts only, private ones counted; private: all that is on this host.",
)
@click.option(
    "--max-chars",
    type=count(1),
    default=None,
    help="Fit the output into N characters, dropping the least important material first.",
)
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
    from loopx.engine.clock import from_env
    from loopx.projections.handoff import fit_digest
    from loopx.render.handoff import render_digest_json

    store = open_store(root)
    # The reader is known when named (flag or LOOPX_AGENT_ID); the default `user` is not a
    # reader, and the adopt command then says <agent-id> rather than suggesting `user`.
    named = click.get_current_context().get_parameter_source("agent_id")
    known = named is not click.core.ParameterSource.DEFAULT
    digest = inspect_handoff(
        store,
        goal_id,
        todo_id,
        workspace=workspace,
        audience=audience,
        now=from_env().now(),
        reader={"agent_id": agent_id, "session_id": session_id} if known else None,
        handoff_id=handoff_id,
    )
    if fmt == "json":
        if max_chars is not None:
            digest = fit_digest(digest, max_chars, render_digest_json)
        out = render_digest_json(digest)
    else:
        out = render_cached(store, digest, fmt, max_chars)  # digest, markdown or text
    if fmt == "json":
        sys.stdout.write(out)
        sys.stdout.flush()
    else:
        echo(out, nl=False)


def escaping_code() -> bytes:
    """The source of the Markdown escaping, part of the render cache's key: output rendered
    by older escaping code is not reused."""
    from loopx.render import md_context, md_escape

    return b"".join(Path(str(m.__file__)).read_bytes() for m in (md_escape, md_context))


def render_cached(store: Any, digest: dict[str, Any], template: str, max_chars: int | None) -> str:
    """The digest as Markdown, reused from `.loopx/cache/` when this digest was rendered before.

    Rendering imports Jinja2, about a fifth of an inspect call; an agent that inspects the same
    note on every turn gets the stored text instead. One cache file per goal, todo, template
    and budget, holding its key: the digest (all but `now`, which no template shows; a test
    holds them to that), the template's source, the escaping code and the loopx version.
    Private-audience output is cached under `.loopx/private/`, the partition that never
    leaves this host.
    """
    import hashlib

    import orjson

    from loopx import __version__
    from loopx.projections.handoff import TEMPLATES
    from loopx.render.handoff import render_digest_markdown
    from loopx.resources import resource_dir

    source = (resource_dir("templates") / TEMPLATES[template]).read_bytes() + escaping_code()
    keyed = {k: v for k, v in digest.items() if k != "now"}
    key = hashlib.sha256(
        orjson.dumps([__version__, template, max_chars], option=orjson.OPT_SORT_KEYS)
        + source
        + orjson.dumps(keyed, option=orjson.OPT_SORT_KEYS)
    ).hexdigest()
    path = None
    state_dir = getattr(store, "state_dir", None)
    if state_dir is not None:
        # A private-audience digest may hold private text: it is kept in the private partition.
        base = state_dir / "private" if digest["audience"] == "private" else state_dir
        name = f"{digest['todo']['todo_id']}.{template}.{max_chars or 'full'}.md"
        path = base / "cache" / "handoff" / digest["source"]["goal_id"] / name
        # Through the store's file rules: a linked or special cache file is `unsafe_path`.
        try:
            cached = fsio.current().read_file(path, limit=fsio.MAX_READ).decode("utf-8")
            if cached.startswith(key + "\n"):
                return cached[len(key) + 1 :]
        except (OSError, UnicodeDecodeError):
            pass
    out = render_digest_markdown(digest, max_chars, template=template)
    if path is not None:
        try:
            fsio.current().makedirs(path.parent)
            fsio.current().write_atomic(path, (key + "\n" + out).encode("utf-8"))
        except OSError:
            pass  # the cache is an optimisation; failing to write it is never an error
    return out


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
@click.option(
    "--lease-seconds",
    type=click.IntRange(*LEASE_RANGE),
    default=None,
    help="The new claim's lease (default: the goal's policy).",
)
@workspace_option("The adopting checkout; its HEAD is recorded with the adoption")
def adopt(**fields: Any) -> commands.AdoptHandoff:
    """Adopt a todo's pending handoff: its claim moves to you through a transfer grant.

    Refused when the todo is done (todo_closed), there is no pending note
    (handoff_not_found), the note is stale (handoff_stale), a third agent holds a live claim
    (claim_owner_mismatch), or --expected-revision is not the todo's revision
    (revision_conflict). Retrying with the same --operation-id replays the receipt.
    """
    return commands.AdoptHandoff(**fields)


# -- list ---------------------------------------------------------------------------------


def list_pending(store: Any, goal_id: str | None, now: str) -> dict[str, Any]:
    """Pending handoffs across goals (or one), newest first; damaged goals are reported."""
    from loopx.engine.core import require_goal
    from loopx.engine.goals_all import health_of, load_all
    from loopx.model.errors import LoopxError
    from loopx.projections.handoff import pending_handoffs

    items: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    if goal_id is not None:
        states = [require_goal(store, goal_id)]
    else:
        states = []
        for gid, loaded in load_all(store):
            if isinstance(loaded, LoopxError):
                problems.append(
                    {
                        "goal_id": gid,
                        "health": health_of(loaded),
                        "code": loaded.code,
                        "message": loaded.message,
                    }
                )
                continue
            if loaded.state is not None:
                states.append(loaded.state)
    for state in states:
        items.extend(pending_handoffs(state, audience="private", read_blob=store.get_blob, now=now))
    items.sort(key=lambda h: (h["prepared_at"], h["goal_id"], h["prepared_seq"]), reverse=True)
    return {"now": now, "handoffs": items, "total": len(items), "problems": problems}


@handoff.command("list")
@click.option("--goal-id", default=None, help="One goal (default: every goal).")
@common()
def list_cmd(goal_id: str | None, root: Path | None, fmt: str) -> None:
    """Pending handoffs (prepared, not adopted), newest first: what was the last session
    working on, and what did it leave for the next one?"""
    from loopx.engine.clock import from_env

    data = list_pending(open_store(root), goal_id, from_env().now())

    def text() -> str:
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

    emit(fmt, data, text)
