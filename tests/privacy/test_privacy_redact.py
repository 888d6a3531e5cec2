"""Redaction: typed markers, counts per kind, merged overlaps, machine-independent by default."""

from __future__ import annotations

import pytest

from loopx.privacy import scanner as scanner_module
from loopx.privacy.redact import marker, redact
from loopx.privacy.scanner import Scanner

TOKEN = "gh" + "p_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"


def test_replaces_each_span_and_counts_by_kind() -> None:
    text = f"token {TOKEN}, mail dana@contoso-mail.net and ops@contoso-mail.net from 10.0.0.12"
    redacted, counts = redact(text)
    assert redacted == (
        "token [redacted:github-token], mail [redacted:email] and [redacted:email] "
        "from [redacted:private-ip]"
    )
    assert counts == {"email": 2, "github-token": 1, "private-ip": 1}
    assert list(counts) == sorted(counts)


def test_clean_text_is_returned_unchanged() -> None:
    text = "Fix the build; see https://github.com/org/repo/pull/12 at sha256:" + "ab" * 32
    assert redact(text) == (text, {})


def test_assignments_keep_their_key() -> None:
    assert redact('DB_PASSWORD="Xk29sLq0pWz!"')[0] == 'DB_PASSWORD="[redacted:password-assignment]"'
    assert redact("url postgres://deploy:Xk29sLq0pWz@db.example.org/app")[0] == (
        "url postgres://[redacted:url-password]@db.example.org/app"
    )


def test_specific_rules_win_over_generic_ones() -> None:
    redacted, counts = redact(f"Authorization: Bearer {TOKEN}")
    assert redacted == "Authorization: Bearer [redacted:github-token]"
    assert counts == {"github-token": 1}


def test_overlapping_spans_become_one_marker() -> None:
    key = "-----BEGIN PRIVATE KEY-----\\nMIIEvQ" + "Ab12" * 16 + "\\n-----END PRIVATE KEY-----\\n"
    text = '{"type": "service_account", "private_key": "' + key + '"}'
    redacted, counts = redact(text)
    assert counts == {"gcp-service-account-key": 1}
    assert redacted == (
        '{"type": "service_account", "private_key": "[redacted:gcp-service-account-key]"}'
    )


def test_encoded_secrets_are_redacted_whole() -> None:
    redacted, counts = redact("mail dana%40contoso-mail.net or dana&#64;contoso-mail.net")
    assert redacted == "mail [redacted:email] or [redacted:email]"
    assert counts == {"email": 2}


def test_default_ignores_machine_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner_module.getpass, "getuser", lambda: "dwhitfield")
    assert redact("by dwhitfield") == ("by dwhitfield", {})
    assert redact("by dwhitfield", scanner=Scanner())[0] == "by [redacted:username]"


def test_forbidden_strings_need_a_scanner() -> None:
    scanner = Scanner(["team-only objective text"], machine=False)
    text = "goal: team-only objective text!"
    assert redact(text) == (text, {})
    assert redact(text, scanner=scanner) == (
        "goal: [redacted:non-public-text]!",
        {"non-public-text": 1},
    )


def test_marker() -> None:
    assert marker("jwt") == "[redacted:jwt]"
