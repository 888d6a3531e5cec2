"""Scanner behaviour: forbidden strings, machine names, decoded views, files and folders."""

from __future__ import annotations

import base64
import html
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from privacy_canaries import html_all, json_all

from loopx.model.errors import NotFound, TooLarge, UnsafePath
from loopx.privacy import scanner as scanner_module
from loopx.privacy.allowed import Allowance
from loopx.privacy.redact import redact
from loopx.privacy.scanner import MIN_FORBIDDEN_LENGTH, Finding, Scanner, scan_paths

PRIVATE_HASH = "sha256:" + "3c" * 32
FORBIDDEN = ["team-only objective text", PRIVATE_HASH]

ENCODINGS = {
    "plain": lambda s: s,
    "json": lambda s: json.dumps({"objective": s}),
    "json-all": json_all,
    "html": html.escape,
    "html-all": html_all,
    "url": lambda s: quote(s, safe=""),
    "url-plus": lambda s: "https://example.com/search?q=" + quote_plus(s),
}


@pytest.mark.parametrize("name", sorted(ENCODINGS))
@pytest.mark.parametrize("secret", FORBIDDEN)
def test_forbidden_strings_found_in_every_encoding(secret: str, name: str) -> None:
    doc = f"<p>Public summary.</p>\n<p>{ENCODINGS[name](secret)}</p>\n"
    findings = Scanner(FORBIDDEN, machine=False).scan_text(doc, path="index.html")
    assert [f.kind for f in findings] == ["non-public-text"]
    assert findings[0].line == 2
    assert secret not in json.dumps(findings[0].to_dict())


def test_forbidden_strings_shorter_than_the_minimum_are_ignored() -> None:
    short = "x" * (MIN_FORBIDDEN_LENGTH - 1)
    scanner = Scanner([short, "abc", ""], machine=False)
    assert scanner.scan_text(f"a {short} abc b") == []
    exact = "y" * MIN_FORBIDDEN_LENGTH
    assert [f.kind for f in Scanner([exact], machine=False).scan_text(f"a {exact}")] == [
        "non-public-text"
    ]


def test_forbidden_text_is_case_sensitive_and_found_inside_words() -> None:
    scanner = Scanner(["Secret Plan"], machine=False)
    assert scanner.scan_text("the secret plan") == []
    assert [f.offset for f in scanner.scan_text("xSecret Plans")] == [1]


def test_forbidden_ids_only_match_whole_ids() -> None:
    scanner = Scanner(forbidden_ids=["todo-17"], machine=False)
    assert scanner.scan_text("see todo-170 and xtodo-17") == []
    doc = "link todos/todo-17.html and (todo-17)"
    found = scanner.scan_text(doc)
    assert [(f.kind, f.offset) for f in found] == [
        ("non-public-id", doc.index("todo-17")),
        ("non-public-id", doc.rindex("todo-17")),
    ]


def test_every_occurrence_is_reported_once() -> None:
    doc = "team-only objective text, again team-only objective text"
    findings = Scanner(FORBIDDEN, machine=False).scan_text(doc)
    assert [f.offset for f in findings] == [0, 32]


def test_machine_names_found_as_whole_words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner_module.getpass, "getuser", lambda: "dwhitfield")
    monkeypatch.setattr(scanner_module, "_hostname", lambda: "Dana-ThinkPad.corp.local")
    scanner = Scanner()
    doc = "built by dwhitfield on dana-thinkpad; dwhitfields and Dana-ThinkPad.corp.local"
    kinds = [(f.kind, f.offset) for f in scanner.scan_text(doc)]
    assert kinds == [
        ("username", doc.index("dwhitfield")),
        ("hostname", doc.index("dana-thinkpad")),
        ("hostname", doc.index("Dana-ThinkPad")),
    ]
    assert Scanner(machine=False).scan_text(doc) == []
    assert Scanner(allow=["dwhitfield"]).scan_text("by dwhitfield") == []
    redacted, counts = redact("by dwhitfield", scanner=scanner)
    assert redacted == "by [redacted:username]"
    assert counts == {"username": 1}


def test_trivial_machine_names_are_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner_module.getpass, "getuser", lambda: "root")
    monkeypatch.setattr(scanner_module, "_hostname", lambda: "localhost")
    assert Scanner().scan_text("root on localhost; the runner user") == []
    monkeypatch.setattr(scanner_module.getpass, "getuser", lambda: "bob")
    monkeypatch.setattr(scanner_module, "_hostname", lambda: "vm")
    assert Scanner().scan_text("bob on vm") == []
    # a home path still gives a trivial name away
    assert [f.kind for f in Scanner().scan_text("cd /home/bob/app")] == ["home-path"]


def test_machine_name_lookup_failure_is_harmless(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail() -> str:
        raise KeyError("no passwd entry")

    monkeypatch.setattr(scanner_module.getpass, "getuser", fail)
    assert Scanner().scan_text("plain words") == []


def test_positions_in_decoded_views_point_at_the_raw_escape() -> None:
    doc = 'line\n{"a": "x", "b": "mail d.whitfield\\u0040contoso-mail.net"}'
    (finding,) = Scanner(machine=False).scan_text(doc)
    assert finding.kind == "email"
    assert finding.encoding == "json"
    assert finding.offset == doc.index("d.whitfield")
    assert (finding.line, finding.column) == (2, doc.index("d.whitfield") - 5 + 1)


def test_escape_at_the_start_of_a_match_maps_to_the_escape() -> None:
    doc = "x &#116;eam-only objective text y"
    (finding,) = Scanner(FORBIDDEN, machine=False).scan_text(doc)
    assert (finding.offset, finding.encoding) == (2, "html")
    redacted, counts = redact(doc, scanner=Scanner(FORBIDDEN, machine=False))
    assert redacted == "x [redacted:non-public-text] y"


def test_surrogates_and_odd_text_do_not_break_the_scan() -> None:
    scanner = Scanner(["team-only objective text"], machine=False)
    assert scanner.scan_text("lone \ud800 surrogate") == []
    assert scanner.scan_text("bad escapes \\u12 %zz &#xZZ; &bogus; \\q") == []
    found = scanner.scan_text("\ud800 team-only objective text")
    assert [f.offset for f in found] == [2]
    assert scanner.scan_text("") == []
    odd = Scanner(["odd \udc00 text"], machine=False)
    assert [f.offset for f in odd.scan_text("an odd \udc00 text")] == [3]


def test_scan_bytes_decodes_utf8_with_replacement() -> None:
    data = "café\n".encode() + b"\xff\xfe" + b" mail a.b@contoso-mail.net\n"
    (finding,) = Scanner(machine=False).scan_bytes(data, "x.txt")
    assert (finding.kind, finding.path, finding.line) == ("email", "x.txt", 2)


def test_finding_to_dict_has_no_matched_text() -> None:
    finding = Finding("github-token", "a.json", 1, 2, 1, "plain")
    assert finding.to_dict() == {
        "kind": "github-token",
        "path": "a.json",
        "line": 1,
        "column": 2,
        "offset": 1,
        "encoding": "plain",
    }


def test_scan_paths_is_deterministic_and_reports_paths_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    site = Path("site")
    (site / "b").mkdir(parents=True)
    (site / "a").mkdir()
    (site / "b" / "z.html").write_text("ok\n  mail a.b@contoso-mail.net\n")
    (site / "a" / "y.json").write_text('{"k": "/home/dwhitfield/x"}\n')
    (site / "a" / "clean.txt").write_text("nothing here\n")
    (site / "top.md").write_text("team-only objective text\n")
    (tmp_path / "single.txt").write_text("x\ny\n   10.1.2.3\n")

    scanner = Scanner(FORBIDDEN, machine=False)
    found = scan_paths([Path("single.txt"), site], scanner)
    assert [(f.path, f.kind, f.line, f.column) for f in found] == [
        ("single.txt", "private-ip", 3, 4),
        ("site/a/y.json", "home-path", 1, 8),
        ("site/b/z.html", "email", 2, 8),
        ("site/top.md", "non-public-text", 1, 1),
    ]
    assert scan_paths([site, Path("single.txt")], scanner) == found
    assert (
        scan_paths([tmp_path / "single.txt"], scanner)[0].path
        == (tmp_path / "single.txt").as_posix()
    )


def test_scan_paths_refuses_a_missing_path(tmp_path: Path) -> None:
    with pytest.raises(NotFound) as caught:
        scan_paths([tmp_path / "missing"])
    assert caught.value.code == "path_not_found"


@pytest.mark.parametrize("rules", [True, False])
@pytest.mark.parametrize(
    ("code", "char"), [("#quot;", '"'), ("#lt;", "<"), ("#gt;", ">"), ("#amp;", "&")]
)
def test_text_written_in_mermaid_codes_is_found(code: str, char: str, rules: bool) -> None:
    secret = f"the {char}private{char} launch date moved"
    label = secret.replace(char, code)
    scanner = Scanner([secret], machine=False, rules=rules)
    for page in (f'graph TD\n  a["{label}"]\n', html.escape(f"<pre>{label}</pre>")):
        found = scanner.scan_text(page)
        assert [f.kind for f in found] == ["non-public-text"], page
        assert found[0].encoding.endswith("mermaid")
    assert scanner.scan_text(f'graph TD\n  a["{label.replace(code, "#quote;")}"]\n') == []


_BASE = "launch code alpha bravo charlie delta echo"


@pytest.mark.parametrize("size", [12, 16, 17, 24, 32, 33, 40])
@pytest.mark.parametrize("at", [3, 15, 16, 20, 31, 32, 35])
def test_a_text_with_a_lone_surrogate_is_found_whatever_its_length(size: int, at: int) -> None:
    """A lone surrogate reads as U+FFFD, in the forbidden text and in the scanned text, be it
    in the part of a text the automaton holds or in the part looked up where that matches."""
    if at >= size:
        return
    forbidden = _BASE[:at] + "\ufffd" + _BASE[at + 1 : size]
    scanned = _BASE[:at] + "\udcff" + _BASE[at + 1 : size]
    for text in (forbidden, scanned):
        for rules in (True, False):
            scanner = Scanner([text], machine=False, rules=rules)
            found = scanner.scan_text(f"before {scanned} after")
            assert [(f.kind, f.offset) for f in found] == [("non-public-text", 7)], (text, rules)


def test_an_allowed_text_at_the_end_stays_allowed_beside_a_longer_one_of_its_stem() -> None:
    """Where a text ends the scanned text, no longer text of its stem is taken for found
    there (its window would run past the end): the allow entry of the one found holds."""
    forbidden = ["release-plan-2031-q3", "release-plan-2031-q3-final"]  # one 16-character stem
    allowed = [Allowance("non-public-text", "release-plan-2031-q3")]
    for doc in ("see release-plan-2031-q3", "see release-plan-2031-q3 and more"):
        assert Scanner(forbidden, machine=False, allowed=allowed).hits(doc) == []
    hits = Scanner(forbidden, machine=False).hits("see release-plan-2031-q3")
    assert [(h.start, h.end) for h in hits] == [(4, 24)]


def test_of_two_texts_at_one_raw_place_the_one_found_first_whole_is_kept() -> None:
    """A decoding can make one character of the raw text several (the ligature ﬁ reads as
    fi): two texts starting at one raw place both match; the one whose match ends first is
    kept, as the automaton finds them whole, and redaction covers its span."""
    forbidden = ["final launch plan ", "inal launch plan"]  # 18 and 16 characters
    doc = "x \ufb01nal launch plan for Q3 2031 y"
    hits = Scanner(forbidden, machine=False).hits(doc)
    assert [(h.start, h.end, h.encoding) for h in hits] == [(2, 18, "unicode")]
    text, _ = redact(doc, scanner=Scanner(forbidden, machine=False))
    assert text == "x [redacted:non-public-text] for Q3 2031 y"


def test_a_scanned_file_is_read_whole_and_only_as_a_regular_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = bytes(range(256)) * 40
    (tmp_path / "page.html").write_bytes(data)
    (tmp_path / "empty").write_bytes(b"")
    assert scanner_module.read_scanned(tmp_path / "page.html") == data
    assert scanner_module.read_scanned(tmp_path / "empty") == b""
    (tmp_path / "link").symlink_to(tmp_path / "page.html")
    os.mkfifo(tmp_path / "fifo")  # never waited on
    for name in ("link", "fifo"):
        with pytest.raises(UnsafePath):
            scanner_module.read_scanned(tmp_path / name)
    monkeypatch.setattr(scanner_module, "MAX_SCAN_BYTES", len(data) - 1)
    with pytest.raises(TooLarge):
        scanner_module.read_scanned(tmp_path / "page.html")


@pytest.mark.parametrize("told", [0, 1, 5000, 10239, 10241, 20000])
def test_a_file_whose_size_changed_since_its_fstat_is_read_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, told: int
) -> None:
    data = bytes(range(256)) * 40  # 10,240 bytes; fstat tells `told`
    (tmp_path / "page.html").write_bytes(data)
    real = os.fstat

    def fstat(fd: int) -> os.stat_result:
        st = real(fd)
        return os.stat_result((st.st_mode, *st[1:6], told, *st[7:]))

    monkeypatch.setattr(scanner_module, "_CHUNK", 1000)  # read on in several pieces
    monkeypatch.setattr(scanner_module.os, "fstat", fstat)
    assert scanner_module.read_scanned(tmp_path / "page.html") == data
    monkeypatch.setattr(scanner_module, "MAX_SCAN_BYTES", 10239)  # grew past the cap meanwhile
    if told <= 10239:
        with pytest.raises(TooLarge):
            scanner_module.read_scanned(tmp_path / "page.html")


def test_forbidden_strings_get_their_own_automaton_beside_the_shared_anchors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scanner_module.getpass, "getuser", lambda: "dwhitfield")
    scanner = Scanner(FORBIDDEN, forbidden_ids=["todo-17"])
    assert len(scanner._automata) == 2
    rules_only = Scanner(machine=False)
    assert rules_only._automata == (scanner._automata[1],)  # built once a process
    doc = "team-only objective text by dwhitfield, todo-17, mail a.b@contoso-mail.net"
    assert [f.kind for f in scanner.scan_text(doc)] == [
        "non-public-text",
        "username",
        "non-public-id",
        "email",
    ]


def test_form_encoded_text_is_decoded() -> None:
    scanner = Scanner(FORBIDDEN, machine=False)
    for doc in (
        "https://example.com/search?q=team-only+objective+text",
        "plain words then team-only+objective+text",
        "q=team-only+objective+text%21",
    ):
        assert [(f.kind, f.encoding) for f in scanner.scan_text(doc)] == [
            ("non-public-text", "url")
        ]


def test_generic_findings_yield_to_overlapping_specific_ones() -> None:
    token = "gh" + "p_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
    doc = f"token: {token}\npassword = Xk29sLq0pWz!\n" * 50
    kinds = [f.kind for f in Scanner(machine=False).scan_text(doc)]
    assert kinds == ["github-token", "password-assignment"] * 50


def test_binary_data_is_scanned_for_printable_runs_only() -> None:
    noise = bytes([0, 0x89, 0x7E, 0x52, 0x3B, 0xFF, 0x0F]) + b" ~ab\x00\x01"
    data = noise + b"\x00tEXt Comment=made in /home/dwhitfield/shots\x00" + noise
    (finding,) = Scanner(machine=False).scan_bytes(data, "shot.png")
    assert (finding.kind, finding.offset) == ("home-path", data.index(b"/home/"))
    assert Scanner(machine=False).scan_bytes(noise * 100, "noise.bin") == []


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("notes in ~dana/notes", True),
        ("(~dana/x)", True),
        ("ask ~dana about it", False),
        ("x[~dana]", False),
        ("~/notes and ~ alone", False),
        ("https://example.edu/~dana/", False),
    ],
)
def test_tilde_homes_need_a_user_and_a_path(text: str, found: bool) -> None:
    kinds = [f.kind for f in Scanner(machine=False).scan_text(text)]
    assert kinds == (["home-path"] if found else [])


def test_long_forbidden_texts_match_by_prefix_then_in_full() -> None:
    from loopx.privacy.scanner import PREFIX

    long_a = "The quarterly vendor negotiation notes say we should " + "x" * 40
    long_b = long_a[:PREFIX] + " but a different ending entirely, also long enough"
    scanner = Scanner([long_a, long_b], machine=False)
    assert [f.kind for f in scanner.scan_text(f"see: {long_b}!")] == ["non-public-text"]
    assert scanner.scan_text(f"see: {long_a[:-1]}") == []  # the prefix alone is no finding
    both = scanner.scan_text(f"{long_a} and {long_b}")
    assert [f.offset for f in both] == [0, len(long_a) + 5]
    encoded = scanner.scan_text(long_a.replace(" ", "%20"))
    assert [(f.kind, f.encoding) for f in encoded] == [("non-public-text", "url")]


def test_rules_can_be_left_out_for_an_exact_string_pass() -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    exact = Scanner(["the secret merger plan"], machine=False, rules=False)
    found = exact.scan_text(f"{token} the secret merger plan")
    assert [f.kind for f in found] == ["non-public-text"]


def test_every_rule_regex_compiles_though_only_on_first_use() -> None:
    """The rules' regexes are compiled when a scan first runs them (`Rule.pattern`): each
    must still compile, and a compiled one is kept."""
    from loopx.privacy.rules import RULES

    for rule in RULES:
        assert "pattern" not in rule.__dict__ or rule.pattern is rule.__dict__["pattern"]
        assert rule.pattern.pattern == rule.regex and rule.pattern is rule.pattern


def test_the_base64_table_is_the_one_the_rules_make() -> None:
    """`loopx/privacy/b64table.py` is generated from the rule anchors; out of date, it is
    not used (the segments are worked out), and this test says to make it again."""
    from loopx.privacy import b64table, views

    assert (Path(b64table.__file__).read_text("utf-8")) == views.table_source(), (
        'regenerate: python -c "from loopx.privacy.views import table_source as t; '
        "print(t(), end='')\" > loopx/privacy/b64table.py"
    )
    words = views._anchor_words()
    assert views.base64_segments() == views.segments_of(words)


def test_a_stale_base64_table_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    from loopx.privacy import b64table, views

    monkeypatch.setattr(b64table, "SEGMENTS", "c2VjcmV0")
    views.base64_segments.cache_clear()
    try:
        assert views.base64_segments() == ("c2VjcmV0",)  # trusted while its digest fits
        monkeypatch.setattr(b64table, "WORDS", "0" * 64)
        views.base64_segments.cache_clear()
        assert views.base64_segments() == views.segments_of(views._anchor_words())
    finally:
        views.base64_segments.cache_clear()


def test_rule_anchors_tag_each_anchor_with_every_rule_it_gates() -> None:
    """The anchor table (base64 segments tagged in one go) is what tagging every anchor of
    every rule and every segment one by one makes."""
    from loopx.privacy import scanner
    from loopx.privacy.rules import RULES
    from loopx.privacy.views import base64_segments

    expected: dict[str, set[int]] = {}
    for number, rule in enumerate(RULES):
        for anchor in rule.anchors:
            expected.setdefault(anchor, set()).add(number)
    for segment in base64_segments():
        expected.setdefault(segment, set()).add(len(RULES))
    table = scanner._rule_anchors()
    assert table == {a: tuple(sorted(n)) for a, n in expected.items()}


def test_this_hosts_name_is_the_one_the_socket_library_gives() -> None:
    import socket

    assert scanner_module._hostname() == socket.gethostname()


def test_a_scanner_of_many_strings_reads_each_text_once_and_finds_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A scanner of `COMBINED_FROM` strings or more has one automaton of its strings and the
    rule anchors (a build's, a scan's of a whole partition): the same hits, rules, strings,
    ids and decodings alike, as the two automata of a smaller one."""
    from privacy_canaries import all_canaries

    canaries = all_canaries()
    forbidden = [f"team-only objective number {n} of the project" for n in range(40)]
    ids = [f"todo-{n}" for n in range(40)]
    doc = "\n".join(
        [c.text for c in canaries]
        + [f"see {forbidden[n]} and todo-{n} and todo-{n}0" for n in range(0, 40, 3)]
        + [base64.b64encode(forbidden[5].encode()).decode(), html.escape(forbidden[7] + " <&>")]
    )

    def hits(combined_from: int) -> list[Any]:
        monkeypatch.setattr(scanner_module, "COMBINED_FROM", combined_from)
        scanner = Scanner(forbidden, forbidden_ids=ids, machine=False)
        assert len(scanner._automata) == (1 if combined_from <= 80 else 2)
        return scanner.hits(doc)

    together, apart = hits(1), hits(10**9)
    assert together == apart
    assert {h.kind for h in apart} >= {"non-public-text", "non-public-id", "github-token"}
