"""`loopx scan` keeps the ledger's forbidden strings between runs, in the private partition, and
repeats only what changed: a file a build (or a scan) found clean for this very ledger is read
again only for what that build did not look for."""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopx.build import folderscan, scancache
from loopx.build.boundary import Forbidden
from loopx.build.pipeline import build
from loopx.engine import goals, todos
from loopx.engine.allowances import allow_finding
from loopx.engine.commands import AddNote, AddTodo, AllowFinding, CreateGoal, UpdateTodo
from loopx.engine.goals import add_note
from loopx.privacy.scanner import Read
from loopx.store.filestore import FileStore
from tests.conftest import make_ctx, run_cli


def _project(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "p"
    root.mkdir()
    assert run_cli(["init", "--root", str(root)]).exit_code == 0
    ctx = make_ctx(FileStore(root), agent="maintainer")
    goals.create_goal(
        ctx,
        CreateGoal(goal_id="g", title="Team goal", objective="Quietly renegotiate the vendor deal"),
    )
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "a.html").write_text("<p>Nothing to see here.</p>\n")
    return root, folder


def test_cache_is_reused_and_follows_the_ledger(tmp_path: Path) -> None:
    root, folder = _project(tmp_path)
    assert run_cli(["scan", str(folder), "--root", str(root)]).exit_code == 0
    cache = root / ".loopx/private/cache/scan/forbidden.json"
    assert cache.is_file()
    store = FileStore(root)
    cached = scancache.load_forbidden(root)
    assert cached is not None and "Quietly renegotiate the vendor deal" in cached[1].texts

    # A new team todo changes the ledger: the next scan looks for its text too.
    ctx = make_ctx(store, agent="maintainer")
    todos.add_todo(
        ctx, AddTodo(goal_id="g", title="Sign the exclusive supplier contract", todo_id="deal")
    )
    (folder / "b.html").write_text("<p>Sign the exclusive supplier contract</p>\n")
    found = run_cli(["scan", str(folder), "--root", str(root)])
    assert found.exit_code == 7 and "non-public-text" in found.stdout


def test_a_planted_cache_is_never_followed(tmp_path: Path) -> None:
    root, folder = _project(tmp_path)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"key": [], "texts": [], "ids": []}')
    cache = root / ".loopx/private/cache/scan/forbidden.json"
    cache.parent.mkdir(parents=True)
    cache.symlink_to(elsewhere)
    (folder / "c.html").write_text("<p>Quietly renegotiate the vendor deal</p>\n")
    found = run_cli(["scan", str(folder), "--root", str(root)])
    assert found.exit_code == 7  # the link was not read as the (empty) forbidden set
    assert elsewhere.read_text() == '{"key": [], "texts": [], "ids": []}'


def test_a_planted_fifo_never_hangs_the_scan(tmp_path: Path) -> None:
    root, folder = _project(tmp_path)
    cache = root / ".loopx/private/cache/scan/forbidden.json"
    cache.parent.mkdir(parents=True)
    os.mkfifo(cache)
    loaded: list[object] = []
    reader = threading.Thread(
        target=lambda: loaded.append(scancache.load_forbidden(root)),
        daemon=True,
    )
    reader.start()
    reader.join(10)
    hung = reader.is_alive()
    if hung:  # blocked opening the FIFO: release it before failing
        os.close(os.open(cache, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
    assert not hung and loaded == [None]
    assert run_cli(["scan", str(folder), "--root", str(root)]).exit_code == 0
    assert cache.is_file()  # the FIFO was replaced by the rebuilt cache, never read


def _public_project(tmp_path: Path) -> tuple[Path, Any]:
    """A public goal with a private note (its text in the blob store only), built."""
    root = tmp_path / "p"
    root.mkdir()
    assert run_cli(["init", "--root", str(root)]).exit_code == 0
    ctx = make_ctx(FileStore(root), agent="maintainer")
    goals.create_goal(
        ctx, CreateGoal(goal_id="g", title="Launch", objective="Ship the site", visibility="public")
    )
    todos.add_todo(
        ctx, AddTodo(goal_id="g", title="Write the docs", todo_id="docs", visibility="public")
    )
    add_note(
        ctx,
        AddNote(
            goal_id="g", text="The vendor asked us to keep the price private", visibility="private"
        ),
    )
    goals.create_goal(
        ctx, CreateGoal(goal_id="h", title="Other work", objective="Elsewhere", visibility="public")
    )
    build(root, tmp_path / "site", audiences=("public",))
    return root, ctx


class _Counting:
    """Counts the scanners a folder scan builds, and the goals it folds."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.built: list[str] = []
        self.folded: list[str] = []
        full, private = folderscan._Scanners.full, folderscan._Scanners.private
        load = folderscan.load_state

        def count(name: str, method: Any) -> Any:
            def wrapped(scanners: Any, **kwargs: Any) -> Any:
                shown = "since" if kwargs.get("since") is not None else name
                if shown not in scanners.built:
                    self.built.append(shown)
                return method(scanners, **kwargs)

            return wrapped

        monkeypatch.setattr(folderscan._Scanners, "full", count("full", full))
        monkeypatch.setattr(folderscan._Scanners, "private", count("private", private))

        def folding(store: Any, goal_id: str, **kwargs: Any) -> Any:
            self.folded.append(goal_id)
            return load(store, goal_id, **kwargs)

        monkeypatch.setattr(folderscan, "load_state", folding)


def _scan(root: Path, folder: Path) -> list[Any]:
    return folderscan.scan_folder(root, FileStore(root), [folder], machine=True).findings


def test_a_scan_after_a_build_reads_only_for_private_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = _public_project(tmp_path)
    public = tmp_path / "site" / "public"
    counting = _Counting(monkeypatch)
    assert _scan(root, public) == []
    # Every file was vouched for by the build: only the blob text was looked for.
    assert counting.built == ["private"] and sorted(counting.folded) == ["g", "h"]
    counting.built.clear()
    counting.folded.clear()
    assert _scan(root, public) == []  # vouched for by that scan: nothing read again
    assert counting.built == [] and counting.folded == []

    # A file changed after the build is scanned in full: the private text is found in it.
    page = public / "goals" / "g" / "index.html"
    page.write_text(page.read_text() + "<p>The vendor asked us to keep the price private</p>")
    found = _scan(root, public)
    assert [f.kind for f in found] == ["non-public-text"]
    assert counting.built == ["full"] and counting.folded == []


def test_the_private_text_is_looked_for_in_files_a_build_vouched_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = _public_project(tmp_path)
    folder = tmp_path / "copy"
    folder.mkdir()
    leak = b"<p>The vendor asked us to keep the price private</p>\n"
    (folder / "leak.html").write_bytes(leak)
    # A build's record says the file passed its scan (a build reads no blob, so it could not
    # have found the private text): the scan still looks for it.
    key = scancache.load_forbidden(root)
    assert key is None  # nothing scanned yet
    _scan(root, tmp_path / "site" / "public")
    cached = scancache.load_forbidden(root)
    assert cached is not None
    stamp = scancache.fingerprint(frozenset(), True)
    digest = hashlib.sha256(leak).hexdigest()
    scancache.save_clean(root, "build", cached[0], stamp, {digest})
    counting = _Counting(monkeypatch)
    assert [f.kind for f in _scan(root, folder)] == ["non-public-text"]
    # The record held; the blob text was still matched: found the bounded way, then decided
    # with the exact set (`folderscan._bounded`).
    assert counting.built == ["private", "private"]


def test_after_a_ledger_change_only_the_private_text_read_since_is_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, ctx = _public_project(tmp_path)
    public = tmp_path / "site" / "public"
    leak = tmp_path / "copy"
    leak.mkdir()
    (leak / "leak.html").write_text("<p>The auditor flagged the storage bill twice</p>\n")
    assert _scan(root, public) == [] and _scan(root, leak) == []  # both clean so far
    add_note(
        ctx,
        AddNote(
            goal_id="g", text="The auditor flagged the storage bill twice", visibility="private"
        ),
    )
    build(root, tmp_path / "site", audiences=("public",))  # vouches for the new ledger
    record = scancache._load(root, "clean-build.json")
    assert record is not None
    digest = hashlib.sha256((leak / "leak.html").read_bytes()).hexdigest()
    stamp = scancache.fingerprint(frozenset(), True)
    scancache.save_clean(root, "build", record["key"], stamp, {*record["files"], digest})
    counting = _Counting(monkeypatch)
    # The build vouches for the file (as if it had made it), an earlier scan found it clean
    # of the older private text: only the note read since is looked for, and found.
    assert [f.kind for f in _scan(root, leak)] == ["non-public-text"]
    assert counting.built == ["since", "since"]  # the bounded way, then the exact one
    counting.built.clear()
    assert _scan(root, public) == []
    assert "full" not in counting.built


def test_a_record_holds_only_for_the_ledger_it_was_made_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, ctx = _public_project(tmp_path)
    public = tmp_path / "site" / "public"
    assert _scan(root, public) == []
    counting = _Counting(monkeypatch)
    todos.add_todo(
        ctx, AddTodo(goal_id="g", title="Another public todo", todo_id="more", visibility="public")
    )
    assert _scan(root, public) == []
    # The ledger changed: no record holds, and only the goal that changed was folded again.
    assert counting.built == ["full"] and counting.folded == ["g"]

    # A copy of the project (a clone, a checkout with the cache committed) has other inodes
    # and times: nothing the cache says is taken for it.
    clone = tmp_path / "clone"
    shutil.copytree(root, clone, symlinks=True)
    counting.built.clear()
    counting.folded.clear()
    assert _scan(clone, public) == []
    assert counting.built == ["full"] and sorted(counting.folded) == ["g", "h"]


def test_an_allow_entry_reaches_the_scan(tmp_path: Path) -> None:
    root, ctx = _public_project(tmp_path)
    folder = tmp_path / "copy"
    folder.mkdir()
    (folder / "a.txt").write_text("see key-" + "0123456789abcdef" * 2 + "\n")
    assert [f.kind for f in _scan(root, folder)] == ["mailgun-api-key"]
    todo_id = "key-" + "0123456789abcdef" * 2
    todos.add_todo(ctx, AddTodo(goal_id="g", title="Cache", todo_id=todo_id, visibility="public"))
    allow_finding(
        ctx,
        AllowFinding(
            goal_id="g", entity="todo", entity_id=todo_id, kind="mailgun-api-key", reason="a key"
        ),
    )
    assert _scan(root, folder) == []


def test_the_records_follow_the_code_that_decides_the_strings() -> None:
    """A record made by other code for what a goal's strings are (its events, the fold, the
    free-text declarations, the allow entries) is never reused: a development checkout
    changes that code, not the version."""
    import inspect

    from loopx.build import allowances
    from loopx.model import events, upgrade
    from loopx.state import entities, fold, freetext, redactions

    hashed = {p.resolve() for p in scancache.version_sources()}
    for module in (events, upgrade, fold, entities, freetext, redactions, allowances):
        source = inspect.getsourcefile(module)
        assert source is not None and Path(source).resolve() in hashed, module.__name__


def test_the_private_text_is_found_in_vouched_files_whatever_its_encoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files a build vouched for are scanned for the private text in every encoding, the
    bounded way (a superset of it) as the exact way."""
    root, _ = _public_project(tmp_path)
    folder = tmp_path / "copy"
    folder.mkdir()
    secret = "The vendor asked us to keep the price private"
    pages = {
        "plain.html": f"<p>{secret}</p>\n",
        "escaped.html": "<p>" + secret.replace(" ", "&#32;") + "</p>\n",
        "data.json": '{"a": "' + secret.replace(" ", "\\u0020") + '"}\n',
        "link.html": '<a href="/q?x=' + secret.replace(" ", "%20") + '">x</a>\n',
        "clean.html": "<p>Nothing private here at all.</p>\n",
    }
    for name, text in pages.items():
        (folder / name).write_text(text)
    _scan(root, tmp_path / "site" / "public")
    cached = scancache.load_forbidden(root)
    assert cached is not None
    stamp = scancache.fingerprint(frozenset(), True)
    vouched = {hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}

    def findings() -> list[Any]:
        scancache.save_clean(root, "build", cached[0], stamp, vouched)
        scan_file = root / ".loopx/private/cache/scan/clean-scan.json"
        scan_file.unlink(missing_ok=True)
        return [f.to_dict() for f in _scan(root, folder)]

    bounded = findings()
    monkeypatch.setattr(folderscan, "_bounded", lambda *a: None)
    whole = findings()
    assert bounded == whole
    assert {f["path"].rsplit("/", 1)[-1] for f in whole} == set(pages) - {"clean.html"}


def _vouch(root: Path, *files: Path) -> None:
    """As if the last build had made `files` too (its record for the ledger as it is)."""
    record = scancache._load(root, "clean-build.json")
    assert record is not None
    digests = {hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
    stamp = scancache.fingerprint(frozenset(), True)
    scancache.save_clean(root, "build", record["key"], stamp, {*record["files"], *digests})


def test_a_scan_after_a_build_decides_without_merging_the_strings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After one event and a build, a scan looks for a superset of the private text (what it
    looked for before and the changed goal's blob text): no merge of every goal's strings,
    one goal folded, and the same verdict as the exact way."""
    root, ctx = _public_project(tmp_path)
    site = tmp_path / "site"
    assert _scan(root, site / "public") == []
    merges: list[int] = []
    merge = folderscan.merge
    monkeypatch.setattr(folderscan, "merge", lambda *a: merges.append(1) or merge(*a))
    counting = _Counting(monkeypatch)
    todos.add_todo(
        ctx, AddTodo(goal_id="g", title="Another public todo", todo_id="more", visibility="public")
    )
    build(root, site, audiences=("public",))
    assert _scan(root, site / "public") == []
    assert merges == [] and counting.folded == ["g"] and "full" not in counting.built
    monkeypatch.setattr(folderscan, "_bounded", lambda *a: None)
    (root / ".loopx/private/cache/scan/clean-scan.json").unlink()
    assert _scan(root, site / "public") == []  # the exact way agrees


def test_text_no_longer_public_is_looked_for_the_exact_way(tmp_path: Path) -> None:
    """A goal's blob text that another goal's public todo also said was not forbidden; once
    that title changes it is. The bounded way cannot tell (the changed goal's public text
    did not only grow), so the scan is decided with the exact set, and finds it."""
    root, ctx = _public_project(tmp_path)
    site = tmp_path / "site"
    said = "The vendor asked us to keep the price private"  # the note of goal g
    todos.add_todo(ctx, AddTodo(goal_id="h", title=said, todo_id="said", visibility="public"))
    build(root, site, audiences=("public",))
    page = tmp_path / "copy"
    page.mkdir()
    (page / "quote.html").write_text(f"<p>{said}</p>\n")
    _vouch(root, page / "quote.html")
    assert _scan(root, page) == []  # public text of h: nothing to find
    todos.update_todo(ctx, UpdateTodo(goal_id="h", todo_id="said", title="Something else"))
    build(root, site, audiences=("public",))
    _vouch(root, page / "quote.html")
    assert [f.kind for f in _scan(root, page)] == ["non-public-text"]


def test_a_planted_private_record_never_hides_a_leak(tmp_path: Path) -> None:
    """A private-text record of another ledger (other change tokens: a copy, a clone), of
    another version, or a broken one is never taken: the scan is decided the exact way."""
    root, _ = _public_project(tmp_path)
    site = tmp_path / "site"
    page = tmp_path / "copy"
    page.mkdir()
    (page / "leak.html").write_text("<p>The vendor asked us to keep the price private</p>\n")
    assert _scan(root, site / "public") == []
    _vouch(root, page / "leak.html")
    path = root / ".loopx/private/cache/scan/private.json"
    record = orjson.loads(path.read_bytes())
    for planted in (
        orjson.dumps({**record, "private": [1]}),
        orjson.dumps({**record, "private": "The vendor"}),
        orjson.dumps({**record, "key": [[g, h, 0, 0, 0] for g, h, *_ in record["key"]]}),
        orjson.dumps({**record, "version": "0"}),
        orjson.dumps({**record, "key": [1]}),
        orjson.dumps({**record, "key": [[]]}),
        orjson.dumps({**record, "key": [[["x"], "h", 1]]}),
        orjson.dumps({**record, "by_goal": []}),
        orjson.dumps({**record, "by_goal": {"g": 5}}),
        orjson.dumps({**record, "by_goal": {"g": [["kind", "text", "more"]]}}),
        b"{not json",
    ):
        path.write_bytes(planted)
        assert [f.kind for f in _scan(root, page)] == ["non-public-text"]


def test_a_ledger_rewritten_in_place_with_its_mtime_set_back_changes_its_token(
    tmp_path: Path,
) -> None:
    """The change token the scan records (and the build's folded states) are keyed by moves
    with any write to the ledger: same size, same inode and an mtime set back (`cp -p`,
    `rsync -t`, `touch -d`) still move its ctime, which no one can set back."""
    from loopx.store.select import change_token

    root, _ = _project(tmp_path)
    store = FileStore(root)
    before = change_token(store, "g")
    ledger = store.ledger_path("g")
    st = ledger.stat()
    data = bytearray(ledger.read_bytes())
    data[-3] = ord("0") if data[-3] != ord("0") else ord("1")
    with open(ledger, "r+b") as f:  # in place: the same inode
        f.write(bytes(data))
    os.utime(ledger, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = ledger.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        st.st_size,
        st.st_mtime_ns,
        st.st_ino,
    )
    assert change_token(store, "g") != before


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files a scan reads."""
    read: list[str] = []
    read_scanned = folderscan.read_scanned

    def reading(path: Path) -> bytes:
        read.append(path.name)
        return read_scanned(path)

    monkeypatch.setattr(folderscan, "read_scanned", reading)
    return read


def test_a_file_of_the_identity_a_scan_recorded_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, folder = _project(tmp_path)
    page = folder / "b.html"
    page.write_text("<p>Quietly renegotiate the vendor xxxx</p>\n")
    monkeypatch.setattr(folderscan, "RACY_NS", -(10**12))  # every file old enough
    assert run_cli(["scan", str(folder), "--root", str(root)]).exit_code == 0
    read = _reads(monkeypatch)
    assert run_cli(["scan", str(folder), "--root", str(root)]).exit_code == 0
    assert read == []
    # Rewritten in place, the same size, its mtime set back: its ctime moved, so it is read.
    before = page.stat()
    with page.open("r+b") as f:
        f.write(b"<p>Quietly renegotiate the vendor deal</p>\n")
    os.utime(page, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = page.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    found = run_cli(["scan", str(folder), "--root", str(root)])
    assert read == ["b.html"] and found.exit_code == 7


def test_a_file_changed_just_now_is_not_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write within the same tick of the clock may keep a file's identity: a file whose
    ctime is that recent is read and hashed by every scan until it is older."""
    root, folder = _project(tmp_path)
    assert run_cli(["scan", str(folder), "--root", str(root)]).exit_code == 0
    assert scancache.load_hashes(root) == {}
    read = _reads(monkeypatch)
    assert run_cli(["scan", str(folder), "--root", str(root)]).exit_code == 0
    assert read == ["a.html"]


@pytest.mark.parametrize(
    "entry", [None, "x", [1, 2, 3], [0, 0, 0, 0, 0, 7], [0, 0, "1", 0, 0, "f" * 64]]
)
def test_a_hash_record_of_another_shape_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: Any
) -> None:
    root, folder = _project(tmp_path)
    monkeypatch.setattr(folderscan, "RACY_NS", -(10**12))
    assert run_cli(["scan", str(folder), "--root", str(root)]).exit_code == 0
    [where] = scancache.load_hashes(root)
    scancache._save(root, scancache.HASHES, {"files": {where: entry}})
    assert scancache.load_hashes(root) == {}
    read = _reads(monkeypatch)
    assert run_cli(["scan", str(folder), "--root", str(root)]).exit_code == 0
    assert read == ["a.html"]


def test_after_an_event_a_scan_reads_only_the_files_the_build_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file a scan found clean before the event and the build vouched for after it is
    looked for only the private text read since: when there is none, its bytes are not
    needed, and a file of the identity recorded is not read at all."""
    root, ctx = _public_project(tmp_path)
    site = tmp_path / "site"
    monkeypatch.setattr(folderscan, "RACY_NS", -(10**12))  # every file old enough
    assert _scan(root, site / "public") == []
    before = {p: p.stat().st_mtime_ns for p in (site / "public").rglob("*") if p.is_file()}
    todos.add_todo(
        ctx, AddTodo(goal_id="g", title="Another public todo", todo_id="more", visibility="public")
    )
    build(root, site, audiences=("public",))
    changed = {
        p.name for p in (site / "public").rglob("*") if before.get(p) != p.stat().st_mtime_ns
    }
    read = _reads(monkeypatch)
    assert _scan(root, site / "public") == []
    assert changed and set(read) <= changed


_PRIVATE = ("The vendor asked us to keep the price private", "Negotiate the quiet discount")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_PRIVATE + ("nothing to see",)),
            st.sampled_from(["plain", "base64", "html", "json", "url"]),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_a_private_scanner_of_a_few_files_finds_what_one_of_all_the_text_finds(
    pieces: list[Any],
) -> None:
    """A few files a build vouched for are scanned for the private text that occurs in some
    view of them (as a scanner without rules reads them): the same findings as a scanner of
    all the private text, whatever the encoding."""
    import base64
    import html
    import json
    from urllib.parse import quote

    def encode(text: str, how: str) -> str:
        if how == "base64":
            return base64.b64encode(text.encode()).decode()
        if how == "html":
            return html.escape(text).replace(" ", "&#32;")
        if how == "json":
            return json.dumps(text).replace(" ", "\\u0020")
        return quote(text) if how == "url" else text

    page = ("<p>" + "</p>\n<p>".join(encode(t, how) for t, how in pieces) + "</p>\n").encode()
    private = frozenset(_PRIVATE) | {f"private filler text number {n}" for n in range(1100)}
    forbidden = Forbidden(frozenset(), frozenset(), private=private)
    scanners = folderscan._Scanners(forbidden, False, frozenset())
    whole = scanners.private()
    assert whole is not None
    read = Read(page, rules=False)
    narrowed = scanners.private(reads=[read])
    expected = whole.scan_bytes(page, "p")
    assert (narrowed.scan_read(read, "p") if narrowed is not None else []) == expected


# --- right after a build: the build memo's strings name the blobs ---------------------------


def _built(root: Path, site: Path) -> None:
    """A build as the CLI makes one: with its memo (the goals' strings at their heads)."""
    build(root, site, audiences=("public",), reuse=True)


def _whole(root: Path) -> tuple[scancache.Private, dict[str, Any]]:
    """The scan's private-text record, made whole (every goal's blob text), and its allow
    entries by goal."""
    held = scancache.load_private(root)
    assert held is not None and held.by_goal is not None
    return held, held.by_goal


def _vouched_leak(tmp_path: Path, root: Path, text: str) -> Path:
    """A folder with a page holding `text`, as if the last build had made it too."""
    folder = tmp_path / "copy"
    folder.mkdir(exist_ok=True)
    (folder / "leak.html").write_text(f"<p>{text}</p>\n")
    _vouch(root, folder / "leak.html")
    return folder


def test_a_first_scan_after_a_build_folds_no_goal_and_merges_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first scan after a build (no scan record yet) reads the blobs the build memo's
    strings name and looks for their text in the build's files: no goal folded, no merge,
    only the private scanner; the next scan reads nothing again."""
    root, _ = _public_project(tmp_path)
    site = tmp_path / "site"
    shutil.rmtree(site)
    _built(root, site)
    merge = folderscan.merge
    merges: list[Any] = []

    def merging(*args: Any) -> Any:
        merges.append(args)
        return merge(*args)

    monkeypatch.setattr(folderscan, "merge", merging)
    counting = _Counting(monkeypatch)
    assert _scan(root, site / "public") == []
    assert counting.folded == [] and merges == [] and counting.built == ["private"]
    held, by_goal = _whole(root)
    assert sorted(by_goal) == ["g", "h"]
    assert "The vendor asked us to keep the price private" in held.texts
    counting.built.clear()
    assert _scan(root, site / "public") == [] and counting.built == []
    # The exact way agrees.
    monkeypatch.setattr(folderscan, "_bounded", lambda *a: None)
    (root / ".loopx/private/cache/scan/clean-scan.json").unlink()
    assert _scan(root, site / "public") == []


def test_a_first_scan_after_a_build_finds_the_blob_text_in_a_file_the_build_vouched_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build reads no blob, so a file it vouched for may still hold private text: the
    first scan finds it from the blobs the memo names (then decides the exact way)."""
    root, _ = _public_project(tmp_path)
    site = tmp_path / "site"
    _built(root, site)
    folder = _vouched_leak(tmp_path, root, "The vendor asked us to keep the price private")
    counting = _Counting(monkeypatch)
    assert [f.kind for f in _scan(root, folder)] == ["non-public-text"]
    assert counting.built == ["private", "private"]  # the blobs' text, then the merge's


def test_a_first_scan_without_the_build_memo_is_made_the_exact_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A goal's strings missing from the memo, the memo of another host (a copy of the
    folder), a ledger changed since the build: nothing is taken from the memo."""
    root, ctx = _public_project(tmp_path)
    site = tmp_path / "site"
    _built(root, site)
    cache = root / ".loopx/private/cache/scan"
    kept = {p.name: p.read_bytes() for p in cache.iterdir()}

    def fresh_scan() -> list[str]:
        for name in ("private.json", "clean-scan.json", "forbidden.json"):
            (cache / name).unlink(missing_ok=True)
        for scanned in cache.glob("goal-*.json"):  # the strings a scan kept
            scanned.unlink()
        counting = _Counting(monkeypatch)
        assert _scan(root, site / "public") == []
        return sorted(counting.folded)

    goal_file = next(cache.glob("build-goal-*.json"))
    goal_file.unlink()
    assert fresh_scan() == ["g", "h"]
    goal_file.write_bytes(kept[goal_file.name])
    (cache / "host").unlink()
    (cache / "host").write_bytes(kept["host"])  # same bytes, another inode: another host
    assert fresh_scan() == ["g", "h"]
    _built(root, site)  # a memo of this host again
    todos.add_todo(ctx, AddTodo(goal_id="h", title="Later", todo_id="later", visibility="public"))
    assert fresh_scan() == ["g", "h"]  # the build's files are vouched for another ledger


def test_the_build_memo_names_the_blobs_of_its_goals_and_a_forged_list_counts_for_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each goal's strings in the build memo name the blobs its fields hold (`refs`), which
    the first scan reads; a list of anything but hex digests makes it the exact way, never an
    error."""
    root, _ = _public_project(tmp_path)
    site = tmp_path / "site"
    _built(root, site)
    stored = {p.parent.name + p.name for p in (root / ".loopx/private/blobs/sha256").glob("*/*")}
    stamp = scancache.fingerprint(frozenset(), True)
    found = scancache.built_blobs(root, scancache.tokens(FileStore(root)), stamp)
    assert found is not None and found[2] == stored and len(stored) == 1
    cache = root / ".loopx/private/cache/scan"
    goal_file = next(f for f in cache.glob("build-goal-*.json") if b'"refs":["' in f.read_bytes())
    kept = goal_file.read_bytes()
    digest = next(iter(stored))
    for forged in ("x" * 64, digest[:63], digest + "0", digest.upper(), 64, "ab" * 64):
        for refs in ([forged], forged, [digest, forged]):
            record = orjson.loads(kept)
            record["refs"] = refs
            goal_file.write_bytes(orjson.dumps(record))
            assert scancache.built_blobs(root, scancache.tokens(FileStore(root)), stamp) is None
    for name in ("private.json", "clean-scan.json"):
        (cache / name).unlink(missing_ok=True)
    counting = _Counting(monkeypatch)
    assert _scan(root, site / "public") == []
    assert sorted(counting.folded) == ["g", "h"]  # the exact way
    goal_file.write_bytes(kept)


def test_a_whole_record_grows_from_the_changed_goals_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the first scan (a whole record: every goal's blob text) an event and a build: the
    scan folds only the changed goal, finds its new blob text in a vouched file, and takes
    the allow entries of the unchanged goals from the record, the changed goal's anew."""
    from loopx.privacy.allowed import Allowance

    root, ctx = _public_project(tmp_path)
    site = tmp_path / "site"
    _built(root, site)
    assert _scan(root, site / "public") == []
    held, by_goal = _whole(root)
    planted = Allowance("non-public-text", "not-an-id-of-g")
    stale = {**by_goal, "g": by_goal["g"] | {planted}}
    scancache.save_private(root, scancache.Private(held.key, held.texts, held.allowed, stale))

    secret = "The auditor flagged the storage bill twice"
    add_note(ctx, AddNote(goal_id="g", text=secret, visibility="private"))
    _built(root, site)
    counting = _Counting(monkeypatch)
    assert _scan(root, site / "public") == []
    assert counting.folded == ["g"] and "full" not in counting.built
    grown, grown_by_goal = _whole(root)
    assert secret in grown.texts
    assert planted not in grown.allowed and planted not in grown_by_goal["g"]
    assert grown_by_goal["h"] == by_goal["h"]

    folder = _vouched_leak(tmp_path, root, secret)
    assert [f.kind for f in _scan(root, folder)] == ["non-public-text"]


def test_a_build_that_raced_a_write_vouches_for_no_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An event written after the build folded its goal and before it recorded its files:
    the record names the change tokens from before the fold, so the scan trusts neither it
    nor the memo's strings, and finds the new private text the exact way."""
    from loopx.build import pipeline

    root, ctx = _public_project(tmp_path)
    site = tmp_path / "site"
    secret = "The auditor flagged the storage bill twice"
    real = pipeline.record_build

    def racing(*args: Any, **kwargs: Any) -> None:
        add_note(ctx, AddNote(goal_id="g", text=secret, visibility="private"))
        real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "record_build", racing)
    _built(root, site)
    monkeypatch.setattr(pipeline, "record_build", real)
    folder = _vouched_leak(tmp_path, root, secret)
    assert [f.kind for f in _scan(root, folder)] == ["non-public-text"]


def test_a_memo_of_older_heads_is_not_taken_for_a_newer_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build with its memo, an event, then a build without one (its record names the new
    heads, the memo still holds the old): the memo's strings are not the ledger's, so the
    new blob's text is found the exact way."""
    root, ctx = _public_project(tmp_path)
    site = tmp_path / "site"
    _built(root, site)
    secret = "The auditor flagged the storage bill twice"
    add_note(ctx, AddNote(goal_id="g", text=secret, visibility="private"))
    build(root, site, audiences=("public",))  # no memo written
    folder = _vouched_leak(tmp_path, root, secret)
    counting = _Counting(monkeypatch)
    assert [f.kind for f in _scan(root, folder)] == ["non-public-text"]
    assert sorted(counting.folded) == ["g", "h"]  # the exact way, from the ledger


def test_a_whole_record_drops_the_allow_entries_of_a_goal_gone_and_takes_a_new_goals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopx.privacy.allowed import Allowance

    root, ctx = _public_project(tmp_path)
    site = tmp_path / "site"
    _built(root, site)
    assert _scan(root, site / "public") == []
    held, by_goal = _whole(root)
    planted = Allowance("non-public-text", "an entry of goal h")
    by_goal = {**by_goal, "h": by_goal["h"] | {planted}}
    scancache.save_private(
        root, scancache.Private(held.key, held.texts, held.allowed | {planted}, by_goal)
    )
    shutil.rmtree(root / ".loopx" / "goals" / "h")  # the goal is gone
    secret = "Negotiate the quiet discount with the landlord"
    goals.create_goal(
        ctx, CreateGoal(goal_id="k", title="New", objective="Fresh work", visibility="public")
    )
    add_note(ctx, AddNote(goal_id="k", text=secret, visibility="private"))
    _built(root, site)
    counting = _Counting(monkeypatch)
    assert _scan(root, site / "public") == []
    assert counting.folded == ["k"]  # the new goal only: g did not change
    grown, grown_by_goal = _whole(root)
    assert sorted(grown_by_goal) == ["g", "k"] and planted not in grown.allowed
    assert secret in grown.texts
    folder = _vouched_leak(tmp_path, root, secret)
    assert [f.kind for f in _scan(root, folder)] == ["non-public-text"]


def test_a_file_found_clean_under_an_allow_entry_since_gone_is_read_again_for_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file an earlier scan found clean is read after a change only for the text added
    since, but not when an allow entry that scan honoured is gone: what it let pass then is
    looked for again."""
    from loopx.privacy.allowed import Allowance

    root, ctx = _public_project(tmp_path)
    site = tmp_path / "site"
    _built(root, site)
    secret = "The vendor asked us to keep the price private"  # g's private note
    folder = tmp_path / "copy"
    folder.mkdir()
    (folder / "leak.html").write_text(f"<p>{secret}</p>\n")
    assert _scan(root, site / "public") == []
    # As if an allow entry of g had let the text pass, and a scan had found the file clean.
    held, by_goal = _whole(root)
    allowed = Allowance("non-public-text", secret)
    by_goal = {**by_goal, "g": by_goal["g"] | {allowed}}
    scancache.save_private(
        root, scancache.Private(held.key, held.texts, held.allowed | {allowed}, by_goal)
    )
    stamp = scancache.fingerprint(frozenset(), True)
    digest = hashlib.sha256((folder / "leak.html").read_bytes()).hexdigest()
    scancache.save_clean(root, "scan", held.key, stamp, {digest})
    _vouch(root, folder / "leak.html")
    assert _scan(root, folder) == []  # the entry holds for the ledger it was made for
    todos.add_todo(  # g changes; its allow entries are taken anew: the planted one is gone
        ctx, AddTodo(goal_id="g", title="Another public todo", todo_id="more", visibility="public")
    )
    _built(root, site)
    _vouch(root, folder / "leak.html")
    assert [f.kind for f in _scan(root, folder)] == ["non-public-text"]


def test_a_blob_whose_file_is_gone_but_packed_is_looked_for_every_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A blob's file deleted, its record in the pack intact: the blob is still on this host,
    for the scan that grows its set from the changed goal as for the exact way."""
    root, ctx = _public_project(tmp_path)
    site = tmp_path / "site"
    _built(root, site)
    assert _scan(root, site / "public") == []
    secret = "The auditor flagged the storage bill twice"
    add_note(ctx, AddNote(goal_id="g", text=secret, visibility="private"))
    digest = hashlib.sha256(secret.encode()).hexdigest()
    (root / ".loopx/private/blobs/sha256" / digest[:2] / digest[2:]).unlink()
    _built(root, site)
    folder = _vouched_leak(tmp_path, root, secret)
    assert [f.kind for f in _scan(root, folder)] == ["non-public-text"]  # grown
    shutil.rmtree(root / ".loopx/private/cache/scan")
    _built(root, site)
    _vouch(root, folder / "leak.html")
    monkeypatch.setattr(folderscan, "_bounded", lambda *a: None)
    assert [f.kind for f in _scan(root, folder)] == ["non-public-text"]  # the exact way
