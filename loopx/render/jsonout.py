"""Canonical JSON for artifacts: sorted keys, two-space indent, UTF-8, trailing newline."""

from __future__ import annotations

from typing import Any

import orjson


def dumps(data: Any) -> bytes:
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"
