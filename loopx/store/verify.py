"""Verifying a whole ledger: every line intact and chained, every event's data of its type's
shape, every operation complete. Damage is reported, never raised."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from loopx.model.errors import LedgerDamage
from loopx.model.records import Mutable
from loopx.store.ledger import Cursor, scan


@dataclass(repr=False, eq=False)
class VerifyReport(Mutable):
    """What `loopx verify` found in one goal's ledger: events, size, head and any damage."""

    goal_id: str
    events: int
    size: int
    head: str
    ok: bool
    damage: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def verify_buffer(goal_id: str, buf: bytes) -> VerifyReport:
    """Walk a whole ledger buffer and report every problem; never raises for damage."""
    try:
        result = scan(buf, Cursor(), goal_id=goal_id)
    except LedgerDamage as err:
        return VerifyReport(
            goal_id=goal_id,
            events=0,
            size=len(buf),
            head="",
            ok=False,
            damage=[
                {"kind": "corrupt", "offset": err.details.get("offset"), "reason": err.message}
            ],
        )
    damage: list[dict[str, Any]] = _data_problems(result.events, buf)
    if result.damage is not None:
        damage.append({"kind": "tail", **result.damage.to_dict()})
    return VerifyReport(
        goal_id=goal_id,
        events=len(result.events),
        size=len(buf),
        head=result.cursor.head,
        ok=not damage,
        damage=damage,
    )


def _data_problems(events: list[dict[str, Any]], buf: bytes) -> list[dict[str, Any]]:
    """Events whose data does not match their type's schema.

    The checksum and chain prove a line was not damaged, not that loopx wrote it: a
    hand-made line can be intact and still carry data no write path would accept. Reads
    do not re-validate every event (a replay must stay cheap); `verify` does.
    """
    from loopx.model.jsoncheck import DataError, check_data

    problems: list[dict[str, Any]] = []
    offset = 0
    for i, event in enumerate(events):
        start, offset = offset, buf.index(b"\n", offset) + 1
        event_type = event["type"]
        if event.get("more") is True and (
            i + 1 == len(events) or events[i + 1]["operation_id"] != event["operation_id"]
        ):
            problems.append(
                {
                    "kind": "invalid",
                    "offset": start,
                    "seq": event["seq"],
                    "reason": "an operation's events stop before its last one",
                }
            )
        try:
            if check_data(event_type, event["data"]) is None:
                from loopx.model.events import EVENT_MODELS, validate_data

                if event_type in EVENT_MODELS:  # unknown types (a newer loopx) are carried
                    validate_data(event_type, event["data"])
        except ValueError as err:  # DataError names the field; pydantic's would echo values
            where = f": {err}" if isinstance(err, DataError) else ""
            problems.append(
                {
                    "kind": "invalid",
                    "offset": start,
                    "seq": event["seq"],
                    "reason": f"{event_type} data does not match its schema{where}",
                }
            )
            if len(problems) == 20:
                break
    return problems
