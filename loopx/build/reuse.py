"""Carry over what an earlier `loopx build` made, so a fresh process re-renders only the goals
whose ledger changed.

Everything carried over comes from the build memo in `.loopx/cache/build/`, never from the
output folder: the ledger is the only authority, and a hand-edited `index.json` or page is
not a fact. Per (audience, goal) the memo holds the key of its files (`work.unit_keys`), its
index row, and each file's hash, size, schema, identity on disk (size, mtime, ctime, inode)
right after it was written and, for a file whose output declares its inputs, their digest
(`registry.input_key`). A unit is carried over (not rendered, not read back, not rewritten)
only when its key is unchanged and every one of its files is still that same file; an edit
on disk changes its ctime, which no one can set back, so it is rendered again. A unit whose
key changed but whose files are all still as written is rendered again, except each file
made of the same inputs as before (a todo page whose todo and neighbours did not change). Code,
templates, schemas and the version are the memo's fingerprint (`loopx.build.fingerprint`):
a memo of another loopx is ignored. `loopx build --check` never carries anything: it
compares every byte.

Per goal the memo also holds the change token its ledger had before it was folded, and the
few fields of its state the build reads of every goal (`loopx.build.facts`): a goal whose
ledger still has that token is not folded at all.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import orjson

from loopx.build import facts, outdir
from loopx.build.artifacts import AnyArtifact, DiskArtifact, Site
from loopx.build.fingerprint import digest as digest
from loopx.build.fingerprint import fingerprint, remember
from loopx.build.fingerprint import sources as sources
from loopx.build.work import BuildCache, UnitEntry
from loopx.model.errors import LoopxError
from loopx.state.entities import GoalState
from loopx.store import fsio

MEMO_FORMAT = 5
AUDIENCES = ("public", "team", "private")
_SHA256 = re.compile(r"[0-9a-f]{64}")


def memo_path(root: Path, out: Path) -> Path:
    key = hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:16]
    return root / ".loopx" / "cache" / "build" / f"{key}.json"


def _read(path: Path) -> Any:
    try:
        raw = fsio.read_regular(path, outdir.READ_CAP)
        return orjson.loads(raw) if raw is not None else None
    except (OSError, orjson.JSONDecodeError):
        return None


def load(root: Path, out: Path) -> BuildCache:
    """A build cache of the units the memo of `out` records whose files are still as written
    (empty when there is no memo, or one of another loopx or of the wrong shape: a forged or
    damaged memo only costs a full render)."""
    cache = BuildCache()
    memo = _read(memo_path(root, out))
    if not isinstance(memo, dict) or memo.get("format") != MEMO_FORMAT:
        return cache
    current = fingerprint(memo_path(root, out).parent)
    if memo.get("fingerprint") != current or not isinstance(memo.get("units"), list):
        return cache
    with outdir.Folder(out) as folder:
        for record in memo["units"]:
            try:
                unit, entry = _unit(folder, out, record)
            except (AttributeError, TypeError, KeyError, ValueError, OSError, LoopxError):
                continue
            cache.entries[unit] = entry
            parts = record.get("parts")
            if isinstance(parts, dict) and _parts_ok(parts):
                cache.parts[unit] = (entry[0], parts)
            if isinstance(record.get("layouts"), list):
                cache.layouts[unit] = record["layouts"]  # checked when used (`layouts`)
            cache.written.update((a.path, a.sha256) for a in entry[1][0])
    cache.facts.update(_facts(memo.get("goals")))
    return cache


def _facts(goals: Any) -> dict[str, tuple[tuple[Any, ...], dict[str, Any]]]:
    """Each goal's change token and fields (`loopx.build.facts`), where they are of the
    shape `save` writes."""
    found: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}
    for goal_id, record in goals.items() if isinstance(goals, dict) else ():
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


def _unit(folder: outdir.Folder, out: Path, record: Any) -> tuple[tuple[str, str], UnitEntry]:
    """One recorded unit, when every file of it is still the file that was written; raises
    ValueError (or a lookup error) otherwise."""
    audience, goal_id, key, row = (record[k] for k in ("audience", "goal_id", "key", "row"))
    if audience not in AUDIENCES or not isinstance(key, str) or row.get("goal_id") != goal_id:
        raise ValueError("not a unit")
    within = f"{audience}/goals/{goal_id}/"
    artifacts: list[AnyArtifact] = []
    for path, sha, size, schema, seen, item_key in record["files"]:
        if not (path.startswith(within) and _SHA256.fullmatch(sha)):
            raise ValueError("not a file of this unit")
        if item_key is not None and not _SHA256.fullmatch(item_key):
            raise ValueError("not a key")
        if not isinstance(schema, (str, type(None))) or seen != _identity(folder, path):
            raise ValueError("changed on disk")
        if seen[0] != size:
            raise ValueError("changed on disk")
        artifacts.append(
            DiskArtifact(path, out, sha, size, audience, schema, goal_id, seen, item_key)
        )
    if not artifacts:
        raise ValueError("a unit without files")
    return (audience, goal_id), (key, (artifacts, row))


_ENTRY = {"title", "href", "summary", "id", "updated", "order"}


def _parts_ok(parts: dict[str, Any]) -> bool:
    """Whether a unit's carried parts have the shape the audience's files read (a damaged
    or forged memo costs projecting that goal again, never a failed build): search items,
    feed entries of text with their (time, goal, seq) order, whole counts. Whatever they
    hold, the files made of them are scanned like every public byte that changed."""
    if set(parts) - {"search", "feed"}:
        return False
    search = parts.get("search", [])
    if not isinstance(search, list) or not all(isinstance(i, dict) for i in search):
        return False  # (an item is written as it is: any JSON in it is only JSON)
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
    if not isinstance(entry, dict) or set(entry) != _ENTRY:
        return False
    order = entry["order"]
    texts = [entry[k] for k in ("title", "href", "summary", "id", "updated")]
    return (
        all(isinstance(t, str) for t in texts)
        and isinstance(order, list)
        and len(order) == 3
        and isinstance(order[0], str)
        and isinstance(order[1], str)
        and type(order[2]) is int
    )


def _identity(folder: outdir.Folder, path: str) -> list[int] | None:
    """What tells the file at `path` from any other: size, mtime, ctime and inode (a link on
    the way is refused by `Folder.stat`)."""
    st = folder.stat(path)
    return None if st is None else [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def save(
    root: Path,
    out: Path,
    site: Site,
    cache: BuildCache | None = None,
    goals: dict[str, GoalState] | None = None,
) -> None:
    """Record every unit of the build just written, with the task-graph layouts `cache`
    holds for it, and each of `goals` with the change token its ledger had before it was
    folded (`cache.states`; best effort: the memo is a cache, and without it the next build
    simply folds and renders everything)."""
    kept = cache.layouts if cache is not None else {}
    states = cache.states if cache is not None else {}
    known = {
        g: {"token": list(states[g][0]), "facts": facts.of(state)}
        for g, state in sorted((goals or {}).items())
        if g in states and states[g][1] is state
    }
    files: dict[tuple[str, str], list[AnyArtifact]] = {}
    for artifact in site.artifacts.values():
        if artifact.audience is not None and artifact.goal_id is not None:
            files.setdefault((artifact.audience, artifact.goal_id), []).append(artifact)
    target = memo_path(root, out)
    try:
        with outdir.Folder(out) as folder:
            units = [
                _record(folder, unit, key, row, files.get(unit, []), site.parts.get(unit, {}))
                | {"layouts": kept.get(unit, [])}
                for unit, (key, row) in sorted(site.units.items())
            ]
        outdir.cache_dir(root)  # each part a real folder, never a planted link
        if fsio.kind(target) not in ("missing", "file"):
            return
        memo = {
            "format": MEMO_FORMAT,
            "fingerprint": fingerprint(target.parent),
            "units": units,
            "goals": known,
        }
        fsio.write_atomic_nofollow(target, orjson.dumps(memo))
        remember(target.parent)
    except (OSError, LoopxError):
        pass


def _seen(folder: outdir.Folder, artifact: AnyArtifact) -> list[int] | None:
    """A file's identity now: a carried file's is the one checked when the memo was read
    (nothing rewrites it; if anything did, the next build finds it changed and renders its
    unit again)."""
    if isinstance(artifact, DiskArtifact) and artifact.seen is not None:
        return list(artifact.seen)
    return _identity(folder, artifact.path)


def _record(
    folder: outdir.Folder,
    unit: tuple[str, str],
    key: str,
    row: dict[str, Any],
    artifacts: list[AnyArtifact],
    parts: dict[str, Any],
) -> dict[str, Any]:
    files = [
        [a.path, a.sha256, a.size, a.schema, _seen(folder, a), a.key]
        for a in sorted(artifacts, key=lambda a: a.path)
    ]
    return {
        "audience": unit[0],
        "goal_id": unit[1],
        "key": key,
        "row": row,
        "files": files,
        "parts": parts,
    }
