"""Issue 13's misses: each a value that once reached public output unredacted.

Values are assembled at run time so no live-looking secret sits in the source verbatim.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import quote

import pytest

from loopx.privacy.redact import redact
from loopx.privacy.scanner import Scanner
from tests.conftest import run_cli

SCANNER = Scanner(machine=False)
HEX40 = "9f3c" * 10
GITLAB = "gl" + "pat-" + "BwNWujhYhjUs__RY_zrJ"
GITHUB = "gh" + "p_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"


def _kinds(text: str) -> set[str]:
    return {f.kind for f in SCANNER.scan_text(text)}


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        (f"token {GITLAB} here", GITLAB, "gitlab-token"),
        ('password = "#0kN3SqVXxkwE9htvwAj"', "#0kN3SqVXxkwE9htvwAj", "password-assignment"),
        ('password = "ZmAHGBDtcGcwTSvOQOsB"', "ZmAHGBDtcGcwTSvOQOsB", "password-assignment"),
        ("DB_PASSWORD=@Wq8xLm2Rt6Zp", "@Wq8xLm2Rt6Zp", "password-assignment"),
        ("pwd: %Tz7Yq2Lm9Vw4Kx", "%Tz7Yq2Lm9Vw4Kx", "password-assignment"),
        ("secret = $Xk9mQ2vL7pR4tZ8wYb", "$Xk9mQ2vL7pR4tZ8wYb", "secret-assignment"),
        (
            "postgresql://deploy:Xk9mQ2vL7pR4tZ8w/Q@db.example.com/prod",
            "Xk9mQ2vL7pR4tZ8w",
            "url-password",
        ),
        ("redis://:Pq7#Lm2Vx9Tz4@cache.corp.net:6379", "Lm2Vx9Tz4", "url-password"),
        (f"https://{HEX40}@github.com/org/repo.git", HEX40, "url-token-user"),
        ("https://Xk9mQ2vL7pR4tZ8wYbNc@gitlab.com/org/repo.git", "Xk9mQ2vL7pR4tZ8wYbNc", ""),
        ("mail dana.whitfield [at] corp.com today", "dana.whitfield", "email"),
        ("mail dana (at) corp (dot) com today", "dana", "email"),
    ],
)
def test_miss_is_found_and_redacted(text: str, secret: str, kind: str) -> None:
    kinds = _kinds(text)
    assert kinds, text
    if kind:
        assert kind in kinds
    redacted, counts = redact(text)
    assert secret not in redacted
    assert counts


@pytest.mark.parametrize("mark", ["\u200b", "\u200d", "\u00ad", "\u2060", "\ufeff"])
def test_format_characters_inside_a_token(mark: str) -> None:
    hidden = GITHUB[:10] + mark + GITHUB[10:20] + mark + GITHUB[20:]
    for doc in (
        f"token {hidden} end",
        json.dumps({"t": hidden}),
        json.dumps({"t": hidden}, ensure_ascii=False),
    ):
        assert "github-token" in _kinds(doc), repr(doc)
        redacted, _ = redact(doc)
        assert GITHUB[12:] not in redacted.replace(mark, "")


def test_fullwidth_forms_are_normalised() -> None:
    wide = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in GITHUB)
    assert "github-token" in _kinds(f"token {wide} end")
    redacted, counts = redact(f"token {wide} end")
    assert counts == {"github-token": 1}
    assert redacted == "token [redacted:github-token] end"


def test_double_url_encoding() -> None:
    doc = "next=" + quote(GITHUB.replace("_", "%5F"), safe="")
    assert "%255F" in doc
    assert "github-token" in _kinds(doc)
    assert GITHUB[4:] not in redact(doc)[0]


def test_base64_of_a_token() -> None:
    encoded = base64.b64encode(f"auth {GITHUB}".encode()).decode()
    doc = f"blob {encoded} end"
    assert "github-token" in _kinds(doc)
    assert encoded not in redact(doc)[0]
    urlsafe = base64.urlsafe_b64encode(GITHUB.encode()).decode().rstrip("=")
    assert "github-token" in _kinds(f"x {urlsafe} y")


def test_base64_of_plain_words_and_hex_is_left_alone() -> None:
    for text in ("sha256:" + "ab" * 32, "dGhpcyBpcyBhIHBsYWluIHNlbnRlbmNlLCBub3RoaW5nIG1vcmU="):
        assert _kinds(text) == set()


def test_format_class_is_every_format_character() -> None:
    import unicodedata

    from loopx.privacy.views import _FORMAT

    every = [chr(i) for i in range(0x110000) if unicodedata.category(chr(i)) == "Cf"]
    assert all(_FORMAT.match(c) for c in every)
    assert not _FORMAT.search("plain ascii and \u00e9\u4e2d")
    # The fast path (the class over the text's non-ASCII characters only) agrees.
    from loopx.privacy.views import _unicode_hint

    for c in every:
        assert _unicode_hint(f"plain {c} text"), hex(ord(c))
        assert _unicode_hint(f"\U0001f600 {c} text"), hex(ord(c))
    assert not _unicode_hint("plain \u00e9 and \U0001f600, no format character")


def test_repository_token_and_quota_unit_never_reach_public_output(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    assert run_cli(["init", "--root", str(root)]).exit_code == 0
    repo = f"https://{HEX40}@github.com/org/repo.git"
    created = run_cli(
        ["goal", "create", "--root", str(root), "--goal-id", "g", "--title", "Public goal",
         "--objective", "Ship it", "--visibility", "public", "--repository", repo]
    )  # fmt: skip
    assert created.exit_code == 0, created.stderr
    unit = GITLAB
    quota = run_cli(
        ["quota", "set", "--root", str(root), "--goal-id", "g", "--budget", "5", "--unit", unit]
    )
    assert quota.exit_code == 0, quota.stderr
    out = tmp_path / "site"
    built = run_cli(["build", "--root", str(root), "--out", str(out), "--audience", "public"])
    assert built.exit_code == 0, built.stderr
    status = json.loads((out / "public/goals/g/status.json").read_text())
    assert (
        status["goal"]["repository"] == "https://[redacted:url-token-user]@github.com/org/repo.git"
    )
    assert status["quota"]["unit"] == "[redacted:gitlab-token]"
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_text(errors="replace")
            assert HEX40 not in data and GITLAB not in data
