"""Which non-public strings are distinctive enough to forbid in public output.

The boundary scan forbids the exact text of every team and private fact. A string that is
short, common or already said publicly cannot be told apart from public text that happens to
contain it, so forbidding it only cries wolf (a team todo "Release 2.4.1" against a public
"Release 2.4.1: fix the crash"; a private todo called ``refactor``). The rule:

- a text is distinctive when it holds at least `MIN_TEXT` characters and either two words or
  at least `MIN_WORD` characters in one (a hash, a path, a long identifier);
- an id is distinctive when it holds a digit or a ``-``/``_`` separator, or at least `MIN_WORD`
  characters: ``todo-17`` and ``vendor_deal`` are, ``refactor`` is not;
- a string that occurs inside a public text of the same ledger is already public: not forbidden.

What is not forbidden by exact match is still scanned by the rules (credentials, addresses).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from typing import Any

import ahocorasick_rs

from loopx.model.ids import hex_digests

MIN_TEXT = 12
MIN_WORD = 16


def distinctive_text(text: str) -> bool:
    stripped = text.strip()
    size = len(stripped)
    if size >= MIN_WORD:
        return True
    return size >= MIN_TEXT and len(stripped.split(None, 1)) == 2  # two words


def distinctive_id(value: str) -> bool:
    return len(value) >= MIN_WORD or any(c.isdigit() or c in "-_" for c in value)


_HEX_DIGITS = "0123456789abcdef"
_SURROGATES = re.compile("[\ud800-\udfff]")


def blob_hash(string: str) -> bool:
    """Whether `string` is one of loopx's blob hashes: never public text, so a public text
    that quotes one never makes it allowed (it must stay forbidden)."""
    n = len(string)
    if n == 64:
        return not string.strip(_HEX_DIGITS)
    return n == 71 and string.startswith("sha256:") and not string[7:].strip(_HEX_DIGITS)


def blob_hashes(strings: Iterable[str]) -> set[str]:
    """The `strings` that are blob hashes (`blob_hash`), their length looked at first: that
    spares a call for each of the tens of thousands of other strings."""
    return {s for s in strings if (len(s) == 64 or len(s) == 71) and blob_hash(s)}


def found_in(strings: Iterable[str], texts: Iterable[str]) -> set[str]:
    """The `strings` that occur inside any of `texts` (one Aho-Corasick pass).

    Cheap filters first, so the automaton holds only strings that can occur: a string of three
    or more words occurs in a text only if its inner words are whole words of it; loopx's own
    blob hashes are never public text (and must stay forbidden). A string holding the NUL
    that joins the texts for the pass is looked for in each text by itself (never across two)."""
    texts = list(texts)
    words: set[str] = set()
    for text in texts:
        words.update(text.split())
    patterns = []
    joined: set[str] = set()
    for candidate in set(strings):
        if blob_hash(candidate):
            continue
        if candidate.count(" ") >= 2 and not words.issuperset(candidate.split()[1:-1]):
            continue
        if "\x00" in candidate:
            if any(candidate in text for text in texts):
                joined.add(candidate)
            continue
        patterns.append(candidate)
    patterns.sort()
    haystack = "\x00".join(texts)
    if not patterns or not haystack:
        return joined
    automaton = ahocorasick_rs.AhoCorasick(
        patterns, implementation=ahocorasick_rs.Implementation.ContiguousNFA
    )
    try:
        hits = automaton.find_matches_as_indexes(haystack, overlapping=True)
    except UnicodeEncodeError:  # a lone surrogate somewhere: fall back to plain search
        return joined | {p for p in patterns if p in haystack}
    return joined | {patterns[index] for index, _, _ in hits}


def present(strings: Iterable[str], texts: Iterable[str]) -> set[str]:
    """The `strings` that occur in some of `texts` (what a scanner of just those texts needs
    of a large set; no string that occurs is left out). See `Texts.present`."""
    return Texts(texts).present(Needles.of(strings))


#: How many leading characters of a string `Needles` puts in its automaton: short enough that
#: tens of thousands of strings share few states (a fraction of the cost of whole strings),
#: long enough that few places of ordinary text start like one.
NEEDLE_PREFIX = 16
_GROUP_WORK = 4096  # windows one prefix may cost before its group gets an automaton instead


class Needles:
    """A large set of strings prepared once to tell which of them occur in some texts
    (`Texts.present`); its owner keeps it with the set (see `Forbidden.within`).

    loopx's blob hashes are set apart (they are found through the texts' runs of hex
    digits); the other strings, as the scanner reads them (lone surrogates as U+FFFD), are
    kept sorted, and an automaton over their first `NEEDLE_PREFIX` characters is built on
    first use: a string occurs where its prefix does and the text there goes on as it does."""

    def __init__(self, digests: frozenset[str], refs: frozenset[str], others: Iterable[str]):
        """The set's blob hashes as their 64 digits: `digests` as they are, `refs` in their
        ``sha256:`` form (both checked, once when they are the same set: a string taken for
        one is looked for only in runs of hex digits); `others`: the rest."""
        if not (hex_digests(digests) and (refs is digests or hex_digests(refs))):
            raise ValueError("not blob hashes")
        self.digests, self.refs = digests, refs
        rest = set(others)
        # Read as the scanner reads them; `sources` maps a cleaned form back to the strings
        # that read as it (only where cleaning changed something).
        self.sources: dict[str, list[str]] = {}
        if not "".join(rest).isascii():
            for string in [s for s in rest if not s.isascii()]:
                cleaned = _clean(string)
                if cleaned != string:
                    rest.discard(string)
                    self.sources.setdefault(cleaned, []).append(string)
        self.both = frozenset(c for c in self.sources if c in rest)  # also a string itself
        self.empty = "" in rest or "" in self.sources  # occurs in every text
        self.others = sorted(others)  # already sorted (a memo's list): a linear pass
        ordered = self.others if not self.sources else sorted(rest | set(self.sources))
        self.ordered = ordered[1:] if ordered[:1] == [""] else ordered
        self._prefixes: list[str] | None = None
        self._automaton: Any = None

    @classmethod
    def of(cls, strings: Iterable[str]) -> Needles:
        strings = set(strings)
        hashes = blob_hashes(strings)
        digests = frozenset(h for h in hashes if len(h) == 64)
        refs = frozenset(h[7:] for h in hashes if len(h) == 71)
        return cls(digests, refs, strings - hashes)

    def strings(self) -> frozenset[str]:
        """Every string of the set."""
        return self.digests.union(map("sha256:".__add__, self.refs), self.others)

    def grown(self, strings: Iterable[str]) -> Needles:
        """These needles and `strings` (only the new strings are told apart)."""
        added = Needles.of(set(strings) - self.strings())
        return Needles(
            self.digests | added.digests, self.refs | added.refs, self.others + added.others
        )

    def automaton(self) -> tuple[list[str], Any]:
        """The strings' distinct prefixes (sorted, as `ordered` is) and their automaton."""
        if self._prefixes is None:
            self._prefixes = list(dict.fromkeys(s[:NEEDLE_PREFIX] for s in self.ordered))
            if self._prefixes:
                self._automaton = ahocorasick_rs.AhoCorasick(
                    self._prefixes, implementation=ahocorasick_rs.Implementation.ContiguousNFA
                )
        return self._prefixes, self._automaton

    def group(self, prefix: str) -> list[str]:
        """The strings that begin with `prefix` (adjacent in `ordered`)."""
        ordered = self.ordered
        lo = hi = bisect_left(ordered, prefix)
        while hi < len(ordered) and ordered[hi].startswith(prefix):
            hi += 1
        return ordered[lo:hi]

    def originals(self, found: Iterable[str]) -> set[str]:
        """The strings of the set that read as the strings `found`."""
        out: set[str] = set()
        for string in found:
            sources = self.sources.get(string)
            if sources is None:
                out.add(string)
                continue
            out.update(sources)
            if string in self.both:
                out.add(string)
        return out


class Texts:
    """Some texts read as the scanner reads them (lone surrogates as U+FFFD), prepared once
    to tell which strings of one or more large sets occur in them."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.cleaned = [_clean(t) for t in texts]
        self.haystack = "\x00".join(self.cleaned)
        self.runs = _hex_runs(self.haystack)
        self.longer = [r for r in self.runs if len(r) > 64]

    def present(self, needles: Needles) -> set[str]:
        """The strings of `needles` that occur in some of the texts: each blob hash looked up
        in the texts' runs of hex digits, the other strings found where their prefix occurs
        (one automaton pass) and the text there reads as the whole string."""
        found = self._hashes(needles.digests, needles.refs)
        if needles.empty and self.cleaned:
            found.update(needles.originals([""]))
        prefixes, automaton = needles.automaton()
        haystack = self.haystack
        if automaton is None or not haystack:
            return found
        starts: dict[int, list[int]] = {}
        for index, start, _ in automaton.find_matches_as_indexes(haystack, overlapping=True):
            starts.setdefault(index, []).append(start)
        hits: set[str] = set()
        for index, at in starts.items():
            group = needles.group(prefixes[index])
            lengths = {len(s) for s in group}
            if len(at) * len(lengths) > _GROUP_WORK:  # many places, many lengths
                hits.update(_occurring(group, haystack))
                continue
            members = set(group)
            for start in at:
                for size in lengths:
                    window = haystack[start : start + size]
                    if window in members:
                        hits.add(window)
        found.update(needles.originals(hits))
        return found

    def _hashes(self, digests: AbstractSet[str], refs: AbstractSet[str]) -> set[str]:
        """The blob hashes of `digests` and `refs` (their ``sha256:`` forms) in the texts:
        their 64 digits are 64 digits of a run of hex digits, and the ``sha256:`` form is in
        a text as it is."""
        inside: set[str] = set()
        windows = sum(len(r) - 63 for r in self.runs)
        if windows <= len(digests) + len(refs):  # few runs (the usual case): look each up
            for run in self.runs:
                for i in range(len(run) - 63):
                    digits = run[i : i + 64]
                    if digits in digests:
                        inside.add(digits)
                    if digits in refs:
                        inside.add("sha256:" + digits)
        else:
            runs, longer = self.runs, self.longer

            def occurs(digits: str) -> bool:
                return digits in runs or any(digits in r for r in longer)

            inside.update(d for d in digests if occurs(d))
            inside.update("sha256:" + r for r in refs if occurs(r))
        return {h for h in inside if len(h) == 64 or any(h in t for t in self.cleaned)}


def _occurring(strings: list[str], haystack: str) -> set[str]:
    """The `strings` that occur in `haystack` (one automaton pass)."""
    automaton = ahocorasick_rs.AhoCorasick(
        strings, implementation=ahocorasick_rs.Implementation.ContiguousNFA
    )
    return {strings[i] for i, _, _ in automaton.find_matches_as_indexes(haystack, overlapping=True)}


def _clean(text: str) -> str:
    if text.isascii():
        return text
    try:
        text.encode("utf-8")  # in C: only a lone surrogate fails
    except UnicodeEncodeError:
        return _SURROGATES.sub("\ufffd", text)
    return text


# Hex digits as b"x", every other byte as b" ": a run of 64 or more digits is found by
# `bytes.find` (in C) instead of a regex tried at every character.
_HEX_MASK = bytes(ord("x") if chr(b) in _HEX_DIGITS else ord(" ") for b in range(256))
_RUN = b"x" * 64


def _hex_runs(text: str) -> set[str]:
    """Every maximal run of at least 64 lowercase hex digits in `text`."""
    mask = text.encode("ascii", "replace").translate(_HEX_MASK)  # one byte per character
    runs: set[str] = set()
    start = mask.find(_RUN)
    while start != -1:
        end = mask.find(b" ", start + 64)
        end = len(mask) if end == -1 else end
        runs.add(text[start:end])
        start = mask.find(_RUN, end)
    return runs
