"""Every canary is found in every encoding, redacted with its kind, and never echoed in a report."""

from __future__ import annotations

import json

import pytest
from privacy_canaries import ENCODERS, Canary, all_canaries, plant

from loopx.privacy.redact import redact
from loopx.privacy.rules import CREDENTIAL_KINDS, PERSONAL_KINDS
from loopx.privacy.scanner import Scanner

CANARIES = all_canaries()
SCANNER = Scanner(machine=False)


def _id(canary: Canary) -> str:
    return f"{canary.kind}:{canary.text[:12]}"


def test_corpus_covers_every_rule_kind() -> None:
    kinds = {c.kind for c in CANARIES}
    assert len(set(CREDENTIAL_KINDS)) >= 30
    assert set(CREDENTIAL_KINDS) <= kinds
    assert set(PERSONAL_KINDS) - {"username", "hostname"} <= kinds


@pytest.mark.parametrize("encoding", sorted(ENCODERS))
@pytest.mark.parametrize("canary", CANARIES, ids=_id)
def test_canary_found_redacted_and_never_echoed(canary: Canary, encoding: str) -> None:
    reported, encode = ENCODERS[encoding]
    doc = plant(encode(canary.text))
    findings = SCANNER.scan_text(doc, path="site/status.json")

    mine = [f for f in findings if f.kind == canary.kind]
    assert mine, f"{canary.kind} not found in {encoding} form"
    assert {f.encoding for f in mine} & {"plain", reported}
    report = json.dumps([f.to_dict() for f in findings])
    assert canary.secret not in report
    assert encode(canary.secret) not in report

    redacted, counts = redact(doc)
    assert counts.get(canary.kind, 0) >= 1
    assert f"[redacted:{canary.kind}]" in redacted
    assert canary.secret not in redacted
    assert encode(canary.secret) not in redacted


@pytest.mark.parametrize("canary", CANARIES, ids=_id)
def test_redacted_text_scans_clean(canary: Canary) -> None:
    redacted, _ = redact(plant(canary.text))
    assert SCANNER.scan_text(redacted) == []
    assert redact(redacted) == (redacted, {})


def test_finding_positions_point_at_the_secret() -> None:
    text = "line one\nsecond line with ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6 end\n"
    (finding,) = SCANNER.scan_text(text, path="a/b.txt")
    assert finding.to_dict() == {
        "kind": "github-token",
        "path": "a/b.txt",
        "line": 2,
        "column": 18,
        "offset": text.index("ghp_"),
        "encoding": "plain",
    }
