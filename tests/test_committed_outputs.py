"""Committed outputs that stay true: the whole job in a scratch git repository with real
commits, real `loopx` processes and the real `pre-commit` tool.

A committed workbench or build is a function of the ledger: committing it (or anything else)
never makes `--check` fail; a heartbeat never rewrites the workbench; a ledger change makes
`--check` fail naming exactly the stale files, and the pre-commit hooks regenerate them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
G = "ship"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _env(home: Path, now: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPX_", "GIT_"))}
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(home),
        PRE_COMMIT_HOME=str(home / "pre-commit"),
        GIT_AUTHOR_NAME="Dev",
        GIT_AUTHOR_EMAIL="dev@example.invalid",
        GIT_COMMITTER_NAME="Dev",
        GIT_COMMITTER_EMAIL="dev@example.invalid",
        GIT_CONFIG_NOSYSTEM="1",
        LOOPX_NOW=now,
    )
    return env


class Project:
    """A scratch git repository; commands run in `cwd` (the root or a subfolder)."""

    def __init__(self, root: Path, home: Path, cwd: Path):
        self.root, self.home, self.cwd = root, home, cwd
        self.now = "2026-05-04T09:00:00Z"

    def run(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        if args[0] == "pre-commit":
            # This interpreter's pre-commit: a version manager's shim (pyenv) would put its
            # own bin folder first on PATH, and the hooks would run another loopx.
            args = (sys.executable, "-m", "pre_commit", *args[1:])
        proc = subprocess.run(
            list(args),
            cwd=self.cwd,
            env=_env(self.home, self.now),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if ok and proc.returncode != 0:
            raise AssertionError(f"{args} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
        return proc

    def loopx(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(str(BIN / "loopx"), *args, ok=ok)

    def commit(self, message: str, *paths: str) -> subprocess.CompletedProcess[str]:
        self.run("git", "add", "-A", *paths)
        return self.run("git", "commit", "-q", "-m", message)

    def head(self) -> str:
        return self.run("git", "rev-parse", "HEAD").stdout.strip()

    def unrelated_commit(self, n: int) -> None:
        (self.root / "src" / "app" / f"module{n}.py").write_text(f"VALUE = {n}\n")
        self.run("git", "add", "src")
        self.run("git", "commit", "-q", "-m", f"unrelated change {n}")


def _project(tmp_path: Path) -> Project:
    root, home = tmp_path / "proj", tmp_path / "home"
    (root / "src" / "app").mkdir(parents=True)
    home.mkdir()
    p = Project(root, home, root)
    p.run("git", "init", "-q", "-b", "main")
    (root / "README.md").write_text("# app\n")
    p.commit("initial")
    return p


def _check_both(p: Project, out: str = "site", wb: str = "docs/WORKBENCH.md") -> None:
    p.loopx("build", "--out", out, "--check")
    p.loopx("workbench", "--goal-id", G, "--check", wb)


def _hooks_repo(tmp_path: Path, p: Project) -> tuple[Path, str]:
    """A git repository holding this repository's `.pre-commit-hooks.yaml`, byte for byte
    (`language: system` hooks need nothing else), committed as pre-commit requires."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    shutil.copyfile(REPO / ".pre-commit-hooks.yaml", hooks / ".pre-commit-hooks.yaml")
    q = Project(hooks, p.home, hooks)
    q.run("git", "init", "-q", "-b", "main")
    q.commit("hooks")
    return hooks, q.head()


def test_committed_outputs_stay_true_end_to_end(tmp_path: Path) -> None:
    p = _project(tmp_path)
    sub = p.root / "src" / "app"

    # A goal and two todos; two agents claim and complete with evidence at real commits,
    # working from a subfolder of the work tree.
    p.loopx("init")
    p.loopx(
        "goal", "create", "--goal-id", G, "--title", "Ship the app", "--objective", "Ship it",
        "--acceptance", "Tests pass",
    )  # fmt: skip
    p.loopx("todo", "add", "--goal-id", G, "--todo-id", "parser", "--title", "Write the parser")
    p.loopx(
        "todo", "add", "--goal-id", G, "--todo-id", "docs", "--title", "Write the docs",
        "--depends-on", "parser",
    )  # fmt: skip
    p.commit("loopx: goal and todos")
    p.cwd = sub
    p.loopx("todo", "claim", "--goal-id", G, "--todo-id", "parser", "--agent-id", "agent-a")
    (sub / "parser.py").write_text("def parse(s):\n    return s.split()\n")
    p.commit("parser")
    parser_commit = p.head()
    p.loopx(
        "evidence", "add", "--goal-id", G, "--todo-id", "parser", "--kind", "test",
        "--summary", "parser tests pass", "--visibility", "team", "--evidence-id", "ev-parser",
        "--agent-id", "agent-a",
    )  # fmt: skip
    p.loopx(
        "todo", "complete", "--goal-id", G, "--todo-id", "parser", "--agent-id", "agent-a",
        "--evidence-id", "ev-parser", "--summary", "Parser done",
    )  # fmt: skip
    p.now = "2026-05-04T10:00:00Z"
    p.loopx("todo", "claim", "--goal-id", G, "--todo-id", "docs", "--agent-id", "agent-b")
    (p.root / "docs").mkdir()
    (p.root / "docs" / "guide.md").write_text("# Guide\n")
    p.commit("docs draft")
    docs_commit = p.head()
    p.loopx(
        "evidence", "add", "--goal-id", G, "--todo-id", "docs", "--kind", "review",
        "--summary", "draft reviewed", "--visibility", "team", "--evidence-id", "ev-docs",
        "--agent-id", "agent-b",
    )  # fmt: skip

    # Evidence is bound to the commit it was observed at, from the subfolder too.
    shown = p.loopx("evidence", "list", "--goal-id", G, "--format", "json").stdout
    assert parser_commit in shown and docs_commit in shown

    # Workbench and build written (paths relative to the current folder) and committed.
    p.loopx("workbench", "--goal-id", G, "--write", "../../docs/WORKBENCH.md")
    p.loopx("build", "--out", "../../site")
    p.cwd = p.root
    workbench = (p.root / "docs" / "WORKBENCH.md").read_text()
    assert f"`{parser_commit[:10]}`" in workbench and "| observed at |" in workbench
    assert "claimed by agent-b" in workbench and "until" not in workbench
    p.commit("loopx: workbench and build")

    # --check is green on that commit and after each unrelated commit, from root and subfolder.
    _check_both(p)
    for n in range(3):
        p.unrelated_commit(n)
        _check_both(p)
        p.cwd = sub
        _check_both(p, "../../site", "../../docs/WORKBENCH.md")
        p.cwd = p.root

    # A heartbeat changes the ledger but not the committed workbench.
    p.now = "2026-05-04T10:50:00Z"
    p.cwd = sub
    p.loopx("todo", "renew", "--goal-id", G, "--todo-id", "docs", "--agent-id", "agent-b")
    p.loopx("workbench", "--goal-id", G, "--check", "../../docs/WORKBENCH.md")
    rewrite = p.loopx("workbench", "--goal-id", G, "--write", "../../docs/WORKBENCH.md")
    assert rewrite.stdout.startswith("unchanged ")
    p.cwd = p.root
    assert (p.root / "docs" / "WORKBENCH.md").read_text() == workbench

    # A real change to the ledger: --check fails naming exactly the stale files.
    p.now = "2026-05-04T11:00:00Z"
    p.loopx(
        "todo", "complete", "--goal-id", G, "--todo-id", "docs", "--agent-id", "agent-b",
        "--evidence-id", "ev-docs", "--summary", "Docs done",
    )  # fmt: skip
    fresh = tmp_path / "fresh-build"
    p.loopx("build", "--out", str(fresh))
    differ = sorted(
        str(f.relative_to(fresh))
        for f in fresh.rglob("*")
        if f.is_file() and f.read_bytes() != (p.root / "site" / f.relative_to(fresh)).read_bytes()
    )
    assert differ and "manifest.json" in differ
    stale = p.loopx("build", "--out", "site", "--check", "--format", "json", ok=False)
    assert stale.returncode == 6
    error = __import__("json").loads(stale.stdout)["error"]
    assert error["code"] == "build_stale" and error["details"]["missing"] == []
    assert sorted(error["details"]["stale"]) == differ
    wb_stale = p.loopx("workbench", "--goal-id", G, "--check", "docs/WORKBENCH.md", ok=False)
    assert wb_stale.returncode == 6 and "workbench_stale" in wb_stale.stderr
    assert f"`loopx workbench --goal-id {G} --write docs/WORKBENCH.md`" in wb_stale.stderr
    assert "loopx build --out site`" in p.loopx("build", "--check", ok=False).stderr

    # The pre-commit hooks (the real tool, this repository's hooks file): committing the
    # ledger change regenerates the outputs and fails with "files were modified"; re-staging
    # passes; an unrelated commit does not even run them.
    hooks, rev = _hooks_repo(tmp_path, p)
    (p.root / ".pre-commit-config.yaml").write_text(
        "repos:\n"
        f"  - repo: {hooks}\n"
        f"    rev: {rev}\n"
        "    hooks:\n"
        "      - id: loopx-workbench\n"
        f"        args: [--goal-id, {G}, --write, docs/WORKBENCH.md]\n"
        "      - id: loopx-build\n"
        "        args: [--out, site]\n"
    )
    p.run("pre-commit", "install")
    p.run("git", "add", ".pre-commit-config.yaml", ".loopx")
    blocked = p.run("git", "commit", "-q", "-m", "loopx: docs done", ok=False)
    assert blocked.returncode != 0
    assert "files were modified by this hook" in blocked.stdout + blocked.stderr
    p.loopx("build", "--out", "site", "--check")  # the hook regenerated them
    p.loopx("workbench", "--goal-id", G, "--check", "docs/WORKBENCH.md")
    p.commit("loopx: docs done")
    p.unrelated_commit(10)  # hooks skipped: no ledger or generated file in it
    log = p.run("git", "log", "--format=%s", "-2").stdout.split("\n")
    assert log[:2] == ["unrelated change 10", "loopx: docs done"]

    # The check-only hooks through `pre-commit try-repo`, as CI would run them.
    done = p.run("pre-commit", "try-repo", str(hooks), "loopx-build-check", "--all-files")
    assert "Passed" in done.stdout
    (p.root / "site" / "team" / "index.html").write_text("edited by hand\n")
    failed = p.run(
        "pre-commit", "try-repo", str(hooks), "loopx-build-check", "--all-files", ok=False
    )
    assert failed.returncode != 0 and "build_stale" in failed.stdout
    p.run("git", "checkout", "--", "site")

    # From a subfolder, with a heartbeat committed through the hooks: the workbench hook
    # leaves the file alone, the build hook rebuilds (the build records every revision).
    p.cwd = sub
    p.now = "2026-05-04T11:30:00Z"
    p.loopx("todo", "add", "--goal-id", G, "--todo-id", "release", "--title", "Release")
    p.loopx("todo", "claim", "--goal-id", G, "--todo-id", "release", "--agent-id", "agent-a")
    p.run("git", "add", "-A", str(p.root / ".loopx"))
    assert p.run("git", "commit", "-q", "-m", "claim release", ok=False).returncode != 0
    p.run("git", "add", "-A", str(p.root))
    p.run("git", "commit", "-q", "-m", "claim release")
    before = (p.root / "docs" / "WORKBENCH.md").read_bytes()
    p.now = "2026-05-04T11:45:00Z"
    p.loopx("todo", "renew", "--goal-id", G, "--todo-id", "release", "--agent-id", "agent-a")
    p.run("git", "add", "-A", str(p.root / ".loopx"))
    beat = p.run("git", "commit", "-q", "-m", "heartbeat", ok=False)
    said = beat.stdout + beat.stderr
    assert beat.returncode != 0, said
    assert [ln for ln in said.splitlines() if ln.startswith("loopx workbench (regenerate)")][
        0
    ].endswith("Passed"), said
    assert (p.root / "docs" / "WORKBENCH.md").read_bytes() == before
    assert p.run("git", "status", "--porcelain", "--", str(p.root / "docs")).stdout == ""
    p.run("git", "add", "-A", str(p.root))
    p.run("git", "commit", "-q", "-m", "heartbeat")
    _check_both(p, "../../site", "../../docs/WORKBENCH.md")


def _workflow_steps() -> tuple[dict[str, str], list[str]]:
    import yaml

    doc = yaml.safe_load((REPO / "docs" / "check-committed-outputs.yml").read_text())
    job = doc["jobs"]["check"]
    return dict(job["env"]), [s["run"] for s in job["steps"] if "run" in s]


def test_ci_recipe_runs_locally_and_fails_on_a_ledger_change(tmp_path: Path) -> None:
    """Every `run:` step of docs/check-committed-outputs.yml, run as GitHub runs it (bash -e,
    pipefail) in a scratch repository: green on the committed outputs and after an unrelated
    commit, exit 6 once the ledger changes. The install step really runs pip, offline: the
    pinned version is the one under test, already installed here."""
    from loopx import __version__

    env, steps = _workflow_steps()
    assert env["LOOPX_PACKAGE"] == f"loopx=={__version__}"
    assert len(steps) == 3 and steps[0].startswith("python -m pip install")
    p = _project(tmp_path)
    p.loopx("init")
    p.loopx(
        "goal",
        "create",
        "--goal-id",
        env["WORKBENCH_GOAL"],
        "--title",
        "Launch",
        "--objective",
        "Ship",
    )
    p.loopx("todo", "add", "--goal-id", env["WORKBENCH_GOAL"], "--title", "Write the code")
    p.loopx("workbench", "--goal-id", env["WORKBENCH_GOAL"], "--write", env["WORKBENCH_FILE"])
    p.loopx("build", "--out", env["BUILD_DIR"])
    p.commit("loopx outputs")
    p.unrelated_commit(1)

    def run_steps() -> list[int]:
        codes = []
        for script in steps:
            proc = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                cwd=p.root,
                env={**_env(p.home, p.now), **env, "PIP_NO_INDEX": "1"},
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            codes.append(proc.returncode)
        return codes

    assert run_steps() == [0, 0, 0]
    p.loopx("todo", "add", "--goal-id", env["WORKBENCH_GOAL"], "--title", "Write the docs")
    p.commit("loopx: a new todo")
    assert run_steps() == [0, 6, 6]


def test_the_readme_flow_runs_as_written(tmp_path: Path) -> None:
    """The commands of the README's "Committing the workbench" block, run verbatim with
    `bash -euo pipefail` in a scratch repository; then the checks hold on later commits."""
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("\n## Committing the workbench\n") :]
    start = section.index("```bash\n") + 8
    block = section[start : section.index("\n```", start)]
    assert block.startswith("loopx init\n") and "loopx build --out site --check" in block
    p = _project(tmp_path)
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=p.root,
        env=_env(p.home, p.now),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert p.run("git", "status", "--porcelain").stdout == ""
    p.unrelated_commit(1)
    _check_both(p)


def test_turn_phases_leave_a_committed_build_current(tmp_path: Path) -> None:
    """The turn journal is progress, not goal truth: a build and a workbench committed before
    a turn begins stay current through its phases (`--check` green, the artifacts naming the
    revision of the last goal-truth event), while the live views show the open turn; settling
    it (a run and its quota) is a ledger change that makes them stale."""
    import json

    p = _project(tmp_path)
    p.loopx("init")
    p.loopx("goal", "create", "--goal-id", G, "--title", "Ship", "--objective", "Ship it")
    p.loopx("todo", "add", "--goal-id", G, "--todo-id", "parser", "--title", "Write the parser")
    p.loopx("todo", "claim", "--goal-id", G, "--todo-id", "parser", "--agent-id", "agent-a")
    p.loopx(
        "handoff", "prepare", "--goal-id", G, "--todo-id", "parser", "--agent-id", "agent-a",
        "--work-summary", "Tokenizer half done",
    )  # fmt: skip
    p.loopx("build", "--out", "site", "--audience", "public,team,private")
    p.loopx("workbench", "--goal-id", G, "--write", "docs/WORKBENCH.md")
    p.commit("loopx: build")
    committed = json.loads((p.root / "site/team/goals/ship/status.json").read_text())
    revision = committed["source"]["revision"]

    p.now = "2026-05-04T09:10:00Z"
    a = ("--goal-id", G, "--agent-id", "agent-a")
    p.loopx("turn", "begin", *a, "--todo-id", "parser", "--turn-id", "t1")
    for minute, phase in (("20", "execute"), ("30", "validate"), ("40", "write_back")):
        p.now = f"2026-05-04T09:{minute}:00Z"
        p.loopx("turn", "phase", *a, "--turn-id", "t1", "--phase", phase, "--ref", "pushed")
        p.loopx("build", "--out", "site", "--audience", "public,team,private", "--check")
        p.loopx("workbench", "--goal-id", G, "--check", "docs/WORKBENCH.md")
    assert p.run("git", "status", "--porcelain", "--", "site", "docs").stdout == ""

    # The live views show the open turn, at the ledger's real revision.
    live = json.loads(p.loopx("status", "--goal-id", G, "--format", "json").stdout)["goals"][0]
    assert [t["turn_id"] for t in live["open_turns"]] == ["t1"]
    assert live["revision"] == revision + 4
    g = ("--goal-id", G, "--format", "json")
    listed = json.loads(p.loopx("turn", "list", *g, "--open").stdout)
    assert [t["phase"] for t in listed["turns"]] == ["write_back"]
    digest = json.loads(p.loopx("handoff", "inspect", *g, "--todo-id", "parser").stdout)
    assert "turn_open" in [r["code"] for r in digest["reinspect"]]
    built = json.loads((p.root / "site/team/goals/ship/handoffs/parser.json").read_text())
    assert "turn_open" not in [r["code"] for r in built["reinspect"]]

    # Settling spends quota: goal truth, so the committed build is stale now.
    p.loopx("turn", "end", *a, "--turn-id", "t1", "--outcome", "progress")
    stale = p.loopx("build", "--out", "site", "--audience", "public,team,private", "--check",
                    ok=False)  # fmt: skip
    assert stale.returncode == 6 and "build_stale" in stale.stderr
    p.loopx("build", "--out", "site", "--audience", "public,team,private")
    rebuilt = json.loads((p.root / "site/team/goals/ship/status.json").read_text())
    assert rebuilt["source"]["revision"] == revision + 6 and rebuilt["quota"]["spent"] == 1
