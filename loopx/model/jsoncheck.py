"""Validate event data against `schemas/event.schema.json` without importing pydantic.

Importing pydantic and building the models costs a CLI process ~0.15 s, more than a whole
write should take. The schema is generated from the models (`loopx.model.schema`), so the
write path checks data against it with this small compiler for the subset pydantic emits,
and normalises it the way `validate_data` does: defaults filled in, None values dropped.
A test runs both over valid and mutated data and requires the same verdicts and output.

Types whose schema uses anything outside that subset — above all a check only Python can
make (`x-loopx-python-check`) — are not compiled: `check_data` returns None for them and
the caller falls back to pydantic. Integers are strict (JSON semantics: no "2", no True).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from functools import cache
from typing import Any

import orjson

Check = Callable[[Any, str], Any]
_MISSING = object()
_ANNOTATIONS = frozenset({"description", "default", "$comment", "examples"})
_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "maxItems",
        "minItems",
        "minLength",
        "maxLength",
        "pattern",
        "enum",
        "const",
        "minimum",
        "maximum",
        "anyOf",
        "$ref",
    }
)


class Unsupported(Exception):
    """The schema uses something this compiler does not implement (use pydantic instead)."""


class DataError(ValueError):
    """Data does not match its schema; `path` names the field, never the value."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path or 'value'}: {message}")
        self.path = path


@cache
def _schema() -> dict[str, Any]:
    from loopx.resources import resource_dir

    loaded: dict[str, Any] = orjson.loads(
        (resource_dir("schemas") / "event.schema.json").read_bytes()
    )
    return loaded


@cache
def _type_refs() -> dict[str, str]:
    """Event type → name of its data definition, read from the schema's if/then branches."""
    refs: dict[str, str] = {}
    for branch in _schema().get("allOf", []):
        event_type = branch["if"]["properties"]["type"]["const"]
        ref = branch["then"]["properties"]["data"]["$ref"]
        refs[event_type] = ref.rsplit("/", 1)[-1]
    return refs


@cache
def compiled(event_type: str) -> Check | None:
    """The compiled check for `event_type`'s data, or None when pydantic must do it."""
    name = _type_refs().get(event_type)
    if name is None:
        return None
    try:
        return _Compiler(_schema()["$defs"]).ref(name)
    except Unsupported:
        return None


def check_data(event_type: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """Validate and normalise `data`; None when this type is left to pydantic.

    Raises `DataError` when the data is invalid.
    """
    check = compiled(event_type)
    if check is None:
        return None
    result: dict[str, Any] = check(data, "")
    return result


class _Compiler:
    def __init__(self, defs: dict[str, Any]):
        self.defs = defs
        self.done: dict[str, Check] = {}

    def ref(self, name: str) -> Check:
        if name not in self.done:
            slot: list[Check] = []
            self.done[name] = lambda value, path: slot[0](value, path)  # recursion-safe
            slot.append(self.node(self.defs[name]))
            self.done[name] = slot[0]
        return self.done[name]

    def node(self, schema: dict[str, Any]) -> Check:
        unknown = set(schema) - _KEYWORDS - _ANNOTATIONS
        if unknown:
            raise Unsupported(", ".join(sorted(unknown)))
        if "$ref" in schema:
            if set(schema) - _ANNOTATIONS - {"$ref"}:
                raise Unsupported("$ref with siblings")
            return self.ref(schema["$ref"].rsplit("/", 1)[-1])
        if "anyOf" in schema:
            return self.any_of([self.node(s) for s in schema["anyOf"]])
        kind = schema.get("type")
        if kind == "string":
            return _string(schema)
        if kind == "integer":
            return _integer(schema)
        if kind == "boolean":
            return _typed(bool, "must be true or false")
        if kind == "null":
            return _typed(type(None), "must be null")
        if kind == "array":
            return self.array(schema)
        if kind == "object":
            return self.object(schema)
        raise Unsupported(f"type {kind!r}")

    def any_of(self, options: list[Check]) -> Check:
        def check(value: Any, path: str) -> Any:
            first: DataError | None = None
            for option in options:
                try:
                    return option(value, path)
                except DataError as err:
                    first = first or err
            raise DataError(path, "matches none of the allowed shapes") from first

        return check

    def array(self, schema: dict[str, Any]) -> Check:
        item = self.node(schema["items"]) if "items" in schema else (lambda v, p: v)
        lo, hi = schema.get("minItems", 0), schema.get("maxItems")

        def check(value: Any, path: str) -> Any:
            if not isinstance(value, list | tuple):
                raise DataError(path, "must be a list")
            if len(value) < lo or (hi is not None and len(value) > hi):
                raise DataError(path, f"must have {lo} to {hi} items")
            return [item(v, f"{path}.{i}" if path else str(i)) for i, v in enumerate(value)]

        return check

    def object(self, schema: dict[str, Any]) -> Check:
        if schema.get("additionalProperties", True) is not False:
            raise Unsupported("open object")
        props = {name: self.node(sub) for name, sub in schema.get("properties", {}).items()}
        defaults = {
            name: sub["default"]
            for name, sub in schema.get("properties", {}).items()
            if "default" in sub and sub["default"] is not None
        }
        required = tuple(schema.get("required", ()))

        def check(value: Any, path: str) -> Any:
            if not isinstance(value, dict):
                raise DataError(path, "must be an object")
            extra = sorted(set(value) - set(props))
            if extra:
                raise DataError(path, f"unexpected field {extra[0]!r}")
            out: dict[str, Any] = {}
            for name, prop in props.items():
                sub = f"{path}.{name}" if path else name
                raw = value.get(name, _MISSING)
                if raw is _MISSING:
                    if name in required:
                        raise DataError(sub, "is required")
                    if name not in defaults:
                        continue
                    raw = copy.deepcopy(defaults[name])
                result = prop(raw, sub)
                if result is not None:  # pydantic's exclude_none
                    out[name] = result
            return out

        return check


def _typed(kind: type, message: str) -> Check:
    def check(value: Any, path: str) -> Any:
        if type(value) is not kind:
            raise DataError(path, message)
        return value

    return check


def _string(schema: dict[str, Any]) -> Check:
    lo, hi = schema.get("minLength", 0), schema.get("maxLength")
    pattern = schema.get("pattern")
    # JSON Schema (like pydantic's Rust regex) ends `$` at the end of the text; Python's `$`
    # would also accept a trailing newline, so anchor with \Z instead.
    regex = None
    if pattern is not None:
        regex = re.compile(pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern)
    choices = schema.get("enum")
    const = schema.get("const", _MISSING)

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, str):
            raise DataError(path, "must be a string")
        if len(value) < lo or (hi is not None and len(value) > hi):
            raise DataError(path, f"must be {lo} to {hi} characters")
        if regex is not None and not regex.search(value):
            raise DataError(path, "has the wrong format")
        if choices is not None and value not in choices:
            raise DataError(path, "must be one of " + ", ".join(map(str, choices)))
        if const is not _MISSING and value != const:
            raise DataError(path, f"must be {const}")
        return value

    return check


def _integer(schema: dict[str, Any]) -> Check:
    lo, hi = schema.get("minimum"), schema.get("maximum")

    def check(value: Any, path: str) -> Any:
        if type(value) is not int:
            raise DataError(path, "must be an integer")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise DataError(path, f"must be between {lo} and {hi}")
        return value

    return check
