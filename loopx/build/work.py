"""Run the per-goal units of a build: from the cache when a goal has not changed, in a pool
of worker processes when there is a lot to do, serially otherwise.

Results are assembled in (audience, goal) order, so the output never depends on which
worker finished first. `LOOPX_BUILD_WORKERS` overrides the worker count (1 = serial).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loopx.build.artifacts import AnyArtifact
from loopx.build.boundary import ScanCache
from loopx.build.site import goal_artifacts
from loopx.model.config import ProjectConfig
from loopx.model.errors import InvalidInput
from loopx.state.entities import GoalState

Unit = tuple[str, str]  # (audience, goal_id)
Result = tuple[list[AnyArtifact], dict[str, Any]]
PARALLEL_MIN_TODOS = 2000  # below this, starting workers costs more than it saves


@dataclass
class BuildCache:
    """Per-goal results of earlier builds in this process (`loopx serve` keeps one), keyed
    by everything they depend on: the goal's ledger head, the checkout head, the goals the
    audience may see, and validation."""

    entries: dict[Unit, tuple[tuple[Any, ...], Result]] = field(default_factory=dict)
    scan: ScanCache = field(default_factory=ScanCache)
    written: dict[str, str] = field(default_factory=dict)  # path → sha256 of our last write
    strings: dict[str, Any] = field(default_factory=dict)  # goal → (head, GoalStrings)
    states: dict[str, Any] = field(default_factory=dict)  # goal → (ledger stat, state)
    hits: int = 0
    misses: int = 0


# What forked workers read: set before the pool starts, inherited copy-on-write.
_SHARED: dict[str, Any] = {}


def _run(unit: Unit) -> Result:
    audience, goal_id = unit
    shared = _SHARED
    return goal_artifacts(
        shared["goals"][goal_id],
        audience,
        head=shared["head"],
        visible_goals=shared["visible"][audience],
        read_blob=shared["read_blob"],
        validate=shared["validate"],
        project=shared["project"],
    )


def project_key(project: ProjectConfig) -> tuple[Any, ...]:
    """The part of a cache key that says which configured titles and links pages carry."""
    return tuple(sorted(project.pages().items()))


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
) -> dict[Unit, Result]:
    project = project or ProjectConfig()
    pages = project_key(project)

    def key(unit: Unit) -> tuple[Any, ...]:
        audience, goal_id = unit
        state = goals[goal_id]
        visible_ids = tuple(sorted(visible[audience]))
        return (state.head, state.revision, head, visible_ids, validate, pages)

    results: dict[Unit, Result] = {}
    todo: list[Unit] = []
    for unit in units:
        cached = cache.entries.get(unit) if cache is not None else None
        if cached is not None and cached[0] == key(unit):
            results[unit] = cached[1]
            if cache is not None:
                cache.hits += 1
        else:
            todo.append(unit)
    _SHARED.update(
        goals=goals,
        head=head,
        visible=visible,
        read_blob=read_blob,
        validate=validate,
        project=project,
    )
    try:
        workers = workers_for(goals, todo)
        if workers > 1:
            # Largest goals first, so one big goal does not finish last on its own.
            order = sorted(todo, key=lambda u: -len(goals[u[1]].todos))
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                done = pool.map(_run, order, chunksize=1)
            fresh = dict(zip(order, done, strict=True))
        else:
            fresh = {unit: _run(unit) for unit in todo}
    finally:
        _SHARED.clear()
    for unit, result in fresh.items():
        results[unit] = result
        if cache is not None:
            cache.entries[unit] = (key(unit), result)
            cache.misses += 1
    return results
