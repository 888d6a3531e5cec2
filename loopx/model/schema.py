"""Generate `schemas/event.schema.json` from the pydantic models (the one source of truth).

    python -m loopx.model.schema          # rewrite schemas/event.schema.json
    python -m loopx.model.schema --check  # exit 1 when the file is out of date

The envelope's properties come from `Envelope`; each event type's `data` is a `$defs` entry
generated from its model in `EVENT_MODELS`, selected by an `if type == … then data: $ref`
branch. Checks that JSON Schema cannot say (a Python `AfterValidator`, a model validator) are
marked with `x-loopx-python-check`, so `loopx.model.jsoncheck` leaves those types to pydantic.
A test keeps the committed file equal to what this module generates.
"""

from __future__ import annotations

import json
import sys
from typing import Any

SCHEMA_ID = "https://loopx.dev/schemas/event.schema.json"
PYTHON_CHECK = "x-loopx-python-check"

ENVELOPE_DOCS = {
    "seq": "Position in the goal's ledger: 1, 2, 3, … with no gaps.",
    "event_id": "evt- and the first 16 hex digits of sha256('<goal_id>:<seq>').",
    "operation_id": "The idempotency key of the write that appended this event.",
    "op_hash": "sha256 of the write's canonical request: a retry must match it.",
    "type": "What happened, e.g. todo.claimed; selects the shape of `data`.",
    "v": "Version of the data shape for this type (older versions are upgraded on read).",
    "goal_id": "The goal whose ledger holds this line.",
    "actor": "Who appended it: the acting agent (or person) and session.",
    "recorded_at": "When, from the injectable clock: UTC, ISO 8601, Z suffix.",
    "visibility": "Who may see it: public ⊂ team ⊂ private.",
    "data": "The event's payload; its shape is fixed by `type` (see $defs).",
    "prev": "The previous line's sum (64 zeros for seq 1): the hash chain.",
    "sum": "sha256 of this line's canonical JSON without `sum`.",
    "more": "true on each event of a multi-event operation but its last (absent otherwise).",
}
_SCHEMA_KEYS = ("properties", "$defs")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _clean(node: Any) -> Any:
    """Drop pydantic's generated titles (field names already say it) at every schema node."""
    if isinstance(node, list):
        return [_clean(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key in _SCHEMA_KEYS and isinstance(value, dict):
            out[key] = {name: _clean(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS or key in ("items", "additionalProperties", "not"):
            out[key] = _clean(value)
        else:
            out[key] = value
    return out


def _python_checks(model: Any) -> dict[str, list[str]]:
    """Field name → names of Python validators JSON Schema cannot express."""
    from pydantic.functional_validators import (
        AfterValidator,
        BeforeValidator,
        PlainValidator,
        WrapValidator,
    )

    kinds = (AfterValidator, BeforeValidator, PlainValidator, WrapValidator)
    found: dict[str, list[str]] = {}
    for name, info in model.model_fields.items():
        for meta in info.metadata:
            if isinstance(meta, kinds):
                found.setdefault(name, []).append(getattr(meta.func, "__name__", "validator"))
    decorators = model.__pydantic_decorators__
    for name in (*decorators.field_validators, *decorators.model_validators):
        found.setdefault("*", []).append(name)
    return found


def _annotate(model: Any, schema: dict[str, Any]) -> None:
    """Add factory defaults (pydantic omits them) and mark Python-only checks."""
    props = schema.get("properties", {})
    for name, info in model.model_fields.items():
        if info.default_factory is not None and name in props:
            value = info.default_factory()
            if hasattr(value, "model_dump"):
                value = value.model_dump(mode="json", exclude_none=True)
            props[name]["default"] = value
    for name, checks in _python_checks(model).items():
        target = schema if name == "*" else props.get(name, schema)
        target[PYTHON_CHECK] = ", ".join(sorted(checks))


def _models() -> dict[str, Any]:
    """Every data model reachable from the event models, by class name."""
    from pydantic import BaseModel

    from loopx.model import events

    found: dict[str, Any] = {}
    stack: list[Any] = [events.Envelope, *events.EVENT_MODELS.values()]
    while stack:
        cls = stack.pop()
        if cls.__name__ in found:
            continue
        found[cls.__name__] = cls
        for info in cls.model_fields.values():
            stack.extend(_model_classes(info.annotation, BaseModel))
    return found


def _model_classes(annotation: Any, base: type) -> list[Any]:
    import typing

    if isinstance(annotation, type) and issubclass(annotation, base):
        return [annotation]
    out: list[Any] = []
    for arg in typing.get_args(annotation):
        out.extend(_model_classes(arg, base))
    return out


def event_schema() -> dict[str, Any]:
    """The event envelope schema, data shapes included, as a plain dict."""
    from loopx.model.events import EVENT_MODELS, Envelope

    models = _models()
    defs: dict[str, Any] = {}

    def generate(model: Any) -> dict[str, Any]:
        schema = model.model_json_schema(ref_template="#/$defs/{model}")
        for name, sub in schema.pop("$defs", {}).items():
            _annotate(models[name], sub)
            defs[name] = _clean(sub)
        _annotate(model, schema)
        return dict(_clean(schema))

    envelope = generate(Envelope)
    for name, doc in ENVELOPE_DOCS.items():
        envelope["properties"][name]["description"] = doc
    branches = []
    for event_type in sorted(EVENT_MODELS):
        model = EVENT_MODELS[event_type]
        defs[model.__name__] = generate(model)
        branches.append(
            {
                "if": {"properties": {"type": {"const": event_type}}, "required": ["type"]},
                "then": {"properties": {"data": {"$ref": f"#/$defs/{model.__name__}"}}},
            }
        )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "loopx ledger event",
        "description": (
            "One line of .loopx/goals/<goal_id>/ledger.jsonl. Generated from "
            "loopx.model.events by `python -m loopx.model.schema`; do not edit by hand. "
            "Types not listed in allOf (from a newer loopx) are carried, not rejected."
        ),
        "type": "object",
        "additionalProperties": False,
        "required": envelope["required"],
        "properties": envelope["properties"],
        "allOf": branches,
        "$defs": dict(sorted(defs.items())),
    }


def render() -> str:
    return json.dumps(event_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    from loopx.resources import resource_dir

    path = resource_dir("schemas") / "event.schema.json"
    text = render()
    if "--check" in argv:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path} is out of date: run python -m loopx.model.schema", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
