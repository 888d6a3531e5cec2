"""`loopx log` and `loopx verify`: the ledger itself."""

from __future__ import annotations

from pathlib import Path

import click

from loopx.cli.common import common, count, emit, emit_rows, open_store


@click.command("log")
@click.option("--goal-id", required=True)
@click.option(
    "--since",
    "since_seq",
    type=count(),
    default=0,
    help="Only events after this seq.",
)
@click.option("--limit", type=count(1), default=None, help="At most N events.")
@click.option("--type", "types", multiple=True, help="Only these event types (repeatable).")
@common()
def log_cmd(
    goal_id: str,
    since_seq: int,
    limit: int | None,
    types: tuple[str, ...],
    root: Path | None,
    fmt: str,
) -> None:
    """List a goal's events, oldest first."""
    from loopx.model.errors import NotFound

    store = open_store(root)
    if not store.exists(goal_id):
        raise NotFound("goal not found", code="goal_not_found", goal_id=goal_id)
    scan = store.read(goal_id)
    events = [e for e in scan.events if e["seq"] > since_seq and (not types or e["type"] in types)]
    if limit is not None:
        events = events[:limit]

    emit_rows(
        fmt,
        {"goal_id": goal_id, "events": events},
        events,
        lambda e: (
            f"{e['seq']:>6} {e['recorded_at']} {e['type']:<18} {e['actor']['agent_id']:<16} "
            f"{e['operation_id']}"
        ),
        "no events",
    )


@click.command("verify")
@click.option("--goal-id", default=None, help="One goal (default: every goal).")
@common()
def verify_cmd(goal_id: str | None, root: Path | None, fmt: str) -> None:
    """Recompute every checksum and the hash chain; report head hash, size and any damage.

    Exits 5 when any ledger is damaged.
    """
    import sys

    from loopx.model.errors import NotFound

    store = open_store(root)
    if goal_id and not (store.exists(goal_id) or store.raw(goal_id)):
        raise NotFound("goal not found", code="goal_not_found", goal_id=goal_id)
    ids = [goal_id] if goal_id else store.goal_ids()
    reports = [store.verify(g).to_dict() for g in ids]
    ok = all(r["ok"] for r in reports)

    def text() -> str:
        lines = []
        for r in reports:
            state = "ok" if r["ok"] else "DAMAGED"
            lines.append(
                f"{r['goal_id']}: {state}  {r['events']} events, {r['size']} bytes, "
                f"head {r['head'] or '-'}"
            )
            for d in r["damage"]:
                lines.append(f"  {d['kind']} damage at byte {d['offset']}: {d['reason']}")
        return "\n".join(lines) or "no ledgers"

    emit(fmt, {"ok": ok, "ledgers": reports}, text)
    if not ok:
        sys.exit(5)
