"""What `loopx scan` and `loopx build` leave for the next scan: strings, and files found clean.

Gathering the ledger's forbidden strings means folding goals and reading their private blobs
(private text is matched as itself); building a scanner over them and reading every byte
again costs more. So `.loopx/private/cache/scan/` keeps:

- ``goal-<digest of its id>.json``, one a goal: its strings (`GoalStrings`, blob text
  included), keyed by the goal's head and its ledger's change token (a file's size,
  modification time, ctime and inode, or a database head): after a ledger change only the goals that
  changed are folded, read and written;
- ``forbidden.json``: those strings merged (`Forbidden`), keyed by every goal's;
- ``private.json``: the private text a scan looks for in files a build vouched for, keyed
  the same way (the merged set's, or a superset of it: see `loopx.build.folderscan`). Right
  after a build it is made from the build's memo, without folding a goal: the text of every
  blob the goals' strings name there (`built_blobs`);
- ``clean-build.json``: the sha256 of every public file a build found clean, with the ledger
  key it built from; a scan reads such a file again only for the private text a build does
  not read (the blob store), not for everything else the build already looked for;
- ``clean-scan.json``: the sha256 of the files a scan found clean, which the next scan with
  the same key skips;
- ``hashes.json``: the sha256 of each file a scan read, by its path and identity then
  (device, inode, size, mtime, ctime): a file of the same identity is not read again only
  to be hashed (`loopx.build.folderscan`).

Every record also names what else a verdict depends on (`fingerprint`): the loopx version
and the privacy layer's code, the names listed in `.loopx/names`, and this host's names when
the scan looks for them. The change tokens make a record useless anywhere but on the host
and the ledger files it was written for (a cloned checkout has other inodes and times), so
a cache committed into a checkout never vouches for anything. The files hold private text,
so they live in the private partition that never leaves this host. A missing, unreadable,
oversized or stale file is rebuilt; a symlink or non-regular file there is never followed,
only replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from loopx import __version__
from loopx.build import fingerprint as code
from loopx.build.boundary import Forbidden, GoalStrings, ScanCache
from loopx.build.tally import Tally
from loopx.model.ids import hex_digests
from loopx.model.records import Mutable, Value
from loopx.privacy.allowed import Allowance
from loopx.privacy.distinct import Needles
from loopx.privacy.scanner import machine_names
from loopx.resources import resource_dir
from loopx.store import fsio
from loopx.store.base import Store
from loopx.store.root import STATE_DIR
from loopx.store.select import change_token
from loopx.store.snapshots import host_mark

MAX_BYTES = 512 * 1024 * 1024
MAX_CLEAN = 200_000  # files remembered per record
HASHES = "hashes.json"
FORMAT = 6
Key = list[Any]  # [[goal id, head, *change token], …], sorted by goal id
LAYERS = ("model", "state", "privacy")  # every module of these decides a record (`version`)


def _path(project: Path, name: str) -> Path:
    return project / STATE_DIR / "private" / "cache" / "scan" / name


def version_sources() -> list[Path]:
    """What the strings and verdicts are computed with besides the ledger: the events and
    their upgrades and the fold (what a goal's state holds), the free-text declarations that
    name its strings, the privacy layer's code, the boundary's and its allow entries', and
    the templates and schemas (they decide what is boilerplate)."""
    package = Path(__file__).resolve().parent.parent
    sources = [p for layer in LAYERS for p in sorted((package / layer).glob("*.py"))]
    sources += [package / "build" / n for n in ("boundary.py", "tally.py", "allowances.py")]
    for kind in ("templates", "schemas"):
        sources += sorted(p for p in resource_dir(kind).rglob("*") if p.is_file())
    return sources


#: Installed packages a verdict depends on: the automaton that finds the strings.
PACKAGES = ("ahocorasick_rs",)


@lru_cache(maxsize=4)
def version(project: Path) -> str:
    """The loopx version and a digest of `version_sources` and of `PACKAGES` (a development
    checkout changes those, not the version), their hashes remembered with the build
    memo's (`loopx.build.fingerprint`)."""
    named = [(str(source), source) for source in version_sources()]
    named += list(code.packages(PACKAGES))
    digest = code.of(named, code.memo_folder(project), __version__)
    return f"{FORMAT}+{__version__}+{digest[:16]}"


def fingerprint(names: frozenset[str], machine: bool) -> str:
    """What a clean verdict depends on besides the ledger and the code: the listed names and,
    when the scan looks for them, this host's names (`$LOOPX_PRIVATE_NAMES` included)."""
    found = sorted((k, sorted(v)) for k, v in machine_names().items()) if machine else None
    return hashlib.sha256(orjson.dumps([sorted(names), found])).hexdigest()


def tokens(store: Store) -> dict[str, list[Any]]:
    """Every goal's change token, as a JSON-comparable list."""
    return {g: list(change_token(store, g)) for g in sorted(store.goal_ids())}


def ledger_key(current: dict[str, list[Any]], heads: dict[str, str]) -> Key:
    return [[g, heads.get(g, ""), *current[g]] for g in sorted(current)]


def same_ledger(key: Key, current: dict[str, list[Any]]) -> bool:
    """Whether `key` names the goals of `current` with the very change tokens it holds."""
    return [[g, *t] for g, _, *t in key] == [[g, *t] for g, t in current.items()]


def _key(value: Any) -> Key | None:
    """A ledger key as a record holds it, or None when it is not one (a planted record)."""
    if not isinstance(value, list):
        return None
    for item in value:
        if not (isinstance(item, list) and len(item) >= 2):
            return None
        if not (isinstance(item[0], str) and isinstance(item[1], str)):
            return None
    return value


# --- reading and writing -----------------------------------------------------------------


def _load(project: Path, name: str) -> Any:
    """The file's JSON when it was written by this version, else None."""
    data = None
    with contextlib.suppress(OSError):  # unreadable: rebuilt
        data = fsio.read_regular(_path(project, name), MAX_BYTES)
    if data is None:
        return None
    try:
        loaded = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    current = version(project)
    return loaded if isinstance(loaded, dict) and loaded.get("version") == current else None


def _save(project: Path, name: str, body: dict[str, Any]) -> bool:
    """Keep a record for the next scan; a cache that cannot be written is no error (False)."""
    return _write(project, name, orjson.dumps({"version": version(project), **body}))


def _write(project: Path, name: str, data: bytes) -> bool:
    """Write one file of the cache atomically; False when it cannot be (no error)."""
    path = _path(project, name)
    with contextlib.suppress(OSError):
        for folder in (path.parent.parent, path.parent):
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                return False
            if not folder.exists():
                fsio.current().mkdir(folder)
        fsio.current().write_atomic(path, data)
        return True
    return False


def _allowances(rows: Any) -> frozenset[Allowance]:
    return frozenset(Allowance(str(kind), str(text)) for kind, text in rows)


def _rows(allowed: frozenset[Allowance]) -> list[list[Any]]:
    return [[a.kind, a.text] for a in sorted(allowed)]


def _strings(entry: dict[str, Any]) -> GoalStrings:
    return GoalStrings(
        texts=frozenset(entry["texts"]),
        ids=frozenset(entry["ids"]),
        public=frozenset(entry["public"]),
        public_ids=frozenset(entry["public_ids"]),
        allowed=_allowances(entry["allowed"]),
        private=frozenset(entry["private"]),
        refs=frozenset(entry["refs"]),
    )


def _strings_record(s: GoalStrings) -> dict[str, Any]:
    return {
        **{k: sorted(getattr(s, k)) for k in ("texts", "ids", "public", "public_ids")},
        "private": sorted(s.private),
        "allowed": _rows(s.allowed),
        "refs": sorted(s.refs),
    }


def _goal_file(goal_id: str) -> str:
    return f"goal-{hashlib.sha256(goal_id.encode()).hexdigest()[:32]}.json"


def load_goals(
    project: Path, goal_ids: Iterable[str]
) -> dict[str, tuple[str, list[Any], GoalStrings]]:
    """Goal id → (head, change token, strings) as the last scan gathered them, for the goals
    named (one file each: a scan after one event reads and writes only that goal's)."""
    out: dict[str, tuple[str, list[Any], GoalStrings]] = {}
    for goal_id in goal_ids:
        entry = _load(project, _goal_file(goal_id))
        if entry is None or entry.get("goal") != goal_id:
            continue
        try:
            out[goal_id] = (str(entry["head"]), list(entry["token"]), _strings(entry))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return out


def save_goals(
    project: Path, goals: dict[str, tuple[str, list[Any], GoalStrings]], goal_ids: Iterable[str]
) -> None:
    """Keep the strings of the goals named in `goal_ids` (those folded again)."""
    for goal_id in sorted(goal_ids):
        head, token, strings = goals[goal_id]
        body = {"goal": goal_id, "head": head, "token": token, **_strings_record(strings)}
        _save(project, _goal_file(goal_id), body)


def load_forbidden(project: Path) -> tuple[Key, Forbidden] | None:
    """The merged strings and the ledger key they were merged for."""
    cached = _load(project, "forbidden.json")
    if cached is None:
        return None
    try:
        forbidden = Forbidden(
            frozenset(cached["texts"]),
            frozenset(cached["ids"]),
            allowed=_allowances(cached["allowed"]),
            private=frozenset(cached["private"]),
        )
        key = _key(cached["key"])
        return (key, forbidden) if key is not None else None
    except (KeyError, TypeError, ValueError):
        return None


def save_forbidden(project: Path, key: Key, forbidden: Forbidden) -> None:
    body = {
        "key": key,
        "texts": sorted(forbidden.texts),
        "ids": sorted(forbidden.ids),
        "private": sorted(forbidden.private),
        "allowed": _rows(forbidden.allowed),
    }
    _save(project, "forbidden.json", body)


@dataclass(frozen=True, repr=False, eq=False)
class Private(Value):
    """The private text a scan looks for in files a build vouched for, at the ledger `key`:
    every blob text the ledger's forbidden set holds there, maybe more (see
    `loopx.build.folderscan`), and the allow entries that scan honours (all or fewer).
    `by_goal`, when `texts` is whole (every distinctive text of every blob the goals' fields
    name, not only those the merge kept): each goal's own allow entries, so that after a
    change the set is grown from the changed goals alone."""

    key: Key
    texts: frozenset[str]
    allowed: frozenset[Allowance]
    by_goal: dict[str, frozenset[Allowance]] | None = None


def load_private(project: Path) -> Private | None:
    cached = _load(project, "private.json")
    if cached is None:
        return None
    try:
        texts, by_goal, key = cached["private"], cached["by_goal"], _key(cached["key"])
        if not isinstance(texts, list) or key is None:
            return None
        "".join(texts)  # every one a string, or TypeError
        whole = None
        if by_goal is not None:
            whole = {str(g): _allowances(rows) for g, rows in by_goal.items()}
        return Private(key, frozenset(texts), _allowances(cached["allowed"]), whole)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def save_private(project: Path, private: Private) -> None:
    by_goal = private.by_goal
    body = {
        "key": private.key,
        "private": sorted(private.texts),
        "allowed": _rows(private.allowed),
        "by_goal": None if by_goal is None else {g: _rows(by_goal[g]) for g in sorted(by_goal)},
    }
    _save(project, "private.json", body)


def load_clean(project: Path, by: str, key: Key, print_: str) -> set[str]:
    """The sha256 of the files `by` ("build" or "scan") found clean for exactly this ledger
    key and fingerprint."""
    cached = _load(project, f"clean-{by}.json")
    if cached is None or cached.get("key") != key or cached.get("fingerprint") != print_:
        return set()
    return _files(cached)


def _files(record: dict[str, Any]) -> set[str]:
    files = record.get("files")
    return {f for f in files if isinstance(f, str)} if isinstance(files, list) else set()


def save_clean(project: Path, by: str, key: Key, print_: str, files: set[str]) -> None:
    kept = sorted(files)[:MAX_CLEAN]
    _save(project, f"clean-{by}.json", {"key": key, "fingerprint": print_, "files": kept})


def load_hashes(project: Path) -> dict[str, list[Any]]:
    """Where each file a scan read was, its identity then (device, inode, size, mtime, ctime)
    and sha256: path → [*identity, sha256] (see `loopx.build.folderscan._read`)."""
    cached = _load(project, HASHES)
    files = cached.get("files") if cached is not None else None
    if not isinstance(files, dict):
        return {}
    return {
        p: e
        for p, e in files.items()
        if isinstance(e, list)
        and len(e) == 6
        and all(type(n) is int for n in e[:5])
        and isinstance(e[5], str)
    }


def save_hashes(project: Path, files: dict[str, list[Any]]) -> None:
    kept = dict(sorted(files.items())[:MAX_CLEAN])
    _save(project, HASHES, {"files": kept})


# --- the build's memo -----------------------------------------------------------------------
#
# The memo lets a fresh `loopx build` process scan only what changed (the same as the
# in-process `ScanCache` of `loopx serve`) and merge only the strings of the goals that
# changed. Three kinds of file:
#
# - ``build.json`` (small): the merged forbidden set's goal heads and its counts (`Tally`:
#   how many goals hold each string, all but the kept texts held by one goal), what left the
#   set since the clean files were checked (`dropped`), the sha256 of the public files found
#   clean, and the name of the covered set's file;
# - ``build-covered.json``: every string the clean files were checked against (`covered`, as
#   `Needles`: a fresh process need not tell 60,000 strings apart again), named by an id
#   ``build.json`` gives; written only when that set changed;
# - ``build-goal-<digest of its id>.json``, one a goal: its strings at the head ``build.json``
#   names for it; a rebuild reads only those of the goals that changed (their strings before)
#   and writes only theirs.
#
# A memo counts only on the host that wrote it: every file names the mark (a digest of the device,
# inode and change time: `store.snapshots.host_mark`) of the `host` file created beside it, which a
# copy or checkout of the folder cannot reproduce; and only for the names and code it was written
# with (`version`, `fingerprint`). A file that is missing, corrupt, stale or another's counts for
# nothing: a goal file, and the goals' strings are merged again in full; ``build.json`` or the
# covered set, and every public file is scanned for everything.

BUILD = "build.json"
COVERED = "build-covered.json"
HOST = "host"


@dataclass(repr=False, eq=False)
class BuildMemo(Mutable):
    strings: dict[str, tuple[str, GoalStrings]]  # goal → (head, strings), of the goals asked for
    merged: tuple[list[Any], Forbidden] | None  # ([[goal, head], …], the set) of the last build
    scan: ScanCache | None  # what the public files found clean were checked against


def _host(project: Path, create: bool) -> str:
    """This host's mark for the memo (`store.snapshots.host_mark` of its folder: made when
    `create`), or '' when there is none."""
    return host_mark(_path(project, HOST).parent, create=create)


def build_kept(project: Path) -> bool:
    """Whether a build left its memo here (`build.json`, whatever it holds): a build that
    finds one merges from the strings it keeps, not from nothing."""
    return fsio.kind(_path(project, BUILD)) != "missing"


def heads_key(heads: dict[str, str]) -> list[Any]:
    return [[g, heads[g]] for g in sorted(heads)]


def _build_goal_file(goal_id: str) -> str:
    return f"build-goal-{hashlib.sha256(goal_id.encode()).hexdigest()[:32]}.json"


def load_build(
    project: Path, names: frozenset[str], heads: dict[str, str] | None = None
) -> BuildMemo:
    """The memo of the last build on this host, for these code, templates and names (empty
    when there is none, or it is another's: it only ever costs a full scan). `heads`: every
    goal's head now; the strings of each goal whose head differs from the memo's (or that is
    gone) are read, at the memo's head, when their file holds them."""
    empty = BuildMemo({}, None, None)
    memo = _load(project, BUILD)
    host = _host(project, create=False)
    if memo is None or not host or memo.get("host") != host:
        return empty
    if memo.get("fingerprint") != fingerprint(names, True):
        return empty
    covered_record = _load(project, COVERED)
    try:
        c = memo["covered"]
        if (
            covered_record is None
            or covered_record.get("host") != host
            or covered_record.get("id") != c["id"]
            or not isinstance(c["id"], str)
        ):
            return empty
        texts, ids = _needles(covered_record["texts"]), _needles(covered_record["ids"])
        covered = Forbidden(
            texts.strings(),
            ids.strings(),
            names,
            _allowances(c["allowed"]),
        ).prepared(texts, ids)
        dropped = memo["dropped"]
        merged = Forbidden(
            covered.texts - frozenset(dropped["texts"]) if dropped["texts"] else covered.texts,
            covered.ids - frozenset(dropped["ids"]) if dropped["ids"] else covered.ids,
            allowed=_allowances(dropped["allowed"]),
            private=frozenset(memo["private"]),
        )
        key = [[str(g), str(h)] for g, h in memo["key"]]
        object.__setattr__(merged, "tally", Tally.from_record(memo["tally"], merged))
        clean = {f for f in memo["clean"] if isinstance(f, str)}
    except (KeyError, TypeError, ValueError, AttributeError):
        return empty
    was = dict(key)
    strings = _goal_strings(project, host, _moved(was, heads)) if heads is not None else {}
    scan = ScanCache.carried(covered, clean)
    scan.saved = (c["id"], covered, dict(was))
    return BuildMemo(strings, (key, merged), scan)


def moved_strings(
    project: Path, key: list[Any], heads: dict[str, str]
) -> dict[str, tuple[str, GoalStrings]]:
    """What `load_build` reads with `heads`, for a memo it read without: the strings the
    memo of key `key` holds for each goal whose head is not `heads`' (or that is gone)."""
    host = _host(project, create=False)
    return _goal_strings(project, host, _moved(dict(key), heads)) if host else {}


def _moved(was: dict[str, str], heads: dict[str, str]) -> dict[str, str]:
    return {g: was[g] for g in was if heads.get(g) != was[g]}


def _goal_strings(
    project: Path, host: str, heads: dict[str, str]
) -> dict[str, tuple[str, GoalStrings]]:
    """The strings the build memo holds for each goal at the head `heads` names."""
    out = {}
    for goal_id, head in heads.items():
        entry = _load(project, _build_goal_file(goal_id))
        if entry is None or entry.get("host") != host:
            continue
        if entry.get("goal") != goal_id or entry.get("head") != head:
            continue
        try:
            out[goal_id] = (head, _strings(entry))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return out


def built_blobs(
    project: Path, current: dict[str, list[Any]], print_: str
) -> tuple[Key, set[str], frozenset[str], dict[str, frozenset[Allowance]]] | None:
    """What the last build on this host names of the ledger now (`current`: its change
    tokens), when its clean record's key holds for that ledger, with the fingerprint
    `print_`, and its memo holds every goal's strings at the head the key names; else None:
    that key, the files the build found clean (`load_clean`'s), the hex digest of every
    blob the goals' fields name (their strings' `refs`: a build reads no blob, so its
    strings name each instead, `loopx.build.boundary._texts`), and each goal's allow
    entries: what a scan right after a build reads instead of folding every goal again
    (`loopx.build.folderscan`). The key's heads are those the build folded at its tokens
    (`folderscan.record_build`)."""
    record = _load(project, "clean-build.json")
    host = _host(project, create=False)
    if record is None or not host or record.get("fingerprint") != print_:
        return None
    try:
        key = [[str(g), str(h), *t] for g, h, *t in record["key"]]
    except (KeyError, TypeError, ValueError):
        return None
    if not same_ledger(key, current):
        return None
    refs: set[str] = set()
    allowed: dict[str, frozenset[Allowance]] = {}
    for goal_id, head, *_ in key:
        entry = _load(project, _build_goal_file(goal_id))
        if entry is None or entry.get("host") != host:
            return None
        if entry.get("goal") != goal_id or entry.get("head") != head:
            return None
        try:
            named = entry["refs"]
            if not isinstance(named, list) or not hex_digests(named):
                return None
            refs.update(named)
            allowed[goal_id] = _allowances(entry["allowed"])
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
    return key, _files(record), frozenset(refs), allowed


def _needles(record: Any) -> Needles:
    """A set of strings as `_needles_record` wrote it (its blob hashes checked)."""
    digests, refs, others = record["digests"], record["refs"], record["others"]
    if refs is None:  # the same hashes as `digests`
        refs = digests
    if not all(isinstance(x, list) for x in (digests, refs, others)):
        raise TypeError("lists expected")
    held = frozenset(digests)
    return Needles(held, held if refs is digests else frozenset(refs), others)


def _needles_record(needles: Needles) -> dict[str, list[str] | None]:
    """A set of strings as its blob hashes and the others, sorted (so that a fresh process
    need not tell 60,000 strings apart again: see `Needles`). The hashes of its ``sha256:``
    forms are written once when they are its bare hashes too (`refs` null), as a private
    blob's are (13,455 of them in the build benchmark: 0.9 of the file's 2.9 MB)."""
    return {
        "digests": sorted(needles.digests),
        "refs": None if needles.refs == needles.digests else sorted(needles.refs),
        "others": needles.others,
    }


def save_build(
    project: Path,
    names: frozenset[str],
    strings: dict[str, tuple[str, GoalStrings]],
    merged: tuple[list[Any], Forbidden],
    scan: ScanCache,
    clean: set[str],
) -> None:
    """Record what a build that passed the boundary scan leaves for the next (best effort):
    the strings of the goals `strings` holds that the memo does not hold at their head, the
    covered set when it is not the one on file, and ``build.json``, last."""
    covered = scan.covered
    host = _host(project, create=True)
    key, forbidden = merged
    tally = forbidden.tally
    if covered is None or not host or tally is None or not clean <= scan.clean:
        return
    if not (forbidden.texts <= covered.texts and forbidden.ids <= covered.ids):
        return
    saved_id, saved_covered, on_file = scan.saved if scan.saved is not None else ("", None, {})
    on_file = {} if tally.fresh else on_file
    for goal_id, (head, goal) in sorted(strings.items()):
        if on_file.get(goal_id) != head:
            body = {"host": host, "goal": goal_id, "head": head, **_strings_record(goal)}
            if not _save(project, _build_goal_file(goal_id), body):
                return
    if saved_covered is not covered:
        import secrets  # only when the covered set is written anew (and its `random`, `hmac`)

        saved_id = secrets.token_hex(16)
        body = {
            "host": host,
            "id": saved_id,
            "texts": _needles_record(covered.needles("texts")),
            "ids": _needles_record(covered.needles("ids")),
        }
        if not _save(project, COVERED, body):
            return
    body = {
        "host": host,
        "fingerprint": fingerprint(names, True),
        "key": key,
        "covered": {"id": saved_id, "allowed": _rows(covered.allowed)},
        "dropped": {
            "texts": sorted(covered.texts - forbidden.texts),
            "ids": sorted(covered.ids - forbidden.ids),
            "allowed": _rows(forbidden.allowed),  # the merged set's own entries
        },
        "private": sorted(forbidden.private),
        "tally": tally.record(),
        "clean": sorted(clean)[:MAX_CLEAN],
    }
    if _save(project, BUILD, body):
        tally.fresh = False
        scan.saved = (saved_id, covered, {g: h for g, h in key})
