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
from collections.abc import Iterable

import ahocorasick_rs

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
_HEX_RUN = re.compile(r"[0-9a-f]{64,}")
_SURROGATES = re.compile("[\ud800-\udfff]")


def blob_hash(string: str) -> bool:
    """Whether `string` is one of loopx's blob hashes: never public text, so a public text
    that quotes one never makes it allowed (it must stay forbidden)."""
    n = len(string)
    if n == 64:
        return not string.strip(_HEX_DIGITS)
    return n == 71 and string.startswith("sha256:") and not string[7:].strip(_HEX_DIGITS)


def found_in(strings: Iterable[str], texts: Iterable[str]) -> set[str]:
    """The `strings` that occur inside any of `texts` (one Aho-Corasick pass).

    Cheap filters first, so the automaton holds only strings that can occur: a string of three
    or more words occurs in a text only if its inner words are whole words of it; loopx's own
    blob hashes are never public text (and must stay forbidden)."""
    texts = list(texts)
    words: set[str] = set()
    for text in texts:
        words.update(text.split())
    patterns = []
    for candidate in set(strings):
        if blob_hash(candidate):
            continue
        if candidate.count(" ") >= 2 and not words.issuperset(candidate.split()[1:-1]):
            continue
        patterns.append(candidate)
    patterns.sort()
    haystack = "\x00".join(texts)
    if not patterns or not haystack:
        return set()
    automaton = ahocorasick_rs.AhoCorasick(
        patterns, implementation=ahocorasick_rs.Implementation.ContiguousNFA
    )
    try:
        hits = automaton.find_matches_as_indexes(haystack, overlapping=True)
    except UnicodeEncodeError:  # a lone surrogate somewhere: fall back to plain search
        return {p for p in patterns if p in haystack}
    return {patterns[index] for index, _, _ in hits}


def present(strings: Iterable[str], texts: Iterable[str]) -> set[str]:
    """The `strings` that occur in some of `texts` (what a scanner of just those texts needs
    of a large set; no string that occurs is left out). See `Texts.present`."""
    return Texts(texts).present(strings)


class Texts:
    """Some texts read as the scanner reads them (lone surrogates as U+FFFD), prepared once
    to tell which strings of one or more large sets occur in them."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.cleaned = [_clean(t) for t in texts]
        self.words: set[str] = set()
        self.runs: set[str] = set()
        for text in self.cleaned:
            self.words.update(text.split())
            self.runs.update(_HEX_RUN.findall(text))
        self.longer = [r for r in self.runs if len(r) > 64]
        self.haystack = "\x00".join(self.cleaned)

    def present(self, strings: Iterable[str]) -> set[str]:
        """The `strings` that occur in some of the texts.

        A blob hash occurs only inside a run of hex digits of the texts, and a string of three
        or more words only where its inner words are whole words of the texts; the other
        strings are matched in one Aho-Corasick pass."""
        strings = set(strings)
        hashes = {s for s in strings if len(s) in (64, 71) and blob_hash(s)}  # all ASCII
        found = self._hashes(hashes)
        patterns: dict[str, list[str]] = {}
        cleaned, words, haystack = self.cleaned, self.words, self.haystack
        for string in strings - hashes:
            candidate = string if string.isascii() else _clean(string)
            if not candidate:  # in every text
                if cleaned:
                    found.add(string)
                continue
            if candidate.count(" ") >= 2 and not words.issuperset(candidate.split()[1:-1]):
                continue
            patterns.setdefault(candidate, []).append(string)
        if patterns and haystack:
            ordered = sorted(patterns)
            automaton = ahocorasick_rs.AhoCorasick(
                ordered, implementation=ahocorasick_rs.Implementation.ContiguousNFA
            )
            for index, _, _ in automaton.find_matches_as_indexes(haystack, overlapping=True):
                found.update(patterns[ordered[index]])
        return found

    def _hashes(self, hashes: set[str]) -> set[str]:
        """The blob hashes of `hashes` in the texts: their 64 digits are 64 digits of a run
        of hex digits, and the `sha256:` form is in a text as it is."""
        windows = sum(len(r) - 63 for r in self.runs)
        if windows <= len(hashes):  # few runs (the usual case): look each window up
            inside: set[str] = set()
            for run in self.runs:
                for i in range(len(run) - 63):
                    digits = run[i : i + 64]
                    inside.update(h for h in (digits, "sha256:" + digits) if h in hashes)
        else:
            inside = {
                h for h in hashes if h[-64:] in self.runs or any(h[-64:] in r for r in self.longer)
            }
        return {h for h in inside if len(h) == 64 or any(h in t for t in self.cleaned)}


def _clean(text: str) -> str:
    return text if text.isascii() else _SURROGATES.sub("\ufffd", text)
