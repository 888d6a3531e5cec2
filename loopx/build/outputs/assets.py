"""Files every audience's pages share, copied from `templates/` as they are: `style.css`."""

from __future__ import annotations

from loopx.build.registry import Output, Projection
from loopx.resources import resource_dir


def _static(name: str) -> Output:
    return Output(
        name, lambda ctx, _: (resource_dir("templates") / name).read_bytes(), template=name
    )


PROJECTIONS = (Projection("assets", "audience", lambda ctx: None, (_static("style.css"),)),)
