"""`loopx scan` with the project's ledger: the build's boundary scan, on files already written.

Standalone, the scan looks for everything a build's does, plus the private text of this host's
blob store (which a build never reads: layer 1 gives no public projection a blob reader). It
costs well under the build that made the files, because it repeats only what changed
(see `loopx.build.scancache`):

- the forbidden strings are kept per goal; after a ledger change only the changed goals are
  folded (from their snapshots) and their blobs read;
- a file a build found clean for this very ledger is read again only for the private text,
  and only for the private text read since when a scan found it clean before the change;
  right after a build, that text is the text of the blobs its memo names, and no goal is
  folded (see the bounded way below);
- a file a scan found clean for this very ledger is not read again at all.

Scanners are built only when some file needs them: the one over every forbidden string (an
automaton over tens of thousands of strings) only for a file no build or scan vouched for.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopx.build import scancache
from loopx.build.boundary import (
    NARROW_LIMIT,
    Forbidden,
    GoalStrings,
    goal_strings,
    merge,
    project_names,
)
from loopx.build.scancache import Private
from loopx.engine.core import load_state
from loopx.model.records import Mutable
from loopx.privacy.allowed import Allowance
from loopx.privacy.distinct import Needles, distinctive_text
from loopx.privacy.scanner import (
    PREFIX,
    Finding,
    Read,
    Scanner,
    read_scanned,
    scan_files,
    sort_findings,
)
from loopx.state.entities import GoalState
from loopx.store.base import Store

Strings = tuple[scancache.Key, Forbidden]


def ledger_strings(project: Path, store: Store) -> tuple[scancache.Key, Forbidden]:
    """The ledger's forbidden strings (blob text included) and the key they hold for."""
    key, forbidden, _ = _ledger_strings(project, store)
    return key, forbidden


def _ledger_strings(project: Path, store: Store) -> tuple[scancache.Key, Forbidden, Strings | None]:
    """`ledger_strings`, and the record of an earlier ledger they were worked out from."""
    current = scancache.tokens(store)
    cached = scancache.load_forbidden(project)
    if cached is not None and scancache.same_ledger(cached[0], current):
        return cached[0], cached[1], None
    named = set(current) | {g for g, *_ in cached[0]} if cached is not None else set(current)
    entries = scancache.load_goals(project, sorted(named))
    previous = _previous(cached, entries)
    parts: list[GoalStrings] = []
    heads: dict[str, str] = {}
    folded: list[str] = []
    with store.reading_blobs():  # every private text of the goals made again
        for goal_id, token in current.items():
            hit = entries.get(goal_id)
            if hit is None or hit[1] != token:
                state = load_state(store, goal_id).state
                if state is None:
                    continue
                hit = entries[goal_id] = (state.head, token, goal_strings(state, store.get_blob))
                folded.append(goal_id)
            heads[goal_id] = hit[0]
            parts.append(hit[2])
    key, forbidden = scancache.ledger_key(current, heads), merge(parts, previous)
    scancache.save_goals(project, entries, folded)
    scancache.save_forbidden(project, key, forbidden)
    return key, forbidden, cached


def _keep_private(project: Path, key: scancache.Key, forbidden: Forbidden) -> None:
    """Record the exact private text of `key` for the next scan's bounded way (`_bounded`),
    unless that is what the record already says."""
    held = scancache.load_private(project)
    if held is None or held.key != key or held.texts != forbidden.private:
        scancache.save_private(project, Private(key, forbidden.private, forbidden.allowed))


def _previous(
    cached: tuple[scancache.Key, Forbidden] | None,
    entries: dict[str, tuple[str, list[Any], GoalStrings]],
) -> tuple[list[GoalStrings], Forbidden] | None:
    """The last merge and the goals' strings it was made of, when the cache still holds
    them all (so only what changed since is merged again)."""
    if cached is None:
        return None
    parts = []
    for goal_id, head, *token in cached[0]:
        entry = entries.get(goal_id)
        if entry is None or entry[0] != head or entry[1] != token:
            return None
        parts.append(entry[2])
    return parts, cached[1]


def record_build(
    project: Path,
    goals: dict[str, GoalState],
    tokens: dict[str, list[Any]],
    names: frozenset[str],
    files: set[str],
) -> None:
    """After a build's public output passed the scan: the sha256 of its public files, for the
    ledger it was built from: the heads as folded and the change tokens as they were before
    the fold (`pipeline.gather`). A write after a goal's token was read changes the token, so
    the record then matches no ledger (a scan trusts the heads it names only for the very
    tokens it names: `_after_build`)."""
    heads = {g: s.head for g, s in goals.items()}
    key = scancache.ledger_key(tokens, heads)
    scancache.save_clean(project, "build", key, scancache.fingerprint(names, True), files)


@dataclass(repr=False, eq=False)
class _Scanners(Mutable):
    """The two scanners a folder may need, each built on first use."""

    forbidden: Forbidden
    machine: bool
    names: frozenset[str]
    built: dict[str, Scanner | None] = field(default_factory=dict)

    def full(self) -> Scanner:
        built = self.built.get("full")
        if built is None:
            f = self.forbidden
            built = self.built["full"] = Scanner(
                sorted(f.texts),
                forbidden_ids=sorted(f.ids),
                machine=self.machine,
                name_hashes=self.names,
                allowed=f.allowed,
            )
        return built

    def private(
        self, since: frozenset[str] | None = None, reads: list[Read] | None = None
    ) -> Scanner | None:
        """Only the text read from the blob store: what a build's verdict does not cover;
        `since`: only that text not among it (None when there is none). `reads`: the files
        it is for, when they are few: then only the text that occurs in some view of them
        (as a scanner without rules reads them) is looked for (a rebuild's changed pages,
        13,455 private texts: a scanner of all of them costs 0.03 s)."""
        texts = self.forbidden.private if since is None else self.forbidden.private - since
        if reads is not None and len(texts) > NARROW_FROM:
            # Blob text is told apart from blob hashes by no one: each is found as a string.
            needles = Needles(frozenset(), frozenset(), sorted(texts))
            within = Forbidden(texts, frozenset()).prepared(needles, Needles.of(()))
            found = within.within(reads, rules=False)
            return _private_scanner(found.texts, self.forbidden)
        name = "private" if since is None else "since"
        if name not in self.built:
            self.built[name] = _private_scanner(texts, self.forbidden)
        return self.built[name]


NARROW_FROM = 1000  # private texts beyond which a few files get a scanner of their own


def _private_scanner(texts: frozenset[str], forbidden: Forbidden) -> Scanner | None:
    if not texts:
        return None
    # Their whole first PREFIX characters in the automaton: private text (evidence bodies,
    # notes) opens as titles and summaries do, so its 16-character stems would match all
    # over the pages, each place confirmed in Python (see `Scanner`).
    return Scanner(
        sorted(texts), machine=False, rules=False, allowed=forbidden.allowed, stem=PREFIX
    )


@dataclass(repr=False, eq=False)
class FolderScan(Mutable):
    findings: list[Finding]
    scanner: Callable[[], Scanner]  # the full scanner, for the commands that clear a finding
    goals: Callable[[], dict[str, GoalState]]  # every goal folded (the same)


Files = list[tuple[str, "bytes | Path", str]]  # (path as shown, bytes or where, sha256)
HELD_BYTES = 64 << 20  # the bytes held between reading a folder and scanning it; beyond, read again


def scan_folder(project: Path, store: Store, paths: Iterable[Path], machine: bool) -> FolderScan:
    """Scan `paths` for everything the ledger of `project` marks non-public, and the rest:
    the bounded way when it can tell (`_bounded`), else with the exact forbidden set."""
    files = _read(project, scan_files(paths))
    bounded = _bounded(project, store, files, machine)
    return bounded if bounded is not None else _exact(project, store, files, machine)


RACY_NS = 3 * 10**9  # a file changed this recently may change again within its ctime's tick


def _read(project: Path, found: dict[str, Path]) -> Files:
    """Each file with its sha256: read and hashed, or, when its identity (device, inode,
    size, mtime, ctime) is the one a scan recorded with its hash, that hash and where it is
    (read only if some scanner needs its bytes). Any write to a file changes its ctime,
    which no one can set back; a file whose ctime is within `RACY_NS` of the scan is not
    recorded (a write later in the same tick of the clock would keep it)."""
    known = scancache.load_hashes(project)
    now = time.time_ns()
    files: Files = []
    recorded: dict[str, list[Any]] = {}
    wheres: list[str] = []
    held = 0
    for shown, path in found.items():
        where = str(path.absolute())
        wheres.append(where)
        identity = _identity(path)
        entry = known.get(where)
        if identity is not None and entry is not None and entry[:-1] == identity:
            files.append((shown, path, entry[-1]))
            recorded[where] = entry
            continue
        data = read_scanned(path)  # refuses links and special files, as ever
        digest = _sha(data)
        held += len(data)
        files.append((shown, data if held <= HELD_BYTES else path, digest))
        if identity is not None and identity[-1] < now - RACY_NS:
            recorded[where] = [*identity, digest]
    if recorded != {where: known[where] for where in wheres if where in known}:
        scancache.save_hashes(project, recorded)  # the entries of the files scanned now
    return files


def _identity(path: Path) -> list[int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _exact(project: Path, store: Store, files: Files, machine: bool) -> FolderScan:
    """The scan with the ledger's exact forbidden set (merged again if the ledger moved)."""
    key, forbidden, before = _ledger_strings(project, store)
    _keep_private(project, key, forbidden)
    names = project_names(project)
    stamp = scancache.fingerprint(names, machine)
    seen = scancache.load_clean(project, "scan", key, stamp)
    built = scancache.load_clean(project, "build", key, stamp)
    # Files an earlier scan found clean, for the ledger before this change: the private text
    # it looked for need not be looked for again, only the private text read since.
    earlier: set[str] = set()
    if before is not None and before[1].allowed == forbidden.allowed:
        earlier = scancache.load_clean(project, "scan", before[0], stamp)
    scanners = _Scanners(forbidden, machine, names)
    since = before[1].private if before is not None else None
    findings, clean = _scan_files(files, scanners, seen, built, earlier, since)
    if not clean <= seen:
        scancache.save_clean(project, "scan", key, stamp, seen | clean)
    return FolderScan(sort_findings(findings), scanners.full, lambda: _gather(store))


def _scan_files(
    files: Files,
    scanners: _Scanners,
    seen: set[str],
    built: set[str],
    earlier: set[str],
    since: frozenset[str] | None,
) -> tuple[list[Finding], set[str]]:
    """Each file with the scanner it needs: none (a scan found it clean for this ledger),
    the full one (nothing vouched for it), or the private text's (a build did), all of it or
    only what is not in `since` when an earlier scan found it clean (`earlier`)."""
    work: dict[str, Files] = {"full": [], "since": [], "private": []}
    clean: set[str] = set()
    for shown, data, digest in files:
        if digest in seen:
            clean.add(digest)
        elif digest not in built:
            work["full"].append((shown, data, digest))
        elif digest in earlier and since is not None:
            work["since"].append((shown, data, digest))
        else:
            work["private"].append((shown, data, digest))
    findings: list[Finding] = []
    for name, group in work.items():
        if not group:
            continue
        if name == "full":
            scanner: Scanner | None = scanners.full()
        elif len(held := [d for _, d, _ in group if isinstance(d, bytes)]) == len(group) and (
            sum(map(len, held)) <= NARROW_LIMIT
        ):  # a few files, held: a scanner of the private text that occurs in them
            reads = [Read(d, rules=False) for d in held]
            scanner = scanners.private(since=since if name == "since" else None, reads=reads)
            for (shown, _, digest), read in zip(group, reads, strict=True):
                found = scanner.scan_read(read, shown) if scanner is not None else []
                if found:
                    findings += found
                else:
                    clean.add(digest)
            continue
        else:
            scanner = scanners.private(since=since if name == "since" else None)
        for shown, data, digest in group:
            if scanner is None:  # nothing to look for: its bytes are not needed
                clean.add(digest)
                continue
            if not isinstance(data, bytes):  # not held: read again (and hashed as read)
                data = read_scanned(data)
                digest = _sha(data)
            found = scanner.scan_bytes(data, shown)
            if found:
                findings += found
            else:
                clean.add(digest)
    return findings, clean


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the bounded way ---------------------------------------------------------------------
#
# After a build, every public file is vouched for by the build for this very ledger: only the
# private text of the blob store is left to look for. Its exact set is the merged forbidden
# set's (a full merge of every goal's strings); a superset of it decides as well whenever it
# finds nothing, and one is at hand without merging:
#
# - right after a build, before any scan: the text of every blob the goals' fields name, as
#   the build memo holds their strings (a build reads no blob, so each such field gives its
#   strings the blob's reference instead: `boundary._texts`), the distinctive ones. No goal
#   is folded; the blobs are read. This set is whole: it holds every goal's blob text, kept
#   by the merge or not;
# - after a ledger change, the set the last scan looked for and the changed goals' blob text.
#   A whole set stays whole so. One the merge made (the exact way's) holds only while no
#   goal is gone and each changed goal's public text only grew and its allow entries did not
#   shrink: then the private text the merge keeps is among what it kept before plus the
#   changed goals' blob text (a text kept out because public, boilerplate or inside a public
#   text stays out).
#
# Anything found, or a file nothing vouched for, and the scan is made again the exact way.


def _bounded(project: Path, store: Store, files: Files, machine: bool) -> FolderScan | None:
    """The scan for a superset of the private text, or None when it cannot decide."""
    names = project_names(project)
    stamp = scancache.fingerprint(names, machine)
    current = scancache.tokens(store)
    held = scancache.load_private(project)
    now = None
    if held is not None:
        same = scancache.same_ledger(held.key, current)
        now = held if same else _grown(project, store, held, current)
    if now is None:
        after = _after_build(project, store, files, current, stamp)
        if after is None:
            return None
        now, built = after
    else:
        built = scancache.load_clean(project, "build", now.key, stamp)
    seen = scancache.load_clean(project, "scan", now.key, stamp)
    if any(d not in seen and d not in built for _, _, d in files):
        return None  # a file nothing vouched for: the whole forbidden set is needed
    # Files an earlier scan found clean of what it looked for then need be read only for the
    # text added since (while no allow entry it honoured is gone).
    earlier: set[str] = set()
    since = None
    if held is not None and held.key != now.key and now.allowed >= held.allowed:
        earlier = scancache.load_clean(project, "scan", held.key, stamp)
        since = held.texts
    superset = Forbidden(frozenset(), frozenset(), allowed=now.allowed, private=now.texts)
    scanners = _Scanners(superset, False, names)
    findings, clean = _scan_files(files, scanners, seen, built, earlier, since)
    if findings:
        return None  # perhaps text the exact set no longer holds: decide with that one
    if now is not held:
        scancache.save_private(project, now)
    if not clean <= seen:
        scancache.save_clean(project, "scan", now.key, stamp, seen | clean)
    return FolderScan([], lambda: Scanner(machine=machine), lambda: _gather(store))


def _after_build(
    project: Path, store: Store, files: Files, current: dict[str, list[Any]], stamp: str
) -> tuple[Private, set[str]] | None:
    """The whole private text of the ledger as the last build left it, when that build was
    of this very ledger (its record's change tokens are the ledger's now) and vouched for
    every file (else None): every distinctive text of the blobs its goals' strings name,
    read now; with the files the build found clean."""
    found = scancache.built_blobs(project, current, stamp)
    if found is None:
        return None
    key, built, refs, by_goal = found
    if not all(d in built for _, _, d in files):
        return None  # not (only) this build's files: the exact way, without reading blobs
    return Private(key, _blob_texts(store, sorted(refs)), _union(by_goal), by_goal), built


def _blob_texts(store: Store, refs: list[str]) -> frozenset[str]:
    """The distinctive texts of the blobs `refs` names that this host holds (read together,
    decoded as `loopx.privacy.audience.BlobText` decodes them)."""
    texts: set[str] = set()
    for data in store.get_blobs(refs).values():
        if data is not None:
            text = data.decode("utf-8", "replace")
            if distinctive_text(text):
                texts.add(text)
    return frozenset(texts)


def _grown(
    project: Path, store: Store, held: Private, current: dict[str, list[Any]]
) -> Private | None:
    """What `held` grows into for the ledger now: its text and the blob text of the goals
    changed since, with their allow entries; None when it cannot tell (see above). The changed
    goals' strings are kept for the exact way."""
    was = {g: (head, token) for g, head, *token in held.key}
    whole = held.by_goal
    if whole is None and not set(was) <= set(current):
        return None
    moved = [g for g, token in current.items() if was.get(g, (None, None))[1] != token]
    entries = scancache.load_goals(project, moved) if whole is None else {}
    heads = {g: head for g, (head, _) in was.items() if g in current}
    by_goal = {g: whole[g] for g in current if g in whole} if whole is not None else None
    added: set[str] = set()
    for goal_id in moved:
        token = current[goal_id]
        old = entries.get(goal_id) if goal_id in was else None
        if whole is None and goal_id in was and (old is None or (old[0], old[1]) != was[goal_id]):
            return None  # the strings it had are not at hand
        state = load_state(store, goal_id).state
        if state is None:
            return None
        new = goal_strings(state, store.get_blob)
        if (
            whole is None
            and old is not None
            and not (new.public >= old[2].public and new.allowed >= old[2].allowed)
        ):
            return None
        entries[goal_id] = (state.head, token, new)
        heads[goal_id] = state.head
        added |= {t for t in new.private if distinctive_text(t)}
        if by_goal is not None:
            by_goal[goal_id] = new.allowed
    scancache.save_goals(project, entries, moved)
    key = scancache.ledger_key(current, heads)
    if by_goal is None:
        return Private(key, held.texts | added, held.allowed)
    return Private(key, held.texts | added, _union(by_goal), by_goal)


def _union(by_goal: dict[str, frozenset[Allowance]]) -> frozenset[Allowance]:
    return frozenset().union(*by_goal.values())


def _gather(store: Store) -> dict[str, GoalState]:
    from loopx.build.pipeline import gather  # only when something was found

    return gather(store)
