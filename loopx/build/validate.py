"""Validate JSON artifacts against `schemas/` (compiled validators, loaded once)."""

from __future__ import annotations

from functools import cache
from typing import Any

import orjson

from loopx.model.errors import LoopxError
from loopx.resources import resource_dir

# artifact schema id → schema file
SCHEMA_FILES = {
    "loopx.status/v1": "status.v1.schema.json",
    "loopx.status/v2": "status.schema.json",
    "loopx.index/v1": "index.schema.json",
    "loopx.graph/v1": "graph.schema.json",
    "loopx.review/v1": "review.schema.json",
    "loopx.handoff/v1": "handoff.schema.json",
    "loopx.manifest/v1": "manifest.schema.json",
    "shields.endpoint/v1": "badge.schema.json",
    "loopx.search/v1": "search.schema.json",
}


@cache
def validator(schema_id: str) -> Any:
    from jsonschema import Draft202012Validator

    path = resource_dir("schemas") / SCHEMA_FILES[schema_id]
    schema = orjson.loads(path.read_bytes())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def problems(schema_id: str, data: Any) -> list[str]:
    """Every schema violation, as `path: message` without echoing values."""
    out = []
    for err in sorted(validator(schema_id).iter_errors(data), key=lambda e: list(e.path)):
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        out.append(f"{where}: {err.validator} failed")
    return out


def check(schema_id: str, data: Any, what: str) -> None:
    found = problems(schema_id, data)
    if found:
        raise LoopxError(
            f"{what} does not match {schema_id}: {'; '.join(found[:5])}",
            code="schema_violation",
            problems=found[:50],
        )
