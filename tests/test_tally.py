"""The forbidden set kept by counts (`loopx.build.tally`): advanced after goals change, it is
the full merge of every goal's strings, whatever changed."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopx.build import boundary
from loopx.build.boundary import GoalStrings, merge, non_public_strings
from loopx.build.tally import Inconsistent, Tally
from loopx.privacy.allowed import Allowance

WORDS = ("vendor", "discount", "quiet", "launch", "ledger", "reader", "alpha", "omega")
DIGEST = "sha256:" + "0f" * 32
_phrase = st.one_of(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    st.sampled_from([DIGEST, DIGEST[7:], "a\x00b vendor", "{{ title }}", "loopx.status/v1"]),
)
_ids = st.sets(st.sampled_from(("todo-17", "deal_2", "inner-3", "index", "launch")), max_size=3)
_part = st.builds(
    lambda texts, public, ids, public_ids, allowed, private: GoalStrings(
        frozenset(texts),
        frozenset(ids),
        frozenset(public),
        frozenset(public_ids),
        frozenset(Allowance("non-public-text", a) for a in allowed),
        frozenset(private) & frozenset(texts),
    ),
    st.sets(_phrase, max_size=6),
    st.sets(_phrase, max_size=4),
    _ids,
    _ids,
    st.sets(st.sampled_from(("todo-17", "deal_2")), max_size=1),
    st.sets(_phrase, max_size=3),
)
_goals = st.dictionaries(st.sampled_from(("g1", "g2", "g3", "g4")), _part, max_size=4)


def _same(tally: Tally, parts: list[GoalStrings]) -> None:
    full = merge(parts)
    expected = Tally.of(parts, full)
    assert tally.forbidden() == full
    for role in ("kept", "kept_ids", "shared", "hidden", "public", "ids", "public_ids"):
        assert getattr(tally, role) == getattr(expected, role), role
    assert tally.allowed == expected.allowed and tally.private == expected.private
    assert tally.longest >= expected.longest


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_goals, st.lists(_goals, min_size=1, max_size=3), st.booleans())
def test_a_tally_advanced_is_the_full_merge(
    first: dict[str, GoalStrings], then: list[dict[str, GoalStrings]], few: bool
) -> None:
    """Goals added, changed and gone, in steps: each step's set and counts are those a
    merge of every goal's strings gives (the added public texts looked in piece by piece, or
    with one automaton pass)."""
    chars = boundary._FEW_CHARS
    boundary._FEW_CHARS = chars if few else -1
    try:
        tally = Tally.of(list(first.values()), merge(list(first.values())))
        before = first
        for after in then:
            changes = [(before.get(g), after.get(g)) for g in sorted(before.keys() | after.keys())]
            merged = tally.advance(changes)
            assert merged.tally is tally
            _same(tally, list(after.values()))
            before = after
    finally:
        boundary._FEW_CHARS = chars


def _strings(texts: set[str], public: set[str] = frozenset()) -> GoalStrings:  # type: ignore[assignment]
    return GoalStrings(frozenset(texts), frozenset(), frozenset(public), frozenset())


def test_a_string_two_goals_forbid_stays_forbidden_when_one_drops_it() -> None:
    secret = "Negotiate the quiet vendor discount"
    one, two = _strings({secret}), _strings({secret, "Another team only note"})
    tally = Tally.of([one, two], merge([one, two]))
    assert tally.shared == {secret: 2}
    assert secret in tally.advance([(one, _strings(set()))]).texts
    assert tally.texts(secret) == 1
    assert secret not in tally.advance([(two, _strings({"Another team only note"}))]).texts


def test_a_public_text_that_left_lets_what_it_hid_be_forbidden_again() -> None:
    hidden = "quiet vendor discount"
    team = _strings({hidden})
    public = _strings(set(), {"Ask for the quiet vendor discount today"})
    tally = Tally.of([team, public], merge([team, public]))
    assert hidden not in tally.kept and tally.hidden == {hidden: 1}
    assert hidden in tally.advance([(public, _strings(set()))]).texts
    assert hidden not in tally.advance([(None, public)]).texts  # and hidden once more


def test_a_tally_told_strings_a_goal_never_had_refuses_and_changes_nothing() -> None:
    team = _strings({"Negotiate the quiet vendor discount"})
    tally = Tally.of([team], merge([team]))
    before = Tally.of([team], merge([team]))
    with pytest.raises(Inconsistent):
        tally.advance([(_strings({"A text no goal ever held"}), None)])
    assert tally == before


def _state_parts(goals: dict[str, GoalStrings]) -> Any:
    return {g: ("head-" + g, s) for g, s in goals.items()}


def test_non_public_strings_merges_only_the_goals_that_moved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the last set's tally and the strings the moved goals had, only their strings
    are made again; without those strings, every goal is merged again."""

    class State:
        def __init__(self, goal_id: str, head: str) -> None:
            self.goal_id, self.head = goal_id, head

    made: list[str] = []
    strings = {
        "a": _strings({"Negotiate the quiet vendor discount"}),
        "b": _strings({"Another team only note"}, {"A public title of goal b"}),
    }

    def goal_strings(state: Any, read_blob: Any = None) -> GoalStrings:
        made.append(state.goal_id)
        return strings[state.goal_id]

    monkeypatch.setattr(boundary, "goal_strings", goal_strings)
    goals: Any = {g: State(g, "h1") for g in strings}
    cache: dict[str, tuple[str, GoalStrings]] = {}
    first = non_public_strings(goals, cache=cache)
    assert first.tally is not None and sorted(made) == ["a", "b"]
    previous = ([[g, "h1"] for g in sorted(goals)], first)

    made.clear()
    strings["b"] = _strings({"Another team only note"}, {"Negotiate the quiet vendor discount"})
    goals["b"] = State("b", "h2")
    second = non_public_strings(goals, cache=cache, previous=previous)
    assert made == ["b"] and second == merge(list(strings.values()))
    assert first.tally is None and second.tally is not None  # the tally moved on

    made.clear()
    previous = ([[g, goals[g].head] for g in sorted(goals)], second)
    goals["a"] = State("a", "h2")
    del cache["a"]  # the strings goal a had are not at hand: everything merged again
    third = non_public_strings(goals, cache=cache, previous=previous)
    assert sorted(made) == ["a"] and third == merge(list(strings.values()))
    assert third.tally is not None and third.tally.fresh


def test_a_record_that_does_not_fit_its_set_is_refused() -> None:
    team = _strings({"Negotiate the quiet vendor discount"}, {"A public title"})
    merged = merge([team])
    record = Tally.of([team], merged).record()
    assert Tally.from_record(record, merged) == Tally.of([team], merged)
    for bad in (
        {**record, "hidden": [["Negotiate the quiet vendor discount", 1]]},  # kept, and not
        {**record, "public": [["A public title", 0]]},
        {**record, "public": [["A public title", "1"]]},
        {**record, "shared": [["Not a kept text at all", 2]]},
        {**record, "allowed": [["non-public-id", "todo-1", 1]]},
        {**record, "ids": "none"},
    ):
        with pytest.raises((TypeError, ValueError, KeyError)):
            Tally.from_record(bad, merged)
