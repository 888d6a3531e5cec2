"""Run the per-goal units of a build: from the cache when a goal has not changed, in a pool
of worker processes when there is a lot to do, serially otherwise.

Results are assembled in (audience, goal) order, so the output never depends on which
worker finished first. `LOOPX_BUILD_WORKERS` overrides the worker count (1 = serial).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from loopx.build import layouts
from loopx.build.artifacts import AnyArtifact
from loopx.build.boundary import ScanCache
from loopx.build.site import goal_artifacts
from loopx.model.config import ProjectConfig
from loopx.model.errors import InvalidInput
from loopx.state.entities import GoalState

Unit = tuple[str, str]  # (audience, goal_id)
Result = tuple[list[AnyArtifact], dict[str, Any]]  # a goal's files, and its index row
UnitEntry = tuple[str, Result]  # (key, result): the key names everything the result depends on
PARALLEL_MIN_TODOS = 2000  # below this, starting workers costs more than it saves


@dataclass
class BuildCache:
    """Per-goal results of earlier builds (kept by `loopx serve`, or loaded from the build
    memo by `loopx.build.reuse`), keyed by everything they depend on (`unit_keys`)."""

    entries: dict[Unit, UnitEntry] = field(default_factory=dict)
    scan: ScanCache = field(default_factory=ScanCache)
    written: dict[str, str] = field(default_factory=dict)  # path → sha256 of our last write
    strings: dict[str, Any] = field(default_factory=dict)  # goal → (head, GoalStrings)
    merged: tuple[list[Any], Any] | None = None  # (every goal's head, their Forbidden set)
    states: dict[str, Any] = field(default_factory=dict)  # goal → (ledger stat, state)
    parts: dict[Unit, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # unit → (key, …)
    layouts: dict[Unit, list[Any]] = field(default_factory=dict)  # unit → its graphs' layouts
    hits: int = 0
    misses: int = 0


# What forked workers read: set before the pool starts, inherited copy-on-write.
_SHARED: dict[str, Any] = {}


def _run(unit: Unit) -> tuple[Result, list[Any] | None]:
    """One unit's result, and (with a cache) the task-graph layouts its drawings used, as
    the memo keeps them: those of its last build are taken again where the shape is the
    same (`loopx.build.layouts`)."""
    audience, goal_id = unit
    shared = _SHARED
    kept = shared["layouts"]
    known = layouts.UnitLayouts(layouts.from_json(kept.get(unit))) if kept is not None else None
    result = goal_artifacts(
        shared["goals"][goal_id],
        audience,
        head=shared["head"],
        visible_goals=shared["visible"][audience],
        read_blob=shared["read_blob"],
        validate=shared["validate"],
        project=shared["project"],
        carried=shared["carried"].get(unit),
        layouts=known,
    )
    return result, layouts.to_json(known.used) if known is not None else None


def unit_keys(
    units: list[Unit],
    goals: dict[str, GoalState],
    *,
    head: str | None,
    visible: dict[str, set[str]],
    validate: bool,
    project: ProjectConfig,
) -> dict[Unit, str]:
    """Each unit's cache key: a digest of the goal's ledger head and revision, the checkout
    head, the goals its audience may see, validation and the configured titles and links."""
    shared = {
        audience: _digest([head, sorted(ids), validate, project.pages()])
        for audience, ids in visible.items()
    }
    return {
        (audience, goal_id): _digest(
            [goals[goal_id].head, goals[goal_id].revision, shared[audience]]
        )
        for audience, goal_id in units
    }


def _digest(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()


def workers_for(goals: dict[str, GoalState], units: list[Unit]) -> int:
    configured = os.environ.get("LOOPX_BUILD_WORKERS")
    if configured:
        try:
            return max(1, int(configured))
        except ValueError:
            raise InvalidInput(
                "LOOPX_BUILD_WORKERS must be a whole number", code="invalid_workers"
            ) from None
    todos = sum(len(goals[g].todos) for _, g in units)
    if todos < PARALLEL_MIN_TODOS or len(units) < 2 or not hasattr(os, "fork"):
        return 1
    return max(1, min(os.cpu_count() or 1, 4, len(units)))


def run_units(
    units: list[Unit],
    goals: dict[str, GoalState],
    *,
    head: str | None,
    visible: dict[str, set[str]],
    read_blob: Callable[[str], bytes | None] | None,
    validate: bool,
    cache: BuildCache | None = None,
    project: ProjectConfig | None = None,
) -> dict[Unit, UnitEntry]:
    """Every unit's (key, result): from `cache` when its key is unchanged, else rendered.
    With a cache, a unit rendered again still carries over each file its last build made
    of the same inputs (`site.goal_artifacts`)."""
    project = project or ProjectConfig()
    keys = unit_keys(units, goals, head=head, visible=visible, validate=validate, project=project)
    results: dict[Unit, UnitEntry] = {}
    todo: list[Unit] = []
    carried: dict[Unit, dict[str, AnyArtifact]] = {}
    for unit in units:
        cached = cache.entries.get(unit) if cache is not None else None
        if cached is not None and cached[0] == keys[unit]:
            results[unit] = cached
            if cache is not None:
                cache.hits += 1
            continue
        todo.append(unit)
        if cache is not None:
            held = cached[1][0] if cached is not None else []
            carried[unit] = {a.path: a for a in held if a.key is not None}
    _SHARED.update(
        goals=goals,
        head=head,
        visible=visible,
        read_blob=read_blob,
        validate=validate,
        project=project,
        carried=carried,
        layouts=cache.layouts if cache is not None else None,
    )
    try:
        fresh = _render(todo, goals)
    finally:
        _SHARED.clear()
    for unit, (result, laid) in fresh.items():
        results[unit] = (keys[unit], result)
        if cache is not None:
            cache.entries[unit] = results[unit]
            cache.misses += 1
            if laid is not None:
                cache.layouts[unit] = laid
    return results


def _render(
    todo: list[Unit], goals: dict[str, GoalState]
) -> dict[Unit, tuple[Result, list[Any] | None]]:
    workers = workers_for(goals, todo)
    if workers <= 1:
        return {unit: _run(unit) for unit in todo}
    # Largest goals first, so one big goal does not finish last on its own.
    order = sorted(todo, key=lambda u: -len(goals[u[1]].todos))
    import multiprocessing  # only here: a rebuild of a few goals never starts a worker

    with multiprocessing.get_context("fork").Pool(workers) as pool:
        done = pool.map(_run, order, chunksize=1)
    return dict(zip(order, done, strict=True))
