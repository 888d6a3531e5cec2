"""How many goals hold each string of the forbidden set: a merge after one event works out
only what that event changed.

`merge` (`loopx.build.boundary`) makes the forbidden set of every goal's strings: a text is
kept when some goal holds it as non-public text, no goal holds it as public text, it is no
boilerplate and it is inside no public text (a blob hash is never "inside" one); an id when
some goal holds it as a private id, none as a public id, and it is no word of the templates.
A `Tally` keeps, beside that set, how many goals hold each string in each role. When goals
change, a string enters or leaves a role only when its count leaves or reaches zero (a string
two goals forbid stays forbidden when one drops it), and only the strings whose verdict can
change are judged again:

- a text new to the ledger's non-public text: judged in full;
- a kept text, when public text was added: it leaves if it is one, or inside one, of the
  added public texts (what else hides it was there before, and did not);
- a text not kept, when public text left: judged again if it is one, or inside one, of the
  public texts that left (else what hid it is still there).

The result is the full merge's, exactly (property-tested against `merge`). A tally whose
counts do not fit the strings it is told a goal had (a count would go below zero) refuses to
advance (`Inconsistent`): the caller merges everything again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from loopx.build.boundary import (
    _FEW_CHARS,
    Forbidden,
    GoalStrings,
    _Boilerplate,
    _pieces,
)
from loopx.model.records import Mutable
from loopx.privacy.allowed import Allowance
from loopx.privacy.distinct import blob_hash, found_in

Change = tuple["GoalStrings | None", "GoalStrings | None"]  # (strings before, after) of a goal


class Inconsistent(ValueError):
    """The tally does not fit the strings it was told a goal had."""


@dataclass(repr=False, eq=False)
class Tally(Mutable):
    """The counts behind one merged forbidden set (`kept`, `kept_ids`)."""

    kept: frozenset[str]  # the merged texts
    kept_ids: frozenset[str]  # the merged ids
    shared: dict[str, int]  # kept texts two or more goals hold, by count (the rest: one goal)
    hidden: dict[str, int]  # non-public texts not kept (public, boilerplate, inside public text)
    public: dict[str, int]
    ids: dict[str, int]
    public_ids: dict[str, int]
    allowed: dict[Allowance, int]
    private: dict[str, int]
    longest: int = 0  # at least the length of the longest kept text
    fresh: bool = field(default=False, compare=False)  # made from every goal (not advanced)

    @classmethod
    def of(cls, parts: Iterable[GoalStrings], merged: Forbidden) -> Tally:
        """The tally of `parts`, whose merge is `merged`."""
        parts = list(parts)

        def count(role: str) -> Counter[Any]:
            counts: Counter[Any] = Counter()
            for part in parts:
                counts.update(getattr(part, role))
            return counts

        texts = count("texts")
        kept = merged.texts
        return cls(
            kept=kept,
            kept_ids=merged.ids,
            shared={s: n for s, n in texts.items() if n > 1 and s in kept},
            hidden={s: n for s, n in texts.items() if s not in kept},
            public=dict(count("public")),
            ids=dict(count("ids")),
            public_ids=dict(count("public_ids")),
            allowed=dict(count("allowed")),
            private=dict(count("private")),
            longest=max(map(len, kept), default=0),
            fresh=True,
        )

    def forbidden(self) -> Forbidden:
        """The merged set, holding this tally."""
        private = frozenset(s for s in self.private if s in self.kept)
        return Forbidden(
            self.kept, self.kept_ids, allowed=frozenset(self.allowed), private=private, tally=self
        )

    def texts(self, s: str) -> int:
        """How many goals hold `s` as non-public text."""
        return self.shared.get(s, 1) if s in self.kept else self.hidden.get(s, 0)

    def advance(self, changes: list[Change]) -> Forbidden:
        """The merged set after `changes`; this tally becomes its (nothing changes when
        `Inconsistent` is raised)."""
        roles = ("public", "ids", "public_ids", "allowed", "private")
        # Every count worked out first (refusing before anything changed), then committed.
        texts = {s: self.texts(s) + n for s, n in _delta(changes, "texts").items()}
        plans = {role: _plan(getattr(self, role), _delta(changes, role)) for role in roles}
        if any(n < 0 for n in texts.values()):
            raise Inconsistent("a non-public text would be held by fewer than no goal")
        for role in roles:
            _commit(getattr(self, role), plans[role][0])
        added = {s for s, n in texts.items() if n > 0 and self.texts(s) == 0}
        left = self._hidden_by(plans["public"][1])
        again = self._unhidden_by(plans["public"][2])
        entered = _judged(added | again, self.public)  # gone ones drop below
        final = {s: texts[s] if s in texts else self.texts(s) for s in texts.keys() | left | again}
        kept = set(self.kept)
        for s, n in final.items():
            stays = s in kept and s not in left
            self.shared.pop(s, None)
            self.hidden.pop(s, None)
            if n and (stays or s in entered):
                kept.add(s)
                if n > 1:
                    self.shared[s] = n
            else:
                kept.discard(s)
                if n:
                    self.hidden[s] = n
        self.kept = frozenset(kept)
        self.longest = max([self.longest, *map(len, entered)])
        self.kept_ids = self._ids(plans["ids"], plans["public_ids"])
        self.fresh = False
        return self.forbidden()

    def _hidden_by(self, added: set[str]) -> set[str]:
        """The kept texts that are, or are inside, one of the public texts `added`."""
        if not added:
            return set()
        out = {s for s in added if s in self.kept}
        texts = sorted(added)
        pieces = _pieces(texts, self.longest) if sum(map(len, texts)) <= _FEW_CHARS else None
        if pieces is not None:  # every piece of them, looked up in the kept set
            out.update(s for s in pieces if s in self.kept and not blob_hash(s))
        else:
            out.update(found_in(self.kept, texts))
        return out

    def _unhidden_by(self, gone: set[str]) -> set[str]:
        """The texts not kept that are, or are inside, one of the public texts `gone` (what
        may be kept now)."""
        if not gone:
            return set()
        return {s for s in self.hidden if s in gone} | found_in(self.hidden, sorted(gone))

    def _ids(
        self,
        ids: tuple[dict[str, int], set[str], set[str]],
        public_ids: tuple[dict[str, int], set[str], set[str]],
    ) -> frozenset[str]:
        _, added, gone = ids
        _, public_added, public_gone = public_ids
        maybe = {i for i in added | public_gone if i in self.ids and i not in self.public_ids}
        words = _Boilerplate.get().words if maybe else frozenset()
        entered = {i for i in maybe if i not in words}
        return (self.kept_ids - gone - public_added) | entered

    # --- as the build memo keeps it (`loopx.build.scancache`) -------------------------------

    def record(self) -> dict[str, Any]:
        """The counts as JSON (the kept sets are the memo's merged set)."""

        def rows(counts: dict[Any, int]) -> list[list[Any]]:
            return [[s, n] for s, n in sorted(counts.items())]

        return {
            "shared": rows(self.shared),
            "hidden": rows(self.hidden),
            "public": rows(self.public),
            "ids": rows(self.ids),
            "public_ids": rows(self.public_ids),
            "allowed": [[a.kind, a.text, n] for a, n in sorted(self.allowed.items())],
            "private": rows(self.private),
            "longest": self.longest,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any], merged: Forbidden) -> Tally:
        """The tally `record` wrote for `merged` (TypeError, ValueError, KeyError when it
        is not of that shape or does not fit it)."""

        def counts(rows: Any) -> dict[str, int]:
            out = dict(rows)  # each row a pair, or ValueError / TypeError
            if not set(map(type, out)) <= {str} or not set(map(type, out.values())) <= {int}:
                raise ValueError("a count row")
            if len(out) != len(rows) or min(out.values(), default=1) < 1:
                raise ValueError("a count row")
            return out

        allowed = {}
        for kind, text, n in record["allowed"]:
            if not isinstance(kind, str) or not isinstance(text, str) or type(n) is not int:
                raise ValueError("an allowed row")
            allowed[Allowance(kind, text)] = n
        tally = cls(
            kept=merged.texts,
            kept_ids=merged.ids,
            shared=counts(record["shared"]),
            hidden=counts(record["hidden"]),
            public=counts(record["public"]),
            ids=counts(record["ids"]),
            public_ids=counts(record["public_ids"]),
            allowed=allowed,
            private=counts(record["private"]),
            longest=record["longest"],
        )
        fits = (
            type(tally.longest) is int
            and tally.shared.keys() <= tally.kept
            and tally.hidden.keys().isdisjoint(tally.kept)
            and tally.kept_ids <= tally.ids.keys()
            and frozenset(allowed) == merged.allowed
            and merged.private == frozenset(s for s in tally.private if s in tally.kept)
        )
        if not fits:
            raise ValueError("the counts do not fit the merged set")
        return tally


def _delta(changes: list[Change], role: str) -> dict[Any, int]:
    """How many more (or fewer) goals hold each string in `role` after `changes`."""
    delta: Counter[Any] = Counter()
    for old, new in changes:
        if old is not None:
            delta.subtract(getattr(old, role))
        if new is not None:
            delta.update(getattr(new, role))
    return {s: n for s, n in delta.items() if n}


def _plan(
    counts: dict[Any, int], delta: dict[Any, int]
) -> tuple[dict[Any, int], set[Any], set[Any]]:
    """The counts `delta` changes (zero: gone), and the strings that enter and leave."""
    after = {s: counts.get(s, 0) + n for s, n in delta.items()}
    if any(n < 0 for n in after.values()):
        raise Inconsistent("a string would be held by fewer than no goal")
    added = {s for s, n in after.items() if n > 0 and s not in counts}
    gone = {s for s, n in after.items() if n == 0}
    return after, added, gone


def _commit(counts: dict[Any, int], after: dict[Any, int]) -> None:
    for s, n in after.items():
        if n:
            counts[s] = n
        else:
            counts.pop(s, None)


def _judged(strings: set[str], public: dict[str, int]) -> set[str]:
    """The `strings` a full merge keeps: no public text, no boilerplate, inside no public text."""
    candidates = {s for s in strings if s not in public}
    if not candidates:
        return set()
    boilerplate = _Boilerplate.get()
    candidates = {s for s in candidates if not boilerplate.contains(s)}
    return candidates - found_in(candidates, sorted(public))
