"""The projection build: schema validity, determinism, check, diff, publish, serve, writer.

The tests on the `demo` project run on the file store and on PostgreSQL (`store_kind`), except
those marked `files_only` that test the output side (the writer's faults, git publishing,
carried files, code fingerprints), which is the same whatever store the ledger comes from."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from loopx.build import writer
from loopx.build.pipeline import build, check
from loopx.build.validate import problems
from loopx.engine import evidence, gates, goals, todos
from loopx.engine.commands import AddEvidence, AddTodo, CompleteTodo, CreateGoal, ResolveGate
from loopx.engine.demo import REV_NEW
from loopx.model.errors import BoundaryViolation, LoopxError
from loopx.store import fsio
from loopx.store.filestore import FileStore
from tests.conftest import (
    drop_goal,
    ledger_bytes,
    make_ctx,
    move_into_store,
    project_store,
    replace_ledger,
    run_cli,
)


@pytest.fixture
def demo(demo: Path, store_kind: str) -> Path:
    """The shared demo copy (conftest), in each store."""
    move_into_store(demo)
    return demo


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_every_json_artifact_is_valid_against_its_schema(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(demo, out, audiences=("public", "team", "private"), head=REV_NEW)
    manifest = json.loads((out / "manifest.json").read_text())
    assert problems("loopx.manifest/v1", manifest) == []
    checked = 0
    for path, meta in manifest["files"].items():
        data = (out / path).read_bytes()
        assert meta["sha256"] == __import__("hashlib").sha256(data).hexdigest()
        if meta["schema"]:
            doc = json.loads(data)
            # A shields.io endpoint document has a fixed shape of its own (no "schema").
            assert doc.get("schema", "shields.endpoint/v1") == meta["schema"]
            assert problems(meta["schema"], doc) == [], path
            checked += 1
    kinds = {m["schema"] for m in manifest["files"].values()}
    assert {"loopx.status/v2", "loopx.index/v1", "loopx.graph/v1", "loopx.review/v1"} <= kinds
    assert "shields.endpoint/v1" in kinds
    assert checked >= 20


def test_public_schema_refuses_team_only_fields(demo: Path, tmp_path: Path) -> None:
    build(demo, tmp_path / "site", head=REV_NEW)
    status = json.loads((tmp_path / "site/public/goals/launch/status.json").read_text())
    assert problems("loopx.status/v2", status) == []
    leaky = dict(status, leases=[])
    assert problems("loopx.status/v2", leaky)
    leaky_todo = json.loads(json.dumps(status))
    leaky_todo["todos"][0]["claim"] = {
        "agent_id": "a",
        "session_id": "s",
        "lease_expires_at": "2026-01-01T00:00:00Z",
        "live": True,
    }
    assert problems("loopx.status/v2", leaky_todo)
    extra = dict(status, secret="x")
    assert problems("loopx.status/v2", extra)


def test_build_is_byte_identical_across_folders_and_times(demo_root: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "proj", tmp_path / "b" / "elsewhere"
    shutil.copytree(demo_root, first)
    shutil.copytree(demo_root, second)
    build(first, tmp_path / "out1", head=REV_NEW)
    time.sleep(1.1)
    build(second, tmp_path / "deeper" / "out2", head=REV_NEW)
    one, two = _tree(tmp_path / "out1"), _tree(tmp_path / "deeper" / "out2")
    assert one == two
    for data in one.values():
        assert str(tmp_path).encode() not in data
        assert b"/tmp/" not in data


def test_unchanged_files_are_not_rewritten(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(demo, out, head=REV_NEW)
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    result = build(demo, out, head=REV_NEW)
    assert result.report is not None and result.report.written == []
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before


def test_one_event_rewrites_only_what_changed(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(demo, out, head=REV_NEW)
    ctx = make_ctx(project_store(demo), agent="maintainer")
    todos.add_todo(ctx, AddTodo(goal_id="docs", title="Changelog", todo_id="changelog"))
    result = build(demo, out, head=REV_NEW)
    assert result.report is not None
    written = result.report.written
    assert "team/goals/docs/todos/changelog.html" in written
    assert all(p.startswith("team/") or p == "manifest.json" for p in written)
    assert not any("/launch/" in p for p in written)


def test_check_reports_stale_and_hand_edited_files(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(demo, out, head=REV_NEW)
    assert check(demo, out, head=REV_NEW).ok
    edited = out / "team/goals/launch/workbench.md"
    edited.write_text(edited.read_text() + "\nhand edit\n")
    result = check(demo, out, head=REV_NEW)
    assert result.stale == ["team/goals/launch/workbench.md"]
    ctx = make_ctx(project_store(demo), agent="maintainer")
    todos.add_todo(
        ctx, AddTodo(goal_id="launch", title="Announce", todo_id="announce", visibility="public")
    )
    result = check(demo, out, head=REV_NEW)
    assert "public/goals/launch/status.json" in result.stale
    assert "public/goals/launch/todos/announce.html" in result.missing
    cli = run_cli(
        [
            "build",
            "--root",
            str(demo),
            "--out",
            str(out),
            "--head",
            REV_NEW,
            "--check",
            "--format",
            "json",
        ]
    )
    assert cli.exit_code == 6
    err = cli.json()["error"]
    assert err["code"] == "build_stale"
    assert "public/goals/launch/todos/announce.html" in err["details"]["missing"]


def test_files_gone_from_the_ledger_are_removed_but_user_files_kept(
    demo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "site"
    build(demo, out, head=REV_NEW)
    (out / "README.txt").write_text("mine")
    drop_goal(demo, "docs")
    result = build(demo, out, head=REV_NEW)
    assert result.report is not None
    assert "team/goals/docs/index.html" in result.report.removed
    assert not (out / "team/goals/docs").exists()
    assert (out / "README.txt").read_text() == "mine"


def test_counts_come_from_the_full_state_not_a_truncated_list(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "p")
    store.init()
    ctx = make_ctx(store, agent="maintainer", step=0)
    goals.create_goal(
        ctx, CreateGoal(goal_id="big", title="Big", objective="Many todos", visibility="public")
    )
    for i in range(1005):
        todos.add_todo(
            ctx, AddTodo(goal_id="big", title=f"Todo {i}", todo_id=f"t{i}", visibility="public")
        )
    for i in range(10):
        todos.complete_todo(ctx, CompleteTodo(goal_id="big", todo_id=f"t{i}"))
    build(tmp_path / "p", tmp_path / "site", audiences=("public",), head=None)
    status = json.loads((tmp_path / "site/public/goals/big/status.json").read_text())
    assert status["progress"]["total"] == 1005
    assert status["progress"]["done"] == 10
    assert status["progress"]["open"] == 995
    assert status["truncated"]["todos"] == 1005 - len(status["todos"]) > 0
    page = (tmp_path / "site/public/goals/big/index.html").read_text()
    assert "more not listed" in page


def test_diff_of_two_builds_speaks_domain_terms(demo: Path, tmp_path: Path) -> None:
    build(demo, tmp_path / "old", head=REV_NEW)
    store = project_store(demo)
    me = make_ctx(store, agent="maintainer")
    codex = make_ctx(store, agent="agent-codex", session="codex-2")
    todos.add_todo(
        me, AddTodo(goal_id="launch", title="Announce", todo_id="announce", visibility="public")
    )
    todos.complete_todo(codex, CompleteTodo(goal_id="launch", todo_id="cli"))
    gates.resolve_gate(
        me,
        ResolveGate(goal_id="launch", gate_id="grant-design", resolution="approve", rationale="ok"),
    )
    evidence.add_evidence(
        codex,
        AddEvidence(
            goal_id="launch",
            kind="pr",
            summary="PR merged",
            todo_id="cli",
            visibility="team",
            evidence_id="ev-pr",
        ),
    )
    build(demo, tmp_path / "new", head=REV_NEW)
    result = run_cli(["diff", str(tmp_path / "old"), str(tmp_path / "new"), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    kinds = {
        (c["kind"], c.get("todo_id") or c.get("gate_id") or c.get("evidence_id"))
        for c in result.json()["changes"]
    }
    assert ("todo_added", "announce") in kinds
    assert ("todo_closed", "cli") in kinds
    assert ("gate_resolved", "grant-design") in kinds
    assert ("evidence_added", "ev-pr") in kinds
    md = run_cli(["diff", str(tmp_path / "old"), str(tmp_path / "new"), "--format", "markdown"])
    assert md.stdout.startswith("### loopx: what changed\n\n`")
    assert "\n\n- " in md.stdout  # the list stands apart from the summary line
    assert "- todo `cli` done: Command-line interface" in md.stdout  # ids as code
    public = run_cli(
        [
            "diff",
            str(tmp_path / "old"),
            str(tmp_path / "new"),
            "--audience",
            "public",
            "--format",
            "json",
        ]
    ).json()
    assert not any(c.get("evidence_id") == "ev-pr" for c in public["changes"])


def test_diff_of_two_ledger_revisions(demo: Path) -> None:
    result = run_cli(
        ["diff", "--root", str(demo), "--goal-id", "launch", "10", "20", "--format", "json"]
    )
    assert result.exit_code == 0, result.stderr
    texts = [c["text"] for c in result.json()["changes"]]
    assert any(t.startswith("todo ledger done") for t in texts)
    bad = run_cli(["diff", "--root", str(demo), "--goal-id", "launch", "1", "9999"])
    assert bad.exit_code == 2 and "invalid_revision" in bad.stderr
    missing = run_cli(["diff", "/nonexistent/a", "/nonexistent/b"])
    assert missing.exit_code == 3


def test_publish_to_a_folder_ships_only_public_files(demo: Path, tmp_path: Path) -> None:
    dest = tmp_path / "pub"
    result = run_cli(
        ["publish", "--root", str(demo), "--to", str(dest), "--head", REV_NEW, "--format", "json"]
    )
    assert result.exit_code == 0, result.stderr
    files = _tree(dest)
    assert "index.html" in files and "goals/launch/status.json" in files
    assert not any("docs" in p.split("/")[:2] or "security-review" in p for p in files)
    assert not any(p.startswith("team/") for p in files)
    team_only = b"Markdown workbench for review"
    assert all(team_only not in data for data in files.values())
    (dest / "CNAME").write_text("status.example.org")
    drop_goal(demo, "prototype")
    run_cli(["publish", "--root", str(demo), "--to", str(dest), "--head", REV_NEW])
    assert not (dest / "goals/prototype/index.html").exists()
    assert (dest / "CNAME").read_text() == "status.example.org"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.mark.files_only("the output side: the same whatever store the ledger is read from")
def test_publish_to_a_git_branch_commits_the_public_partition(demo: Path) -> None:
    _git(demo, "init", "-q", "-b", "main")
    _git(
        demo,
        "-c",
        "user.email=a@b.c",
        "-c",
        "user.name=A",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "start",
    )
    status_before = _git(demo, "status", "--porcelain")
    result = run_cli(
        [
            "publish",
            "--root",
            str(demo),
            "--git-branch",
            "status-page",
            "--head",
            REV_NEW,
            "--format",
            "json",
        ]
    )
    assert result.exit_code == 0, result.stderr
    commit = result.json()["commit"]
    assert _git(demo, "rev-parse", "status-page") == commit
    listed = _git(demo, "ls-tree", "-r", "--name-only", "status-page").splitlines()
    assert "index.html" in listed and "goals/launch/status.json" in listed
    assert not any(p.startswith(("goals/docs", "goals/security-review")) for p in listed)
    message = _git(demo, "log", "-1", "--format=%s", "status-page")
    assert "launch@" in message and "prototype@" in message
    assert _git(demo, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert _git(demo, "status", "--porcelain") == status_before
    again = run_cli(
        [
            "publish",
            "--root",
            str(demo),
            "--git-branch",
            "status-page",
            "--head",
            REV_NEW,
            "--format",
            "json",
        ]
    )
    assert again.json()["commit"] == commit  # nothing changed: no new commit


@pytest.mark.files_only("the output side: the same whatever store the ledger is read from")
def test_publish_needs_exactly_one_destination(demo: Path) -> None:
    result = run_cli(["publish", "--root", str(demo)])
    assert result.exit_code == 2


def test_public_text_is_redacted_and_a_leak_stops_the_build(
    tmp_path: Path, monkeypatch: Any
) -> None:
    store = FileStore(tmp_path / "p")
    store.init()
    ctx = make_ctx(store, agent="maintainer")
    goals.create_goal(
        ctx, CreateGoal(goal_id="g", title="Public goal", objective="Ship", visibility="public")
    )
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    todos.add_todo(
        ctx,
        AddTodo(goal_id="g", title=f"Rotate {token} today", todo_id="rotate", visibility="public"),
    )
    todos.add_todo(
        ctx, AddTodo(goal_id="g", title="Quietly renegotiate the vendor contract", todo_id="vendor")
    )
    out = tmp_path / "site"
    build(tmp_path / "p", out, audiences=("public",), head=None)
    status = (out / "public/goals/g/status.json").read_text()
    assert token not in status and "[redacted:" in status
    assert json.loads(status)["omissions"]["redacted"]
    assert "Quietly renegotiate" not in status

    from loopx.projections import base

    real = base.todo_card

    def leaky(todo: Any, lens: Any, state: Any) -> dict[str, Any]:
        card = real(todo, lens, state)
        if todo.todo_id == "rotate":
            card["title"] = "Quietly renegotiate the vendor contract"
        return card

    monkeypatch.setattr("loopx.projections.status.todo_card", leaky)
    before = _tree(out)
    with pytest.raises(BoundaryViolation) as err:
        build(tmp_path / "p", out, audiences=("public",), head=None)
    assert err.value.details["findings"][0]["kind"] == "non-public-text"
    assert "renegotiate" not in json.dumps(err.value.to_dict())
    assert _tree(out) == before


class _FailOn(fsio.FileSystem):
    def __init__(self, op: str, n: int):
        self.op, self.n, self.calls = op, n, 0

    def _tick(self, op: str) -> None:
        if op == self.op:
            self.calls += 1
            if self.calls == self.n:
                raise OSError(5, "injected I/O error")

    def write(self, fd: int, data: bytes) -> int:
        self._tick("write")
        return super().write(fd, data)

    def replace(self, src: Path, dst: Path) -> None:
        self._tick("replace")
        super().replace(src, dst)


@pytest.mark.files_only("the output side: the same whatever store the ledger is read from")
@pytest.mark.parametrize(("op", "n"), [("write", 1), ("write", 5), ("replace", 3)])
def test_a_failed_write_leaves_the_folder_all_old_or_all_new(
    demo: Path, tmp_path: Path, op: str, n: int
) -> None:
    out = tmp_path / "site"
    build(demo, out, head=REV_NEW)
    old = _tree(out)
    ctx = make_ctx(project_store(demo), agent="maintainer")
    todos.add_todo(
        ctx, AddTodo(goal_id="launch", title="Announce", todo_id="announce", visibility="public")
    )
    previous = fsio.install(_FailOn(op, n))
    try:
        with pytest.raises(LoopxError) as err:
            build(demo, out, head=REV_NEW)
        assert err.value.code == "io_error"
    finally:
        fsio.install(previous)
    now = _tree(out)
    staged = (out / writer.STAGING / writer.JOURNAL).exists()
    if staged:  # failed after the commit point: the next reader rolls forward
        writer.recover(out)
        assert check(demo, out, head=REV_NEW).ok
    else:
        assert now == old
    build(demo, out, head=REV_NEW)
    assert check(demo, out, head=REV_NEW).ok
    assert not (out / writer.STAGING).exists()


def test_workbench_write_and_check(demo: Path, tmp_path: Path) -> None:
    path = tmp_path / "docs" / "WORKBENCH.md"
    args = ["workbench", "--root", str(demo), "--goal-id", "launch", "--head", REV_NEW]
    assert run_cli([*args, "--write", str(path)]).exit_code == 0
    text = path.read_text()
    assert text.startswith("<!-- loopx:workbench goal=launch digest=")
    for heading in (
        "## Objective",
        "## Acceptance",
        "## Next action",
        "## Frontier",
        "## Agent todos",
        "## User todos",
        "## Gates",
        "## Recent evidence",
        "## Lessons and decisions",
    ):
        assert f"\n\n{heading}\n\n" in text  # a heading of its own, not glued to a list
    assert "\n- All CI checks green on main\n- Public status page published\n" in text
    assert run_cli([*args, "--check", str(path)]).exit_code == 0
    path.write_text(text.replace("Choose the license", "Choose a licence"))
    edited = run_cli([*args, "--check", str(path), "--format", "json"])
    assert edited.exit_code == 6 and edited.json()["error"]["code"] == "workbench_edited"
    path.write_text(text)
    ctx = make_ctx(project_store(demo), agent="maintainer")
    todos.add_todo(ctx, AddTodo(goal_id="launch", title="Announce", todo_id="announce"))
    stale = run_cli([*args, "--check", str(path), "--format", "json"])
    assert stale.exit_code == 6 and stale.json()["error"]["code"] == "workbench_stale"
    missing = run_cli([*args, "--check", str(tmp_path / "nope.md")])
    assert missing.exit_code == 6 and "workbench_missing" in missing.stderr
    build(demo, tmp_path / "site", head=REV_NEW)
    run_cli([*args, "--write", str(path)])
    assert path.read_bytes() == (tmp_path / "site/team/goals/launch/workbench.md").read_bytes()


def test_review_packet_has_question_evidence_and_commands(demo: Path) -> None:
    result = run_cli(
        [
            "review",
            "--root",
            str(demo),
            "--goal-id",
            "launch",
            "--since",
            "20",
            "--format",
            "json",
            "--head",
            REV_NEW,
        ]
    )
    assert result.exit_code == 0, result.stderr
    rp = result.json()
    assert problems("loopx.review/v1", rp) == []
    assert "Publish 0.1 to the package index?" in rp["questions"]
    cmds = [c for g in rp["gates"] for c in g["commands"]]
    assert any("--gate-id approve-publish" in c and "--resolution approve" in c for c in cmds)
    assert rp["since_revision"] == 20 and rp["changes"]
    fresh = {e["evidence_id"]: e["freshness"] for e in rp["evidence"]}
    assert fresh["ev-cli-ci"] == "current" and fresh["ev-ledger-tests"] == "historical"
    todo = run_cli(["review", "--root", str(demo), "--goal-id", "launch", "--todo-id", "cli"])
    assert todo.exit_code == 0 and "`cli`" in todo.stdout
    assert todo.stdout.startswith("# Review: Launch loopx 0.1 · `cli`\n\n> Generated")
    assert "\n\n## What changed\n\n" in todo.stdout
    assert "Is cli (Command-line interface) done" in todo.stdout
    private = run_cli(
        [
            "review",
            "--root",
            str(demo),
            "--goal-id",
            "launch",
            "--audience",
            "private",
            "--format",
            "json",
        ]
    ).json()
    summaries = {e["evidence_id"]: e["summary"] for e in private["evidence"]}
    assert summaries["ev-engine-log"] == "Full pytest log of the engine run"


@pytest.mark.files_only("the output side: the same whatever store the ledger is read from")
def test_graph_formats(demo: Path) -> None:
    base = ["graph", "--root", str(demo), "--goal-id", "launch"]
    mermaid = run_cli(base).stdout
    assert mermaid.startswith("flowchart TD\n") and "t_engine --> t_cli" in mermaid
    assert "g_approve_publish" in mermaid
    dot = run_cli([*base, "--format", "dot"]).stdout
    assert dot.startswith('digraph "launch" {') and "t_engine -> t_cli;" in dot
    svg = run_cli([*base, "--format", "svg"]).stdout
    assert svg.startswith("<svg") and "<title" in svg and svg.count("<rect") >= 10
    graph = run_cli([*base, "--format", "json"]).json()
    assert problems("loopx.graph/v1", graph) == []
    public = run_cli([*base, "--audience", "public", "--format", "json"]).json()
    refs = {n["ref"] for n in public["nodes"]}
    assert "workbench" not in refs and "cli" in refs
    assert public["omissions"]["omitted"]["team todos"] >= 1


def test_large_graphs_are_not_drawn(tmp_path: Path) -> None:
    from loopx.render.svg import MAX_NODES, to_svg

    nodes = [
        {"id": f"t_{i}", "kind": "todo", "ref": f"t{i}", "label": "x", "status": "open"}
        for i in range(MAX_NODES + 1)
    ]
    assert to_svg({"nodes": nodes, "edges": [], "source": {"goal_id": "g"}}) is None


def test_serve_rebuilds_after_an_append_and_survives_a_failed_build(
    demo: Path, tmp_path: Path
) -> None:
    from loopx.build.serve import Builder, make_server, watch

    logs: list[str] = []
    builder = Builder(
        demo, tmp_path / "served", logs.append, audiences=("public", "team"), head=REV_NEW
    )
    assert builder.rebuild()
    stop = threading.Event()
    observer = watch(builder, 0.05, stop)
    server = make_server(builder, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        page = urllib.request.urlopen(f"{base}/team/goals/docs/index.html").read().decode()
        assert "Documentation pass" in page and "/__loopx__/build" in page
        ctx = make_ctx(project_store(demo), agent="maintainer")
        todos.add_todo(ctx, AddTodo(goal_id="docs", title="Glossary of terms", todo_id="glossary"))
        deadline = time.monotonic() + 10
        while builder.number < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert builder.number >= 2, logs
        page = urllib.request.urlopen(f"{base}/team/goals/docs/index.html").read().decode()
        assert "Glossary of terms" in page

        good = ledger_bytes(demo, "docs")
        replace_ledger(demo, "docs", b"garbage\n" + good)  # history damaged: the rebuild fails
        deadline = time.monotonic() + 10
        while builder.error is None and time.monotonic() < deadline:
            time.sleep(0.05)
        # (A rebuild the append's own file events started may still land before the damage
        # is seen; from the failure on, no build counts.)
        number = builder.number
        time.sleep(0.3)
        assert builder.error is not None and builder.number == number
        assert any("still serving the last good build" in line for line in logs)
        page = urllib.request.urlopen(f"{base}/team/goals/docs/index.html").read().decode()
        assert "Glossary of terms" in page
    finally:
        stop.set()
        observer.stop()
        observer.join(timeout=2)
        server.shutdown()
        server.server_close()


def test_private_ids_that_are_common_words_do_not_cry_wolf(demo: Path, tmp_path: Path) -> None:
    ctx = make_ctx(project_store(demo), agent="maintainer")
    for todo_id in ("index", "status", "graph", "prototype"):
        todos.add_todo(
            ctx,
            AddTodo(
                goal_id="launch",
                title=f"Private work on {todo_id}",
                todo_id=todo_id,
                visibility="private",
            ),
        )
    result = build(demo, tmp_path / "site", head=REV_NEW)
    assert result.findings == []
    status = json.loads((tmp_path / "site/public/goals/launch/status.json").read_text())
    assert "index" not in {t["todo_id"] for t in status["todos"]}


def test_the_incremental_scan_still_catches_a_leak_of_new_text(
    demo: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    from loopx.build.work import BuildCache

    cache = BuildCache()
    out = tmp_path / "site"
    build(demo, out, head=REV_NEW, cache=cache)
    covered = cache.scan.covered
    assert covered is not None and cache.scan.clean
    ctx = make_ctx(project_store(demo), agent="maintainer")
    todos.add_todo(
        ctx, AddTodo(goal_id="docs", title="Negotiate the quiet acquisition", todo_id="deal")
    )
    build(demo, out, head=REV_NEW, cache=cache)  # grows the covered set, no leak
    assert cache.scan.covered is not None
    assert "Negotiate the quiet acquisition" in cache.scan.covered.texts
    assert len(cache.scan.scanners) == 2  # the base scanner and one for the added text

    from loopx.projections import base

    real = base.todo_card

    def leaky(todo: Any, lens: Any, state: Any) -> dict[str, Any]:
        card = real(todo, lens, state)
        if todo.todo_id == "pick-license":
            card["title"] = "Negotiate the quiet acquisition"
        return card

    monkeypatch.setattr("loopx.projections.status.todo_card", leaky)
    todos.add_todo(
        ctx,
        AddTodo(
            goal_id="launch", title="Touch the public goal", todo_id="touch", visibility="public"
        ),
    )
    with pytest.raises(BoundaryViolation) as err:
        build(demo, out, head=REV_NEW, cache=cache)
    assert {f["kind"] for f in err.value.details["findings"]} == {"non-public-text"}


def test_manifest_of_a_public_build_names_only_public_goals(demo: Path, tmp_path: Path) -> None:
    build(demo, tmp_path / "pub", audiences=("public",), head=REV_NEW)
    manifest = json.loads((tmp_path / "pub/manifest.json").read_text())
    assert sorted(manifest["sources"]) == ["launch", "prototype"]
    text = (tmp_path / "pub/manifest.json").read_text()
    assert "security-review" not in text and '"docs"' not in text
    build(demo, tmp_path / "both", head=REV_NEW)
    both = json.loads((tmp_path / "both/manifest.json").read_text())
    assert sorted(both["sources"]) == ["docs", "launch", "prototype"]


def test_projections_of_a_goal_an_audience_may_not_see_are_refused(demo: Path) -> None:
    graph = run_cli(["graph", "--root", str(demo), "--goal-id", "docs", "--audience", "public"])
    assert graph.exit_code == 3 and "goal_not_found" in graph.stderr
    review = run_cli(["review", "--root", str(demo), "--goal-id", "security-review"])
    assert review.exit_code == 3
    diff = run_cli(
        ["diff", "--root", str(demo), "--goal-id", "docs", "1", "2", "--audience", "public"]
    )
    assert diff.exit_code == 3
    assert run_cli(["graph", "--root", str(demo), "--goal-id", "docs"]).exit_code == 0


@pytest.mark.files_only("the output side: the same whatever store the ledger is read from")
def test_bad_output_paths_are_clean_errors(demo: Path, tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    built = run_cli(["build", "--root", str(demo), "--out", str(afile / "site")])
    assert built.exit_code == 5 and "io_error" in built.stderr and "Traceback" not in built.stderr
    wb = run_cli(
        ["workbench", "--root", str(demo), "--goal-id", "launch", "--write", str(afile / "x.md")]
    )
    assert wb.exit_code == 5 and "io_error" in wb.stderr
    binary = tmp_path / "wb.md"
    binary.write_bytes(b"\xff\xfe\x00binary")
    check = run_cli(
        ["workbench", "--root", str(demo), "--goal-id", "launch", "--check", str(binary)]
    )
    assert check.exit_code == 6 and "workbench_edited" in check.stderr
    workers = run_cli(
        ["build", "--root", str(demo), "--out", str(tmp_path / "s")],
        env={"LOOPX_BUILD_WORKERS": "abc"},
    )
    assert workers.exit_code == 2 and "invalid_workers" in workers.stderr


def test_a_fresh_build_process_carries_over_unchanged_goals(
    demo: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    import loopx.build.work as work

    out = tmp_path / "site"
    build(demo, out, head=REV_NEW, reuse=True)
    rendered: list[tuple[str, str]] = []
    real = work._run

    def counting(unit: tuple[str, str]) -> Any:
        rendered.append(unit)
        return real(unit)

    monkeypatch.setattr(work, "_run", counting)
    result = build(demo, out, head=REV_NEW, reuse=True)
    assert rendered == [] and result.report is not None and result.report.written == []
    ctx = make_ctx(project_store(demo), agent="maintainer")
    todos.add_todo(ctx, AddTodo(goal_id="docs", title="Changelog", todo_id="changelog"))
    result = build(demo, out, head=REV_NEW, reuse=True)
    assert rendered == [("team", "docs")]
    assert (
        result.report is not None
        and "team/goals/docs/todos/changelog.html" in result.report.written
    )
    assert check(demo, out, head=REV_NEW).ok  # byte for byte what a full render gives


@pytest.mark.files_only("the output side: the same whatever store the ledger is read from")
def test_carried_files_that_changed_on_disk_are_rendered_again(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(demo, out, head=REV_NEW, reuse=True)
    page = out / "public/goals/launch/index.html"
    page.write_text(page.read_text().replace("Launch loopx", "Lunch loopx"))
    (out / "team/goals/docs/graph.json").unlink()
    result = build(demo, out, head=REV_NEW, reuse=True)
    assert result.report is not None
    assert "public/goals/launch/index.html" in result.report.written
    assert "team/goals/docs/graph.json" in result.report.written
    assert check(demo, out, head=REV_NEW).ok
    forced = run_cli(
        [
            "build",
            "--root",
            str(demo),
            "--out",
            str(out),
            "--head",
            REV_NEW,
            "--force",
            "--format",
            "json",
        ]
    )
    assert forced.exit_code == 0 and forced.json()["written"] == []


@pytest.mark.files_only("the output side: the same whatever store the ledger is read from")
def test_new_templates_or_code_are_never_carried_over(
    demo: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    import loopx.build.reuse as reuse
    import loopx.build.work as work

    out = tmp_path / "site"
    build(demo, out, head=REV_NEW, reuse=True)
    monkeypatch.setattr(reuse, "fingerprint", lambda *folder: "another loopx")
    rendered: list[tuple[str, str]] = []
    real = work._run
    monkeypatch.setattr(work, "_run", lambda unit: rendered.append(unit) or real(unit))
    build(demo, out, head=REV_NEW, reuse=True)
    assert ("public", "launch") in rendered and ("team", "docs") in rendered
