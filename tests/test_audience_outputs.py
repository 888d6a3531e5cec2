"""Audience of printed and committed projections: `--audience public` on workbench, graph
and diff is boundary-scanned before a byte is printed or written; team output written into a
git work tree that says it is public warns (or is refused); workspace facts come from the
work tree's top folder wherever a command runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from loopx.engine import todos
from loopx.engine.commands import AddTodo, ClaimTodo, CreateGoal
from loopx.engine.core import require_goal
from loopx.store.filestore import FileStore
from tests.conftest import make_ctx, run_cli

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True
    ).stdout


def _team_title(root: Path) -> str:
    state = require_goal(FileStore(root), "launch")
    return next(
        t.title for t in state.todos.values() if t.visibility == "team" and len(t.title) >= 12
    )


def test_public_workbench_shows_public_facts_only(demo: Path) -> None:
    team = run_cli(["workbench", "--root", str(demo), "--goal-id", "launch"])
    public = run_cli(
        ["workbench", "--root", str(demo), "--goal-id", "launch", "--audience", "public"]
    )
    assert team.exit_code == 0 and public.exit_code == 0, public.stderr
    assert (
        "for the public audience" in public.stdout and "--audience public --write" in public.stdout
    )
    assert _team_title(demo) in team.stdout and _team_title(demo) not in public.stdout
    assert "claimed by" not in public.stdout  # claims are team facts
    team_only = run_cli(
        ["workbench", "--root", str(demo), "--goal-id", "docs", "--audience", "public"]
    )
    state = require_goal(FileStore(demo), "docs")
    if state.visibility != "public":
        assert team_only.exit_code == 3 and "goal_not_found" in team_only.stderr


@pytest.mark.parametrize(
    ("target", "args"),
    [
        ("loopx.build.single.workbench_markdown", ["workbench", "--goal-id", "launch"]),
        ("loopx.render.graph.to_mermaid", ["graph", "--goal-id", "launch"]),
        ("loopx.build.diffing.render_text", ["diff", "--goal-id", "launch", "1", "20"]),
    ],
)
def test_public_output_is_scanned_before_it_is_printed(
    demo: Path, monkeypatch: pytest.MonkeyPatch, target: str, args: list[str]
) -> None:
    """A renderer that let team text through (simulated) is stopped by the boundary scan:
    exit 7, nothing printed, the text never echoed; the team audience is not scanned."""
    import importlib

    leak = _team_title(demo)
    module, name = target.rsplit(".", 1)
    real = getattr(importlib.import_module(module), name)
    monkeypatch.setattr(
        importlib.import_module(module), name, lambda *a, **k: real(*a, **k) + leak + "\n"
    )
    out = run_cli([*args, "--root", str(demo), "--audience", "public"])
    assert out.exit_code == 7 and "public_boundary_violation" in out.stderr
    assert out.stdout == "" and leak not in out.stderr
    team = run_cli([*args, "--root", str(demo), "--audience", "team"])
    assert team.exit_code == 0 and leak in team.stdout


def test_public_workbench_write_is_scanned_and_writes_nothing(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import loopx.build.single as single

    real = single.workbench_markdown
    leak = _team_title(demo)
    monkeypatch.setattr(single, "workbench_markdown", lambda *a, **k: real(*a, **k) + leak)
    path = tmp_path / "WORKBENCH.md"
    args = ["workbench", "--root", str(demo), "--goal-id", "launch", "--audience", "public"]
    assert run_cli([*args, "--write", str(path)]).exit_code == 7
    assert not path.exists()


def _repo(folder: Path, remote: str | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    git(folder, "init", "-q")
    if remote is not None:
        git(folder, "remote", "add", "origin", remote)
    return folder


def test_team_output_into_a_public_looking_work_tree_warns(demo: Path, tmp_path: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    repo = _repo(tmp_path / "oss", f"https://x-access-token:{token}@github.com/acme/app.git")
    wb = repo / "docs" / "WORKBENCH.md"
    base = ["--root", str(demo)]
    team = run_cli(["workbench", *base, "--goal-id", "launch", "--write", str(wb)])
    assert team.exit_code == 0 and wb.exists()
    assert "warning" in team.stderr and "github.com remote" in team.stderr
    assert token not in team.stderr and "acme" not in team.stderr
    built = run_cli(["build", *base, "--out", str(repo / "site")])
    assert built.exit_code == 0 and "github.com remote" in built.stderr
    public = run_cli(
        ["workbench", *base, "--goal-id", "launch", "--audience", "public", "--write", str(wb)]
    )
    assert public.exit_code == 0 and "warning" not in public.stderr
    only_public = run_cli(["build", *base, "--audience", "public", "--out", str(repo / "pub")])
    assert only_public.exit_code == 0 and "warning" not in only_public.stderr
    # Ignored by git: never committed, never warned about.
    (repo / ".gitignore").write_text("ignored/\nbuilt/\n")
    quiet = run_cli(["build", *base, "--out", str(repo / "ignored" / "site")])
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr
    quiet = run_cli(["build", *base, "--out", str(repo / "built")])  # a folder-only pattern
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr
    # The work tree says what it is: team → silence; public → refused, nothing written.
    git(repo, "config", "loopx.visibility", "team")
    assert (
        "warning"
        not in run_cli(["workbench", *base, "--goal-id", "launch", "--write", str(wb)]).stderr
    )
    git(repo, "config", "loopx.visibility", "public")
    other = repo / "docs" / "OTHER.md"
    refused = run_cli(["workbench", *base, "--goal-id", "launch", "--write", str(other)])
    assert refused.exit_code == 7 and "public_work_tree" in refused.stderr and not other.exists()
    site = repo / "site2"
    assert run_cli(["build", *base, "--out", str(site)]).exit_code == 7 and not site.exists()


def test_no_warning_without_a_public_forge_remote(demo: Path, tmp_path: Path) -> None:
    repo = _repo(tmp_path / "internal", "git@git.internal.example:team/app.git")
    out = run_cli(
        ["workbench", "--root", str(demo), "--goal-id", "launch", "--write", str(repo / "W.md")]
    )
    assert out.exit_code == 0 and out.stderr == ""


def test_workspace_facts_come_from_the_work_tree_top_in_a_subfolder(tmp_path: Path) -> None:
    """`handoff inspect` run from a subfolder finds the files the note lists (paths relative
    to the work tree), and evidence is bound to the same HEAD."""
    repo = _repo(tmp_path / "app", None)
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    env = {
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@example.invalid",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@example.invalid",
    }
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "commit", "-qm", "init"], check=True, env={**os.environ, **env}
    )
    head = git(repo, "rev-parse", "HEAD").strip()
    store = FileStore(repo)
    store.init()
    ctx = make_ctx(store, agent="agent-a")
    from loopx.engine import goals

    goals.create_goal(ctx, CreateGoal(goal_id="g", title="G", objective="O"))
    todos.add_todo(ctx, AddTodo(goal_id="g", title="T", todo_id="t"))
    todos.claim_todo(ctx, ClaimTodo(goal_id="g", todo_id="t"))
    sub = repo / "src" / "pkg"
    prep = run_cli(
        [
            "handoff", "prepare", "--goal-id", "g", "--todo-id", "t", "--agent-id", "agent-a",
            "--session-id", "s1", "--work-summary", "Half done",
            "--next-step", "Finish", "--file", "src/pkg/mod.py::modified",
        ],
        cwd=sub,
    )  # fmt: skip
    assert prep.exit_code == 0, prep.stderr
    shown = run_cli(
        ["handoff", "inspect", "--goal-id", "g", "--todo-id", "t", "--format", "json"], cwd=sub
    )
    assert shown.exit_code == 0, shown.stderr
    digest = json.loads(shown.stdout)
    assert digest["workspace"]["head"] == head
    files = digest["handoff"]["note"]["files_touched"]
    assert [f["exists"] for f in files] == [True]
    ev = run_cli(
        [
            "evidence",
            "add",
            "--goal-id",
            "g",
            "--kind",
            "test",
            "--summary",
            "ok",
            "--visibility",
            "team",
            "--format",
            "json",
        ],
        cwd=sub,
    )
    assert ev.exit_code == 0, ev.stderr
    listed = run_cli(["evidence", "list", "--goal-id", "g", "--format", "json"], cwd=sub).json()
    assert [e["revision"] for e in listed["evidence"]] == [head]
    assert [e["freshness"] for e in listed["evidence"]] == ["current"]
    # Committed artifacts name the commit; `--head auto` compares with the checkout instead.
    committed = run_cli(["workbench", "--goal-id", "g"], cwd=sub).stdout
    assert "| observed at |" in committed and f"`{head[:10]}`" in committed
    assert "current" not in committed
    live = run_cli(["workbench", "--goal-id", "g", "--head", "auto"], cwd=sub).stdout
    assert f"Freshness against checkout `{head[:10]}`" in live and "| current |" in live
    bad = run_cli(["workbench", "--goal-id", "g", "--head", "HEAD~1"], cwd=sub)
    assert bad.exit_code == 2 and "invalid_revision" in bad.stderr


def test_public_diff_of_two_build_folders_outside_a_project(demo: Path, tmp_path: Path) -> None:
    """Two public builds compared from a folder with no ledger: scanned with the rules alone."""
    from loopx.build.pipeline import build

    build(demo, tmp_path / "old", audiences=("public",))
    todos.add_todo(
        make_ctx(FileStore(demo)), AddTodo(goal_id="launch", title="Announce", visibility="public")
    )
    build(demo, tmp_path / "new", audiences=("public",))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = run_cli(
        ["diff", str(tmp_path / "old"), str(tmp_path / "new"), "--audience", "public"],
        cwd=elsewhere,
    )
    assert out.exit_code == 0, out.stderr
    assert "Announce" in out.stdout


def test_the_build_holds_the_public_workbench_byte_for_byte(demo: Path, tmp_path: Path) -> None:
    from loopx.build.pipeline import build

    build(demo, tmp_path / "site")
    for audience in ("public", "team"):
        path = tmp_path / "site" / audience / "goals" / "launch" / "workbench.md"
        printed = run_cli(
            ["workbench", "--root", str(demo), "--goal-id", "launch", "--audience", audience]
        )
        assert printed.exit_code == 0 and printed.stdout == path.read_text()
    assert (
        'href="workbench.html"'
        in (tmp_path / "site" / "public" / "goals" / "launch" / "index.html").read_text()
    )
