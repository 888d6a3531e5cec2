"""A fresh `loopx build` process scans only what changed since the last build on this host.

The memo (`.loopx/private/cache/scan/build.json`) keeps each goal's strings by its head, the
merged forbidden set by every goal's head, and the public files found clean with the set they
were checked against. Every public byte that changed is still scanned for everything, every
unchanged byte for each newly forbidden string, and a memo copied from elsewhere is ignored.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopx.build import boundary, registry, scancache
from loopx.build.boundary import GoalStrings, merge
from loopx.build.pipeline import build
from loopx.build.registry import Output, Projection
from loopx.engine import goals, todos
from loopx.engine.commands import AddTodo, CreateGoal
from loopx.model.errors import BoundaryViolation
from loopx.privacy import distinct
from loopx.privacy.distinct import present
from loopx.privacy.scanner import Read, Scanner
from loopx.store.filestore import FileStore
from tests.conftest import make_ctx, walked_goals

AUDIENCES = ("public", "team")


def in_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rebuild's boundary in this process, not in a fork beside it (`loopx.build.beside`):
    what these tests' spies look at happens where they can see it."""
    monkeypatch.setenv("LOOPX_BUILD_WORKERS", "1")


def _project(root: Path) -> Any:
    store = FileStore(root)
    store.init()
    ctx = make_ctx(store, agent="maintainer")
    goals.create_goal(
        ctx,
        CreateGoal(
            goal_id="launch-site-2026", title="Launch", objective="Ship it", visibility="public"
        ),
    )
    todos.add_todo(
        ctx,
        AddTodo(
            goal_id="launch-site-2026",
            title="Write the public docs",
            todo_id="docs",
            visibility="public",
        ),
    )
    todos.add_todo(
        ctx,
        AddTodo(
            goal_id="launch-site-2026",
            title="Negotiate the quiet vendor discount",
            todo_id="deal",
            visibility="team",
        ),
    )
    goals.create_goal(ctx, CreateGoal(goal_id="inner", title="Inner", objective="Team work"))
    return ctx


class _Scans:
    """The paths every scanner is asked to scan, and how many full scanners are built."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        self.full = 0
        scan_bytes, scan_read, init = Scanner.scan_bytes, Scanner.scan_read, Scanner.__init__

        def scanning(scanner: Scanner, data: bytes, path: str) -> Any:
            self.paths.append(path)
            return scan_bytes(scanner, data, path)

        def reading(scanner: Scanner, read: Read, path: str) -> Any:
            self.paths.append(path)
            return scan_read(scanner, read, path)

        def building(scanner: Scanner, forbidden: Any = (), **kwargs: Any) -> None:
            forbidden = list(forbidden)
            if any("vendor discount" in s for s in forbidden):
                self.full += 1
            init(scanner, forbidden, **kwargs)

        monkeypatch.setattr(Scanner, "scan_bytes", scanning)
        monkeypatch.setattr(Scanner, "scan_read", reading)
        monkeypatch.setattr(Scanner, "__init__", building)

    def reset(self) -> None:
        self.paths.clear()
        self.full = 0


def _files(out: Path) -> dict[str, str]:
    return {
        p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((out / "public").rglob("*"))
        if p.is_file()
    }


def test_a_fresh_rebuild_scans_the_changed_public_files_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_one_process(monkeypatch)  # the spies see this process (the fork: test_build_beside)
    root, out = tmp_path / "p", tmp_path / "site"
    ctx = _project(root)
    build(root, out, audiences=AUDIENCES, reuse=True)
    assert (root / ".loopx/private/cache/scan/build.json").is_file()
    scans = _Scans(monkeypatch)
    build(root, out, audiences=AUDIENCES, reuse=True)  # nothing changed: nothing scanned
    assert scans.paths == [] and scans.full == 0

    before = _files(out)
    todos.add_todo(
        ctx,
        AddTodo(
            goal_id="launch-site-2026", title="Tidy the index", todo_id="tidy", visibility="public"
        ),
    )
    build(root, out, audiences=AUDIENCES, reuse=True)
    after = _files(out)
    changed = {p for p, sha in after.items() if before.get(p) != sha}
    assert changed and set(scans.paths) == changed  # each changed file, for everything
    assert scans.full == 0  # with a scanner of just the strings that occur in them

    scans.reset()
    todos.add_todo(ctx, AddTodo(goal_id="inner", title="Team only", todo_id="t2"))
    build(root, out, audiences=AUDIENCES, reuse=True)  # no public file changed, nothing added
    assert scans.paths == [] and scans.full == 0


def test_an_event_rescans_the_search_piece_of_its_goal_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search index is a piece per goal: an event on one goal changes (and the rebuild
    scans) that goal's piece and the audience's small files, never an index of every goal's
    todos."""
    in_one_process(monkeypatch)  # the spies see this process (the fork: test_build_beside)
    root, out = tmp_path / "p", tmp_path / "site"
    ctx = _project(root)
    goals.create_goal(
        ctx, CreateGoal(goal_id="other", title="Other", objective="More", visibility="public")
    )
    todos.add_todo(
        ctx, AddTodo(goal_id="other", title="Other work", todo_id="work", visibility="public")
    )
    build(root, out, audiences=AUDIENCES, reuse=True)
    scans = _Scans(monkeypatch)
    before = _files(out)
    todos.add_todo(
        ctx,
        AddTodo(goal_id="other", title="Findable newcomer", todo_id="new", visibility="public"),
    )
    build(root, out, audiences=AUDIENCES, reuse=True)
    after = _files(out)
    changed = {p for p, sha in after.items() if before.get(p) != sha}
    assert set(scans.paths) == changed
    assert "public/goals/other/search.json" in changed
    assert "public/goals/other/search-index.js" in changed
    assert "Findable newcomer" in (out / "public/goals/other/search.json").read_text()
    outside = {p for p in changed if not p.startswith("public/goals/other/")}
    small = {"index.html", "index.json", "feed.xml", "badge.svg", "badge.json"}
    assert outside <= {f"public/{name}" for name in small}, sorted(outside)


def test_a_changed_file_is_scanned_for_every_forbidden_string(tmp_path: Path) -> None:
    root, out = tmp_path / "p", tmp_path / "site"
    _project(root)
    build(root, out, audiences=AUDIENCES, reuse=True)

    def leak(ctx: Any) -> str:  # a bug that prints team text into public output
        return "\n".join(str(t.title) for t in ctx.state.todos.values()) + "\n"

    titles = Projection(
        "leak", "goal", lambda ctx: None, (Output("leak.txt", lambda ctx, _: leak(ctx)),)
    )
    with registry.registered(titles), pytest.raises(BoundaryViolation) as refused:
        build(root, out, audiences=AUDIENCES, reuse=True)
    found = refused.value.details["findings"]
    assert {(f["path"], f["kind"]) for f in found} == {
        ("public/goals/launch-site-2026/leak.txt", "non-public-text")
    }


def test_a_newly_forbidden_string_is_looked_for_in_unchanged_files(tmp_path: Path) -> None:
    root, out = tmp_path / "p", tmp_path / "site"
    ctx = _project(root)
    build(root, out, audiences=AUDIENCES, reuse=True)
    # A team todo titled like the public goal's id: that text is now non-public, and every
    # unchanged public page holds it (the team goal's event changes no public file).
    todos.add_todo(ctx, AddTodo(goal_id="inner", title="launch-site-2026", todo_id="t3"))
    with pytest.raises(BoundaryViolation) as refused:
        build(root, out, audiences=AUDIENCES, reuse=True)
    assert {f["kind"] for f in refused.value.details["findings"]} == {"non-public-text"}


def test_a_memo_copied_from_another_folder_vouches_for_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, out = tmp_path / "p", tmp_path / "site"
    _project(root)
    build(root, out, audiences=AUDIENCES, reuse=True)
    copy, copy_out = tmp_path / "copy", tmp_path / "copy-site"
    shutil.copytree(root, copy)
    shutil.copytree(out, copy_out)
    assert scancache.load_build(copy, frozenset()).scan is None  # another host mark
    assert scancache.load_build(root, frozenset()).scan is not None
    scans = _Scans(monkeypatch)
    build(copy, copy_out, audiences=AUDIENCES, reuse=True)
    assert set(scans.paths) == set(_files(copy_out)) and scans.full == 1


def test_a_memo_of_other_names_or_a_replaced_host_mark_is_ignored(tmp_path: Path) -> None:
    root, out = tmp_path / "p", tmp_path / "site"
    _project(root)
    build(root, out, audiences=AUDIENCES, reuse=True)
    assert scancache.load_build(root, frozenset({"0" * 64})).scan is None  # .loopx/names
    mark = root / ".loopx/private/cache/scan/host"
    mark.unlink()
    mark.write_bytes(b"loopx build memo host mark\n")  # same bytes, another file
    assert scancache.load_build(root, frozenset()).scan is None
    mark.unlink()
    mark.symlink_to(tmp_path)
    assert scancache.load_build(root, frozenset()).scan is None


WORDS = ("vendor", "discount", "quiet", "launch", "ledger", "reader", "alpha", "omega")
_phrase = st.lists(st.sampled_from(WORDS), min_size=2, max_size=4).map(" ".join)
_part = st.builds(
    lambda texts, public, ids: GoalStrings(
        frozenset(texts), frozenset(ids), frozenset(public), frozenset()
    ),
    st.sets(_phrase, max_size=6),
    st.sets(_phrase, max_size=4),
    st.sets(st.sampled_from(("todo-17", "deal_2", "inner-3")), max_size=2),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_part, min_size=1, max_size=4), st.lists(_part, min_size=1, max_size=4))
def test_a_merge_from_the_last_one_is_the_full_merge(before: list[Any], after: list[Any]) -> None:
    """Whatever changed (public text added or gone, goals added or gone), merging from the
    last merge gives exactly the set a full merge gives."""
    last = merge(before)
    grown = [
        GoalStrings(p.texts, p.ids, p.public | q.public, p.public_ids)
        for p, q in zip(after, before, strict=False)
    ]
    for _ in _each_way():
        assert merge(after, (before, last)) == merge(after)
        assert merge(grown, (before, last)) == merge(grown)


def _each_way() -> Iterator[None]:
    """Run the loop's body once per way `_kept_since` looks in the added public texts: every piece
    of them looked up, each text searched, or one automaton pass."""
    few, cap = boundary._FEW_CHARS, boundary._PIECES_CAP
    try:
        for boundary._FEW_CHARS, boundary._PIECES_CAP in ((few, cap), (few, 0), (-1, cap)):
            yield
    finally:
        boundary._FEW_CHARS, boundary._PIECES_CAP = few, cap


_text = st.text(alphabet="ab cd\t0f\u00e9\ud800\ufffd", max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    st.sets(st.one_of(_text, st.sampled_from(["ab cd ab", "cd ab cd 0f", "a" * 6])), max_size=8),
    st.lists(_text, max_size=4),
    st.sampled_from(["", "0f" * 32, "sha256:" + "0f" * 32, "e" + "0f" * 32]),
)
def test_present_finds_exactly_the_strings_that_occur(
    strings: set[str], texts: list[str], digest: str
) -> None:
    """`present` (how a rebuild narrows the scanner for its changed files) keeps every
    string that occurs in a text, read as the scanner reads it, and no other."""
    texts = [*texts, f"x {digest} y"]
    strings = {s for s in strings if "\x00" not in s} | {"0f" * 32, "sha256:" + "0f" * 32}

    def clean(t: str) -> str:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in t)

    expected = {s for s in strings if any(clean(s) in clean(t) for t in texts)}
    assert present(strings, texts) == expected


def test_a_blob_hash_in_an_added_public_text_stays_forbidden_in_the_incremental_merge() -> None:
    """A private blob's hash is never public text, even when a public text now quotes it
    (`found_in` leaves hashes out): merging from the last merge keeps it, as a full merge
    does, whichever way the added public texts are looked in."""
    digest = "sha256:" + "0f" * 32
    before = [GoalStrings(frozenset({digest}), frozenset(), frozenset(), frozenset())]
    quoted = frozenset({f"see {digest} for the log"})
    after = [GoalStrings(frozenset({digest}), frozenset(), quoted, frozenset())]
    last = merge(before)
    assert digest in last.texts and digest in merge(after).texts
    for _ in _each_way():
        assert merge(after, (before, last)) == merge(after)


@settings(max_examples=300, deadline=None)
@given(
    st.sets(st.one_of(_text, st.sampled_from(["ab cd ab", "cd ab cd 0f", "a" * 20])), max_size=8),
    st.lists(_text, max_size=4),
    st.sampled_from([0, 1, 2, 16, distinct.NEEDLE_PREFIX]),
    st.booleans(),
)
def test_needles_of_every_prefix_and_a_memo_find_what_a_plain_search_finds(
    strings: set[str], texts: list[str], prefix: int, crowded: bool
) -> None:
    """Whatever the prefix length, with each prefix's windows looked up or its group given
    an automaton, and restored from a memo's record, the needles find exactly the strings
    that occur (read as the scanner reads them)."""
    digest = "0f" * 32
    texts = [*texts, f"x {digest} y", "ab cd ab " * 3]
    strings = {s for s in strings if "\x00" not in s} | {digest, "sha256:" + digest}

    def clean(t: str) -> str:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in t)

    expected = {s for s in strings if any(clean(s) in clean(t) for t in texts)}
    old = distinct.NEEDLE_PREFIX, distinct._GROUP_WORK
    try:
        distinct.NEEDLE_PREFIX, distinct._GROUP_WORK = prefix or 1, 0 if crowded else old[1]
        needles = distinct.Needles.of(strings)
        record = scancache._needles_record(needles)
        restored = scancache._needles({k: v and list(v) for k, v in record.items()})
        assert restored.strings() == needles.strings() == strings
        for each in (needles, restored):
            assert distinct.Texts(texts).present(each) == expected
    finally:
        distinct.NEEDLE_PREFIX, distinct._GROUP_WORK = old


def test_a_memo_writes_the_hashes_of_the_sha256_forms_once_when_they_are_the_bare_ones() -> None:
    """A private blob is forbidden both as its hash and as its ``sha256:`` form: the record
    lists those hashes once (`refs` null), and a set where they differ lists both."""
    one, two = "0f" * 32, "1e" * 32
    same = scancache._needles_record(distinct.Needles.of({one, "sha256:" + one, "text"}))
    assert same == {"digests": [one], "refs": None, "others": ["text"]}
    apart = scancache._needles_record(distinct.Needles.of({one, "sha256:" + two}))
    assert apart == {"digests": [one], "refs": [two], "others": []}
    wanted = ((same, {one, "sha256:" + one, "text"}), (apart, {one, "sha256:" + two}))
    for record, strings in wanted:
        assert scancache._needles(orjson.loads(orjson.dumps(record))).strings() == strings
    # Read as the same hashes, they are still checked as hashes: a text is refused.
    with pytest.raises(ValueError):
        scancache._needles({"digests": ["not a hash"], "refs": None, "others": []})
    with pytest.raises(TypeError):
        scancache._needles({"digests": [one], "refs": "0f", "others": []})


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789abcdefg \u00e9\ud800", max_size=300))
def test_hex_runs_are_the_runs_a_regex_finds(text: str) -> None:
    assert distinct._hex_runs(text) == set(re.findall("[0-9a-f]{64,}", text))


@pytest.mark.parametrize(
    "forged",
    [
        "Negotiate the quiet vendor discount",  # a text taken for a blob hash
        "sha256:" + "0f" * 31 + "0g",
        "0F" * 32,
    ],
)
def test_a_memo_that_takes_a_text_for_a_blob_hash_is_ignored(
    tmp_path: Path, forged: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A blob hash is looked for only in runs of hex digits: a memo listing any other string
    as one would hide it from a changed file, so such a memo counts for nothing."""
    root, out = tmp_path / "p", tmp_path / "site"
    _project(root)
    build(root, out, audiences=AUDIENCES, reuse=True)
    path = root / ".loopx/private/cache/scan/build-covered.json"
    memo = orjson.loads(path.read_bytes())
    texts = memo["texts"]
    if forged.startswith("sha256:") and texts["refs"] is None:  # written once: apart now
        texts["refs"] = list(texts["digests"])
    texts["refs" if forged.startswith("sha256:") else "digests"].append(
        forged.removeprefix("sha256:")
    )
    texts["others"] = [s for s in texts["others"] if s != forged]
    path.write_bytes(orjson.dumps(memo))
    assert scancache.load_build(root, frozenset()).scan is None

    def leak(ctx: Any) -> str:
        return "\n".join(str(t.title) for t in ctx.state.todos.values()) + "\n"

    titles = Projection(
        "leak", "goal", lambda ctx: None, (Output("leak.txt", lambda ctx, _: leak(ctx)),)
    )
    with registry.registered(titles), pytest.raises(BoundaryViolation):
        build(root, out, audiences=AUDIENCES, reuse=True)


def test_a_memo_that_is_not_json_or_has_the_wrong_shapes_is_ignored(tmp_path: Path) -> None:
    root, out = tmp_path / "p", tmp_path / "site"
    _project(root)
    build(root, out, audiences=AUDIENCES, reuse=True)
    path = root / ".loopx/private/cache/scan/build-covered.json"
    good = orjson.loads(path.read_bytes())
    shapes = [
        "a string",
        {"digests": [], "refs": [], "others": [1, 2]},
        {"digests": "0f" * 32, "refs": [], "others": []},
        {"digests": [], "refs": [["0f" * 32]], "others": []},
    ]
    for shape in shapes:
        memo = orjson.loads(orjson.dumps(good))
        memo["texts"] = shape
        path.write_bytes(orjson.dumps(memo))
        assert scancache.load_build(root, frozenset()).scan is None
    path.write_bytes(orjson.dumps(good)[:-10])
    assert scancache.load_build(root, frozenset()).scan is None


_SECRETS = ("The vendor asked us to keep the price private", "Negotiate the quiet discount")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_SECRETS + ("nothing to see", "password: hunter22")),
            st.sampled_from(["plain", "base64", "base64+anchor", "html", "json", "url"]),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_a_narrowed_scanner_finds_what_the_whole_set_finds(pieces: list[Any]) -> None:
    """A rebuild scans its changed files with a scanner of just the strings that occur in
    the decodings a scanner reads (base64 only where an encoded rule anchor occurs): its
    findings are those of the scanner of the whole set, whatever the encoding."""
    import base64
    import html
    import json
    from urllib.parse import quote

    def encode(text: str, how: str) -> str:
        if how.startswith("base64"):
            lead = "password=hunter22 " if how.endswith("anchor") else ""
            return base64.b64encode((lead + text).encode()).decode()
        if how == "html":
            return html.escape(text).replace(" ", "&#32;")
        if how == "json":
            return json.dumps(text).replace(" ", "\\u0020")
        return quote(text) if how == "url" else text

    page = "<p>" + "</p>\n<p>".join(encode(t, how) for t, how in pieces) + "</p>\n"
    forbidden = boundary.Forbidden(
        frozenset(_SECRETS) | {f"filler text number {n}" for n in range(50)}, frozenset()
    )
    whole = [f.to_dict() for f in forbidden.scanner().scan_text(page)]
    narrowed = boundary.Forbidden(forbidden.texts, frozenset()).within([page])
    assert [f.to_dict() for f in narrowed.scanner().scan_text(page)] == whole
    # The same, with the page decoded once for the narrowing and the scanners (`Read`): a
    # scanner with rules reads the views made, one without decodes its own.
    read = Read(page.encode())
    shared = boundary.Forbidden(forbidden.texts, frozenset()).within([read])
    assert [f.to_dict() for f in shared.scanner().scan_read(read, "<text>")] == whole
    plain = Scanner(sorted(forbidden.texts), machine=False, rules=False)
    assert plain.scan_read(read, "p") == plain.scan_bytes(page.encode(), "p")


def _goal_file(root: Path, goal_id: str) -> Path:
    return root / ".loopx/private/cache/scan" / scancache._build_goal_file(goal_id)


def _merged_now(root: Path) -> Any:
    from loopx.build.pipeline import gather

    return boundary.non_public_strings(gather(FileStore(root)))


def test_a_rebuild_merges_the_strings_of_the_changed_goal_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_one_process(monkeypatch)  # the spies see this process (the fork: test_build_beside)
    root, out = tmp_path / "p", tmp_path / "site"
    ctx = _project(root)
    build(root, out, audiences=AUDIENCES, reuse=True)
    assert _goal_file(root, "inner").is_file() and _goal_file(root, "launch-site-2026").is_file()
    walked = walked_goals(monkeypatch)
    inner = _goal_file(root, "inner").read_bytes()
    todos.add_todo(
        ctx, AddTodo(goal_id="launch-site-2026", title="A quiet team matter", todo_id="q")
    )
    build(root, out, audiences=AUDIENCES, reuse=True)
    assert walked == ["launch-site-2026"]
    assert _goal_file(root, "inner").read_bytes() == inner  # not written again
    memo = scancache.load_build(root, frozenset())
    assert memo.merged is not None and memo.merged[1] == _merged_now(root)


@pytest.mark.parametrize("damage", ["missing", "corrupt", "stale", "another host", "wrong goal"])
def test_a_goal_file_missing_corrupt_or_stale_merges_every_goal_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    """The strings a changed goal had are taken only from its own file at the head the memo
    names, written on this host: else every goal's strings are made again, the set is the
    full merge, and a leak of the new text is still refused."""
    root, out = tmp_path / "p", tmp_path / "site"
    ctx = _project(root)
    build(root, out, audiences=AUDIENCES, reuse=True)
    path = _goal_file(root, "launch-site-2026")
    record = orjson.loads(path.read_bytes())
    if damage == "missing":
        path.unlink()
    elif damage == "corrupt":
        path.write_bytes(path.read_bytes()[:-20])
    elif damage == "stale":
        path.write_bytes(orjson.dumps({**record, "head": "0" * 64, "texts": []}))
    elif damage == "another host":
        path.write_bytes(orjson.dumps({**record, "host": [0, 0, 0], "texts": []}))
    else:
        path.write_bytes(orjson.dumps({**record, "goal": "inner"}))
    walked = walked_goals(monkeypatch)
    secret = "Renegotiate the freight rates quietly"
    todos.add_todo(ctx, AddTodo(goal_id="launch-site-2026", title=secret, todo_id="freight"))

    def leak(ctx: Any) -> str:
        return "\n".join(str(t.title) for t in ctx.state.todos.values()) + "\n"

    titles = Projection(
        "leak", "goal", lambda ctx: None, (Output("leak.txt", lambda ctx, _: leak(ctx)),)
    )
    with registry.registered(titles), pytest.raises(BoundaryViolation):
        build(root, out, audiences=AUDIENCES, reuse=True)
    assert sorted(walked) == ["inner", "launch-site-2026"]
    walked.clear()
    build(root, out, audiences=AUDIENCES, reuse=True)
    memo = scancache.load_build(root, frozenset())
    assert memo.merged is not None and memo.merged[1] == _merged_now(root)
    assert secret in memo.merged[1].texts
    assert orjson.loads(path.read_bytes())["goal"] == "launch-site-2026"  # written again


@pytest.mark.parametrize("damage", ["missing", "another id", "another host", "tally"])
def test_a_covered_file_or_tally_that_does_not_fit_vouches_for_nothing(
    tmp_path: Path, damage: str
) -> None:
    root, out = tmp_path / "p", tmp_path / "site"
    _project(root)
    build(root, out, audiences=AUDIENCES, reuse=True)
    folder = root / ".loopx/private/cache/scan"
    covered, memo = folder / scancache.COVERED, folder / scancache.BUILD
    if damage == "missing":
        covered.unlink()
    elif damage == "another id":
        record = orjson.loads(covered.read_bytes())
        covered.write_bytes(orjson.dumps({**record, "id": "0" * 32}))
    elif damage == "another host":
        record = orjson.loads(covered.read_bytes())
        covered.write_bytes(orjson.dumps({**record, "host": [0, 0, 0]}))
    else:
        record = orjson.loads(memo.read_bytes())
        record["tally"]["hidden"] = [[s, 1] for s in record["dropped"]["texts"]] + [[7, 1]]
        memo.write_bytes(orjson.dumps(record))
    loaded = scancache.load_build(root, frozenset())
    assert loaded.scan is None and loaded.merged is None
