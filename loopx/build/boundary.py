"""The public boundary, second line: scan every public byte before it is written.

The scanner looks for credentials and personal or machine data, and for the exact text of
every non-public fact the ledger holds (team and private text, private ids and blob hashes),
in plain, JSON-, HTML- and URL-encoded form. Any finding stops the build; the report names
file, kind and position, never the matched text.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopx.build.allowances import allowances_of
from loopx.build.artifacts import Site
from loopx.build.facts import folded
from loopx.model.errors import BoundaryViolation, InvalidInput
from loopx.model.records import Mutable, Value
from loopx.privacy.allowed import Allowance
from loopx.privacy.audience import BlobReader, BlobText
from loopx.privacy.distinct import (
    MIN_TEXT,
    Needles,
    Texts,
    blob_hash,
    distinctive_id,
    distinctive_text,
    found_in,
)
from loopx.privacy.scanner import Read, Scanner, scanned_views
from loopx.privacy.views import View
from loopx.resources import resource_dir
from loopx.state.entities import GoalState, private_ref
from loopx.state.freetext import goal_texts


def _texts(value: Any, blobs: BlobText, read: set[str], refs: set[str]) -> list[str]:
    """The strings one stored value stands for: its text, or a blob's hash (both spellings,
    its hex digest also added to `refs`) and, where this host holds it, the private text
    itself, which is also added to `read` (what a build, which reads no blob, does not look
    for)."""
    if value is None:
        return []
    ref = private_ref(value)
    if ref is None:
        return [str(value)]
    if blob_hash(ref):
        refs.add(ref[-64:])
    text = blobs(ref)
    if text is None:
        return [ref, ref.removeprefix("sha256:")]
    read.add(text)
    return [ref, ref.removeprefix("sha256:"), text]


@dataclass(frozen=True, repr=False, eq=False)
class Forbidden(Value):
    """What the ledger marks non-public: exact texts, and ids matched as whole ids."""

    texts: frozenset[str]
    ids: frozenset[str]
    name_hashes: frozenset[str] = frozenset()  # from .loopx/names (see `project_names`)
    allowed: frozenset[Allowance] = frozenset()  # reviewed allow entries (`loopx allow`)
    private: frozenset[str] = frozenset()  # the texts read from the blob store, when read
    # The counts it was merged from (`loopx.build.tally`), when a build keeps them: not part
    # of the set.
    tally: Any = field(default=None, compare=False, repr=False)

    def scanner(self) -> Any:
        """Built once per set: an automaton over tens of thousands of strings costs a second."""
        built = self.__dict__.get("_scanner")
        if built is None:
            built = Scanner(
                sorted(self.texts),
                forbidden_ids=sorted(self.ids),
                name_hashes=self.name_hashes,
                allowed=self.allowed,
            )
            object.__setattr__(self, "_scanner", built)
        return built

    def with_names(self, name_hashes: frozenset[str]) -> Forbidden:
        return Forbidden(self.texts, self.ids, name_hashes, self.allowed)

    def within(self, texts: list[str] | list[Read], rules: bool = True) -> Forbidden:
        """Only the strings and ids found in some decoding of `texts`: what a scanner of a few
        texts (a commit message, the files a rebuild changed) needs, without an automaton over
        the whole set (see `loopx.privacy.distinct.present`). The decodings are those a
        scanner with rules reads (`scanned_views`: base64 only where an encoded rule anchor
        occurs; decoding every base64-like run of a page cost most of the narrowing), or one
        without (`rules`), as a `Read` made them when it made them so."""

        def read(text: str | Read) -> list[View]:
            if isinstance(text, Read):
                return text.views() if text.rules == rules else scanned_views(text.text, rules)
            return scanned_views(text, rules)

        seen = Texts(view.text for text in texts for view in read(text))
        return Forbidden(
            frozenset(seen.present(self.needles("texts"))),
            frozenset(seen.present(self.needles("ids"))),
            self.name_hashes,
            self.allowed,
        )

    def needles(self, which: str) -> Needles:
        """`texts` or `ids` prepared for `within` (once per set: see `Needles`; a memo
        carries them, `prepared`)."""
        name = f"_needles_{which}"
        built = self.__dict__.get(name)
        if built is None:
            built = Needles.of(getattr(self, which))
            object.__setattr__(self, name, built)
        return built

    def prepared(self, texts: Needles, ids: Needles) -> Forbidden:
        """This set, with the needles of its texts and ids (which must be those sets)."""
        object.__setattr__(self, "_needles_texts", texts)
        object.__setattr__(self, "_needles_ids", ids)
        return self

    def grown(self, added: Forbidden) -> Forbidden:
        """This set and `added` (with `allowed` of `added`); needles already prepared are
        grown, not prepared again."""
        out = Forbidden(self.texts | added.texts, self.ids | added.ids, allowed=added.allowed)
        if "_needles_texts" in self.__dict__ and "_needles_ids" in self.__dict__:
            out.prepared(
                self.needles("texts").grown(added.texts), self.needles("ids").grown(added.ids)
            )
        return out


NAMES_FILE = "names"  # .loopx/names: sha256 of each lowercase name, one a line
_NAMES_LIMIT = 256 * 1024
_HASH_LINE = re.compile(r"(?:sha256:)?([0-9a-f]{64})")


def project_names(root: Path) -> frozenset[str]:
    """The hashed names `.loopx/names` lists: user and host names of the machines the work is
    done on, refused in public output wherever the build runs. Comments (#) and blank lines
    are skipped; any other line that is not a sha256 hex digest is `invalid_names_file` (a
    plain name committed there would itself be the leak). A missing file lists nothing; a
    symlink or non-regular file is refused."""
    path = root / ".loopx" / NAMES_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO never waits
    except FileNotFoundError:
        return frozenset()
    except OSError:
        raise InvalidInput(
            ".loopx/names must be a regular file", code="invalid_names_file"
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _NAMES_LIMIT:
            raise InvalidInput(
                ".loopx/names must be a regular file of at most 256 KiB", code="invalid_names_file"
            )
        data = os.read(fd, _NAMES_LIMIT + 1)
    finally:
        os.close(fd)
    hashes = set()
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _HASH_LINE.fullmatch(line.lower())
        if match is None:
            raise InvalidInput(
                f".loopx/names line {number} is not a sha256 digest (list names hashed: "
                "`loopx scan --hash-name NAME`)",
                code="invalid_names_file",
                line=number,
            )
        hashes.add(match.group(1))
    return frozenset(hashes)


@dataclass(frozen=True, repr=False, eq=False)
class GoalStrings(Value):
    """One goal's contribution to the forbidden set (cached per goal head by the build)."""

    texts: frozenset[str]
    ids: frozenset[str]
    public: frozenset[str]
    public_ids: frozenset[str]
    allowed: frozenset[Allowance] = frozenset()
    private: frozenset[str] = frozenset()  # read from the blob store (see `_texts`)
    refs: frozenset[str] = frozenset()  # the hex digest of every blob its fields name


def goal_strings(state: GoalState, read_blob: BlobReader | None = None) -> GoalStrings:
    """The non-public text and private ids of one goal, and its public text.

    Private text lives in the blob store, not the ledger; it is read (and matched) only when
    `read_blob` is given (`loopx scan`); the build relies on layer 1 never giving a public
    projection a blob reader, and matches the blob hashes instead.
    """
    state = folded(state)  # a goal carried over from the build memo is read in full here
    found: set[str] = set()
    ids: set[str] = set()
    public: set[str] = set()
    public_ids: set[str] = set() if state.visibility == "private" else {state.goal_id}
    goal_private = state.visibility != "public"
    blobs = BlobText(read_blob)
    read: set[str] = set()
    refs: set[str] = set()
    for visibility, entity_id, values in goal_texts(state):
        texts = [t for v in values for t in _texts(v, blobs, read, refs)]
        if visibility == "public" and not goal_private:
            public.update(texts)
            if entity_id is not None:
                public_ids.add(entity_id)
            continue
        found.update(t for t in texts if distinctive_text(t))
        if visibility == "private" and entity_id is not None and distinctive_id(entity_id):
            ids.add(entity_id)
    if state.visibility == "private" and distinctive_id(state.goal_id):
        ids.add(state.goal_id)
    return GoalStrings(
        frozenset(found),
        frozenset(ids),
        frozenset(public),
        frozenset(public_ids),
        allowances_of(state),
        frozenset(read),
        frozenset(refs),
    )


def non_public_strings(
    goals: dict[str, GoalState],
    read_blob: BlobReader | None = None,
    cache: dict[str, tuple[str, GoalStrings]] | None = None,
    previous: tuple[list[Any], Forbidden] | None = None,
) -> Forbidden:
    """The exact strings the ledger marks non-public: must never appear in public output.

    `cache` (goal id → (head, strings)) spares unchanged goals the walk. `previous`: the
    last merge's goal heads ([[goal, head], …]) and result. When that result holds its tally
    and `cache` the strings the changed goals had at those heads, only the changed goals'
    strings are merged again (`loopx.build.tally`); else, when `cache` holds every goal's
    strings at those heads, the merge is worked out from the last (see `merge`). With a
    `cache`, the result holds its tally.
    """
    if previous is not None and previous[1].tally is not None and cache is not None:
        heads = {goal_id: state.head for goal_id, state in goals.items()}
        advanced = advance(heads, lambda g: goal_strings(goals[g], read_blob), cache, previous)
        if advanced is not None:
            return advanced
    before = _parts_at(previous[0], cache) if previous is not None and cache else None
    parts: list[GoalStrings] = []
    for goal_id, state in sorted(goals.items()):
        hit = cache.get(goal_id) if cache is not None else None
        if hit is not None and hit[0] == state.head:
            parts.append(hit[1])
            continue
        strings = goal_strings(state, read_blob)
        if cache is not None:
            cache[goal_id] = (state.head, strings)
        parts.append(strings)
    since = (before, previous[1]) if before is not None and previous is not None else None
    merged = merge(parts, since)
    if cache is None:
        return merged
    from loopx.build.tally import Tally  # the tally builds on this module

    return Tally.of(parts, merged).forbidden()


def advance(
    heads: dict[str, str],
    strings_of: Callable[[str], GoalStrings],
    cache: dict[str, tuple[str, GoalStrings]],
    previous: tuple[list[Any], Forbidden],
) -> Forbidden | None:
    """The merge of the goals at `heads` after those whose head moved since `previous`, from
    its tally, the strings `cache` holds for them at its heads and their strings now
    (`strings_of(goal)`); None when some are not at hand or the tally does not fit them
    (then it is left as it was)."""
    from loopx.build.tally import Inconsistent

    was = {goal_id: head for goal_id, head in previous[0]}
    moved = [g for g, head in heads.items() if was.get(g) != head]
    olds: dict[str, GoalStrings | None] = {}
    for goal_id in [*moved, *(g for g in was if g not in heads)]:
        if goal_id in was:
            hit = cache.get(goal_id)
            if hit is None or hit[0] != was[goal_id]:
                return None
            olds[goal_id] = hit[1]
        else:
            olds[goal_id] = None
    news = {g: strings_of(g) for g in moved}
    tally = previous[1].tally
    try:
        merged = tally.advance([(olds[g], news.get(g)) for g in sorted(olds)])
    except Inconsistent:
        return None
    object.__setattr__(previous[1], "tally", None)  # it counts for the new set now
    for goal_id, strings in news.items():
        cache[goal_id] = (heads[goal_id], strings)
    for goal_id in olds.keys() - heads.keys():
        cache.pop(goal_id, None)
    return merged


def _parts_at(
    key: list[Any], cache: dict[str, tuple[str, GoalStrings]]
) -> list[GoalStrings] | None:
    """The strings of every goal at the heads `key` names, if `cache` holds them all."""
    parts = []
    for goal_id, head in key:
        hit = cache.get(goal_id)
        if hit is None or hit[0] != head:
            return None
        parts.append(hit[1])
    return parts


def merge(
    parts: list[GoalStrings], previous: tuple[list[GoalStrings], Forbidden] | None = None
) -> Forbidden:
    """The goals' strings as one forbidden set (see `non_public_strings`). `previous`: the
    parts of an earlier merge and its result, from which only what changed is worked out
    (the same set, see `_kept_since`)."""
    found = frozenset().union(*(p.texts for p in parts)) if parts else frozenset()
    public = frozenset().union(*(p.public for p in parts)) if parts else frozenset()
    ids = frozenset().union(*(p.ids for p in parts)) if parts else frozenset()
    public_ids = frozenset().union(*(p.public_ids for p in parts)) if parts else frozenset()
    # Text that is also public (the same words on a public item, or inside a longer public
    # text) or part of the templates themselves cannot leak anything; matching it would only
    # cry wolf (see loopx.privacy.distinct). Likewise a private id that is also a public id, a
    # word of the templates or a key of the JSON artifacts (a private todo called `index`).
    boilerplate = _Boilerplate.get()
    kept = _kept_since(found, public, boilerplate, *previous) if previous is not None else None
    if kept is None:
        candidates = {s for s in found - public if not boilerplate.contains(s)}
        kept = frozenset(candidates - found_in(candidates, sorted(public)))
    kept_ids = frozenset(i for i in ids - public_ids if i not in boilerplate.words)
    allowed = frozenset().union(*(p.allowed for p in parts)) if parts else frozenset()
    private = kept & frozenset().union(*(p.private for p in parts)) if parts else frozenset()
    return Forbidden(kept, kept_ids, allowed=allowed, private=private)


_FEW_CHARS = 4096


def _kept_since(
    found: frozenset[str],
    public: frozenset[str],
    boilerplate: _Boilerplate,
    before: list[GoalStrings],
    merged: Forbidden,
) -> frozenset[str] | None:
    """`merge`'s kept texts, worked out from an earlier merge of `before` into `merged`;
    None when some public text is gone (a string it hid may be forbidden again: merge all).

    A text is kept when it is non-public, not boilerplate, and inside no public text. While
    public text only grows, a text kept before stays kept unless one of the added public
    texts holds it, and one not kept before, though non-public then, stays out (boilerplate
    does not change, a public text that held it is still there); only the other texts are
    judged in full."""
    old_public = frozenset().union(*(p.public for p in before)) if before else frozenset()
    if not public >= old_public:
        return None
    old_found = frozenset().union(*(p.texts for p in before)) if before else frozenset()
    candidates = found - public
    carried = candidates & merged.texts
    added_public = sorted(public - old_public)
    if sum(map(len, added_public)) <= _FEW_CHARS:  # a few new public texts: look in each
        pieces = _pieces(added_public, max(map(len, carried), default=0))
        if pieces is not None:  # every piece of them, looked up in the carried set
            carried -= {s for s in pieces if s in carried and not blob_hash(s)}
        else:
            carried = frozenset(
                s for s in carried if blob_hash(s) or not any(s in p for p in added_public)
            )
    else:
        carried -= found_in(carried, added_public)
    new = {s for s in candidates - (old_found - old_public) if not boilerplate.contains(s)}
    return frozenset(carried | (new - found_in(new, sorted(public))))


_PIECES_CAP = 200_000


def _pieces(texts: list[str], longest: int) -> set[str] | None:
    """Every substring of `texts` of at most `longest` characters (the empty one included,
    as `"" in text` holds), or None when there would be more than `_PIECES_CAP`: a string of
    at most that length is inside one of `texts` exactly when it is one of these."""
    if sum(len(t) * min(len(t), longest) for t in texts) > _PIECES_CAP:
        return None
    out = {""} if texts else set()
    for t in texts:
        n = len(t)
        out.update(t[i:j] for i in range(n) for j in range(i + 1, min(n, i + longest) + 1))
    return out


_FEW_BOILERPLATE = 64  # strings looked up in the text itself before its pieces are made


class _Boilerplate:
    """The static text of the templates, with a word index that answers "is this string in
    there?" without a substring search for strings whose inner words it has never seen."""

    _instance: _Boilerplate | None = None

    def __init__(self, text: str, keys: frozenset[str] = frozenset()):
        self.text = text
        self._tokens = frozenset(text.split())
        self.words = self._tokens | keys
        self._pieces: frozenset[str] | None = None  # built once many strings are asked about
        self._bounds: tuple[frozenset[str], frozenset[str]] | None = None  # likewise
        self._seen: dict[str, bool] = {}  # answers are remembered: the same strings recur

    def _piece(self, s: str) -> bool:
        """Whether `s`, a string without whitespace, is a piece (of forbidden length) of a
        token: exactly when it is in the text and that long. For many strings, every such
        piece of every long token is made once and looked up."""
        if self._pieces is None and len(self._seen) < _FEW_BOILERPLATE:
            return len(s) >= MIN_TEXT and s in self.text
        if self._pieces is None:
            self._pieces = frozenset(
                t[i:j]
                for t in self._tokens
                if len(t) >= MIN_TEXT
                for i in range(len(t))
                for j in range(i + MIN_TEXT, len(t) + 1)
            )
        return s in self._pieces

    def _ends(self, first: str, last: str) -> bool:
        """Whether a string of two or more tokens, `first` to `last`, may be in the text:
        its first token (whitespace after it) must end a token of the text and its last
        (whitespace before it) begin one; either may be cut inside a longer one. Every such
        end and beginning is made once many strings are asked about: most strings of a
        ledger end in an id no template holds, and a search of the text for each took a
        cold build's merge 0.1 s of 52,000 strings."""
        if self._bounds is None:
            if len(self._seen) < _FEW_BOILERPLATE:
                return True
            tokens = self._tokens
            self._bounds = (
                frozenset(t[i:] for t in tokens for i in range(len(t))),
                frozenset(t[:i] for t in tokens for i in range(1, len(t) + 1)),
            )
        ends, beginnings = self._bounds
        return first in ends and last in beginnings

    @classmethod
    def get(cls) -> _Boilerplate:
        if cls._instance is None:
            cls._instance = cls(_template_text(), _schema_keys())
        return cls._instance

    def contains(self, s: str) -> bool:
        known = self._seen.get(s)
        if known is None:
            # If s occurs in the text, each of its inner whitespace-separated tokens is a whole
            # token of the text too (its first and last may be cut inside a longer one).
            tokens = s.split()
            if len(tokens) == 1 and tokens[0] == s:
                known = self._piece(s)
            else:
                known = (
                    (len(tokens) < 2 or self._ends(tokens[0], tokens[-1]))
                    and self.words.issuperset(tokens[1:-1])
                    and s in self.text
                )
            if len(self._seen) < 1_000_000:
                self._seen[s] = known
        return known


def _schema_keys() -> frozenset[str]:
    """Every property name the JSON artifacts may carry (they appear in every public file)."""
    import orjson

    keys: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            keys.update(
                node.get("properties", {}) if isinstance(node.get("properties"), dict) else ()
            )
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path in sorted(resource_dir("schemas").glob("*.json")):
        walk(orjson.loads(path.read_bytes()))
    return frozenset(keys)


def _template_text() -> str:
    folder = resource_dir("templates")
    return "\n".join(p.read_text("utf-8") for p in sorted(folder.rglob("*")) if p.is_file())


@dataclass(repr=False, eq=False)
class ScanCache(Mutable):
    """What `loopx serve` remembers between scans: scanners already built, and the artifacts
    (by sha256) found clean against everything those scanners look for.

    The forbidden set mostly grows (a new todo, a new note); then only the added strings are
    looked for in artifacts already found clean, with a small automaton, instead of building
    one over tens of thousands of strings and scanning every byte again.
    """

    covered: Forbidden | None = None  # every string the clean artifacts were checked against
    scanners: list[Any] = field(default_factory=list)
    clean: set[str] = field(default_factory=set)
    # What the build memo on disk holds (`loopx.build.scancache`): its covered set's id and
    # that set, and the head of each goal whose strings it holds.
    saved: tuple[str, Forbidden | None, dict[str, str]] | None = None

    @classmethod
    def carried(cls, covered: Forbidden, clean: set[str]) -> ScanCache:
        """What an earlier process found (`loopx.build.scancache.load_build`): the scanner of
        `covered` (an automaton over tens of thousands of strings) is built only if some
        artifact is not among the `clean` ones."""
        return cls(covered, [_Deferred(covered)], clean)


@dataclass(eq=False)
class _Deferred:
    """A forbidden set's scanner, built on first use."""

    forbidden: Forbidden

    @property
    def built(self) -> bool:
        return "_scanner" in self.forbidden.__dict__

    def scan_bytes(self, data: bytes, path: str) -> list[Any]:
        return list(self.forbidden.scanner().scan_bytes(data, path))

    def scan_read(self, read: Read, path: str) -> list[Any]:
        return list(self.forbidden.scanner().scan_read(read, path))


def public_items(site: Site) -> list[tuple[str, Any]]:
    """Every public artifact; and, in a public-only build, the top-level files too (the
    manifest): beside nothing but the public folder, the whole folder may well be served."""
    audiences = {a.audience for a in site.artifacts.values()}
    shared = audiences <= {"public", None}
    return [
        (p, a)
        for p, a in sorted(site.artifacts.items())
        if a.audience == "public" or (shared and a.audience is None)
    ]


def _scan(
    scanners: list[Any], reads: dict[str, Read] | None, items: list[tuple[str, Any]]
) -> list[dict[str, Any]]:
    """Each item with each scanner; `reads`: the items' texts and views, already made."""
    out: list[dict[str, Any]] = []
    for path, artifact in items:
        read = reads.get(path) if reads is not None else None
        for scanner in scanners:
            if read is not None:
                out.extend(f.to_dict() for f in scanner.scan_read(read, path))
            else:
                out.extend(f.to_dict() for f in scanner.scan_bytes(artifact.data, path))
    return out


def scan_public(
    site: Site, forbidden: Forbidden, cache: ScanCache | None = None
) -> list[dict[str, Any]]:
    """Scan every public artifact; return findings (without the matched text)."""
    items = public_items(site)
    if cache is None:
        return _scan([forbidden.scanner()], None, items)
    covered = cache.covered
    if (
        covered is None
        or covered.allowed != forbidden.allowed  # scanners built earlier honour other entries
        or not (forbidden.texts <= covered.texts or _few(forbidden, covered))
    ):
        scanner = forbidden.scanner()
        full = _scan([scanner], None, items)
        cache.covered, cache.scanners = forbidden, [scanner]
        cache.clean = set() if full else {a.sha256 for _, a in items}
        return full
    allowed = forbidden.allowed
    added = Forbidden(forbidden.texts - covered.texts, forbidden.ids - covered.ids, allowed=allowed)
    fresh = [(p, a) for p, a in items if a.sha256 not in cache.clean]
    known = [(p, a) for p, a in items if a.sha256 in cache.clean]
    findings: list[dict[str, Any]] = []
    if added.texts or added.ids:
        delta = Scanner(
            sorted(added.texts),
            forbidden_ids=sorted(added.ids),
            machine=False,
            rules=False,
            allowed=allowed,
        )
        findings += _scan([delta], None, known)
        cache.scanners.append(_Deferred(added))
        cache.covered = covered.grown(added)
    findings += _scan(*_narrowed(cache.scanners, fresh), fresh)
    if findings:
        # The incremental scanners may still look for text that is no longer non-public;
        # before failing a build, decide with a scanner of exactly the current set.
        cache.covered = None
        return scan_public(site, forbidden, cache)
    cache.clean |= {a.sha256 for _, a in items}
    return findings


def scan_ahead(cache: ScanCache, items: list[tuple[str, Any]]) -> None:
    """Scan those of `items` no earlier scan vouches for, as `scan_public` scans them (by the
    scanners of what `cache` covers, narrowed to the strings that occur in them), before the
    rest of the build is made: the clean ones join `cache.clean`, and `scan_public` does not
    read them again (it still looks in them for what the set gained since, as in every other
    file it vouches for). Without a covered set nothing is vouched for."""
    if cache.covered is None:
        return
    fresh = [(p, a) for p, a in items if a.sha256 not in cache.clean]
    scanners, reads = _narrowed(cache.scanners, fresh)
    for path, artifact in fresh:
        if not _scan(scanners, reads, [(path, artifact)]):
            cache.clean.add(artifact.sha256)


NARROW_LIMIT = 4 << 20  # bytes: beyond, building the whole scanner costs less


def _narrowed(
    scanners: list[Any], items: list[tuple[str, Any]]
) -> tuple[list[Any], dict[str, Read] | None]:
    """The scanners for `items`: a scanner of tens of thousands of strings not built yet (see
    `ScanCache.carried`) is replaced, for these items only, by one of just the strings that
    occur in some decoding of them, when they are few bytes (a rebuild's changed files);
    then also each item's text and views, made once for the narrowing and the scanners."""
    deferred = [s for s in scanners if isinstance(s, _Deferred) and not s.built]
    if not items or not deferred or sum(a.size for _, a in items) > NARROW_LIMIT:
        return scanners, None
    reads = {p: Read(a.data) for p, a in items}
    texts = list(reads.values())
    narrowed = [s.forbidden.within(texts).scanner() if s in deferred else s for s in scanners]
    return narrowed, reads


def _few(forbidden: Forbidden, covered: Forbidden) -> bool:
    """True when the set mostly grew: what left it is a small share (it stays covered)."""
    return len(covered.texts - forbidden.texts) <= max(100, len(forbidden.texts) // 100)


def enforce(
    findings: list[dict[str, Any]],
    goals: dict[str, GoalState] | None = None,
    forbidden: Forbidden | None = None,
) -> None:
    """Refuse the build when anything was found; each finding (of the first 100) names the
    `loopx redact field` and `loopx allow finding` commands that would clear it when `goals`
    are given."""
    if findings:
        shown = findings[:100]
        if goals is not None:
            from loopx.build.corrections import add_commands

            scanner = forbidden.scanner() if forbidden is not None else Scanner()
            add_commands(shown, goals, scanner)
        kinds = sorted({f["kind"] for f in findings})
        raise BoundaryViolation(
            f"public output failed the boundary scan: {len(findings)} finding(s) of kind "
            f"{', '.join(kinds)}; nothing was written (each finding's `clear` names the "
            "commands that clear it: `loopx redact field`, `loopx allow finding`)",
            findings=shown,
        )
