"""Carry over what an earlier `loopx build` made, so a fresh process re-renders only the goals
whose ledger changed.

Everything carried over comes from the build memo in `.loopx/cache/build/<out>/`, never from
the output folder: the ledger is the only authority, and a hand-edited `index.json` or page
is not a fact. Per (audience, goal) the memo holds the key of its files (`work.unit_keys`),
its index row, what the audience's own files take from the goal (`BuildCache.parts`), and
each file's hash, schema, identity on disk (size, mtime, ctime, inode) right after it was
written and, for a file whose output declares its inputs, their digest
(`registry.input_key`). A unit is carried over (not rendered, not read back, not rewritten)
only when its key is unchanged and every one of its files is still that same file; an edit
on disk changes its ctime, which no one can set back, so it is rendered again (a rebuild
whose boundary goes to a fork, `loopx.build.beside`, has the fork look at the files while it
reads the memo: `intact`, `verified`). A unit whose key changed but whose files are all
still as written is rendered again, except each file made of the same inputs as before (a
todo page whose todo and neighbours did not change). Code,
templates, schemas and the version are the memo's fingerprint (`loopx.build.fingerprint`):
a memo of another loopx is ignored. `loopx build --check` never carries anything: it
compares every byte.

The memo is one file per goal (`<goal>.json`: its units; `<goal>.layouts.json`: the
task-graph layouts its drawings used, read only for a unit rendered again) and an index
(`index.json`): per goal the change token its ledger had before it was folded, and the few
fields of its state the build reads of every goal (`loopx.build.facts`): a goal whose ledger
still has that token is not folded at all. A build rewrites only the files of the goals it
changed, and the index. Each file stands on its own (format, fingerprint, goal; every
record in it checked against the ledger's heads and the disk as above), so a build
interrupted between two of them leaves nothing that can be carried wrongly.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import orjson

from loopx.build import facts, outdir
from loopx.build.artifacts import MANIFEST, AnyArtifact, DiskArtifact, Site
from loopx.build.fingerprint import digest as digest
from loopx.build.fingerprint import fingerprint, remember
from loopx.build.fingerprint import sources as sources
from loopx.build.work import BuildCache, Unit, UnitEntry
from loopx.model.errors import LoopxError
from loopx.model.ids import hex_digests
from loopx.state.entities import GoalState
from loopx.store import fsio

MEMO_FORMAT = 6
AUDIENCES = ("public", "team", "private")
INDEX = "index.json"
_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")  # a goal id (`model.ids`): a safe file name
# The files of a unit, relative to its folder, one a line: no part may be empty, `.`, `..`
# or a reserved name (each starts with a letter, digit, `_` or `-`).
_NAME = r"[A-Za-z0-9_-][A-Za-z0-9._-]*"
_RELS = re.compile(rf"{_NAME}(?:[/\n]{_NAME})*")
_SCHEMA_TYPES = {str, type(None)}


def memo_dir(root: Path, out: Path) -> Path:
    """The memo of the build folder `out`."""
    key = hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:16]
    return root / ".loopx" / "cache" / "build" / key


def _read(path: Path) -> Any:
    try:
        raw = fsio.read_regular(path, outdir.READ_CAP)
        return orjson.loads(raw) if raw is not None else None
    except (OSError, orjson.JSONDecodeError):
        return None


def _goal_file(goal_id: str, what: str = "") -> str:
    return f"{goal_id}{what}.json"


class Layouts(MutableMapping[Unit, list[Any]]):
    """unit → the task-graph layouts its last build used (`loopx.build.layouts`), read from
    the memo goal by goal when a unit of it asks (only a unit rendered again does); `updated`
    names the units whose layouts this build set."""

    def __init__(self, folder: Path | None = None, fingerprint: str = "") -> None:
        self._folder, self._fingerprint = folder, fingerprint
        self._held: dict[Unit, list[Any]] = {}
        self._read: set[str] = set()
        self.updated: set[Unit] = set()

    def _load(self, goal_id: str) -> None:
        if goal_id in self._read or self._folder is None:
            return
        self._read.add(goal_id)
        memo = _read(self._folder / _goal_file(goal_id, ".layouts"))
        if not _of(memo, self._fingerprint, goal_id) or not isinstance(memo["units"], dict):
            return
        for audience, laid in memo["units"].items():
            if audience in AUDIENCES and isinstance(laid, list):
                self._held.setdefault((audience, goal_id), laid)  # checked when used

    def __getitem__(self, unit: Unit) -> list[Any]:
        self._load(unit[1])
        return self._held[unit]

    def __setitem__(self, unit: Unit, laid: list[Any]) -> None:
        self._load(unit[1])  # the goal's other units keep theirs
        self._held[unit] = laid
        self.updated.add(unit)

    def __delitem__(self, unit: Unit) -> None:
        self._load(unit[1])
        del self._held[unit]
        self.updated.add(unit)

    def __iter__(self) -> Iterator[Unit]:
        return iter(self._held)

    def __len__(self) -> int:
        return len(self._held)


def _of(memo: Any, fingerprint: str, goal_id: str) -> bool:
    """Whether `memo` is a goal file of this format, this loopx and that goal."""
    return (
        isinstance(memo, dict)
        and memo.get("format") == MEMO_FORMAT
        and memo.get("fingerprint") == fingerprint
        and memo.get("goal_id") == goal_id
        and "units" in memo
    )


class Memo:
    """What `load` read: the fingerprint, the index's bytes and, per goal, each unit's entry
    and parts as carried and its record as read (`save` keeps the file of a goal none of
    whose units changed, and writes the record of a unit carried whole as it was read)."""

    def __init__(self, folder: Path, fingerprint: str, index: bytes | None) -> None:
        self.folder = folder
        self.fingerprint = fingerprint
        self.index = index
        self.units: dict[str, dict[Unit, tuple[UnitEntry, dict[str, Any] | None, Any]]] = {}
        # What the output folder's manifest lists (path → (sha256, size), and the manifest
        # itself), when it is still the manifest the memo's build wrote (`_listing`).
        self.listed: dict[str, tuple[str | None, int | None]] | None = None
        # The manifest's sha256 and identity on disk, as that build wrote it (`_listing`).
        self.manifest: tuple[str, outdir.Identity] | None = None


def load(root: Path, out: Path, *, verify: bool = True) -> BuildCache:
    """A build cache of the units the memo of `out` records whose files are still as written
    (empty when there is no memo, or one of another loopx or of the wrong shape: a forged or
    damaged memo only costs a full render). Without `verify`, of every well-formed unit,
    whether its files are as written or not: the caller carries none of them over before
    `intact` (in another process, at the same time) has said which are, or `verified` has
    dropped those that are not."""
    cache = BuildCache()
    folder = memo_dir(root, out)
    try:
        raw = fsio.read_regular(folder / INDEX, outdir.READ_CAP)
        index = orjson.loads(raw) if raw is not None else None
    except (OSError, orjson.JSONDecodeError):
        return cache
    if not isinstance(index, dict) or index.get("format") != MEMO_FORMAT:
        return cache
    current = fingerprint(folder.parent)
    goals = index.get("goals")
    if index.get("fingerprint") != current or not isinstance(goals, dict):
        return cache
    memo = cache.memo = Memo(folder, current, raw)
    cache.layouts = Layouts(folder, current)
    cache.facts.update(_facts(goals))
    manifest = index.get("manifest")
    listing = manifest.get("goals") if isinstance(manifest, dict) else None
    listed: dict[str, tuple[str, int]] = {}
    with outdir.Folder(out) as target:
        for goal_id in sorted(g for g in goals if isinstance(g, str) and _ID.fullmatch(g)):
            record = _read(folder / _goal_file(goal_id))
            if not _of(record, current, goal_id) or not isinstance(record["units"], dict):
                continue
            lists = listed if isinstance(listing, list) and goal_id in listing else {}
            for audience, unit_record in sorted(record["units"].items()):
                try:
                    unit, entry = _unit(target, out, audience, goal_id, unit_record, lists, verify)
                except (AttributeError, TypeError, KeyError, ValueError, OSError, LoopxError):
                    continue
                cache.entries[unit] = entry
                parts = unit_record.get("parts")
                if isinstance(parts, dict) and _parts_ok(parts):
                    cache.parts[unit] = (entry[0], parts)
                else:
                    parts = None
                memo.units.setdefault(goal_id, {})[unit] = (entry, parts, unit_record)
                cache.written.update((a.path, a.sha256) for a in entry[1][0])
        memo.listed = _listing(target, manifest, listed)
        if memo.listed is not None and isinstance(manifest, dict):
            sha = manifest.get("sha256")
            if type(sha) is str and hex_digests([sha]):
                memo.manifest = (sha, tuple(manifest["seen"]))  # as found just now
    return cache


def intact(root: Path, out: Path) -> set[Unit]:
    """The units the build memo of `out` records whose files are all still as written: what
    `load` checks of each (in a fork beside a build that loads without it)."""
    folder = memo_dir(root, out)
    found: set[Unit] = set()
    index = _read(folder / INDEX)
    goals = index.get("goals") if isinstance(index, dict) else None
    if not isinstance(goals, dict):
        return found
    with outdir.Folder(out) as target:
        for goal_id in sorted(g for g in goals if isinstance(g, str) and _ID.fullmatch(g)):
            record = _read(folder / _goal_file(goal_id))
            units = record.get("units") if isinstance(record, dict) else None
            for audience, unit_record in units.items() if isinstance(units, dict) else ():
                try:
                    found.add(_unit(target, out, audience, goal_id, unit_record, {})[0])
                except (AttributeError, TypeError, KeyError, ValueError, OSError, LoopxError):
                    continue
    return found


def verified(cache: BuildCache, intact: set[Unit]) -> None:
    """Leave out of `cache` each unit `load` took without `verify` that is not `intact` (its
    files not all still as written), as `load` would have."""
    memo = cache.memo
    if not isinstance(memo, Memo):
        return
    for units in memo.units.values():
        for unit, (entry, _, _) in list(units.items()):
            if unit not in intact:
                del units[unit]
                cache.entries.pop(unit, None)
                cache.parts.pop(unit, None)
                for a in entry[1][0]:
                    cache.written.pop(a.path, None)


def recorded(cache: BuildCache, paths: Iterable[str]) -> dict[str, tuple[str, outdir.Identity]]:
    """Of `paths`, those `load` found on disk as the memo's build wrote them (a file of a
    unit it read, carried or not; the manifest), each with its sha256 and its identity then
    (`writer.write_tree`'s `was`: a file still of that identity holds those bytes)."""
    memo = cache.memo
    if not isinstance(memo, Memo):
        return {}
    wanted = set(paths)
    out: dict[str, tuple[str, outdir.Identity]] = {}
    if memo.manifest is not None and MANIFEST in wanted:
        out[MANIFEST] = memo.manifest
    goals = {p.split("/", 3)[2] for p in wanted if p.count("/") >= 3}
    for goal_id in sorted(goals & memo.units.keys()):
        for entry, _, _ in memo.units[goal_id].values():
            for artifact in entry[1][0]:
                seen = getattr(artifact, "seen", None)
                if artifact.path in wanted and seen is not None:
                    out[artifact.path] = (artifact.sha256, tuple(seen))
    return out


def _listing(
    target: outdir.Folder, recorded: Any, listed: dict[str, tuple[str, int]]
) -> dict[str, tuple[str | None, int | None]] | None:
    """What the manifest in `target` lists, without reading it: when it is still the file
    the memo's build wrote (its identity on disk then, which an edit or another build
    changes), the files of that build's units (`listed`: those of the goals it names, as
    their records say; each record was written by that build or carried whole by it) and
    its other files (`recorded["others"]`), if they are as many as it listed; else None
    (then the manifest is read). Fewer means a record is missing or damaged; more cannot
    be, as every one of them is that build's."""
    if not isinstance(recorded, dict):
        return None
    seen, count, others = recorded.get("seen"), recorded.get("files"), recorded.get("others")
    if not isinstance(seen, list) or type(count) is not int or not isinstance(others, list):
        return None
    try:
        for path, sha, size in others:
            if type(path) is not str or type(sha) is not str or type(size) is not int:
                return None
            listed[path] = (sha, size)
        (now,) = target.identities("", [MANIFEST])
    except (TypeError, ValueError, OSError, LoopxError):
        return None
    if now is None or list(now) != seen or len(listed) != count:
        return None
    return {MANIFEST: (None, None), **listed}


def _facts(goals: dict[str, Any]) -> dict[str, tuple[tuple[Any, ...], dict[str, Any]]]:
    """Each goal's change token and fields (`loopx.build.facts`), where they are of the
    shape `save` writes."""
    found: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}
    for goal_id, record in goals.items():
        token = record.get("token") if isinstance(record, dict) else None
        fields = facts.parse(record.get("facts")) if isinstance(record, dict) else None
        if (
            isinstance(token, list)
            and all(isinstance(t, (int, str)) for t in token)
            and fields is not None
            and fields["goal_id"] == goal_id
        ):
            found[goal_id] = (tuple(token), fields)
    return found


def _unit(
    target: outdir.Folder,
    out: Path,
    audience: str,
    goal_id: str,
    record: Any,
    listed: dict[str, tuple[str, int]],
    verify: bool = True,
) -> tuple[Unit, UnitEntry]:
    """One recorded unit, when every file of it is still the file that was written (unless
    not `verify`); raises ValueError (or a lookup or type error) otherwise. Every file of a
    well-formed record goes into `listed` (path → sha256 and size), changed on disk or not."""
    key, row, files = record["key"], record["row"], record["files"]
    if audience not in AUDIENCES or not isinstance(key, str) or row.get("goal_id") != goal_id:
        raise ValueError("not a unit")
    if not isinstance(files, list) or not files:
        raise ValueError("a unit without files")
    names, shas, schemas, keys, *columns = zip(*files, strict=True)  # a column each
    if len(columns) != 4:
        raise ValueError("not the files of a unit")
    recorded = list(zip(*columns, strict=True))  # (size, mtime, ctime, inode) each
    if not (
        _RELS.fullmatch("\n".join(names))
        and hex_digests(shas)
        and hex_digests([k for k in keys if k is not None])
        and set(map(type, schemas)) <= _SCHEMA_TYPES
        and all(set(map(type, column)) == {int} for column in columns)  # as `lstat` has them
    ):
        raise ValueError("not the files of a unit")
    within = f"{audience}/goals/{goal_id}"
    paths = [f"{within}/{name}" for name in names]
    listed.update(zip(paths, zip(shas, columns[0], strict=True), strict=True))
    if verify:
        _check(target, within, names, recorded)
    artifacts: list[AnyArtifact] = [
        DiskArtifact(path, out, sha, at[0], audience, schema, goal_id, at, item_key)
        for path, sha, schema, item_key, at in zip(
            paths, shas, schemas, keys, recorded, strict=True
        )
    ]
    return (audience, goal_id), (key, (artifacts, row))


_ENTRY = {"title", "href", "summary", "id", "updated", "order"}


def _check(target: outdir.Folder, within: str, names: Any, recorded: list[Any]) -> None:
    """Raise ValueError unless each file `names` (in `within`) is of the identity recorded."""
    folders: dict[str, tuple[list[str], list[Any]]] = {}
    for name, at in zip(names, recorded, strict=True):
        rel_dir, _, base = name.rpartition("/")
        folder = folders.get(rel_dir)
        if folder is None:
            folder = folders[rel_dir] = ([], [])
        folder[0].append(base)
        folder[1].append(at)
    for rel_dir, (bases, was) in folders.items():
        if target.identities(f"{within}/{rel_dir}" if rel_dir else within, bases) != was:
            raise ValueError("changed on disk")


def _parts_ok(parts: dict[str, Any]) -> bool:
    """Whether a unit's carried parts have the shape the audience's files read (a damaged
    or forged memo costs projecting that goal again, never a failed build): the count of
    its search items, feed entries of text with their (time, goal, seq) order, whole
    counts. Whatever they hold, the files made of them are scanned like every public byte
    that changed."""
    if set(parts) - {"search", "feed"}:
        return False
    search = parts.get("search", 0)
    if type(search) is not int or search < 0:
        return False
    if "feed" not in parts:
        return True
    feed = parts["feed"]
    if not isinstance(feed, dict) or set(feed) != {"entries", "count", "hidden"}:
        return False
    counts = (feed["count"], feed["hidden"])
    if not all(type(c) is int and c >= 0 for c in counts) or not isinstance(feed["entries"], list):
        return False
    return all(_entry_ok(e) for e in feed["entries"])


def _entry_ok(entry: Any) -> bool:
    if type(entry) is not dict or entry.keys() != _ENTRY:
        return False
    order = entry["order"]
    return (
        type(entry["title"]) is str
        and type(entry["href"]) is str
        and type(entry["summary"]) is str
        and type(entry["id"]) is str
        and type(entry["updated"]) is str
        and type(order) is list
        and len(order) == 3
        and type(order[0]) is str
        and type(order[1]) is str
        and type(order[2]) is int
    )


def save(
    root: Path,
    out: Path,
    site: Site,
    cache: BuildCache | None = None,
    goals: dict[str, GoalState] | None = None,
) -> None:
    """Record every unit of the build just written, with the task-graph layouts `cache`
    holds for it, and each of `goals` with the change token its ledger had before it was
    folded (`cache.states`). Only the files of goals with a unit this build did not carry
    whole are written, and the index (best effort: the memo is a cache, and without it the
    next build simply folds and renders everything)."""
    memo = cache.memo if cache is not None and isinstance(cache.memo, Memo) else None
    states = cache.states if cache is not None else {}
    known = {
        g: {"token": list(states[g][0]), "facts": facts.of(state)}
        for g, state in sorted((goals or {}).items())
        if g in states and states[g][1] is state
    }
    by_goal: dict[str, list[Unit]] = {}
    for unit in sorted(site.units):
        by_goal.setdefault(unit[1], []).append(unit)
    try:
        folder = memo_dir(root, out)
        base = outdir.cache_dir(root)  # each part a real folder, never a planted link
        with outdir.Folder(base) as cached:
            cached.check_dirs([folder.name], create=True)
        current = fingerprint(folder.parent)
        same = memo is not None and memo.folder == folder and memo.fingerprint == current
        changed = [
            g
            for g, units in by_goal.items()
            if not (same and memo is not None and _carried_whole(memo, g, units, site, cache))
        ]
        files: dict[Unit, list[AnyArtifact]] = {}
        wanted = set(changed)
        for artifact in site.artifacts.values():
            if artifact.goal_id in wanted and artifact.audience is not None:
                files.setdefault((artifact.audience, artifact.goal_id), []).append(artifact)
        with outdir.Folder(out) as target:
            for goal_id in changed:
                units = by_goal[goal_id]
                made = {
                    u[0]: _record(target, memo, u, site, cache, files.get(u, [])) for u in units
                }
                records = {audience: r for audience, r in made.items() if r is not None}
                _write(folder / _goal_file(goal_id), current, goal_id, records)
                laid = cache.layouts if cache is not None else {}
                kept = {unit[0]: laid.get(unit, []) for unit in units}
                _write(folder / _goal_file(goal_id, ".layouts"), current, goal_id, kept)
        with outdir.Folder(out) as target:
            manifest = _manifest_record(target, site)
        index = orjson.dumps(
            {"format": MEMO_FORMAT, "fingerprint": current, "goals": known, "manifest": manifest}
        )
        if not (same and memo is not None and memo.index == index):
            _write_file(folder / INDEX, index)
        _prune(folder, set(by_goal))
        remember(folder.parent)
    except (OSError, LoopxError):
        pass


def _manifest_record(target: outdir.Folder, site: Site) -> dict[str, Any] | None:
    """What `_listing` checks the manifest just written against: its identity on disk, how
    many files it lists, the goals whose units' records list the most of them, and the
    others (an audience's own files)."""
    (seen,) = target.identities("", [MANIFEST])
    if seen is None or MANIFEST not in site.artifacts:
        return None
    units = site.units
    others = [
        [a.path, a.sha256, a.size]
        for a in site.artifacts.values()
        if (a.audience, a.goal_id) not in units and a.path != MANIFEST
    ]
    return {
        "seen": list(seen),
        "sha256": site.artifacts[MANIFEST].sha256,
        "files": len(site.artifacts) - 1,
        "goals": sorted({g for _, g in units}),
        "others": sorted(others),
    }


def _carried_whole(
    memo: Memo, goal_id: str, units: list[Unit], site: Site, cache: BuildCache | None
) -> bool:
    """Whether every unit of the goal is one `load` read, carried as it was, with the same
    layouts: its file in the memo is still right."""
    loaded = memo.units.get(goal_id)
    if cache is None or loaded is None or set(loaded) != set(units):
        return False
    updated = cache.layouts.updated if isinstance(cache.layouts, Layouts) else set(units)
    return all(unit not in updated and _as_read(memo, unit, site, cache) for unit in units)


def _as_read(memo: Memo | None, unit: Unit, site: Site, cache: BuildCache | None) -> Any:
    """The unit's record as `load` read it, when this build carried the unit whole: the
    same entry (not rendered again) and the same parts (none projected again); else None."""
    held = memo.units.get(unit[1], {}).get(unit) if memo is not None else None
    if held is None or cache is None or cache.entries.get(unit) is not held[0]:
        return None
    entry, parts, record = held
    if site.units[unit][0] != entry[0]:
        return None
    now = site.parts.get(unit, {})
    if unit[0] == "private":
        return record if not now else None
    if parts is None or now.keys() != parts.keys() or any(now[k] is not parts[k] for k in now):
        return None
    return record


def _record(
    target: outdir.Folder,
    memo: Memo | None,
    unit: Unit,
    site: Site,
    cache: BuildCache | None,
    artifacts: list[AnyArtifact],
) -> Any:
    """A unit's record: as it was read when the unit was carried whole, else made of its
    files (each with its identity now) and parts; None when a file is not on disk."""
    record = _as_read(memo, unit, site, cache)
    if record is not None:
        return record
    key, row = site.units[unit]
    within = len(f"{unit[0]}/goals/{unit[1]}/")
    ordered = sorted(artifacts, key=lambda a: a.path)
    seen = _seen(target, ordered)
    if seen is None:
        return None
    files = [
        [a.path[within:], a.sha256, a.schema, a.key, *at]
        for a, at in zip(ordered, seen, strict=True)
    ]
    return {"key": key, "row": row, "files": files, "parts": site.parts.get(unit, {})}


def _seen(target: outdir.Folder, artifacts: list[AnyArtifact]) -> list[Any] | None:
    """Each file's identity now (`outdir.identity`; one `identities` a folder); None when
    one is not on disk as a regular file. A carried file's is the one checked when the memo
    was read (nothing rewrites it; if anything did, the next build finds it changed and
    renders its unit again)."""
    seen: list[Any] = [None] * len(artifacts)
    folders: dict[str, tuple[list[int], list[str]]] = {}
    for i, artifact in enumerate(artifacts):
        if isinstance(artifact, DiskArtifact) and artifact.seen is not None:
            seen[i] = artifact.seen
            continue
        rel_dir, _, name = artifact.path.rpartition("/")
        at, names = folders.setdefault(rel_dir, ([], []))
        at.append(i)
        names.append(name)
    for rel_dir, (at, names) in folders.items():
        for i, identity in zip(at, target.identities(rel_dir, names), strict=True):
            if identity is None:
                return None
            seen[i] = identity
    return seen


def _write(path: Path, current: str, goal_id: str, units: dict[str, Any]) -> None:
    memo = {"format": MEMO_FORMAT, "fingerprint": current, "goal_id": goal_id, "units": units}
    _write_file(path, orjson.dumps(memo))


def _write_file(path: Path, data: bytes) -> None:
    if fsio.kind(path) in ("missing", "file"):
        fsio.write_atomic_nofollow(path, data)


def _prune(folder: Path, goals: set[str]) -> None:
    """Remove the files of goals this build has no unit of (and the index of a memo of an
    older format beside the folder)."""
    with os.scandir(folder) as entries:
        names = [e.name for e in entries if e.is_file(follow_symlinks=False)]
    for name in names:
        goal_id = name.removesuffix(".json").removesuffix(".layouts")
        if name != INDEX and name.endswith(".json") and goal_id not in goals:
            os.unlink(folder / name)
    old = folder.with_name(folder.name + ".json")  # format 5 and before: one file
    if fsio.kind(old) == "file":
        os.unlink(old)
