"""The build's templates read the projections' dicts by key (`t["title"]`), not by attribute
(`t.title`): Jinja2 tries an attribute first, and on a dict that is an AttributeError raised
and caught on every read (~1.6 us against ~0.14 us by key; a cold build of the 10,000-todo
root read ~206,000 fields so, issue 19). Objects (the configuration, `parts`, `loop`) keep
the attribute form. Same output either way: the pages are byte for byte what they were."""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from loopx.build.pipeline import build
from loopx.render.env import environment


def test_no_template_of_a_build_reads_a_dict_by_attribute(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPX_BUILD_WORKERS", "1")  # every page rendered in this process
    read: Counter[tuple[str, str]] = Counter()
    kinds: Counter[str] = Counter()
    env = environment()  # the instance, as another test may have left a method on it
    original = env.getattr

    def getattr_(obj: Any, attribute: str) -> Any:
        template = os.path.basename(sys._getframe(1).f_code.co_filename)
        kinds[type(obj).__name__] += 1
        if isinstance(obj, dict) and not callable(getattr(obj, attribute, None)):
            read[(template, attribute)] += 1  # a field, not a method such as `.get(...)`
        return original(obj, attribute)

    monkeypatch.setattr(env, "getattr", getattr_)
    result = build(demo, tmp_path / "site", audiences=("public", "team", "private"), head=None)
    assert result.site.artifacts  # the build rendered its pages here
    assert kinds  # and the templates read attributes of objects through the patched method
    assert not read, sorted(read.items())
