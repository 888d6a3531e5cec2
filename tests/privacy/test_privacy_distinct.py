"""Which non-public strings are forbidden in public output: the distinctive ones only."""

from __future__ import annotations

from benign_corpus import OVERLAPS

from loopx.privacy.distinct import distinctive_id, distinctive_text, found_in


def test_distinctive_text() -> None:
    assert distinctive_text("Release 2.4.1")  # two words, 12+ characters
    assert distinctive_text("sha256:" + "ab" * 32)
    assert distinctive_text("supercalifragilistic")  # one word of 16+
    assert not distinctive_text("Fix tests")  # too short
    assert not distinctive_text("refactoring")  # one short word
    assert not distinctive_text("   Release  ")


def test_distinctive_id() -> None:
    assert distinctive_id("todo-17") and distinctive_id("vendor_deal") and distinctive_id("t3")
    assert distinctive_id("supercalifragilistic")
    assert not distinctive_id("refactor") and not distinctive_id("cleanup")


def test_team_text_inside_public_text_is_already_public() -> None:
    team = [t for t, _ in OVERLAPS] + ["Quietly renegotiate the vendor contract"]
    public = [p for _, p in OVERLAPS]
    assert found_in(team, public) == {t for t, _ in OVERLAPS}


def test_hashes_stay_forbidden_even_inside_public_text() -> None:
    ref = "sha256:" + "cd" * 32
    assert found_in([ref, ref[7:]], [f"see {ref}"]) == set()
