"""`loopx build`: one linear function of named stages.

gather (fold every goal) → project + render (in memory, JSON validated) → manifest →
boundary scan of every public byte → write once, all-or-nothing. `check` runs the same
stages and compares with what is on disk instead of writing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from loopx.build import facts, outdir, scancache
from loopx.build.ahead import Ahead
from loopx.build.artifacts import MANIFEST, Artifact, Site
from loopx.build.beside import MOVED_AT_MOST, Beside, carry_scan
from loopx.build.beside import items as beside_items
from loopx.build.boundary import (
    Forbidden,
    enforce,
    goal_strings,
    non_public_strings,
    project_names,
    public_items,
    scan_public,
)
from loopx.build.folderscan import record_build
from loopx.build.outdir import Folder, UnsafeOutput
from loopx.build.site import audience_artifacts, visibility_split
from loopx.build.validate import check as check_schema
from loopx.build.work import (
    BuildCache,
    Unit,
    UnitEntry,
    configured_workers,
    fold_ahead,
    run_units,
    usable_cpus,
)
from loopx.build.writer import Entry, WriteReport, first_write, recover, write_tree
from loopx.engine.core import load_state
from loopx.engine.git import AUTO as AUTO  # re-exported: publish imports them from here
from loopx.engine.git import resolve_head as resolve_head
from loopx.model.config import ProjectConfig
from loopx.model.errors import InvalidInput
from loopx.model.records import Mutable
from loopx.projections.base import GENERATOR
from loopx.render.jsonout import dumps
from loopx.state.entities import GoalState
from loopx.store import fsio
from loopx.store.base import Store
from loopx.store.select import change_token, configured, open_store

MANIFEST_CAP = 64 << 20  # a manifest of 100,000 files is ~20 MB
DEFAULT_AUDIENCES = ("public", "team")


@dataclass(repr=False, eq=False)
class BuildResult(Mutable):
    site: Site
    report: WriteReport | None = None
    findings: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "files": len(self.site.artifacts),
            "sources": self.site.sources,
            "checkout": {"head": self.site.head},
        }
        if self.report is not None:
            out.update(
                written=self.report.written,
                unchanged=self.report.unchanged,
                removed=self.report.removed,
                kept=self.report.kept,
                recovered=self.report.recovered,
            )
        return out


def parse_audiences(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    out = tuple(dict.fromkeys(a.strip() for a in items if a.strip()))
    bad = [a for a in out if a not in ("public", "team", "private")]
    if bad or not out:
        raise InvalidInput(
            "audiences must be a comma-separated list of public, team, private",
            code="invalid_audience",
        )
    return tuple(a for a in ("public", "team", "private") if a in out)


def gather(
    store: Store,
    cache: BuildCache | None = None,
    tokens: dict[str, list[Any]] | None = None,
    *,
    strings: dict[str, Any] | None = None,
) -> dict[str, GoalState]:
    """Fold every goal. With a cache, a goal whose change token is the same (the ledger
    file's size, mtime, ctime and inode; the database's head) keeps the state folded last
    time, or, from the build memo, is not folded at all (`facts.Carried`: folded only if
    something needs more of it than the memo holds). `tokens` is given every goal's change
    token as it was before its fold (a write after that changes it, so whatever is keyed by
    these tokens and the heads folded holds for no ledger but the one folded). `strings`: where
    the goals folded in workers put their boundary strings (`work.fold_ahead`)."""
    ids = store.goal_ids()
    keys: dict[str, tuple[Any, ...]] = {}
    kept: dict[str, GoalState] = {}
    for goal_id in ids:
        if cache is not None or tokens is not None:
            keys[goal_id] = change_token(store, goal_id)
        if cache is not None:
            hit = cache.states.get(goal_id)
            known = cache.facts.get(goal_id)
            if hit is not None and hit[0] == keys[goal_id]:
                kept[goal_id] = hit[1]
            elif known is not None and known[0] == keys[goal_id]:
                kept[goal_id] = facts.Carried(known[1], partial(_fold, store, goal_id)).as_state()
                cache.states[goal_id] = (keys[goal_id], kept[goal_id])
    early: dict[str, GoalState | None] = {}

    def folded(goal_id: str) -> None:
        """A goal a worker has just folded: read from its fresh snapshot now, while the
        workers fold the others (the loop below reads again, in goal order, any it could
        not, and reports what it finds)."""
        with contextlib.suppress(Exception):
            early[goal_id] = load_state(store, goal_id).state

    fold_ahead(store, [g for g in ids if g not in kept], strings, folded)  # when large
    goals: dict[str, GoalState] = {}
    for goal_id in ids:
        state: GoalState | None
        if goal_id in kept:
            state = kept[goal_id]
        elif goal_id in early:
            state = early[goal_id]
        else:
            state = load_state(store, goal_id).state
        if state is not None:
            goals[goal_id] = state
            if cache is not None and goal_id not in kept:
                cache.states[goal_id] = (keys[goal_id], state)
    if tokens is not None:
        tokens.update((g, list(keys[g])) for g in ids)
    return goals


def _fold(store: Store, goal_id: str) -> GoalState:
    state = load_state(store, goal_id).state
    if state is None:
        raise facts.Stale(goal_id)
    return state


def make_site(
    root: Path,
    audiences: tuple[str, ...],
    head: str | None,
    *,
    validate: bool = False,
    cache: BuildCache | None = None,
    project: ProjectConfig | None = None,
    meanwhile: Callable[[dict[str, GoalState]], None] | None = None,
    made: Callable[[Unit, Any, Any], None] | None = None,
    apart: Callable[[Unit, Any], Any] | None = None,
    tokens: dict[str, list[Any]] | None = None,
    gathered: Callable[[dict[str, GoalState]], None] | None = None,
    listed: Callable[[str, list[Artifact]], None] | None = None,
) -> tuple[Site, Any]:
    """Gather and render everything in memory; nothing is written. With `validate`, every
    JSON artifact is checked against its schema as it is made (tests and `--validate`).
    `project`: the configuration's titles and links (default: read from `root`).
    `meanwhile(every goal)`: work of this process done while workers render; `apart(unit,
    (files, row))` in the process that rendered a unit, and `made(unit, (files, row), what
    apart returned)` here: each unit rendered, as soon as it is (`work.run_units`).
    `listed(audience, files)`: the files each audience's goals and pages added that were
    made in this build (not carried over), as soon as they are.
    `tokens`: given each goal's change token before its fold (`gather`). `gathered(every
    goal)`: called once they are gathered, before anything is rendered."""
    from loopx.store.config import load_config

    project = project if project is not None else load_config(root)
    store = open_store(root)  # files or PostgreSQL; its connection closes with the object
    # Whole: the boundary forbids every non-public string. Its strings are worked out as the
    # goals are folded only for a merge from nothing: no earlier merge (`serve`), build memo
    # or boundary memo of an earlier build to advance from.
    strings = None
    if (
        "public" in audiences
        and cache is not None
        and cache.merged is None
        and cache.memo is None
        and not scancache.build_kept(root)
    ):
        strings = cache.strings
    every = gather(store, cache, tokens, strings=strings)
    if gathered is not None:
        gathered(every)
    goals = {g: facts.truth(s) for g, s in every.items()}  # what artifacts are made of
    site = Site(head=head, validate=validate)
    split = {audience: visibility_split(goals, audience) for audience in audiences}
    units = [(audience, g) for audience in audiences for g in sorted(split[audience][0])]
    results = run_units(
        units,
        goals,
        head=head,
        visible={audience: split[audience][0] for audience in audiences},
        read_blob=store.get_blob,
        validate=validate,
        cache=cache,
        project=project,
        meanwhile=(lambda: meanwhile(every)) if meanwhile is not None else None,
        made=made,
        apart=apart,
    )
    for audience in audiences:
        visible, hidden = split[audience]
        had = len(site.artifacts)
        _add_audience(
            site, audience, sorted(visible), hidden, results, goals, project, store, cache
        )
        if listed is not None:
            listed(
                audience,
                [a for a in list(site.artifacts.values())[had:] if isinstance(a, Artifact)],
            )
    # Only goals some built audience may see are named: a public-only build says nothing of
    # team or private goals, not even their ids.
    widest = split[audiences[-1]][0]
    site.sources = {
        g: {"revision": s.revision, "head": s.head, "visibility": s.visibility}
        for g, s in sorted(goals.items())
        if g in widest
    }
    _add_manifest(site, audiences, project)
    return site, (every, store)


def _add_audience(
    site: Site,
    audience: str,
    visible: list[str],
    hidden: dict[str, int],
    results: dict[Unit, UnitEntry],
    goals: dict[str, GoalState],
    project: ProjectConfig,
    store: Store,
    cache: BuildCache | None = None,
) -> None:
    """The files of every goal this audience may see, then the audience's own files (made
    from those goals and their index rows; what they take from a goal whose key is unchanged
    is carried over with its unit, `BuildCache.parts`; never the private audience's: its
    text, read from the blob store, is not kept in the memo)."""
    rows = []
    parts: dict[str, dict[str, Any]] = {}
    for goal_id in visible:
        unit = (audience, goal_id)
        key, (artifacts, row) = results[unit]
        for artifact in artifacts:
            site.add(artifact)
        rows.append(row)
        site.units[unit] = (key, row)
        held = cache.parts.get(unit) if cache is not None and audience != "private" else None
        parts[goal_id] = dict(held[1]) if held is not None and held[0] == key else {}
    shown = {g: goals[g] for g in visible}
    audience_artifacts(site, audience, rows, hidden, project, shown, store.get_blob, parts)
    for goal_id in visible if audience != "private" else ():
        unit = (audience, goal_id)
        site.parts[unit] = parts.get(goal_id, {})
        if cache is not None:
            cache.parts[unit] = (site.units[unit][0], site.parts[unit])


def _add_manifest(site: Site, audiences: tuple[str, ...], project: ProjectConfig) -> None:
    """`manifest.json`: every file with its hash, size, audience, schema and goal."""
    manifest = {
        "schema": "loopx.manifest/v1",
        "generator": GENERATOR,
        "audiences": list(audiences),
        "checkout": {"head": site.head},
        "project": project.pages(),
        "sources": site.sources,
        "files": {
            a.path: {
                "sha256": a.sha256,
                "bytes": a.size,
                "audience": a.audience,
                "schema": a.schema,
                "goal_id": a.goal_id,
            }
            for a in sorted(site.artifacts.values(), key=lambda a: a.path)
        },
    }
    if site.validate:
        check_schema("loopx.manifest/v1", manifest, MANIFEST)
    site.add(Artifact(MANIFEST, dumps(manifest), None, "loopx.manifest/v1"))


def manifest_entries(folder: Folder, name: str = MANIFEST) -> dict[str, Entry]:
    """What the manifest `name` in `folder` says it wrote: path → (sha256, size), plus the
    manifest itself. Empty when there is none, or when it is not a loopx manifest (a user's
    own `manifest.json` is not ours: never replaced or deleted without --overwrite). A
    publish listing (`.loopx-published`) has the same shape."""
    try:
        raw = folder.read(name, MANIFEST_CAP)
        manifest = orjson.loads(raw) if raw is not None else None
    except (orjson.JSONDecodeError, UnsafeOutput, OSError):
        return {}
    if not isinstance(manifest, dict) or manifest.get("schema") not in (
        "loopx.manifest/v1",
        "loopx.published/v1",
    ):
        return {}
    files = manifest.get("files")
    entries: dict[str, Entry] = {name: (None, None)}
    for path, meta in (files if isinstance(files, dict) else {}).items():
        if isinstance(meta, dict):
            sha, size = meta.get("sha256"), meta.get("bytes")
            if isinstance(sha, str) and isinstance(size, int):
                entries[path] = (sha, size)
    return entries


def build(
    root: Path,
    out: Path,
    *,
    audiences: tuple[str, ...] = DEFAULT_AUDIENCES,
    head: str | None = None,
    validate: bool = False,
    cache: BuildCache | None = None,
    reuse: bool = False,
    overwrite: bool = False,
) -> BuildResult:
    """Build into `out`. `reuse` (the CLI's default) carries over the unchanged goals of the
    last build into `out` instead of rendering them again (see `loopx.build.reuse`).
    `overwrite` replaces files in `out` that no manifest of ours wrote (see `outdir`).

    The output folder is locked from the first look at it to the last write: a second build
    into the same folder waits, so the folder is always one whole build."""
    from loopx.build import reuse as reuse_mod
    from loopx.store.config import load_config

    head = resolve_head(root, head)
    names = project_names(root) if "public" in audiences else frozenset()  # before any write
    project = load_config(root)
    with outdir.lock(root, out):
        with outdir.open_folder(out, root, create=False):
            pass  # a linked or misplaced folder is refused before any work; nothing is created
        # A rebuild's boundary goes to a fork beside this process (`loopx.build.beside`),
        # started before the build memo is read.
        loaded = reuse and cache is None
        fork = (
            Beside.start(root, out, names) if loaded and _may_fork(root, out, audiences) else None
        )
        beside: list[Beside] = [fork] if fork is not None else []
        try:
            if loaded:  # with a fork, the fork checks the carried files meanwhile
                cache = reuse_mod.load(root, out, verify=not beside)
        except BaseException:
            _stop(beside)  # from here on, the stack below ends it
            raise
        unchecked = [loaded and bool(beside)]  # carried files no process has checked yet

        def check_here() -> None:
            """The carried files, checked in this process (the fork is gone)."""
            if unchecked[0] and cache is not None:
                reuse_mod.verified(cache, reuse_mod.intact(root, out))
            unchecked[0] = False

        prepared: list[Forbidden] = []
        tokens: dict[str, list[Any]] = {}  # each goal's change token before it was folded

        def gathered(goals: dict[str, GoalState]) -> None:
            """The fork is told every head, and the strings of the goals folded anew."""
            if beside and unchecked[0] and cache is not None:
                intact = beside[0].intact()
                if intact is None:  # it failed: everything here
                    _stop(beside)
                    check_here()
                else:
                    reuse_mod.verified(cache, intact)
                    unchecked[0] = False
            moved = {g: s for g, s in goals.items() if not isinstance(s, facts.Carried)}
            if beside and (cache is None or cache.memo is None or len(moved) > MOVED_AT_MOST):
                _stop(beside)  # a build from nothing, or of many goals: here, as it goes
            if beside:
                heads = {g: s.head for g, s in goals.items()}
                beside[0].gathered(heads, {g: goal_strings(s) for g, s in moved.items()})

        sent: set[str] = set()  # the public files the fork was sent ahead

        def ahead_of_scan(unit: Unit, result: Any, _: Any) -> None:
            """A public goal's files, to the fork as soon as they are made."""
            if beside and unit[0] == "public":
                sent.update(a.path for a in result[0])
                beside[0].ahead(beside_items([(a.path, a) for a in result[0]]))

        def listed_ahead(audience: str, files: list[Artifact]) -> None:
            """The public audience's files made anew, to the fork as soon as they are."""
            if beside and audience == "public":
                fresh = [(a.path, a) for a in files if a.path not in sent]
                beside[0].ahead(beside_items(fresh))

        def prepare(goals: dict[str, GoalState]) -> None:
            """The forbidden set, and, when no earlier scan vouches for any file (a cold
            build), its scanner and the needles the build memo keeps: made while the units
            render (unless the fork works it out)."""
            if beside:
                return
            if reuse and cache is not None:
                carry_scan(root, names, cache, {g: s.head for g, s in goals.items()})
            prepared.append(_forbidden(goals, cache).with_names(names))
            if cache is None or cache.scan.covered is None:
                prepared[0].scanner()
                if reuse and cache is not None:  # what the memo will keep, told apart now
                    prepared[0].needles("texts"), prepared[0].needles("ids")

        def scanning() -> Forbidden | None:
            """The forbidden set, its scanner built, once a cold scan may scan ahead."""
            cold = cache is not None and cache.scan.covered is None
            return prepared[0] if prepared and cold else None

        def made(ahead: Ahead | None) -> tuple[BuildResult, dict[str, GoalState], Store, Plan]:
            """Everything in memory, scanned (nothing is written yet, but what `ahead`
            stages as it is made)."""
            prepared.clear()
            tokens.clear()
            site, (goals, store) = make_site(
                root,
                audiences,
                head,
                validate=validate,
                cache=cache,
                project=project,
                meanwhile=prepare if "public" in audiences else None,
                made=ahead.made if ahead is not None else ahead_of_scan,
                apart=ahead.apart if ahead is not None else None,
                tokens=tokens,
                gathered=gathered if "public" in audiences else None,
                listed=listed_ahead if ahead is None else None,
            )
            if ahead is not None:
                ahead.staging.flush_ahead()  # while the boundary scans
            result = BuildResult(site)
            if beside and "public" in audiences:  # scanned there while the writes are planned
                beside[0].scan(beside_items(public_items(site)))
            plan = _plan(site, cache)
            if beside and "public" in audiences and beside[0].clean():
                result.findings = []  # the fork found every public file clean
            elif "public" in audiences:
                if beside:  # it found something, or failed: the whole boundary, here
                    _stop(beside)
                    prepare(goals)
                forbidden = prepared[0]
                scan_cache = cache.scan if cache is not None else None
                if ahead is not None:
                    ahead.vouch(scan_cache, forbidden)  # the files it scanned as they came
                result.findings = scan_public(site, forbidden, scan_cache)
                if result.findings:  # the commands that clear them read the whole state
                    goals = {g: facts.folded(s) for g, s in goals.items()}
                enforce(result.findings, goals, forbidden)
            return result, goals, store, plan

        # A first build into the folder stages each goal's files as they are made, a public
        # one once scanned (`ahead`); a build the boundary refuses leaves no folder.
        with contextlib.ExitStack() as stack:
            stack.callback(_stop, beside)  # however the build ends, the fork has ended
            staging = stack.enter_context(first_write(out, root, outdir.BUILD, MANIFEST))
            ahead = Ahead(staging, scanning) if staging is not None else None
            try:
                result, goals, store, (trusted, checked, was) = made(ahead)
            except facts.Stale:  # a goal carried over from the memo is not what it said
                assert cache is not None
                _stop(beside)  # told of goals as they were not
                check_here()
                facts.forget(cache.states, cache.facts)
                result, goals, store, (trusted, checked, was) = made(ahead)
            site = result.site
            # What the manifest there lists: as the build memo knows it, when the manifest is
            # still the one the memo's build wrote (`reuse.load`), else read from it.
            listed = getattr(cache.memo, "listed", None) if cache is not None else None
            # Created only now (unless staged): a build the boundary refused leaves no folder.
            with outdir.open_folder(out, root) as folder:
                result.report = write_tree(
                    folder if staging is None else staging.folder,
                    site.artifacts,
                    listed if listed is not None else manifest_entries(folder),
                    trusted=trusted,
                    checked=checked,
                    was=was,
                    overwrite=overwrite,
                    layout=outdir.BUILD,
                    staging=staging,
                )
            if listed is not None and cache is not None:
                cache.memo.listed = None  # the folder holds this build's files now
            _stop(beside)  # it wrote the boundary memo while this process wrote the output
        if "public" in audiences:  # written and scanned: a later `loopx scan` trusts it
            clean = {a.sha256 for _, a in public_items(site)}
            record_build(root, goals, tokens, names, clean)
            if reuse and cache is not None and cache.merged is not None:
                strings = {g: cache.strings[g] for g in sorted(goals) if g in cache.strings}
                scancache.save_build(root, names, strings, cache.merged, cache.scan, clean)
        if cache is not None:
            cache.written = {p: a.sha256 for p, a in site.artifacts.items()}
        if reuse:
            reuse_mod.save(root, out, site, cache, goals)
    return result


Plan = tuple[set[str], set[str], dict[str, tuple[str, outdir.Identity]]]


def _plan(site: Site, cache: BuildCache | None) -> Plan:
    """What `write_tree` needs to know of the files on disk: those the last build wrote as
    they are now (trusted), of which those `reuse.load` found as written just now (checked),
    and of the others, each file's sha256 and identity then (`reuse.recorded`)."""
    from loopx.build import reuse as reuse_mod

    trusted: set[str] = set()
    checked: set[str] = set()
    if cache is None:
        return trusted, checked, {}
    written = cache.written
    for p, a in site.artifacts.items():
        if written.get(p) == a.sha256:
            trusted.add(p)
            if getattr(a, "seen", None) is not None:
                checked.add(p)
    return trusted, checked, reuse_mod.recorded(cache, site.artifacts.keys() - trusted)


def _may_fork(root: Path, out: Path, audiences: tuple[str, ...]) -> bool:
    """Whether a build may leave its boundary to a fork (`loopx.build.beside`): a public
    build that will read a build memo and the boundary memo, on the file store (a database
    connection is not shared by two processes), with a second processor to run it on, unless
    `LOOPX_BUILD_WORKERS=1`."""
    from loopx.build.reuse import INDEX, memo_dir

    return (
        "public" in audiences
        and configured_workers() != 1
        and usable_cpus() >= 2
        and configured(root) == "file"
        and scancache.build_kept(root)
        and fsio.kind(memo_dir(root, out) / INDEX) == "file"
    )


def _stop(beside: list[Beside]) -> None:
    """The fork ended (see `Beside.close`)."""
    while beside:
        beside.pop().close()


def _forbidden(goals: dict[str, GoalState], cache: BuildCache | None) -> Forbidden:
    """The ledger's non-public strings; merged again only when some goal's head moved."""
    if cache is None:
        return non_public_strings(goals)
    key = scancache.heads_key({g: s.head for g, s in goals.items()})
    if cache.merged is None or cache.merged[0] != key:
        # Only the goals whose strings are made again are read past the fields a goal
        # carried over from the memo holds (`facts.Carried` folds it then): after one
        # event, the changed goal's (see `non_public_strings`).
        merged = non_public_strings(goals, cache=cache.strings, previous=cache.merged)
        cache.merged = (key, merged)
    return cache.merged[1]


@dataclass(repr=False, eq=False)
class CheckResult(Mutable):
    stale: list[str]
    missing: list[str]
    extra: list[str]

    @property
    def ok(self) -> bool:
        return not (self.stale or self.missing or self.extra)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "stale": self.stale, "missing": self.missing, "extra": self.extra}


def check(
    root: Path,
    out: Path,
    *,
    audiences: tuple[str, ...] = DEFAULT_AUDIENCES,
    head: str | None = None,
) -> CheckResult:
    """Compare the folder with what a build would write; never writes (but finishes an
    interrupted write first, so the comparison sees a consistent folder). Links in the
    folder are refused (`unsafe_output_path`), never followed."""
    head = resolve_head(root, head)
    with outdir.open_folder(out, root, create=False) as folder, outdir.lock(root, out):
        recover(folder, outdir.BUILD)
        site, _ = make_site(root, audiences, head)
        stale, missing = [], []
        for path, artifact in sorted(site.artifacts.items()):
            with fsio.guard("read the output folder"):
                on_disk = folder.read(path)
            if on_disk is None:
                missing.append(path)
            elif on_disk != artifact.data:
                stale.append(path)
        extra = []
        for path in sorted(manifest_entries(folder).keys() - site.artifacts.keys()):
            try:
                if outdir.BUILD.admits(path) and folder.stat(path) is not None:
                    extra.append(path)
            except UnsafeOutput:
                extra.append(path)
    return CheckResult(stale, missing, extra)
