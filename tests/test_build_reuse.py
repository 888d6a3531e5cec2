"""Carrying unchanged goals over between build processes (`loopx.build.reuse`): the ledger is
the only authority, so nothing the output folder holds is ever read back as a fact."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from loopx.build.pipeline import build, check
from loopx.engine.demo import REV_NEW
from tests.conftest import run_cli


def _edit_keeping_stat(path: Path, old: str, new: str) -> None:
    """A hand edit that keeps the file's size and modification time."""
    assert len(old.encode()) == len(new.encode())
    before = path.stat()
    text = path.read_text("utf-8")
    assert old in text
    path.write_text(text.replace(old, new), "utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size


def _files(out: Path) -> dict[str, str]:
    return {
        p.relative_to(out).as_posix(): p.read_text("utf-8", "replace")
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def test_a_hand_edited_index_never_reaches_the_next_build(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    assert (
        run_cli(["build", "--root", str(demo), "--out", str(out), "--head", REV_NEW]).exit_code == 0
    )
    clean = _files(out)
    index = out / "public/index.json"
    _edit_keeping_stat(index, "Launch loopx", "Lunch  loopx")
    status = out / "public/goals/launch/status.json"
    _edit_keeping_stat(status, "Launch loopx", "Lunch  loopx")
    assert (
        run_cli(["build", "--root", str(demo), "--out", str(out), "--head", REV_NEW]).exit_code == 0
    )
    now = _files(out)
    assert now == clean  # every file, the edited ones and those made from them
    assert "Lunch  loopx" not in "".join(now.values())
    title = json.loads(clean["public/index.json"])["goals"][0]["title"]
    assert title.startswith("Launch loopx")
    assert json.loads(now["public/index.json"])["goals"][0]["title"] == title
    assert check(demo, out, head=REV_NEW).ok


def test_an_edit_to_any_carried_file_is_rewritten(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(demo, out, head=REV_NEW, reuse=True)
    clean = _files(out)
    edited = []
    for rel, text in clean.items():
        if rel.endswith((".json", ".html", ".md")) and "Launch loopx" in text:
            _edit_keeping_stat(out / rel, "Launch loopx", "Lunch  loopx")
            edited.append(rel)
    assert len(edited) > 5
    result = build(demo, out, head=REV_NEW, reuse=True)
    assert result.report is not None and set(edited) <= set(result.report.written)
    assert _files(out) == clean


def test_the_fingerprint_covers_every_module_the_build_runs(demo: Path, tmp_path: Path) -> None:
    import sys

    from loopx.build import reuse

    build(demo, tmp_path / "site", audiences=("public", "team", "private"), head=REV_NEW)
    covered = {name for name, _ in reuse.sources()}
    loaded = {
        "loopx/" + Path(m.__file__).relative_to(Path(reuse.__file__).parents[1]).as_posix()
        for name, m in sys.modules.items()
        if name.startswith("loopx.") and getattr(m, "__file__", None)
    }
    assert "loopx/model/ids.py" in loaded and loaded <= covered
    assert {"templates/style.css", "schemas/status.schema.json"} <= covered


def test_the_fingerprint_walks_source_folders_but_not_compiled_ones(tmp_path: Path) -> None:
    from loopx.build import fingerprint

    for rel in ("a.py", "sub/b.py", "sub/__pycache__/b.cpython-311.pyc", "__pycache__/c.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    (tmp_path / "linked").symlink_to(tmp_path / "sub", target_is_directory=True)
    # Compiled folders are not entered (a .py planted there is never imported), nor links.
    assert fingerprint._walk(str(tmp_path), ".py") == ["a.py", "sub/b.py"]
    assert fingerprint._walk(str(tmp_path), "") == ["a.py", "sub/b.py"]


def test_a_changed_module_template_or_version_changes_the_fingerprint() -> None:
    from loopx.build import registry, reuse

    files = list(reuse.sources(registry.projections()))
    assert reuse.digest(files) == reuse.fingerprint()
    for name in ("loopx/model/ids.py", "templates/html/goal.html", "schemas/index.schema.json"):
        changed = [(n, data + b"\n" if n == name else data) for n, data in files]
        assert reuse.digest(changed) != reuse.fingerprint(), name
    renamed = [("loopx/model/ids2.py" if n == "loopx/model/ids.py" else n, d) for n, d in files]
    assert reuse.digest(renamed) != reuse.fingerprint()
    assert reuse.digest(files, version="loopx 9.9.9") != reuse.fingerprint()


def _units(folder: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Every unit record of a memo folder, by (audience, goal)."""
    return {
        (audience, f.name.removesuffix(".json")): record
        for f in sorted(folder.glob("*.json"))
        if f.name != "index.json" and not f.name.endswith(".layouts.json")
        for audience, record in json.loads(f.read_text())["units"].items()
    }


def _edit_units(folder: Path, edit: Any) -> None:
    """Apply `edit(audience, goal, record)` to every unit record of a memo folder."""
    for f in sorted(folder.glob("*.json")):
        if f.name != "index.json" and not f.name.endswith(".layouts.json"):
            memo = json.loads(f.read_text())
            for audience, record in memo["units"].items():
                edit(audience, memo["goal_id"], record)
            f.write_text(json.dumps(memo))


def test_a_forged_or_damaged_memo_only_costs_a_full_render(
    demo: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    import loopx.build.work as work
    from loopx.build import reuse

    out = tmp_path / "site"
    build(demo, out, head=REV_NEW, reuse=True)
    clean = _files(out)
    folder = reuse.memo_dir(demo, out)
    units = _units(folder)
    assert ("public", "launch") in units and ("team", "docs") in units

    def forge(audience: str, goal_id: str, record: dict[str, Any]) -> None:
        if (audience, goal_id) == ("public", "launch"):
            record["row"]["title"] = "Forged title"
            record["files"] = []  # nothing on disk to vouch for it
        elif (audience, goal_id) == ("team", "launch"):
            record["files"][0][0] = "../../outside.json"
        elif (audience, goal_id) == ("team", "docs"):
            record["files"][0][6] += 1  # another ctime: not the file that was written

    _edit_units(folder, forge)
    rendered: list[tuple[str, str]] = []
    real = work._run
    monkeypatch.setattr(work, "_run", lambda unit: rendered.append(unit) or real(unit))
    build(demo, out, head=REV_NEW, reuse=True)
    assert {("public", "launch"), ("team", "launch"), ("team", "docs")} <= set(rendered)
    assert len(rendered) < len(units)  # the untouched units are still carried over
    assert _files(out) == clean
    broken = {
        ("public", "launch"): {"feed": {"entries": 5, "count": 1, "hidden": 0}},
        ("public", "prototype"): {"search": [None]},
        ("team", "prototype"): {"search": -1},
        ("team", "launch"): {"feed": {"entries": [{"order": [1]}], "count": 1, "hidden": 0}},
        ("team", "docs"): {"search": "x", "feed": []},
    }

    def damage(audience: str, goal_id: str, record: dict[str, Any]) -> None:
        record["parts"] = broken.get((audience, goal_id), record["parts"])

    _edit_units(folder, damage)
    assert set(reuse.load(demo, out).parts) == {u for u in units if u[0] != "private"} - set(broken)
    build(demo, out, head=REV_NEW, reuse=True)  # those goals projected again, no failure
    assert _files(out) == clean
    docs = folder / "docs.json"
    for damaged in (b"{", b"[]", b'{"format": 2, "fingerprint": "x", "units": []}'):
        docs.write_bytes(damaged)
        assert ("team", "docs") not in reuse.load(demo, out).entries
        build(demo, out, head=REV_NEW, reuse=True)
        assert _files(out) == clean
    index = folder / "index.json"
    for damaged in (b"{", b"[]", b'{"format": 2, "fingerprint": "x", "goals": {}}'):
        index.write_bytes(damaged)
        assert reuse.load(demo, out).entries == {}
        build(demo, out, head=REV_NEW, reuse=True)
        assert _files(out) == clean
    index.unlink()
    assert reuse.load(demo, out).entries == {}
    build(demo, out, head=REV_NEW, reuse=True)
    assert _files(out) == clean
    assert set(_units(folder)) == set(units)


def test_a_carried_file_swapped_during_the_build_is_never_read_in_its_place(
    tmp_path: Path,
) -> None:
    """A carried file's bytes are read without following a link, capped, and checked against
    the hash the memo vouched for: a link, a FIFO or other bytes put there since are
    `output_changed` (they would otherwise be scanned and published as the build's)."""
    import hashlib
    import os

    from loopx.build.artifacts import DiskArtifact
    from loopx.model.errors import Conflict

    out = tmp_path / "out"
    (out / "public").mkdir(parents=True)
    good = b"<p>the page the build wrote</p>\n"
    page = out / "public" / "index.html"
    page.write_bytes(good)
    carried = DiskArtifact(
        "public/index.html", out, hashlib.sha256(good).hexdigest(), len(good), "public"
    )
    assert carried.data == good
    outside = tmp_path / "outside.html"
    outside.write_bytes(good)  # even the same bytes, behind a link
    swaps = {
        "other bytes": lambda: page.write_bytes(b"<p>hand-edited since the check</p>\n"),
        "a link": lambda: page.symlink_to(outside),
        "a FIFO": lambda: os.mkfifo(page),
        "longer": lambda: page.write_bytes(good + b"<script>x</script>"),
    }
    for what, swap in swaps.items():
        page.unlink()
        swap()
        with pytest.raises(Conflict) as caught:
            assert carried.data is None, "never reached: reading it raises"
        assert caught.value.code == "output_changed", what


def test_a_rebuild_after_one_event_is_the_full_build_and_renders_only_that_goal(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After one event on one goal, a rebuild carrying over the rest (its files, and what the
    audience's index, feed and search take from each goal) writes byte for byte what a full
    build writes, and renders only that goal and, but for the private audience (its text
    read from the blob store is never kept in the memo), projects only that goal."""
    from loopx.build import work
    from loopx.build.outputs import feed, search

    out, full = tmp_path / "site", tmp_path / "full"
    audiences = ("public", "team", "private")
    build(demo, out, head=REV_NEW, audiences=audiences, reuse=True)
    r = ["--root", str(demo)]
    added = ["todo", "add", *r, "--goal-id", "launch", "--todo-id", "one-more", "--title", "One"]
    added += ["--visibility", "public"]
    assert run_cli(added).exit_code == 0
    rendered: list[str] = []
    projected: list[str] = []
    real_render, real_search, real_feed = work.goal_artifacts, search.item_count, feed._newest

    def render(state: Any, *args: Any, **kwargs: Any) -> Any:
        rendered.append(state.goal_id)
        return real_render(state, *args, **kwargs)

    def count(state: Any, lens: Any) -> Any:
        if lens.audience != "private":
            projected.append(state.goal_id)
        return real_search(state, lens)

    def newest(state: Any, lens: Any) -> Any:
        if lens.audience != "private":
            projected.append(state.goal_id)
        return real_feed(state, lens)

    monkeypatch.setattr(work, "goal_artifacts", render)
    monkeypatch.setattr(search, "item_count", count)
    monkeypatch.setattr(feed, "_newest", newest)
    build(demo, out, head=REV_NEW, audiences=audiences, reuse=True)
    assert set(rendered) == set(projected) == {"launch"}
    assert len(rendered) == 3  # once per audience
    build(demo, full, head=REV_NEW, audiences=audiences)  # no memo: everything made again
    assert "One" in _files(full)["public/goals/launch/search.json"]
    assert _files(out) == _files(full)
    assert check(demo, out, head=REV_NEW, audiences=audiences).ok


def _count_pages(monkeypatch: pytest.MonkeyPatch, made: list[tuple[str, str]]) -> None:
    """Record each todo page made (audience, todo), as it is made."""
    from loopx.build.outputs import todo_pages

    render = todo_pages.PAGES.render

    def counted(env: Any, inputs: dict[str, Any]) -> str:
        made.append((inputs["audience"], inputs["t"]["todo_id"]))
        return render(env, inputs)

    monkeypatch.setattr(todo_pages.PAGES, "render", counted)


def test_a_changed_goal_makes_only_the_todo_pages_whose_inputs_changed(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Renaming one todo changes its page and the pages that link to it (they show its
    title), not the other pages of its goal: a rebuild makes only those, carries the rest
    over, and writes byte for byte what a full build writes. The private audience (its text
    read from the blob store) and a build with no memo (`--check`, `--force`) make every
    page."""
    out, full = tmp_path / "site", tmp_path / "full"
    audiences = ("public", "team", "private")
    build(demo, out, head=REV_NEW, audiences=audiences, reuse=True)
    renamed = ["todo", "update", "--root", str(demo), "--goal-id", "launch"]
    assert run_cli([*renamed, "--todo-id", "status-page", "--title", "Status pages"]).exit_code == 0
    made: list[tuple[str, str]] = []
    _count_pages(monkeypatch, made)
    result = build(demo, out, head=REV_NEW, audiences=audiences, reuse=True)
    # itself, what it needs, and what needs it (a team todo): the public sees fewer
    linked = {"public": {"status-page", "cli"}, "team": {"status-page", "cli", "release-notes"}}
    for audience, pages in linked.items():
        assert {t for a, t in made if a == audience} == pages, audience
    private = {t for a, t in made if a == "private"}
    assert private > linked["team"] and len(private) >= 9
    assert result.report is not None
    written = {p for p in result.report.written if "/todos/" in p}
    linked["private"] = linked["team"]  # the others are made again, the same bytes
    assert written == {f"{a}/goals/launch/todos/{t}.html" for a, ts in linked.items() for t in ts}
    made.clear()
    build(demo, full, head=REV_NEW, audiences=audiences)  # no memo: every page made
    assert _files(out) == _files(full)
    every = len(made)
    assert every > 3 * len(private) - 6
    made.clear()
    assert check(demo, out, head=REV_NEW, audiences=audiences).ok
    assert len(made) == every
    made.clear()
    build(demo, out, head=REV_NEW, audiences=audiences, reuse=False)  # --force
    assert len(made) == every


def test_a_hand_edited_todo_page_of_a_changed_goal_is_made_again(
    demo: Path, tmp_path: Path
) -> None:
    """A todo page whose inputs did not change is carried over only while it is still the
    file that was written: one edited by hand (size and mtime kept) is made and written
    again, whatever else the event changed."""
    out = tmp_path / "site"
    build(demo, out, head=REV_NEW, reuse=True)
    page = out / "public/goals/launch/todos/ledger.html"
    clean = page.read_bytes()
    _edit_keeping_stat(page, "Append-only", "Append-once")
    renamed = ["todo", "update", "--root", str(demo), "--goal-id", "launch"]
    assert run_cli([*renamed, "--todo-id", "status-page", "--title", "Status pages"]).exit_code == 0
    result = build(demo, out, head=REV_NEW, reuse=True)
    assert (
        result.report is not None
        and "public/goals/launch/todos/ledger.html" in result.report.written
    )
    assert page.read_bytes() == clean
    assert check(demo, out, head=REV_NEW).ok


def test_the_remembered_fingerprint_follows_every_source_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`code.json` spares a fresh process reading every source file (the package's, an
    extension's, and the installed packages' whose code makes output bytes), only while each
    is still the file it was hashed from, and only on the host that wrote it: an edit (same
    size, any mtime: its ctime moves), a new file, an upgraded package or a memo of another
    host's means reading and hashing again."""
    import time

    from loopx.build import fingerprint as fp
    from loopx.build import registry

    names = {name for name, _ in fp.files()}
    for package in ("jinja2", "markupsafe", "orjson", "msgspec"):
        assert any(n.startswith(f"package/{package}/") for n in names), package
    lib = tmp_path / "lib" / "fakerender"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("STYLE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    monkeypatch.setattr(fp, "PACKAGES", (*fp.PACKAGES, "fakerender"))
    extension = tmp_path / "ext.py"
    extension.write_text("x = 1\n")
    folder = tmp_path / "project" / ".loopx" / "cache" / "build"
    folder.mkdir(parents=True)
    real_files = fp.files
    listed = [("extension/ext.py", extension)]
    monkeypatch.setattr(fp, "files", lambda reg=(): iter([*real_files(reg), *listed]))
    reads: list[Path] = []
    real_read = Path.read_bytes

    def read(path: Path) -> bytes:
        reads.append(path)
        return real_read(path)

    monkeypatch.setattr(Path, "read_bytes", read)

    def fresh() -> tuple[str, int]:
        fp._fingerprint.cache_clear()
        fp._memo.cache_clear()
        fp._package.cache_clear()
        reads.clear()
        return fp.fingerprint(folder), len(reads)

    def full() -> str:
        return fp.digest(fp.sources(registry.projections()))

    def edit(path: Path, text: str) -> None:
        before = path.stat()
        time.sleep(0.01)
        path.write_text(text)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))

    try:
        first, read_first = fresh()
        assert first == full() and read_first > 250
        fp.remember(folder)
        assert fresh() == (first, 0)
        edit(extension, "x = 2\n")
        edited, read_edited = fresh()
        assert edited != first and edited == full() and read_edited == 1
        fp.remember(folder)
        edit(lib / "__init__.py", "STYLE = 2\n")  # an upgrade of a package
        upgraded, read_upgraded = fresh()
        assert upgraded not in (first, edited) and upgraded == full() and read_upgraded == 1
        fp.remember(folder)
        listed.append(("extension/more.py", extension))
        assert fresh() == (full(), 0) and full() != upgraded  # a new name
        listed.pop()
        assert fresh() == (upgraded, 0)
        memo = json.loads((folder / fp.FILE).read_text())
        (folder / fp.FILE).write_text(json.dumps({**memo, "host": "another-host"}))
        digest, read_again = fresh()
        assert digest == upgraded and read_again > 250  # another host's: not trusted
    finally:
        fp._fingerprint.cache_clear()
        fp._memo.cache_clear()
        fp._package.cache_clear()


def test_a_changed_goal_takes_its_graph_layouts_from_the_memo(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A status change keeps every task graph's shape: the rebuild draws the changed goal
    with the layouts its last build kept in the memo, lays out none again, and writes byte
    for byte what a full build writes. A layout that does not fit its shape is laid out
    again; a new shape is laid out."""
    from loopx.build import layouts, reuse
    from loopx.render import svg

    out, full = tmp_path / "site", tmp_path / "full"
    build(demo, out, head=REV_NEW, reuse=True)
    memo_file = reuse.memo_dir(demo, out) / "launch.layouts.json"
    kept = json.loads(memo_file.read_text())["units"]
    assert kept["public"] and kept["team"]
    again = layouts.to_json(layouts.from_json(kept["team"]))
    assert json.loads(json.dumps(again)) == kept["team"]
    blocked = ["todo", "block", "--root", str(demo), "--goal-id", "launch"]
    assert run_cli([*blocked, "--todo-id", "status-page", "--reason", "Waiting."]).exit_code == 0
    laid: list[Any] = []
    real = svg._layout
    monkeypatch.setattr(svg, "_layout", lambda g: laid.append(g) or real(g))
    svg._laid_out.cache_clear()
    result = build(demo, out, head=REV_NEW, reuse=True)
    assert result.report is not None and "public/goals/launch/graph.html" in result.report.written
    assert laid == []
    build(demo, full, head=REV_NEW)
    assert _files(out) == _files(full) and laid
    memo = json.loads(memo_file.read_text())
    for laid in memo["units"].values():
        for item in laid:
            item[2][item[0][0]] = ["x", 1]  # a node placed nowhere: not a layout of it
    memo_file.write_text(json.dumps(memo))
    assert layouts.from_json(memo["units"]["public"]) == {}
    assert run_cli([*blocked, "--todo-id", "workbench", "--reason", "Waiting too."]).exit_code == 0
    laid.clear()
    svg._laid_out.cache_clear()
    build(demo, out, head=REV_NEW, reuse=True)
    assert laid  # laid out again
    build(demo, full, head=REV_NEW)
    assert _files(out) == _files(full)


def _folds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The goals the build folds (each `load_state` of the pipeline), as they happen."""
    from loopx.build import pipeline

    folded: list[str] = []
    real = pipeline.load_state
    monkeypatch.setattr(pipeline, "load_state", lambda s, g: folded.append(g) or real(s, g))
    return folded


def test_a_rebuild_after_one_event_folds_only_that_goal(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other goals' ledgers have the change token the memo recorded with their fields:
    they are not folded (nor read) at all, and the rebuild still writes byte for byte what
    a full build writes."""
    out, full = tmp_path / "site", tmp_path / "full"
    build(demo, out, head=REV_NEW, reuse=True)
    added = ["todo", "add", "--root", str(demo), "--goal-id", "launch", "--title", "One"]
    assert run_cli([*added, "--visibility", "public"]).exit_code == 0
    folded = _folds(monkeypatch)
    build(demo, out, head=REV_NEW, reuse=True)
    assert folded == ["launch"]
    folded.clear()
    build(demo, out, head=REV_NEW, reuse=True)
    assert folded == []  # nothing new: nothing folded
    build(demo, full, head=REV_NEW)
    assert len(folded) > 1
    assert _files(out) == _files(full)
    assert check(demo, out, head=REV_NEW).ok


def test_a_ledger_changed_under_the_same_size_and_mtime_is_folded_again(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same ledger file (same inode), the same size and modification time, other events:
    its ctime moved, so the goal is folded again and the rebuild is the full build."""
    out, full = tmp_path / "site", tmp_path / "full"
    ledger = demo / ".loopx/goals/launch/ledger.jsonl"
    before = ledger.read_bytes()
    r = ["--root", str(demo), "--goal-id", "launch", "--todo-id", "same-size"]

    def add(title: str) -> None:
        result = run_cli(["todo", "add", *r, "--title", title, "--visibility", "public"])
        assert result.exit_code == 0

    monkeypatch.setenv("LOOPX_NOW", "2026-03-02T12:00:00Z")
    add("Alpha")
    build(demo, out, head=REV_NEW, reuse=True)
    first = ledger.stat()
    with ledger.open("r+b") as f:  # back to before, in place: the same inode
        f.truncate(len(before))
    add("Omega")
    os.utime(ledger, ns=(first.st_atime_ns, first.st_mtime_ns))
    now = ledger.stat()
    assert (now.st_size, now.st_mtime_ns, now.st_ino) == (
        first.st_size,
        first.st_mtime_ns,
        first.st_ino,
    )
    folded = _folds(monkeypatch)
    build(demo, out, head=REV_NEW, reuse=True)
    assert folded == ["launch"]
    search = _files(out)["public/goals/launch/search.json"]
    assert "Omega" in search and "Alpha" not in search
    build(demo, full, head=REV_NEW)
    assert _files(out) == _files(full)


def test_a_forged_or_damaged_goal_record_costs_folding_it(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A goal record of the memo of another shape is not used (the goal is folded); one
    whose fields are not the ledger's (a head, a visibility) is found out when the goal is
    folded, and the build starts again folding every goal: either way it writes what a full
    build writes."""
    from loopx.build import reuse

    out, full = tmp_path / "site", tmp_path / "full"
    build(demo, out, head=REV_NEW, reuse=True)
    build(demo, full, head=REV_NEW)
    memo_file = reuse.memo_dir(demo, out) / "index.json"
    clean = memo_file.read_bytes()
    goals = json.loads(clean)["goals"]
    assert {"launch", "docs"} <= set(goals)
    folded = _folds(monkeypatch)
    forgeries: list[tuple[str, str, Any]] = [
        ("launch", "head", "0" * 64),
        ("launch", "truth_revision", 1),
        (
            "docs",
            "visibility",
            "public" if goals["docs"]["facts"]["visibility"] != "public" else "team",
        ),
        ("launch", "goal_id", "docs"),
        ("docs", "revision", "7"),
    ]
    for goal_id, name, value in forgeries:
        memo = json.loads(clean)
        memo["goals"][goal_id]["facts"][name] = value
        memo_file.write_text(json.dumps(memo))
        folded.clear()
        build(demo, out, head=REV_NEW, reuse=True)
        assert goal_id in folded, (goal_id, name)
        assert _files(out) == _files(full), (goal_id, name)
    for damaged in ([], {"token": "x"}, {"token": [1], "facts": None}):
        memo = json.loads(clean)
        memo["goals"]["launch"] = damaged
        memo_file.write_text(json.dumps(memo))
        assert "launch" not in reuse.load(demo, out).facts
        folded.clear()
        build(demo, out, head=REV_NEW, reuse=True)
        assert folded == ["launch"]
        assert _files(out) == _files(full)


def test_a_carried_goal_is_folded_only_when_needed_and_must_match() -> None:
    from loopx.build import facts
    from loopx.state.entities import GoalState

    state = GoalState(goal_id="g", visibility="public", revision=4, head="h4")
    state.truth_revision, state.truth_head, state.truth_at = 3, "h3", "t3"
    fields = facts.of(state)
    calls: list[int] = []

    def fold() -> GoalState:
        calls.append(1)
        return state

    carried = facts.Carried(fields, fold).as_state()
    truth = facts.truth(carried)
    assert (carried.head, carried.revision, truth.head, truth.revision) == ("h4", 4, "h3", 3)
    assert carried.visibility == "public" and calls == []
    assert carried.todos == {} and truth.turns == {} and calls == [1]
    moved = GoalState(goal_id="g", visibility="public", revision=5, head="h5")
    with pytest.raises(facts.Stale):
        _ = facts.Carried(fields, lambda: moved).as_state().todos
    with pytest.raises(facts.Stale):
        _ = facts.truth(facts.Carried(fields, lambda: moved).as_state()).todos


def _stamps(folder: Path) -> dict[str, tuple[int, int]]:
    return {f.name: (f.stat().st_ino, f.stat().st_mtime_ns) for f in sorted(folder.iterdir())}


def test_a_rebuild_rewrites_the_memo_files_of_the_changed_goal_only(
    demo: Path, tmp_path: Path
) -> None:
    """One file per goal: after one event, the rebuild writes that goal's files of the memo
    and the index, and leaves the others as they were; with nothing new, it writes none."""
    from loopx.build import reuse

    out = tmp_path / "site"
    build(demo, out, head=REV_NEW, reuse=True)
    folder = reuse.memo_dir(demo, out)
    before = _stamps(folder)
    assert {"index.json", "launch.json", "launch.layouts.json", "docs.json"} <= set(before)
    build(demo, out, head=REV_NEW, reuse=True)
    assert _stamps(folder) == before
    added = ["todo", "add", "--root", str(demo), "--goal-id", "launch", "--title", "One"]
    assert run_cli([*added, "--visibility", "public"]).exit_code == 0
    build(demo, out, head=REV_NEW, reuse=True)
    now = _stamps(folder)
    assert {n for n in now if now[n] != before.get(n)} == {
        "index.json",
        "launch.json",
        "launch.layouts.json",
    }


def test_a_stale_or_missing_goal_file_of_the_memo_costs_rendering_that_goal(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each goal file stands on its own: one left from an earlier build (a build interrupted
    after the index, a copy put back) records keys of older heads, so its units are rendered
    again, as are those of a goal whose file is gone."""
    import loopx.build.work as work
    from loopx.build import reuse

    out, full = tmp_path / "site", tmp_path / "full"
    build(demo, out, head=REV_NEW, reuse=True)
    folder = reuse.memo_dir(demo, out)
    old = (folder / "launch.json").read_bytes()
    added = ["todo", "add", "--root", str(demo), "--goal-id", "launch", "--title", "One"]
    assert run_cli([*added, "--visibility", "public"]).exit_code == 0
    build(demo, out, head=REV_NEW, reuse=True)
    (folder / "launch.json").write_bytes(old)
    (folder / "docs.json").unlink()
    rendered: list[tuple[str, str]] = []
    real = work._run
    monkeypatch.setattr(work, "_run", lambda unit: rendered.append(unit) or real(unit))
    build(demo, out, head=REV_NEW, reuse=True)
    assert sorted(rendered) == [("public", "launch"), ("team", "docs"), ("team", "launch")]
    build(demo, full, head=REV_NEW)
    assert _files(out) == _files(full)
    rendered.clear()
    build(demo, out, head=REV_NEW, reuse=True)
    assert rendered == []


def test_a_memo_names_only_files_inside_its_unit_folder() -> None:
    """What the memo may name as a unit's file, relative to the unit's folder: plain parts,
    none empty, `.`, `..` or hidden (`.loopx`, `.git`, the staging folder)."""
    from loopx.build import reuse

    good = ["index.html", "todos/t-1.html", "handoffs/a.b.md", "x/y/z_1-2.json"]
    bad = ["", "../x", "todos/../../x", ".loopx/ledger", "a//b", "/abs", "a/", ".", "a/.git"]
    bad += ["todos/.hidden", "a b", "a\\b", "é.html"]
    for name in good:
        assert reuse._RELS.fullmatch(name), name
    assert reuse._RELS.fullmatch("\n".join(good))
    for name in bad:
        assert not reuse._RELS.fullmatch(name), name
        assert not reuse._RELS.fullmatch("\n".join([*good, name])), name


def test_a_carried_file_or_folder_swapped_for_a_link_is_never_carried(
    demo: Path, tmp_path: Path
) -> None:
    """The memo's check of a carried file looks at it without following a link (through
    its folder's descriptor): a page, or a unit's `todos/` folder, swapped for a link to
    the very same bytes is not carried over, and the writer refuses the link."""
    from loopx.build import reuse
    from loopx.model.errors import LoopxError

    out = tmp_path / "site"
    build(demo, out, head=REV_NEW, reuse=True)
    unit = ("public", "launch")
    for swapped in ("public/goals/launch/index.html", "public/goals/launch/todos"):
        target = out / swapped
        aside = tmp_path / ("aside-" + target.name)
        target.rename(aside)
        target.symlink_to(aside, target_is_directory=aside.is_dir())
        assert unit not in reuse.load(demo, out).entries, swapped
        with pytest.raises(LoopxError) as caught:
            build(demo, out, head=REV_NEW, reuse=True)
        assert caught.value.code == "unsafe_output_path", swapped
        target.unlink()
        aside.rename(target)  # back, but not as written: its ctime moved
        build(demo, out, head=REV_NEW, reuse=True)
        assert check(demo, out, head=REV_NEW).ok
        assert unit in reuse.load(demo, out).entries, swapped


def _count_manifest_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from loopx.build import pipeline

    reads: list[str] = []
    real = pipeline.manifest_entries

    def counted(folder: Any, name: str = "manifest.json") -> Any:
        reads.append(name)
        return real(folder, name)

    monkeypatch.setattr(pipeline, "manifest_entries", counted)
    return reads


def test_a_rebuild_knows_what_the_manifest_lists_without_reading_it(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest the memo's build wrote, still as written, lists the files the memo
    records (a digest of them says so): a rebuild does not read it back (2 MB on a
    10,000-todo root), and writes what a full build writes."""
    out, full = tmp_path / "site", tmp_path / "full"
    build(demo, out, head=REV_NEW, reuse=True)
    reads = _count_manifest_reads(monkeypatch)
    r = ["--root", str(demo), "--goal-id", "launch"]
    for n in range(2):
        added = ["todo", "add", *r, "--todo-id", f"one-more-{n}", "--title", f"One {n}"]
        assert run_cli([*added, "--visibility", "public"]).exit_code == 0
        build(demo, out, head=REV_NEW, reuse=True)
        assert (out / f"public/goals/launch/todos/one-more-{n}.html").exists()
    assert reads == []
    build(demo, full, head=REV_NEW)
    assert _files(out) == _files(full)
    assert check(demo, out, head=REV_NEW).ok


def test_a_manifest_changed_since_the_memo_is_read_again(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest edited since the memo's build (another's listing of a file of theirs as
    ours) is read, never taken from the memo: what it lists is what the build may replace
    or remove. So is one when the memo's record of it is damaged."""
    from loopx.build import reuse

    out = tmp_path / "site"
    build(demo, out, head=REV_NEW, reuse=True)
    reads = _count_manifest_reads(monkeypatch)
    extra = out / "public" / "extra.txt"
    extra.write_text("an earlier build of ours wrote this\n", "utf-8")
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    manifest["files"]["public/extra.txt"] = {
        "sha256": hashlib.sha256(extra.read_bytes()).hexdigest(),
        "bytes": extra.stat().st_size,
        "audience": "public",
        "schema": None,
        "goal_id": None,
    }
    (out / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    build(demo, out, head=REV_NEW, reuse=True)
    assert reads == ["manifest.json"]
    assert not extra.exists()  # listed by the manifest as ours: removed
    reads.clear()
    index = reuse.memo_dir(demo, out) / "index.json"
    memo = json.loads(index.read_text("utf-8"))
    memo["manifest"]["others"] = memo["manifest"]["others"][1:]
    index.write_text(json.dumps(memo), "utf-8")
    extra.write_text("a file of the user's\n", "utf-8")
    build(demo, out, head=REV_NEW, reuse=True)
    assert reads == ["manifest.json"]
    assert extra.exists()  # not listed: never removed


def _journals(monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict[str, Any]], list[str]]:
    """What each write journals as the hash of the file it replaces (rel → hash), and every
    file of the output folder read to be compared or hashed."""
    from loopx.build import outdir, writer

    plans: list[dict[str, Any]] = []
    reads: list[str] = []
    real_commit, real_digest, real_read = (
        writer._commit,
        outdir.Folder.digest,
        outdir.Folder.read_checked,
    )

    def commit(folder: Any, changed: Any, replaced: Any, *args: Any, **kwargs: Any) -> Any:
        plans.append(dict(replaced))
        return real_commit(folder, changed, replaced, *args, **kwargs)

    def digest(self: Any, rel: str, size: int | None = None) -> Any:
        reads.append(rel)
        return real_digest(self, rel, size)

    def read_checked(self: Any, rel: str, cap: int) -> Any:
        reads.append(rel)
        return real_read(self, rel, cap)

    monkeypatch.setattr(writer, "_commit", commit)
    monkeypatch.setattr(outdir.Folder, "digest", digest)
    monkeypatch.setattr(outdir.Folder, "read_checked", read_checked)
    return plans, reads


def _hashes(out: Path) -> dict[str, str]:
    return {
        p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def test_a_rebuild_takes_what_it_replaces_from_the_memo_while_the_file_is_as_written(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the event changed, still the file the memo's build wrote (its size, mtime,
    ctime and inode), is not read back to be compared or hashed: the journal names the hash
    the memo records, which is the hash of what is on disk. The files of a unit with a file
    edited since (its unit is not carried: `load`) are read, and their own hashes
    journaled; the output is what a full build writes."""
    out, full = tmp_path / "site", tmp_path / "full"
    build(demo, out, head=REV_NEW, reuse=True)
    plans, reads = _journals(monkeypatch)
    edited = "team/goals/launch/status.json"
    _edit_keeping_stat(out / edited, "Launch loopx", "Lunch  loopx")
    before = _hashes(out)
    r = ["--root", str(demo), "--goal-id", "launch"]
    added = ["todo", "add", *r, "--todo-id", "one-more", "--title", "One", "--visibility", "public"]
    assert run_cli(added).exit_code == 0
    build(demo, out, head=REV_NEW, reuse=True)
    (replaced,) = plans
    assert "manifest.json" in replaced and edited in replaced
    for rel, old in replaced.items():
        assert old == before.get(rel), rel  # what was on disk (None: a new file)
    public = {rel for rel in replaced if rel.startswith("public/goals/launch/")}
    assert len(public) > 5 and public.isdisjoint(reads)  # as the memo's build wrote them
    assert "manifest.json" not in reads
    assert edited in reads and "team/goals/launch/index.html" in reads
    build(demo, full, head=REV_NEW)
    assert _files(out) == _files(full)
    assert check(demo, out, head=REV_NEW).ok


def test_a_memo_row_of_the_wrong_types_is_never_carried(demo: Path, tmp_path: Path) -> None:
    """A unit whose record names a file with a size, mtime, ctime or inode that is not a
    whole number as `lstat` gives it (a float, a boolean, a string), or a hash that is not
    64 lowercase hex digits, is not carried: its goal is rendered again."""
    from loopx.build import reuse

    out = tmp_path / "site"
    build(demo, out, head=REV_NEW, reuse=True)
    clean = _files(out)
    folder = reuse.memo_dir(demo, out)
    assert ("public", "launch") in reuse.load(demo, out).entries
    forgeries: list[Any] = [
        (4, float),
        (5, bool),
        (7, str),
        (1, str.upper),
        (1, lambda v: v[:63] + "g"),
        (1, lambda v: v[:63]),
        (3, lambda v: "A" * 64),
    ]
    original = (folder / "launch.json").read_text()
    for column, forge in forgeries:

        def edit(
            audience: str, goal_id: str, record: dict[str, Any], c: int = column, f: Any = forge
        ) -> None:
            if (audience, goal_id) == ("public", "launch"):
                record["files"][0][c] = f(record["files"][0][c])

        (folder / "launch.json").write_text(original)
        _edit_units(folder, edit)
        assert ("public", "launch") not in reuse.load(demo, out).entries, column
        assert ("team", "launch") in reuse.load(demo, out).entries
    build(demo, out, head=REV_NEW, reuse=True)
    assert _files(out) == clean
