"""Properties: forbidden strings are found wherever and however they are embedded."""

from __future__ import annotations

import html
import json
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from loopx.privacy.redact import redact
from loopx.privacy.scanner import MIN_FORBIDDEN_LENGTH, Scanner


def _words(text: str) -> list[str]:
    return text.split()


WORDS = _words("the agent build page status todo goal review note run gate evidence done open")

forbidden_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")),
    min_size=MIN_FORBIDDEN_LENGTH,
    max_size=40,
)
benign = st.lists(st.sampled_from(WORDS), max_size=30).map(" ".join)


def _offsets(scanner: Scanner, doc: str) -> set[int]:
    return {f.offset for f in scanner.scan_text(doc) if f.kind == "non-public-text"}


@settings(max_examples=200, deadline=None)
@given(secret=forbidden_text, before=benign, after=benign)
def test_forbidden_string_found_in_every_encoding(secret: str, before: str, after: str) -> None:
    scanner = Scanner([secret], machine=False)
    prefix = before + " "
    doc = prefix + secret + " " + after

    assert len(prefix) in _offsets(scanner, doc)
    # JSON: the string literal starts with a quote, so the secret starts one char further on
    assert len(json.dumps(prefix)) - 1 in _offsets(scanner, json.dumps(doc))
    assert len(html.escape(prefix)) in _offsets(scanner, html.escape(doc))
    assert len(quote(prefix, safe="")) in _offsets(scanner, quote(doc, safe=""))


@settings(max_examples=100, deadline=None)
@given(secret=forbidden_text, before=benign, after=benign)
def test_redaction_with_a_scanner_removes_the_forbidden_string(
    secret: str, before: str, after: str
) -> None:
    marker = "[redacted:non-public-text]"
    # markers are bracketed, so only a secret with brackets or inside a marker can reappear
    assume("[" not in secret and "]" not in secret and secret not in marker)
    scanner = Scanner([secret], machine=False)
    redacted, counts = redact(f"{before} {secret} {after}", scanner=scanner)
    assert counts.get("non-public-text", 0) >= 1
    assert marker in redacted
    assert secret not in redacted


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=200))
def test_scan_and_redact_never_raise(text: str) -> None:
    scanner = Scanner(["team-only objective text"], machine=False)
    for finding in scanner.scan_text(text):
        assert 0 <= finding.offset <= len(text)
        assert finding.line >= 1 and finding.column >= 1
    redacted, counts = redact(text)
    assert all(n > 0 for n in counts.values())


def _shortest_at_each_start(forbidden: list[str], doc: str) -> set[tuple[int, int]]:
    """The oracle: at each position, the shortest forbidden text that starts there."""
    kept = [f for f in forbidden if len(f) >= MIN_FORBIDDEN_LENGTH]
    spans = set()
    for start in range(len(doc)):
        ends = [start + len(f) for f in kept if doc.startswith(f, start)]
        if ends:
            spans.add((start, min(ends)))
    return spans


# Two letters and a space, so that texts share their first 16 and 32 characters (a stem, a
# prefix) in every way, and are of every length around both.
_AB = st.text(alphabet="ab ", min_size=1, max_size=48)


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(_AB, min_size=1, max_size=12),
    cuts=st.lists(st.integers(min_value=6, max_value=40), max_size=12),
    pieces=st.lists(_AB, max_size=12),
)
def test_every_forbidden_text_is_found_where_it_starts_as_a_naive_search_finds_it(
    texts: list[str], cuts: list[int], pieces: list[str]
) -> None:
    """Texts longer than the automaton's stems (sharing stems, prefixes, or a stem with a
    text of just its length) are found exactly where a naive search finds them, the shortest
    at each start, with rules and without, and whatever the stem's length (16, as a build's
    scanner has it; 32, as the scan of private text has it; one between)."""
    forbidden = texts + [t[:cut] for t in texts for cut in cuts]  # texts that begin others
    doc = "".join(pieces) + "".join(texts[:3])
    expected = _shortest_at_each_start(forbidden, doc)
    for rules, stem in ((False, 16), (True, 16), (False, 32), (True, 32), (False, 23)):
        hits = Scanner(forbidden, machine=False, rules=rules, stem=stem).hits(doc)
        assert {(h.start, h.end) for h in hits if h.kind == "non-public-text"} == expected


@pytest.mark.parametrize("stem", [15, 33])
def test_a_stem_outside_sixteen_to_thirty_two_characters_is_refused(stem: int) -> None:
    with pytest.raises(ValueError, match="stem"):
        Scanner(["a forbidden text of some length"], machine=False, stem=stem)


def _unicode_hint_before(text: str) -> bool:
    """`views._unicode_hint` as it was, with a regex over the whole text (the reference)."""
    import re
    import unicodedata

    from loopx.privacy.views import _FORMAT

    bmp = re.compile(
        "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
        "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]"
    )
    if not unicodedata.is_normalized("NFKC", text) or bmp.search(text) is not None:
        return True
    astral = len(text.encode("utf-16-le", "surrogatepass")) != 2 * len(text)
    return astral and _FORMAT.search(text) is not None


# ASCII, a page's own characters, format characters (BMP and astral), other astral ones,
# combining marks, fullwidth forms and lone surrogates, in any mix.
_MIXED = st.text(
    alphabet=st.one_of(
        st.characters(max_codepoint=0x7F),
        st.sampled_from("·›–é\u0301\u00ad\u200b\u2060\ufeff\U000e0041\U0001d173\U0001f600ｇ"),
        st.characters(),  # anything, lone surrogates included
    ),
    max_size=60,
)


@settings(max_examples=500, deadline=None)
@given(text=_MIXED)
def test_the_unicode_hint_reads_only_the_other_characters_as_a_whole_text_regex_did(
    text: str,
) -> None:
    from loopx.privacy.views import _unicode_hint

    assert _unicode_hint(text) == _unicode_hint_before(text)


# Digits, dots and a few letters around private and public IPv4 addresses (and near misses).
_IPV4ISH = st.lists(
    st.one_of(
        st.sampled_from(
            ["10.", "172.", "172.2", "192.168.", "169.254.", "16.", "31.", "32.", "1", "0."]
        ),
        st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,3}){0,4}", fullmatch=True),
        # any Unicode digit is a digit to the regex: Arabic-Indic, Devanagari, fullwidth
        st.from_regex(r"[0-9\u0660-\u0669\u0966-\u096f\uff10-\uff19]{1,3}", fullmatch=True),
        st.sampled_from([" ", ".", "a", "x10", ":", "/", "-", "\n", "t0110.html"]),
    ),
    max_size=16,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(text=_IPV4ISH)
def test_the_ipv4_rule_tried_at_its_anchors_finds_what_a_search_of_the_text_finds(
    text: str,
) -> None:
    """The private IPv4 rule runs only where one of its anchors starts (every match starts
    with one): the same spans as its regex run over the whole text, and as a scanner finds."""
    from loopx.privacy.rules import RULES

    (rule,) = [r for r in RULES if r.kind == "private-ip" and r.locate is not None]
    anchors = sorted({i for a in rule.anchors for i in _starts(text, a)})
    searched = [
        m.span() for m in rule.pattern.finditer(text) if rule.check is None or rule.check(m)
    ]
    assert list(rule.spans(text, anchors)) == searched
    found = {(h.start, h.end) for h in Scanner(machine=False).hits(text) if h.kind == "private-ip"}
    assert found == set(searched)


def _starts(text: str, sub: str) -> list[int]:
    out, at = [], text.find(sub)
    while at >= 0:
        out.append(at)
        at = text.find(sub, at + 1)
    return out


def _template_pieces() -> Any:
    """Strings cut from the templates' text anywhere (and a little changed), with runs of
    whitespace at their ends or not: what `_Boilerplate.contains` is asked about."""
    from loopx.build.boundary import _Boilerplate

    text = _Boilerplate.get().text
    cut = st.tuples(st.integers(0, len(text) - 1), st.integers(0, 80)).map(
        lambda at: text[at[0] : at[0] + at[1]]
    )
    return st.one_of(
        cut,
        st.tuples(cut, st.sampled_from(["", " ", "x", "\n", "g03-t0112", " A"])).map(
            lambda pair: pair[0] + pair[1]
        ),
        st.tuples(st.sampled_from(["", " ", "x", "\t"]), cut).map(lambda pair: pair[0] + pair[1]),
        st.text(alphabet="ab ", max_size=20),
    )


_WARMED: list[Any] = []


def _warmed_boilerplate() -> Any:
    """One `_Boilerplate` of the templates' text past its first strings (so its lookups are
    built), shared by the examples: each asks with its answers forgotten."""
    from loopx.build.boundary import _FEW_BOILERPLATE, _Boilerplate

    if not _WARMED:
        boilerplate = _Boilerplate(_Boilerplate.get().text)
        for n in range(_FEW_BOILERPLATE + 1):
            boilerplate.contains(f"warm up {n} tokens")
            boilerplate.contains(f"warm-up-token-{n}")
        _WARMED.append(boilerplate)
    _WARMED[0]._seen.clear()
    return _WARMED[0]


@settings(max_examples=300, deadline=None)
@given(strings=st.lists(_template_pieces(), min_size=1, max_size=20))
def test_boilerplate_holds_a_string_exactly_when_the_templates_text_does(
    strings: list[str],
) -> None:
    """Once its lookups are built (past its first few strings), `contains` answers as a
    search of the templates' text does, for every string of two or more tokens, one token
    with whitespace around it, and one token of forbidden length."""
    from loopx.privacy.distinct import MIN_TEXT

    boilerplate = _warmed_boilerplate()
    assert boilerplate._bounds is not None and boilerplate._pieces is not None
    for s in strings:
        tokens = s.split()
        if len(tokens) == 1 and tokens[0] == s and len(s) < MIN_TEXT:
            continue  # a short token is never boilerplate (nor forbidden)
        assert boilerplate.contains(s) == (s in boilerplate.text), repr(s)


@pytest.mark.parametrize(
    "text",
    [
        "host 172.2\u0663.1.1 on page t0110.html",  # an Arabic-Indic digit is a digit to `\d`
        "172.2\u0966.5.7 and 192.168.1.1",
        "10.1.2.3, 172.20.1.1 and 172.31.255.254 but not 172.32.1.1",
    ],
)
def test_the_ipv4_rule_tried_at_its_anchors_finds_every_address_a_search_finds(
    text: str,
) -> None:
    from dataclasses import replace

    from loopx.privacy.rules import RULES

    (rule,) = [r for r in RULES if r.kind == "private-ip" and r.locate is not None]
    searched = list(replace(rule, locate=None).spans(text))
    assert searched  # each holds a private address
    found = {(h.start, h.end) for h in Scanner(machine=False).hits(text) if h.kind == "private-ip"}
    assert found == set(searched)


def _positional_text(anchors: list[str]) -> Any:
    """Text made of a rule's anchors and what lies around secrets: ASCII and other digits,
    letters, separators, keywords."""
    pieces = [
        "0123456789",
        "abcdefXYZ",
        "\u0663\u0966\uff11",  # digits `\\d` takes that are not ASCII
        "|",
        "%7C",
        " ",
        "@",
        ".",
        "-",
        "_",
        ":",
        "/",
        "=",
        "\n",
        "~",
        "token",
        "password",
        "https://",
        "user:pass@",
    ]
    run = st.sampled_from(pieces).flatmap(
        lambda chars: st.text(alphabet=chars, min_size=1, max_size=20)
    )
    return st.lists(st.one_of(st.sampled_from(anchors), run), min_size=1, max_size=12).map("".join)


def _rules_tried_at_anchors() -> list[Any]:
    from loopx.privacy.rules import RULES

    return [r for r in RULES if r.locate is not None]


@pytest.mark.parametrize("rule", _rules_tried_at_anchors(), ids=lambda r: r.kind)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_a_rule_tried_at_its_anchors_finds_all_a_search_of_the_whole_text_finds(
    rule: Any, data: Any
) -> None:
    """Every positional rule (tried only around its anchors) finds at least each span its
    regex finds over the whole text: trying it at every anchor may add an overlapping span,
    never leave one out."""
    from dataclasses import replace

    text = data.draw(_positional_text(list(rule.anchors)))
    starts = sorted({i for a in rule.anchors for i in _starts(text, a)})
    searched = set(replace(rule, locate=None).spans(text))
    assert searched <= set(rule.spans(text, starts))


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("\u0663" * 15 + "|aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC", False),  # Arabic-Indic digits
        ("x" + "\u0966" * 16 + "%7CaB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1", False),  # Devanagari
        ("1234567890123456|aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC", True),  # an app id, its secret
    ],
)
def test_the_app_token_rule_reads_the_digits_its_anchors_walk_back_over(
    text: str, token: bool
) -> None:
    """An app token is ASCII digits, a `|` and its secret: the digits the rule's regex takes
    are those it walks back over from the `|` (any Unicode digit was taken by the regex
    over the whole text, and missed where the rule is tried)."""
    from dataclasses import replace

    from loopx.privacy.rules import RULES

    (rule,) = [r for r in RULES if r.kind == "facebook-access-token"]
    starts = sorted({i for a in rule.anchors for i in _starts(text, a)})
    found = set(rule.spans(text, starts))
    assert set(replace(rule, locate=None).spans(text)) <= found
    assert bool(found) is token
