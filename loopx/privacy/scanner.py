"""The public-boundary scanner: finds credentials, personal and machine data, and non-public text.

Every artifact is scanned as written ("plain") and through each decoding it might hide a secret
behind (see `loopx.privacy.views`); a finding of one kind at one raw place is reported once, in
the first encoding that found it. Generic rules (keyword + entropy) judge a value only where it
is decoded: in the raw bytes of a page, ``api_key = settings.api_key&#34;`` looks random because
of its escape, not because of its value, so a generic hit whose value still holds an escape is
left to the view that decodes it.

Speed: one Aho-Corasick pass over a view finds the exact forbidden strings, and one more which
rules' anchors occur (see `loopx.privacy.rules`; an automaton every scanner of a process shares,
see `_automata`), and only those rules' regexes run. Decoded views are built only
when the text holds an escape of that kind, and their map back to the raw text only when they
find something.

Findings never carry the matched text, so a report can be printed or published safely.
"""

from __future__ import annotations

import contextlib
import errno
import getpass
import hashlib
import os
import re
import stat
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import ahocorasick_rs

from loopx.model.errors import NotFound, TooLarge, UnsafePath
from loopx.model.records import Value
from loopx.privacy.allowed import Allowance, Allowed
from loopx.privacy.rules import HOSTNAME, NON_PUBLIC_ID, NON_PUBLIC_TEXT, RULES, USERNAME, words
from loopx.privacy.views import ENCODINGS, View, base64_segments, views

__all__ = [
    "ENCODINGS",
    "Finding",
    "Hit",
    "Read",
    "Scanner",
    "decoded",
    "machine_names",
    "name_hash",
    "read_scanned",
    "scan_files",
    "scan_paths",
    "scanned_views",
]

MAX_SCAN_BYTES = 256 * 1024 * 1024  # one scanned file
_CHUNK = 1 << 20  # what a file that grew since its fstat is read on by

#: Forbidden strings shorter than this are ignored: short ids and words hit ordinary text.
MIN_FORBIDDEN_LENGTH = 6


#: Machine names too common to mean anything (a home path still reveals them: see home-path).
COMMON_MACHINE_NAMES = words(
    """root user users admin administrator localhost runner ubuntu debian fedora alpine centos
    test tests guest default docker build builder builds vagrant ec2-user node app apps home www
    web server host machine codespace codespaces jenkins travis circleci github gitlab nobody
    daemon system public main master dev development local container sandbox workspace linux
    desktop laptop raspberrypi worker agent bot ci"""
)

_BOUNDED_CHARS = {
    USERNAME: frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"),
    HOSTNAME: frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"),
    NON_PUBLIC_ID: frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"),
}
_SURROGATES = re.compile("[\ud800-\udfff]")
_EXACT_PRIORITY = 4  # an exact forbidden string names an overlapping span when redacting


@dataclass(frozen=True, repr=False, eq=False)
class Finding(Value):
    """Where something non-public was found; never what it was.

    `offset` is the character offset in the scanned text (bytes are decoded as UTF-8 first) and
    `line`/`column` (1-based) point at the same place; `encoding` names the view that found it.
    """

    kind: str
    path: str
    line: int
    column: int
    offset: int
    encoding: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "offset": self.offset,
            "encoding": self.encoding,
        }


@dataclass(frozen=True, repr=False, eq=False)
class Hit(Value):
    """A finding's span in raw text; internal to the privacy layer (redaction needs the end)."""

    kind: str
    start: int
    end: int
    encoding: str
    generic: bool = False
    priority: int = 1


# --- matchers ----------------------------------------------------------------------------------


class _Literals:
    """Exact strings matched in one Aho-Corasick pass: forbidden strings, tagged with the kinds
    they report, and rule anchors, tagged with the numbers of the rules they gate."""

    def __init__(
        self, kinds: Mapping[str, tuple[str, ...]], rules: Mapping[str, tuple[int, ...]]
    ) -> None:
        """`kinds`: each string's kinds, sorted and distinct (`_tag`); `rules`: each anchor's
        rule numbers, likewise (`_rule_anchors`)."""
        self.patterns = sorted(kinds.keys() | rules.keys() if rules else kinds)
        self.kinds = [kinds.get(p, ()) for p in self.patterns] if kinds else [()] * len(rules)
        self.rules = [rules.get(p, ()) for p in self.patterns] if rules else [()] * len(kinds)
        # A contiguous NFA, not a DFA: as fast to search on pages (measured on a 10,000-todo
        # root: 812 KB of changed pages, 0.045 s against 0.040 s) and three times quicker to
        # build (10,000 rule anchors: 0.009 s against 0.028 s), which every process pays.
        self._automaton = (
            ahocorasick_rs.AhoCorasick(
                self.patterns, implementation=ahocorasick_rs.Implementation.ContiguousNFA
            )
            if self.patterns
            else None
        )

    def find(self, text: str) -> tuple[str, list[tuple[int, int, int]]]:
        """The text as matched (lone surrogates read as U+FFFD, as the patterns do: the same
        length, so offsets stay valid), and (pattern index, start, end) of every occurrence in
        it, overlapping ones included, ordered by end, then start."""
        if self._automaton is None:
            return text, []
        try:
            return text, self._automaton.find_matches_as_indexes(text, overlapping=True)
        except UnicodeEncodeError:
            clean = _SURROGATES.sub("\ufffd", text)
            return clean, self._automaton.find_matches_as_indexes(clean, overlapping=True)


@lru_cache(maxsize=1)
def _rule_anchors() -> dict[str, tuple[int, ...]]:
    """Every rule's anchors, each with the numbers of the rules it gates. The base64 segments
    (not a rule: they say the base64 view is worth building) are two thirds of the 10,000
    and gate nothing else, so they are tagged in one go (in C) and only the rules' own
    anchors one by one: a fresh process that redacts or scans pays this once (~0.01 s less)."""
    tagged: dict[str, list[int]] = {}
    for number, rule in enumerate(RULES):
        for anchor in rule.anchors:
            tagged.setdefault(anchor, []).append(number)
    out: dict[str, tuple[int, ...]] = dict.fromkeys(base64_segments(), (_BASE64_ANCHOR,))
    for anchor, numbers in tagged.items():
        if anchor in out:
            numbers.append(_BASE64_ANCHOR)
        out[anchor] = tuple(sorted(set(numbers)))
    return out


@lru_cache(maxsize=1)
def _anchors_only() -> _Literals:
    return _Literals({}, _rule_anchors())


def _automata(kinds: Mapping[str, tuple[str, ...]]) -> tuple[_Literals, ...]:
    """An automaton for the forbidden strings (when there are any) and the rule anchors'
    automaton, which every scanner of a process shares: built once (10,000 anchors), where
    one automaton of both would be built again for each scanner (the redaction's, the few
    strings of a rebuild's changed files); the second pass costs less than that. A scanner
    of as many strings as `COMBINED_FROM` (a build's, or a scan's of a whole partition,
    made to read megabytes) has one automaton of both: its build takes the anchors in for
    a few milliseconds more, and each text is read once, not twice (a build's 6 MB of
    public pages and their decodings: 76 -> 44 ms)."""
    if len(kinds) >= COMBINED_FROM:
        return (_Literals(kinds, _rule_anchors()),)
    return ((_Literals(kinds, {}),) if kinds else ()) + (_anchors_only(),)


COMBINED_FROM = 10_000  # strings


_BASE64_ANCHOR = len(RULES)  # the tag of encoded anchors in the rule-anchor automaton
_ALWAYS = tuple(n for n, rule in enumerate(RULES) if not rule.anchors)
_POSITIONAL = frozenset(n for n, rule in enumerate(RULES) if rule.locate is not None)


def _hostname() -> str:
    """This host's name: the node name `uname` gives, which is what `gethostname` returns on
    Linux and macOS (without importing `socket` and `selectors` into every scan), else the
    socket library's."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


#: Names to refuse wherever the scan runs (a CI secret, say): comma- or space-separated.
NAMES_ENV = "LOOPX_PRIVATE_NAMES"


def name_hash(name: str) -> str:
    """How `.loopx/names` lists a name without saying it: sha256 of its lowercase form."""
    return hashlib.sha256(name.strip().lower().encode("utf-8")).hexdigest()


def machine_names() -> dict[str, set[str]]:
    """The user and host names of "this host" worth looking for (trivial, common ones dropped):
    the machine the scan runs on, plus every name in ``$LOOPX_PRIVATE_NAMES`` (so a CI
    machine refuses the names of the machines the work was done on; see also `name_hashes`
    for the committed, hashed list)."""
    names: dict[str, set[str]] = {USERNAME: set(), HOSTNAME: set()}
    for name in re.split(r"[\s,]+", os.environ.get(NAMES_ENV, "")):
        if name:
            names[USERNAME].update({name, name.lower()})
    with contextlib.suppress(Exception):  # getuser raises whatever the platform lookup raises
        names[USERNAME].add(getpass.getuser())
    try:
        host = _hostname()
    except OSError:
        host = ""
    if host and not re.fullmatch(r"[0-9.:]+", host):
        short = host.split(".")[0]
        names[HOSTNAME].update({host, host.lower(), short, short.lower()})
    return {
        kind: {n for n in found if len(n) >= 4 and n.lower() not in COMMON_MACHINE_NAMES}
        for kind, found in names.items()
    }


# --- the scanner -------------------------------------------------------------------------------


STEM = 16
PREFIX = 32
_PREFIX_KIND = "prefix-of-non-public-text"  # internal: never reported


class Scanner:
    """Scans text for everything that must not reach a public artifact.

    `forbidden`: exact strings (text of team/private fields, ids and hashes of private items),
    reported as ``non-public-text``; matched case-sensitively anywhere, strings shorter than
    `MIN_FORBIDDEN_LENGTH` are ignored. `forbidden_ids`: the same, reported as
    ``non-public-id`` and only where not part of a longer id (``todo-1`` is not in ``todo-12``).
    `machine`: also look for this machine's user and host names (see `machine_names`), as whole
    words. `allow`: matched texts that are fine to publish (e.g. a maintainer's public address);
    they exempt rule and machine-name findings, never forbidden strings. `allowed`: reviewed
    allow entries (see `loopx.privacy.allowed`): a finding of an entry's kind inside its text is
    not reported, whatever its kind. `rules=False` looks only for the exact strings (the
    build's incremental scan of text already found clean).
    """

    def __init__(
        self,
        forbidden: Iterable[str] = (),
        *,
        machine: bool = True,
        forbidden_ids: Iterable[str] = (),
        allow: Iterable[str] = (),
        rules: bool = True,
        name_hashes: Iterable[str] = (),
        allowed: Iterable[Allowance] = (),
        stem: int = STEM,
    ) -> None:
        self._name_hashes = frozenset(name_hashes)
        self._allowed = Allowed(allowed)
        self._hashed: dict[str, bool] = {}  # word -> is it a listed name (words recur)
        tagged: dict[str, tuple[str, ...]] = {}
        # A forbidden text longer than STEM goes into the automaton by its first STEM
        # characters (its stem) only, and is confirmed where its stem matches: an automaton
        # over the whole of tens of thousands of texts costs seconds to build, one over their
        # stems a fraction of that (52,000 texts of a build: 0.15 s with their first 32
        # characters, 0.05 s with 16). A stem names the lengths of its texts of at most
        # PREFIX characters, each looked up whole where it matches (`_mid`); a longer text is
        # looked up by its first PREFIX characters (`_long`): a stem many texts share costs a
        # few lookups, not a comparison with each. `stem` (STEM to PREFIX): a longer stem
        # costs more to build and matches less often where the texts' openings are common
        # in the scanned text (13,455 private texts over a build's public pages: 22,142
        # places with 16 characters, 158 with 32, each confirmed in Python).
        if not STEM <= stem <= PREFIX:
            raise ValueError(f"stem must be {STEM} to {PREFIX} characters")
        self._long: dict[str, list[str]] = {}
        mid: set[str] = set()
        texts = _matchable(forbidden)
        for text in texts:
            size = len(text)
            if size > PREFIX:
                self._long.setdefault(text[:PREFIX], []).append(text)
            elif size > stem:
                mid.add(text)
        for longer in self._long.values():  # the shortest at a start first, as for the others,
            if len(longer) > 1:  # whatever order they came in
                longer.sort(key=len)
        lengths: dict[str, set[int]] = {}
        for text in mid:
            lengths.setdefault(text[:stem], set()).add(len(text))
        self._mid = frozenset(mid)
        self._stems: dict[str, tuple[int, ...]] = dict.fromkeys(
            {prefix[:stem] for prefix in self._long}, ()
        )
        self._stems.update((s, tuple(sorted(sizes))) for s, sizes in lengths.items())
        _tag(tagged, [t for t in texts if len(t) <= stem], NON_PUBLIC_TEXT)
        _tag(tagged, self._stems, _PREFIX_KIND)
        _tag(tagged, _matchable(forbidden_ids), NON_PUBLIC_ID)
        self._allow = frozenset(allow)
        if machine:
            for kind, names in machine_names().items():
                _tag(tagged, names - self._allow, kind)
        self._rules = rules
        self._automata = (
            _automata(tagged) if rules else ((_Literals(tagged, {}),) if tagged else ())
        )

    def scan_text(self, text: str, path: str = "<text>") -> list[Finding]:
        """Every finding in `text`, in order of position."""
        hits = self.hits(text)
        if not hits:
            return []
        return [_finding(text, hit, path) for hit in hits]

    def scan_bytes(self, data: bytes, path: str) -> list[Finding]:
        """Scan `data` decoded as UTF-8 (undecodable bytes become U+FFFD).

        Binary data (a NUL in the first 8 KiB) is scanned like `strings` reads it: only runs of
        at least 8 printable ASCII characters, so metadata is checked but compressed noise
        does not raise findings; offsets are then byte offsets.
        """
        return self.scan_text(decoded(data), path)

    def scan_read(self, read: Read, path: str) -> list[Finding]:
        """`scan_bytes` of the bytes `read` was made of, with the views it made (a scanner
        with rules reads those very views)."""
        hits = self.hits(read.text, read.views() if read.rules == self._rules else None)
        return [_finding(read.text, hit, path) for hit in hits]

    def hits(self, text: str, read: list[View] | None = None) -> list[Hit]:
        """Raw spans of every finding, deduplicated and sorted; what `redact` works from.
        `read`: the views of `text` as `scanned_views` made them, when they are at hand."""
        found: dict[tuple[str, int], Hit] = {}
        encoded = self._scan_view(View("plain", text), found)
        if read is None:
            read = list(views(text, base64=encoded if self._rules else False))
        for view in read:
            if view.depth:
                self._scan_view(view, found)
        if not found:
            return []
        hits = _drop_generic_overlaps(list(found.values()))
        hits.sort(key=lambda h: (h.start, h.kind, h.end))
        return hits

    def _scan_view(self, view: View, found: dict[tuple[str, int], Hit]) -> bool:
        """Add the view's hits to `found`; True when an encoded (base64) anchor occurs."""
        text = view.text
        numbers = set(_ALWAYS) if self._rules else set()
        anchors: dict[int, list[int]] = {}  # positional rule -> where its anchors start
        # Exact strings are added in the order the automaton would have found them whole (by
        # end, then start): where two of one kind start at the same place in the raw text
        # (a decoding that makes several characters of one), the first found is kept.
        exact: list[tuple[int, int, int, str, int]] = []  # (end, start, then, kind, its end)
        for literals in self._automata:
            matched, occurrences = literals.find(text)
            for index, start, end in occurrences:
                for number in literals.rules[index]:
                    numbers.add(number)
                    if number in _POSITIONAL:
                        anchors.setdefault(number, []).append(start)
                for kind in literals.kinds[index]:
                    if kind == _PREFIX_KIND:  # each text that starts with this stem here
                        room = len(matched) - start
                        for size in self._stems[matched[start:end]]:  # shortest first
                            if size > room:  # cut short, it might read as a shorter text
                                break
                            if matched[start : start + size] in self._mid:
                                exact.append(
                                    (start + size, start, 0, NON_PUBLIC_TEXT, start + size)
                                )
                        longs = self._long.get(matched[start : start + PREFIX], ())
                        for then, full in enumerate(longs, 1):
                            if matched.startswith(full, start):
                                stop = start + len(full)
                                exact.append((start + PREFIX, start, then, NON_PUBLIC_TEXT, stop))
                        continue
                    bounded = _BOUNDED_CHARS.get(kind)
                    if bounded is not None and (
                        (start > 0 and matched[start - 1] in bounded)
                        or (end < len(matched) and matched[end] in bounded)
                    ):
                        continue
                    exact.append((end, start, 0, kind, end))
        exact.sort(key=lambda e: e[:3])  # stable: a pattern's kinds stay in their order
        for _, start, _, kind, stop in exact:
            self._add(found, view, kind, start, stop, False, _EXACT_PRIORITY)
        if self._name_hashes:
            self._scan_names(view, found)
        encoded = _BASE64_ANCHOR in numbers
        numbers.discard(_BASE64_ANCHOR)
        for number in sorted(numbers):
            rule = RULES[number]
            for start, end in rule.spans(text, anchors.get(number, ())):
                if self._allow and text[start:end] in self._allow:
                    continue
                if rule.generic and _ESCAPED.search(text, start, end + 1):  # `;` ends it
                    continue  # judged where it is decoded (see the module docstring)
                self._add(found, view, rule.kind, start, end, rule.generic, rule.priority)
        return encoded

    def _scan_names(self, view: View, found: dict[tuple[str, int], Hit]) -> None:
        """Whole words whose hash is listed, and the parts of a word a listed name may be
        joined into: a dotted host name's first label, each part of `pair-with-<name>`."""
        hashed = self._hashed
        for match in _WORD.finditer(view.text):
            for offset, candidate in _name_candidates(match.group().rstrip(".-")):
                listed = hashed.get(candidate)
                if listed is None:
                    listed = name_hash(candidate) in self._name_hashes
                    if len(hashed) < 200_000:
                        hashed[candidate] = listed
                if listed:
                    start = match.start() + offset
                    self._add(found, view, USERNAME, start, start + len(candidate), False, 4)
                    break

    def _add(
        self,
        found: dict[tuple[str, int], Hit],
        view: View,
        kind: str,
        start: int,
        end: int,
        generic: bool,
        priority: int,
    ) -> None:
        if self._allowed and self._allowed.covers(view.text, kind, start, end):
            return
        raw_start, raw_end = view.raw_span(start, end)
        key = (kind, raw_start)
        if key not in found:
            found[key] = Hit(kind, raw_start, raw_end, view.encoding, generic, priority)


def _matchable(strings: Iterable[str]) -> list[str]:
    """The strings long enough to forbid, as they are matched: lone surrogates cannot be
    matched as UTF-8, so they read as U+FFFD (scanned text gets the same fix)."""
    kept = [s for s in strings if len(s) >= MIN_FORBIDDEN_LENGTH]
    if "".join(kept).isascii():
        return kept
    return [s if s.isascii() else _SURROGATES.sub("\ufffd", s) for s in kept]


def _tag(tagged: dict[str, tuple[str, ...]], strings: Iterable[str], kind: str) -> None:
    """Add `kind` to the kinds of each string (kept sorted and distinct)."""
    alone = (kind,)
    if not tagged:
        tagged.update(dict.fromkeys(strings, alone))
        return
    for string in strings:
        kinds = tagged.get(string)
        if kinds is None:
            tagged[string] = alone
        elif kind not in kinds:
            tagged[string] = tuple(sorted((*kinds, kind)))


_WORD = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z0-9][A-Za-z0-9_.-]{3,252}(?![A-Za-z0-9_])")
# An escape left inside a generic rule's value: the view has not decoded it yet (another has).
_ESCAPED = re.compile(
    r"&(?:#[0-9]{1,8}|#[xX][0-9a-fA-F]{1,8}|[A-Za-z][A-Za-z0-9]{1,31});"
    r"|#(?:quot|lt|gt|amp);|\\[\"'/\\bfnrtu]|%[0-9a-fA-F]{2}"
)


def _name_candidates(word: str) -> list[tuple[int, str]]:
    """(offset, text) of what in `word` may be a listed name, the whole word first."""
    out = [(0, word)]
    if "." in word:
        out.append((0, word.split(".", 1)[0]))
    if "-" in word:
        offset = 0
        for part in word.split("-"):
            if len(part) >= 4 and part != word:
                out.append((offset, part))
            offset += len(part) + 1
    return out


def scanned_views(text: str, rules: bool = True) -> list[View]:
    """Every view of `text` a scanner reads (the raw text first), with rules or without
    (`Scanner(rules=False)` decodes no base64): what a scanner of just the strings that
    occur in them needs to hold (`loopx.build.boundary.Forbidden.within`)."""
    if not rules:
        return list(views(text, base64=False))
    anchors = _anchors_only()
    encoded = any(_BASE64_ANCHOR in anchors.rules[i] for i, _, _ in anchors.find(text)[1])
    return list(views(text, base64=encoded))  # what `_scan_view` finds of the raw text


class Read:
    """A file's text as a scanner reads it, and its views (`scanned_views`, as a scanner with
    `rules` or without reads them), made once for all that read it: the narrowing of a scan
    and the scanners it narrows."""

    __slots__ = ("text", "rules", "_views")

    def __init__(self, data: bytes, rules: bool = True) -> None:
        self.text = decoded(data)
        self.rules = rules
        self._views: list[View] | None = None

    def views(self) -> list[View]:
        if self._views is None:
            self._views = scanned_views(self.text, self.rules)
        return self._views


def decoded(data: bytes) -> str:
    """The text `Scanner.scan_bytes` scans of `data`."""
    if b"\x00" in data[:8192]:
        return _printable_runs(data)
    return data.decode("utf-8", errors="replace")


_PRINTABLE_RUN = re.compile(rb"[\x20-\x7e\t\n\r]{8,}")


def _printable_runs(data: bytes) -> str:
    """`data` with everything but long printable ASCII runs blanked to NUL (same length)."""
    kept = bytearray(len(data))
    for match in _PRINTABLE_RUN.finditer(data):
        kept[match.start() : match.end()] = match.group()
    return kept.decode("latin-1")


def _drop_generic_overlaps(hits: list[Hit]) -> list[Hit]:
    """Generic (keyword + entropy) hits that overlap a specific rule's hit say nothing more."""
    specific = sorted((h for h in hits if not h.generic), key=lambda h: h.start)
    if len(specific) == len(hits):
        return hits
    starts = [h.start for h in specific]
    reach: list[int] = []  # reach[i]: the furthest end among specific[: i + 1]
    for h in specific:
        reach.append(max(h.end, reach[-1]) if reach else h.end)
    kept = list(specific)
    for h in hits:
        if h.generic:
            before = bisect_left(starts, h.end)  # specific hits starting before h ends
            if not before or reach[before - 1] <= h.start:
                kept.append(h)
    return kept


def _finding(text: str, hit: Hit, path: str) -> Finding:
    line_start = text.rfind("\n", 0, hit.start) + 1
    return Finding(
        kind=hit.kind,
        path=path,
        line=text.count("\n", 0, hit.start) + 1,
        column=hit.start - line_start + 1,
        offset=hit.start,
        encoding=hit.encoding,
    )


def _read_regular(path: Path) -> bytes:
    """A scanned file, read under the store's file rules (`loopx.store.fsio`; this layer may
    not import it): a link, FIFO or device is `unsafe_path`, never followed nor waited on;
    more than MAX_SCAN_BYTES is `file_too_large`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENXIO):
            raise UnsafePath("refused to scan a link or special file") from None
        raise NotFound("a scan path cannot be read", code="path_not_found") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePath("refused to scan a file: it is not a regular file")
        if info.st_size > MAX_SCAN_BYTES:
            raise TooLarge(f"refused to scan a file larger than {MAX_SCAN_BYTES} bytes")
        # One read of what fstat said and a byte more (a read of the cap itself would set
        # aside 256 MiB for every page of a folder); a file that changed since is read on.
        data = os.read(fd, info.st_size + 1)
        if len(data) == info.st_size:
            return data
        chunks, total = [data], len(data)
        while data:
            if total > MAX_SCAN_BYTES:
                raise TooLarge(f"refused to scan a file larger than {MAX_SCAN_BYTES} bytes")
            data = os.read(fd, min(_CHUNK, MAX_SCAN_BYTES + 1 - total))
            chunks.append(data)
            total += len(data)
        return b"".join(chunks)
    finally:
        os.close(fd)


def scan_files(paths: Iterable[Path]) -> dict[str, Path]:
    """The files `paths` names (folders walked), by the path a report shows: as given, joined
    with the file's place under a given folder, in POSIX form. A path that does not exist is
    `NotFound` (``path_not_found``)."""
    files: dict[str, Path] = {}
    for item in paths:
        path = Path(item)
        if path.is_dir():
            for folder, dirs, names in os.walk(path):
                dirs.sort()
                for name in names:
                    file = Path(folder) / name
                    files.setdefault(file.as_posix(), file)
        elif path.exists():
            files.setdefault(path.as_posix(), path)
        else:
            raise NotFound("scan path does not exist", code="path_not_found", path=str(path))
    return dict(sorted(files.items()))


def read_scanned(path: Path) -> bytes:
    """One scanned file's bytes (see `_read_regular`: no link, no special file, size-capped)."""
    return _read_regular(path)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.path, f.offset, f.kind, f.encoding))


def scan_paths(paths: Iterable[Path], scanner: Scanner | None = None) -> list[Finding]:
    """Scan files, and folders recursively; findings sorted by path, then position (paths as
    `scan_files` shows them)."""
    scanner = scanner if scanner is not None else Scanner()
    findings: list[Finding] = []
    for shown, path in scan_files(paths).items():
        findings.extend(scanner.scan_bytes(_read_regular(path), shown))
    return sort_findings(findings)
