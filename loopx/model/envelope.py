"""The event envelope as a typed record, for the bulk read of a whole ledger (issue 19).

A ledger line decoded into `TypedEnvelope` has every envelope field the readers rely on, of its
type, and nothing else: the decoder (msgspec, native) checks in one pass what `envelope_ok`
checks field by field on a dict, and builds no dict and no key string for the envelope. A
line that does not decode this way (an unknown field, a field of another type) is left to
the dict reader, which decides about it as before. `data` is decoded in the same pass, into
plain dicts, lists and scalars (`Value`: integers within 64 bits, at most `DATA_DEPTH` levels);
a line whose `data` does not fit that shape is likewise left to the dict reader.

The fold's handlers read an event by key (`event["seq"]`); a `TypedEnvelope` answers that too.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

# The deepest `data` a `TypedEnvelope` holds (`data` itself is level 1): a line nested deeper is
# left to the dict reader, so the bulk read needs no depth check of its own (MAX_DEPTH, 32).
DATA_DEPTH = 5
Int = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
Value: Any = str | Int | float | bool | None  # a value nested in no list or object
for _ in range(DATA_DEPTH - 1):
    Value = str | Int | float | bool | None | list[Value] | dict[str, Value]


class Actor(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    agent_id: str
    session_id: str

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)


class TypedEnvelope(msgspec.Struct, forbid_unknown_fields=True, gc=False, kw_only=True):
    """One event as the ledger holds it (`loopx.store.ledger`).

    The fields are declared in the order of a line's keys (sorted, `sum` spliced in last;
    `kw_only` lets the optional ones sit among them): the decoder tries the field after the
    last one it matched first, so each key of a line loopx wrote is found at once (issue 19:
    ~5% of the decode of a 50,000-event ledger)."""

    actor: Actor
    data: dict[str, Value]
    event_id: str | None = None
    goal_id: str
    more: bool | None = None
    op_hash: str
    operation_id: str
    prev: str
    recorded_at: str
    seq: int
    type: str
    v: int | None = None
    visibility: Literal["public", "team", "private"]
    sum: str

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


DECODER = msgspec.json.Decoder(TypedEnvelope)
DecodeFailed = (msgspec.DecodeError, msgspec.ValidationError)
