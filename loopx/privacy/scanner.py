"""The public-boundary scanner: finds credentials, personal and machine data, and non-public text.

Every artifact is scanned as written ("plain") and through each decoding it might hide a secret
behind: JSON string escapes, HTML character references and URL percent-encoding. A decoded view
keeps a map back to the raw text, so a finding always points at the raw line and column, and a
finding of one kind at one raw place is reported once, in the first encoding that found it.

Speed: one Aho-Corasick pass over a view finds both the exact forbidden strings and which rules'
anchors occur (see `loopx.privacy.rules`), and only those rules' regexes run; very large sets of
forbidden strings get an automaton of their own (see `_automata`). Decoded views are built only
when the text holds an escape of that kind, and their map back to the raw text only when they
find something.

Findings never carry the matched text, so a report can be printed or published safely.
"""

from __future__ import annotations

import contextlib
import errno
import getpass
import html
import os
import re
import socket
import stat
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import ahocorasick_rs

from loopx.model.errors import NotFound, TooLarge, UnsafePath
from loopx.privacy.rules import HOSTNAME, NON_PUBLIC_ID, NON_PUBLIC_TEXT, RULES, USERNAME, words

MAX_SCAN_BYTES = 256 * 1024 * 1024  # one scanned file

#: Forbidden strings shorter than this are ignored: short ids and words hit ordinary text.
MIN_FORBIDDEN_LENGTH = 6

#: Encodings in the order views are scanned; the first that finds a place is reported.
ENCODINGS = ("plain", "json", "html", "url")

#: Machine names too common to mean anything (a home path still reveals them: see home-path).
COMMON_MACHINE_NAMES = words(
    """root user users admin administrator localhost runner ubuntu debian fedora alpine centos
    test tests guest default docker build builder builds vagrant ec2-user node app apps home www
    web server host machine codespace codespaces jenkins travis circleci github gitlab nobody
    daemon system public main master dev development local container sandbox workspace linux
    desktop laptop raspberrypi worker agent bot ci"""
)

# Forbidden strings up to this many characters share one DFA with the rule anchors.
_COMBINED_LIMIT = 100_000
_BOUNDED_CHARS = {
    USERNAME: frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"),
    HOSTNAME: frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"),
    NON_PUBLIC_ID: frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"),
}
_SURROGATES = re.compile("[\ud800-\udfff]")
_EXACT_PRIORITY = 4  # an exact forbidden string names an overlapping span when redacting


@dataclass(frozen=True)
class Finding:
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


@dataclass(frozen=True)
class Hit:
    """A finding's span in raw text; internal to the privacy layer (redaction needs the end)."""

    kind: str
    start: int
    end: int
    encoding: str
    generic: bool = False
    priority: int = 1


# --- decoded views ------------------------------------------------------------------------------


class View:
    """Text as seen through one decoding, with a map from its positions back to the raw text.

    The map is built only when a finding needs it: most views find nothing.
    """

    __slots__ = ("encoding", "text", "_raw", "_decoder", "_map")

    def __init__(self, encoding: str, text: str, raw: str = "", decoder: _Decoder | None = None):
        self.encoding = encoding
        self.text = text
        self._raw = raw
        self._decoder = decoder
        self._map: tuple[list[int], list[int], list[int], list[int]] | None = None

    def raw_span(self, start: int, end: int) -> tuple[int, int]:
        """The raw span that decodes to view[start:end] (escapes cut in half are widened)."""
        if self._decoder is None:
            return start, end
        return self._to_raw(start, at_end=False), self._to_raw(max(start, end - 1), at_end=True)

    def _to_raw(self, pos: int, *, at_end: bool) -> int:
        if self._map is None:
            self._map = self._build_map()
        vstarts, vends, rstarts, rends = self._map
        i = bisect_right(vstarts, pos) - 1
        if i < 0:
            return pos + 1 if at_end else pos
        if pos < vends[i]:
            return rends[i] if at_end else rstarts[i]
        raw = rends[i] + pos - vends[i]
        return raw + 1 if at_end else raw

    def _build_map(self) -> tuple[list[int], list[int], list[int], list[int]]:
        """Where each decoded escape starts and ends, in the view and in the raw text."""
        assert self._decoder is not None
        vstarts: list[int] = []
        vends: list[int] = []
        rstarts: list[int] = []
        rends: list[int] = []
        shift = 0  # view position minus raw position
        replace = self._decoder.replace
        for match in self._decoder.pattern.finditer(self._raw):
            token = match.group()
            decoded = replace(token)
            if decoded == token:
                continue
            start, end = match.span()
            vstarts.append(start + shift)
            rstarts.append(start)
            shift += len(decoded) - (end - start)
            vends.append(end + shift)
            rends.append(end)
        return vstarts, vends, rstarts, rends


class _Decoder:
    """One escape syntax: the regex of one escape and its (cached) decoding."""

    def __init__(self, encoding: str, pattern: str, replace: Callable[[str], str]) -> None:
        self.encoding = encoding
        self.pattern = re.compile(pattern)
        self.replace = lru_cache(maxsize=4096)(replace)

    def _sub(self, match: re.Match[str]) -> str:
        return self.replace(match.group())

    def view(self, raw: str) -> View | None:
        """`raw` with every escape decoded; None when nothing changed."""
        text = self.pattern.sub(self._sub, raw)
        return None if text == raw else View(self.encoding, text, raw, self)


_JSON_SIMPLE = {
    '\\"': '"',
    "\\\\": "\\",
    "\\/": "/",
    "\\b": "\b",
    "\\f": "\f",
    "\\n": "\n",
    "\\r": "\r",
    "\\t": "\t",
}


def _json_unescape(token: str) -> str:
    simple = _JSON_SIMPLE.get(token)
    if simple is not None:
        return simple
    code = int(token[2:6], 16)
    if len(token) == 12:  # a surrogate pair
        low = int(token[8:12], 16)
        return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
    return "\ufffd" if 0xD800 <= code <= 0xDFFF else chr(code)


def _url_unescape(token: str) -> str:
    if token == "+":
        return " "
    return bytes.fromhex(token.replace("%", "")).decode("utf-8", errors="replace")


# One percent-encoded character: ASCII, a whole UTF-8 sequence, or a stray byte.
_PERCENT = (
    r"%[0-7][0-9a-fA-F]"
    r"|%[cCdD][0-9a-fA-F]%[89abAB][0-9a-fA-F]"
    r"|%[eE][0-9a-fA-F](?:%[89abAB][0-9a-fA-F]){2}"
    r"|%[fF][0-7](?:%[89abAB][0-9a-fA-F]){3}"
    r"|%[0-9a-fA-F]{2}"
)
_JSON = _Decoder(
    "json",
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}"
    r"|\\[\"\\/bfnrt]",
    _json_unescape,
)
_HTML = _Decoder(
    "html",
    r"&(?:#[0-9]{1,8};?|#[xX][0-9a-fA-F]{1,8};?|[A-Za-z][A-Za-z0-9]{1,31};?)",
    html.unescape,
)
_URL = _Decoder("url", _PERCENT, _url_unescape)
_URL_PLUS = _Decoder("url", r"\+|" + _PERCENT, _url_unescape)  # form encoding: '+' is a space
_JOINED_BY_PLUS = re.compile(r"[^\s+]\+[^\s+]")  # words joined by '+': maybe form-encoded


def views(text: str) -> Iterator[View]:
    """The raw text, then each decoding of it that differs from it."""
    yield View("plain", text)
    decoders = []
    if "\\" in text:
        decoders.append(_JSON)
    if "&" in text:
        decoders.append(_HTML)
    if "%" in text:
        decoders.append(_URL)
    if "+" in text and ("%" in text or _JOINED_BY_PLUS.search(text)):
        decoders.append(_URL_PLUS)
    for decoder in decoders:
        view = decoder.view(text)
        if view is not None:
            yield view


# --- matchers ----------------------------------------------------------------------------------


class _Literals:
    """Exact strings matched in one Aho-Corasick pass: forbidden strings, tagged with the kinds
    they report, and rule anchors, tagged with the numbers of the rules they gate."""

    def __init__(
        self, kinds: Mapping[str, Iterable[str]], rules: Mapping[str, Iterable[int]], *, dfa: bool
    ) -> None:
        self.patterns = sorted(set(kinds) | set(rules))
        self.kinds = [tuple(sorted(set(kinds.get(p, ())))) for p in self.patterns]
        self.rules = [tuple(sorted(set(rules.get(p, ())))) for p in self.patterns]
        kind = ahocorasick_rs.Implementation
        implementation = kind.DFA if dfa else kind.ContiguousNFA
        self._automaton = (
            ahocorasick_rs.AhoCorasick(self.patterns, implementation=implementation)
            if self.patterns
            else None
        )

    def find(self, text: str) -> list[tuple[int, int, int]]:
        """(pattern index, start, end) of every occurrence, overlapping ones included."""
        if self._automaton is None:
            return []
        try:
            return self._automaton.find_matches_as_indexes(text, overlapping=True)
        except UnicodeEncodeError:  # lone surrogates: same length, offsets stay valid
            clean = _SURROGATES.sub("\ufffd", text)
            return self._automaton.find_matches_as_indexes(clean, overlapping=True)


@lru_cache(maxsize=1)
def _rule_anchors() -> dict[str, tuple[int, ...]]:
    """Every rule's anchors, each with the numbers of the rules it gates."""
    tagged: dict[str, list[int]] = {}
    for number, rule in enumerate(RULES):
        for anchor in rule.anchors:
            tagged.setdefault(anchor, []).append(number)
    return {anchor: tuple(numbers) for anchor, numbers in tagged.items()}


@lru_cache(maxsize=1)
def _anchors_only() -> _Literals:
    return _Literals({}, _rule_anchors(), dfa=True)


def _automata(kinds: Mapping[str, Iterable[str]]) -> tuple[_Literals, ...]:
    """One DFA for anchors and forbidden strings together while that stays small (fastest);
    beyond, the shared anchor DFA plus an NFA for the forbidden strings (a DFA over tens of
    thousands of strings takes seconds and hundreds of MB to build)."""
    if sum(len(k) for k in kinds) <= _COMBINED_LIMIT:
        return (_Literals(kinds, _rule_anchors(), dfa=True),)
    return (_Literals(kinds, {}, dfa=False), _anchors_only())


_ALWAYS = tuple(n for n, rule in enumerate(RULES) if not rule.anchors)
_POSITIONAL = frozenset(n for n, rule in enumerate(RULES) if rule.locate is not None)


def machine_names() -> dict[str, set[str]]:
    """This machine's user and host names worth looking for (trivial, common ones dropped)."""
    names: dict[str, set[str]] = {USERNAME: set(), HOSTNAME: set()}
    with contextlib.suppress(Exception):  # getuser raises whatever the platform lookup raises
        names[USERNAME].add(getpass.getuser())
    try:
        host = socket.gethostname()
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
    they exempt rule and machine-name findings, never forbidden strings. `rules=False` looks
    only for the exact strings (the build's incremental scan of text already found clean).
    """

    def __init__(
        self,
        forbidden: Iterable[str] = (),
        *,
        machine: bool = True,
        forbidden_ids: Iterable[str] = (),
        allow: Iterable[str] = (),
        rules: bool = True,
    ) -> None:
        tagged: dict[str, set[str]] = {}
        # Long forbidden texts go into the automaton by their first PREFIX characters only and
        # are confirmed where a prefix matches: an automaton over tens of thousands of long
        # texts costs seconds to build, one over their prefixes a fraction of that.
        self._long: dict[str, list[str]] = {}
        for kind, texts in ((NON_PUBLIC_TEXT, forbidden), (NON_PUBLIC_ID, forbidden_ids)):
            for text in texts:
                if len(text) >= MIN_FORBIDDEN_LENGTH:
                    # lone surrogates cannot be matched as UTF-8; scanned text gets the same fix
                    clean = _SURROGATES.sub("\ufffd", text)
                    if kind == NON_PUBLIC_TEXT and len(clean) > PREFIX:
                        self._long.setdefault(clean[:PREFIX], []).append(clean)
                        tagged.setdefault(clean[:PREFIX], set()).add(_PREFIX_KIND)
                    else:
                        tagged.setdefault(clean, set()).add(kind)
        self._allow = frozenset(allow)
        if machine:
            for kind, names in machine_names().items():
                for name in names - self._allow:
                    tagged.setdefault(name, set()).add(kind)
        self._rules = rules
        self._automata = (
            _automata(tagged) if rules else ((_Literals(tagged, {}, dfa=False),) if tagged else ())
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
        if b"\x00" in data[:8192]:
            return self.scan_text(_printable_runs(data), path)
        return self.scan_text(data.decode("utf-8", errors="replace"), path)

    def hits(self, text: str) -> list[Hit]:
        """Raw spans of every finding, deduplicated and sorted; what `redact` works from."""
        found: dict[tuple[str, int], Hit] = {}
        for view in views(text):
            self._scan_view(view, found)
        if not found:
            return []
        hits = _drop_generic_overlaps(list(found.values()))
        hits.sort(key=lambda h: (h.start, h.kind, h.end))
        return hits

    def _scan_view(self, view: View, found: dict[tuple[str, int], Hit]) -> None:
        text = view.text
        numbers = set(_ALWAYS) if self._rules else set()
        anchors: dict[int, list[int]] = {}  # positional rule -> where its anchors start
        for literals in self._automata:
            for index, start, end in literals.find(text):
                for number in literals.rules[index]:
                    numbers.add(number)
                    if number in _POSITIONAL:
                        anchors.setdefault(number, []).append(start)
                for kind in literals.kinds[index]:
                    if kind == _PREFIX_KIND:
                        for full in self._long[text[start:end]]:
                            if text.startswith(full, start):
                                self._add(
                                    found,
                                    view,
                                    NON_PUBLIC_TEXT,
                                    start,
                                    start + len(full),
                                    False,
                                    _EXACT_PRIORITY,
                                )
                        continue
                    bounded = _BOUNDED_CHARS.get(kind)
                    if bounded is not None and (
                        (start > 0 and text[start - 1] in bounded)
                        or (end < len(text) and text[end] in bounded)
                    ):
                        continue
                    self._add(found, view, kind, start, end, False, _EXACT_PRIORITY)
        for number in sorted(numbers):
            rule = RULES[number]
            for start, end in rule.spans(text, anchors.get(number, ())):
                if self._allow and text[start:end] in self._allow:
                    continue
                self._add(found, view, rule.kind, start, end, rule.generic, rule.priority)

    @staticmethod
    def _add(
        found: dict[tuple[str, int], Hit],
        view: View,
        kind: str,
        start: int,
        end: int,
        generic: bool,
        priority: int,
    ) -> None:
        raw_start, raw_end = view.raw_span(start, end)
        key = (kind, raw_start)
        if key not in found:
            found[key] = Hit(kind, raw_start, raw_end, view.encoding, generic, priority)


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
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath("refused to scan a file: it is not a regular file")
        data = fh.read(MAX_SCAN_BYTES + 1)
    if len(data) > MAX_SCAN_BYTES:
        raise TooLarge(f"refused to scan a file larger than {MAX_SCAN_BYTES} bytes")
    return data


def scan_paths(paths: Iterable[Path], scanner: Scanner | None = None) -> list[Finding]:
    """Scan files, and folders recursively; findings sorted by path, then position.

    Paths are reported as given (joined with the file's place under a given folder), in POSIX
    form. A path that does not exist is `NotFound` (``path_not_found``).
    """
    scanner = scanner if scanner is not None else Scanner()
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
    findings: list[Finding] = []
    for shown in sorted(files):
        findings.extend(scanner.scan_bytes(_read_regular(files[shown]), shown))
    findings.sort(key=lambda f: (f.path, f.offset, f.kind, f.encoding))
    return findings
