"""Run the per-goal work of a build: folding the ledgers (`fold_ahead`) and rendering the
units (`run_units`): from the cache when a goal has not changed, in a pool of worker
processes when there is a lot to do, serially otherwise.

Results are assembled in (audience, goal) order, so the output never depends on which
worker finished first. `LOOPX_BUILD_WORKERS` overrides the worker count (1 = serial).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from loopx.build import facts, layouts
from loopx.build.artifacts import AnyArtifact
from loopx.build.boundary import GoalStrings, ScanCache, goal_strings
from loopx.build.site import goal_artifacts
from loopx.engine.core import load_state
from loopx.model.config import ProjectConfig
from loopx.model.errors import InvalidInput
from loopx.model.records import Mutable
from loopx.state.entities import GoalState
from loopx.store import fsio
from loopx.store.base import Store

Unit = tuple[str, str]  # (audience, goal_id)
Result = tuple[list[AnyArtifact], dict[str, Any]]  # a goal's files, and its index row
UnitEntry = tuple[str, Result]  # (key, result): the key names everything the result depends on
PARALLEL_MIN_TODOS = 2000  # below this, starting workers costs more than it saves
PARALLEL_MIN_BYTES = 8 << 20  # of ledger to fold: below, starting workers costs more


@dataclass(repr=False, eq=False)
class BuildCache(Mutable):
    """Per-goal results of earlier builds (kept by `loopx serve`, or loaded from the build
    memo by `loopx.build.reuse`), keyed by everything they depend on (`unit_keys`)."""

    entries: dict[Unit, UnitEntry] = field(default_factory=dict)
    scan: ScanCache = field(default_factory=ScanCache)
    written: dict[str, str] = field(default_factory=dict)  # path → sha256 of our last write
    strings: dict[str, Any] = field(default_factory=dict)  # goal → (head, GoalStrings)
    merged: tuple[list[Any], Any] | None = None  # (every goal's head, their Forbidden set)
    states: dict[str, Any] = field(default_factory=dict)  # goal → (ledger stat, state)
    facts: dict[str, Any] = field(default_factory=dict)  # goal → (ledger stat, `facts.of`)
    parts: dict[Unit, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # unit → (key, …)
    layouts: MutableMapping[Unit, list[Any]] = field(default_factory=dict)  # its graphs' layouts
    memo: Any = None  # what `reuse.load` read (`reuse.Memo`), for `reuse.save`
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


def configured_workers() -> int | None:
    """`LOOPX_BUILD_WORKERS`, when it is set."""
    configured = os.environ.get("LOOPX_BUILD_WORKERS")
    if not configured:
        return None
    try:
        return max(1, int(configured))
    except ValueError:
        raise InvalidInput(
            "LOOPX_BUILD_WORKERS must be a whole number", code="invalid_workers"
        ) from None


def usable_cpus() -> int:
    """The processors this process may run on (its affinity, where the system tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def workers_for(goals: dict[str, GoalState], units: list[Unit]) -> int:
    configured = configured_workers()
    if configured is not None:
        return configured
    todos = sum(len(goals[g].todos) for _, g in units)
    if todos < PARALLEL_MIN_TODOS or len(units) < 2 or not hasattr(os, "fork"):
        return 1
    return max(1, min(os.cpu_count() or 1, 4, len(units)))


def _fold(goal_id: str) -> tuple[str, str, GoalStrings | None] | None:
    """In a worker: fold the goal (its snapshot is left in the cache): the goal, its head
    and, when the caller keeps the boundary's strings, the goal's (`boundary.goal_strings`,
    a pure function of the state: the parent takes them for the state it folds at the same
    head); None when it could not be folded."""
    with contextlib.suppress(Exception):  # the parent folds it again and reports the error
        state = load_state(_SHARED["store"], goal_id).state
        if state is not None:
            found = goal_strings(state) if _SHARED.get("strings") else None
            return goal_id, state.head, found
    return None


def fold_ahead(
    store: Store,
    goal_ids: list[str],
    strings: dict[str, tuple[str, GoalStrings]] | None = None,
    folded: Callable[[str], None] | None = None,
) -> None:
    """Read and fold the ledgers of `goal_ids` in worker processes when there are megabytes
    of them, each leaving its goal's snapshot in the cache (as the same `load_state` in this
    process would); the caller's own `load_state` then starts from that snapshot, which it
    checks against the ledger head as always, and reads only what was appended since.
    `strings` (goal → (head, its boundary strings), as `non_public_strings` keeps them): the
    workers also work out each goal's strings, off the critical path of a cold build (its
    render phase keeps both cores busy; this one leaves them idle a third of the time).
    `folded(goal_id)` is called here for each goal a worker folded, as soon as it has (the
    caller reads its fresh snapshot while the workers fold the others, instead of all of
    them on one core once they are done).

    Every line is still checked, by the worker that reads it. A goal a worker could not
    fold (damage, a refused file) has no fresh snapshot: the caller reads it cold and
    reports what it finds. A database store, whose connection a forked process may not
    share, is not folded ahead."""
    sizes = _ledger_sizes(store, goal_ids)
    configured = configured_workers()
    workers = configured if configured is not None else min(os.cpu_count() or 1, 4)
    if (
        sizes is None
        or workers <= 1
        or len(goal_ids) < 2
        or not hasattr(os, "fork")
        or (configured is None and sum(sizes.values()) < PARALLEL_MIN_BYTES)
    ):
        return
    order = sorted(goal_ids, key=lambda g: -sizes[g])  # largest first: no long tail
    import multiprocessing  # only here, as in `_render`

    _SHARED["store"] = store
    _SHARED["strings"] = strings is not None
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(goal_ids))) as pool:
            pending = pool.imap_unordered(_fold, order, chunksize=1)
            warm_renderer()  # while the workers fold
            for done in filter(None, pending):
                goal_id, head, found = done
                # An entry there stays: a later merge may advance from it.
                if strings is not None and found is not None:
                    strings.setdefault(goal_id, (head, found))
                if folded is not None:
                    folded(goal_id)
    finally:
        _SHARED.clear()


def _ledger_sizes(store: Store, goal_ids: list[str]) -> dict[str, int] | None:
    """Each goal's ledger size in bytes, for a file store (None for any other store)."""
    from loopx.store.filestore import FileStore

    if not isinstance(store, FileStore):
        return None
    fs = fsio.current()
    with fsio.guard("read the ledger"):
        stats = {g: fs.lstat(store.ledger_path(g)) for g in goal_ids}
    return {g: st.st_size if st is not None else 0 for g, st in stats.items()}


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
    meanwhile: Callable[[], None] | None = None,
    made: Callable[[Unit, Result, Any], None] | None = None,
    apart: Callable[[Unit, Result], Any] | None = None,
) -> dict[Unit, UnitEntry]:
    """Every unit's (key, result): from `cache` when its key is unchanged, else rendered.
    With a cache, a unit rendered again still carries over each file its last build made
    of the same inputs (`site.goal_artifacts`). `meanwhile` is this process's own work,
    done while workers render (or after, serially). `apart(unit, result)` is called in
    the process that rendered the unit (a worker, or this one when serial), right after
    it; `made(unit, result, what apart returned)` in this one, as soon as it has the
    unit (after `meanwhile`, in the order the workers finish), so its files can be
    staged while the others render."""
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
        goals={**goals, **{g: facts.folded(goals[g]) for _, g in todo}},  # before any fork
        head=head,
        visible=visible,
        read_blob=read_blob,
        validate=validate,
        project=project,
        carried=carried,
        layouts=cache.layouts if cache is not None else None,
        apart=apart,
    )
    try:
        fresh = _render(todo, goals, meanwhile, made)
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
    todo: list[Unit],
    goals: dict[str, GoalState],
    meanwhile: Callable[[], None] | None,
    made: Callable[[Unit, Result, Any], None] | None = None,
) -> dict[Unit, tuple[Result, list[Any] | None]]:
    workers = workers_for(goals, todo)
    done: dict[Unit, tuple[Result, list[Any] | None]] = {}
    if workers <= 1:
        for unit in todo:
            done[unit] = _run(unit)
            kept = _apart(unit, done[unit][0])
            if made is not None:
                made(unit, done[unit][0], kept)
        if meanwhile is not None:
            meanwhile()
        return done
    # Largest goals first, so one big goal does not finish last on its own.
    order = sorted(todo, key=lambda u: -len(goals[u[1]].todos))
    import multiprocessing  # only here: a rebuild of a few goals never starts a worker

    with multiprocessing.get_context("fork").Pool(workers) as pool:
        pending = pool.imap_unordered(_run_named, order, chunksize=1)
        if meanwhile is not None:
            meanwhile()  # the workers are forked already: this process is otherwise idle
        for unit, out, kept in pending:
            done[unit] = out
            if made is not None:
                made(unit, out[0], kept)
    return {unit: done[unit] for unit in order}


def _run_named(unit: Unit) -> tuple[Unit, tuple[Result, list[Any] | None], Any]:
    """In a worker: `_run`, its result named by its unit (results arrive in the order they
    finish), and what `apart` made of it here. Each file is hashed here too: the hash is
    sent with its artifact, so the parent does not hash thousands of files itself."""
    out = _run(unit)
    for artifact in out[0][0]:
        artifact.sha256  # noqa: B018 (a cached property, pickled with the artifact)
    return unit, out, _apart(unit, out[0])


def _apart(unit: Unit, result: Result) -> Any:
    apart = _SHARED["apart"]
    return apart(unit, result) if apart is not None else None


def warm_renderer() -> None:
    """Import the graph drawing and load the page templates, so that render workers forked
    after this inherit them instead of each loading its own."""
    import loopx.render.svg  # noqa: F401
    from loopx.render.env import environment

    env = environment()
    for name in env.list_templates(filter_func=_page_template):
        env.get_template(name)


def _page_template(name: str) -> bool:
    """The templates a build renders per goal (not the handoff's or prime's, nor the style
    sheet and script, which are copied)."""
    return name.startswith(("html/", "markdown/")) or name in ("badge.svg", "feed.xml")
