"""A JSON Schema validation error in words, never repeating the value (it may be a secret).

Each caller words its own special cases first (unknown keys, patterns) and leaves the rest
to `schema_problem`, so every schema-checked input speaks of a type or a limit the same way.
"""

from __future__ import annotations

from typing import Any


def schema_problem(error: Any) -> str:
    """What is wrong with the value a `jsonschema.ValidationError` is about."""
    kind, limit = error.validator, error.validator_value
    if kind == "required":
        have = error.instance if isinstance(error.instance, dict) else {}
        missing = [name for name in limit if name not in have]
        return "missing required field" + ("s " if len(missing) > 1 else " ") + ", ".join(missing)
    if kind == "type":
        return f"must be {'an' if str(limit)[0] in 'aeiou' else 'a'} {limit}"
    if kind == "minLength":
        return "must not be empty" if limit == 1 else f"must be at least {limit} characters"
    if kind == "maxLength":
        return f"is longer than the limit of {limit} characters"
    if kind == "maxItems":
        return f"has more than the limit of {limit} items"
    if kind == "minItems":
        return f"needs at least {limit} items"
    if kind == "enum":
        return "must be one of: " + ", ".join(str(v) for v in limit)
    if kind == "const":
        return f"must be {limit}"
    return f"is not valid ({kind})"
