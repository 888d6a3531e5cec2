"""Finding the project (like git finds a repository), `loopx init`, and the demo's
determinism; plus a few real subprocess calls of the installed entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from loopx.store.filestore import FileStore
from tests.conftest import T0, run_cli


def ledgers(root: Path) -> dict[str, bytes]:
    goals = root / ".loopx" / "goals"
    return {p.parent.name: p.read_bytes() for p in sorted(goals.glob("*/ledger.jsonl"))}


def blobs(root: Path) -> dict[str, bytes]:
    base = root / ".loopx" / "private"
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in base.rglob("*") if p.is_file()}


# -- discovery ----------------------------------------------------------------------------------


def test_the_root_is_found_from_a_subfolder(project: Path) -> None:
    deep = project / "src" / "pkg" / "deeper"
    deep.mkdir(parents=True)
    result = run_cli(["goal", "list", "--format", "json"], cwd=deep)
    assert result.exit_code == 0, result.stderr
    assert [g["goal_id"] for g in result.json()["goals"]] == ["demo"]
    added = run_cli(["todo", "add", "--goal-id", "demo", "--title", "From below"], cwd=deep)
    assert added.exit_code == 0
    assert len(FileStore(project).read("demo").events) == 2


def test_the_nearest_project_wins(project: Path) -> None:
    inner = project / "sub"
    inner.mkdir()
    assert run_cli(["init"], cwd=inner).exit_code == 0
    result = run_cli(["goal", "list", "--format", "json"], cwd=inner)
    assert result.json()["goals"] == []


def test_root_flag_and_environment_variable(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    flag = run_cli(["goal", "list", "--root", str(project), "--format", "json"], cwd=elsewhere)
    assert [g["goal_id"] for g in flag.json()["goals"]] == ["demo"]
    env = run_cli(
        ["goal", "list", "--format", "json"], env={"LOOPX_ROOT": str(project)}, cwd=elsewhere
    )
    assert [g["goal_id"] for g in env.json()["goals"]] == ["demo"]
    # --root wins over LOOPX_ROOT
    other = tmp_path / "other"
    other.mkdir()
    assert run_cli(["init", "--root", str(other)]).exit_code == 0
    both = run_cli(
        ["goal", "list", "--root", str(other), "--format", "json"], env={"LOOPX_ROOT": str(project)}
    )
    assert both.json()["goals"] == []


def test_no_project_is_root_not_found(tmp_path: Path) -> None:
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    for args in (["status"], ["goal", "list"], ["todo", "add", "--goal-id", "g", "--title", "T"]):
        result = run_cli(args, cwd=lonely)
        assert result.exit_code == 3, result
        assert result.stderr.startswith("loopx: error [root_not_found]:")
        as_json = run_cli([*args, "--format", "json"], cwd=lonely)
        assert as_json.json()["error"]["code"] == "root_not_found"
    named = run_cli(["status", "--root", str(lonely), "--format", "json"])
    assert named.exit_code == 3 and named.json()["error"]["code"] == "root_not_found"
    via_env = run_cli(["status"], env={"LOOPX_ROOT": str(lonely / "missing")})
    assert via_env.exit_code == 3
    assert not (lonely / ".loopx").exists(), "reads never create a project"


def test_init_here_via_root_and_via_environment(tmp_path: Path) -> None:
    here = tmp_path / "here"
    here.mkdir()
    assert run_cli(["init"], cwd=here).exit_code == 0
    assert (here / ".loopx" / ".gitignore").is_file()
    named = tmp_path / "named"
    named.mkdir()
    assert run_cli(["init"], env={"LOOPX_ROOT": str(named)}, cwd=here).exit_code == 0
    assert (named / ".loopx" / "goals").is_dir()
    ignore = (named / ".loopx" / ".gitignore").read_text().splitlines()
    assert "private/" in ignore and "cache/" in ignore


def test_the_gitignore_keeps_private_and_cache_out_of_git(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    assert run_cli(["demo", str(root)]).exit_code == 0
    status = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ".loopx/goals/launch/ledger.jsonl" in status
    assert "private/" not in status and "cache/" not in status
    assert any((root / ".loopx" / "private" / "blobs").rglob("*")), "the demo has private blobs"


# -- the demo -----------------------------------------------------------------------------------


def test_the_demo_is_byte_identical_twice_and_in_two_folders(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    assert run_cli(["demo", str(first)]).exit_code == 0
    before = ledgers(first)
    assert set(before) == {"docs", "launch", "prototype", "security-review"}
    again = run_cli(["demo", str(first), "--format", "json"])
    assert again.exit_code == 0
    assert ledgers(first) == before, "a second run replays; it appends nothing"
    assert run_cli(["demo", str(second)], env={"LOOPX_NOW": "2030-01-01T00:00:00Z"}).exit_code == 0
    assert ledgers(second) == before, "the demo's clock is its own, not LOOPX_NOW"
    assert blobs(second) == blobs(first)
    for root in (first, second):
        assert b"/tmp" not in b"".join(ledgers(root).values()), "no local paths in a ledger"


def test_the_demo_tells_a_story(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    assert run_cli(["demo", str(root)]).exit_code == 0
    status = run_cli(["status", "--root", str(root), "--format", "json"]).json()
    states = {g["goal_id"]: g for g in status["goals"]}
    assert states["prototype"]["status"] == "achieved"
    launch = states["launch"]
    assert launch["gates"], "a pending gate"
    assert launch["leases"], "a claim"
    assert launch["counts"]["done"] >= 2
    next_ = run_cli(
        ["next", "--root", str(root), "--goal-id", "launch", "--explain", "--format", "json"]
    ).json()
    codes = {r["code"] for item in next_["not_ready"] for r in item["reasons"]}
    assert {"dependency_open", "gate_pending"} <= codes
    evidence = run_cli(
        ["evidence", "list", "--root", str(root), "--goal-id", "launch", "--format", "json"]
    ).json()["evidence"]
    assert any(e.get("body") for e in evidence) and all(e["revision"] for e in evidence[:3])
    verify = run_cli(["verify", "--root", str(root), "--format", "json"]).json()
    assert verify["ok"] and len(verify["ledgers"]) == 4


# -- real processes ------------------------------------------------------------------------------


def _proc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPX_")}
    env["LOOPX_NOW"] = T0
    return subprocess.run(
        [sys.executable, "-m", "loopx", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_real_processes_from_help_to_an_error(tmp_path: Path) -> None:
    helped = _proc("--help", cwd=tmp_path)
    assert helped.returncode == 0 and "Commands:" in helped.stdout
    assert _proc("todo", "claim", "--help", cwd=tmp_path).returncode == 0
    assert _proc("init", cwd=tmp_path).returncode == 0
    created = _proc(
        "goal",
        "create",
        "--goal-id",
        "g",
        "--title",
        "T",
        "--objective",
        "O",
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert created.returncode == 0 and json.loads(created.stdout)["receipt"]["revision"] == 1
    sub = tmp_path / "nested"
    sub.mkdir()
    added = _proc("todo", "add", "--goal-id", "g", "--title", "From a subfolder", cwd=sub)
    assert added.returncode == 0, added.stderr
    status = _proc("status", "--goal-id", "g", cwd=sub)
    assert status.returncode == 0 and "ready: todo-1" in status.stdout
    failed = _proc("todo", "claim", "--goal-id", "g", "--todo-id", "nope", cwd=sub)
    assert failed.returncode == 3 and failed.stdout == ""
    assert failed.stderr == "loopx: error [todo_not_found]: todo not found\n"
    as_json = _proc(
        "todo", "claim", "--goal-id", "g", "--todo-id", "nope", "--format", "json", cwd=sub
    )
    assert as_json.returncode == 3 and as_json.stderr == ""
    assert json.loads(as_json.stdout) == {
        "error": {
            "code": "todo_not_found",
            "message": "todo not found",
            "details": {"todo_id": "nope"},
        }
    }
    usage = _proc("todo", "add", "--goal-id", "g", cwd=sub)
    assert usage.returncode == 2 and "Traceback" not in usage.stderr
