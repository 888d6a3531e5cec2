"""The calls an agent makes on every turn import only what they use (issue 19).

Importing is most of a short call's cost (`benchmarks/bench_calls.py`): the template engine,
the Markdown renderer, the boundary rules (a few hundred compiled patterns), the build
pipeline and the write commands each cost a read 5–60 ms. Each call runs in a fresh
interpreter and reports the modules it loaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import T0, run_cli

# Never needed by a read of the ledger, nor by a write (ctypes: the first paths of a process
# are walked, not opened with openat2; see `loopx.store.fsio.WALKS_BEFORE_OPENAT2`).
NEVER = {"pydantic", "jsonschema", "markdown_it", "loopx.privacy.rules", "loopx.build.pipeline"}
NEVER |= {"ctypes"}
READS = NEVER | {"loopx.engine.commands", "jinja2", "ctypes.util"}


def loaded(root: Path, *args: str) -> set[str]:
    """The modules a `loopx ARGS --root ROOT` process has loaded when it exits (it must
    succeed); `--help` is passed alone."""
    argv = list(args) if args == ("--help",) else [*args, "--root", str(root)]
    code = (
        "import sys\n"
        "from loopx.cli.main import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit as stop:\n"
        "    assert not stop.code, stop.code\n"
        "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    env = {**os.environ, "LOOPX_NOW": T0, "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root
    )
    assert done.returncode == 0, done.stderr
    return set(done.stderr.split())


@pytest.fixture
def goal(project: Path) -> Path:
    add = ["todo", "add", "--root", str(project), "--goal-id", "demo", "--todo-id", "t1"]
    assert run_cli([*add, "--title", "First"]).exit_code == 0
    return project


@pytest.mark.parametrize(
    "args",
    [
        ("status", "--goal-id", "demo", "--format", "json"),
        ("status",),
        ("next", "--goal-id", "demo"),
    ],
)
def test_a_read_imports_no_command_template_or_rule(goal: Path, args: tuple[str, ...]) -> None:
    assert not loaded(goal, *args) & READS


def test_a_write_imports_no_template_schema_library_or_rule(goal: Path) -> None:
    claim = ("todo", "claim", "--goal-id", "demo", "--todo-id", "t1", "--agent-id", "a")
    modules = loaded(goal, *claim, "--session-id", "s")
    assert "loopx.engine.commands" in modules  # the sanity check: this is the write path
    assert not modules & (NEVER | {"jinja2", "_strptime"})  # times are read without strptime


def test_review_renders_without_markdown_html_rules_or_the_build_pipeline(goal: Path) -> None:
    modules = loaded(goal, "review", "--goal-id", "demo")
    assert "jinja2" in modules  # the packet is a template
    assert not modules & NEVER


def test_review_reuses_its_markdown_without_the_template_engine(goal: Path) -> None:
    """Asked again with nothing changed, the packet's Markdown comes from the render cache:
    no Jinja2, no projection registry, no git (no `--head`)."""
    loaded(goal, "review", "--goal-id", "demo")
    again = loaded(goal, "review", "--goal-id", "demo")
    assert not again & (NEVER | {"jinja2", "loopx.build.registry", "subprocess"})


def test_a_build_imports_no_click(goal: Path) -> None:
    """A plain `loopx build` (and `--check`) is read by `loopx.cli.quick`: no click."""
    out = str(goal / "site")
    for _ in range(2):  # the first build into the folder, then a rebuild
        assert "click" not in loaded(goal, "build", "--out", out)
    assert "click" not in loaded(goal, "build", "--out", out, "--check", "--format", "json")
    assert "click" in loaded(goal, "build", "--out", out, "--help")  # the sanity check


def test_a_build_renders_its_review_pages_without_a_markdown_renderer(goal: Path) -> None:
    """`review.html` comes from its own template (tests/test_review_page.py holds it to what
    `review.md` shows): a build imports no markdown-it."""
    out = goal / "site"
    modules = loaded(goal, "build", "--out", str(out))
    assert (out / "team" / "goals" / "demo" / "review.html").is_file()
    assert "jinja2" in modules and "markdown_it" not in modules


def test_a_scan_imports_no_click(goal: Path) -> None:
    """A plain `loopx scan PATHS` is read by `loopx.cli.quick`: no click, clean or not (a
    finding's exit 7 is asserted in tests/test_quick_build.py)."""
    out = goal / "site"
    assert run_cli(["build", "--root", str(goal), "--out", str(out)]).exit_code == 0
    public = str(out / "public")
    for _ in range(2):  # the first scan after the build, then one its caches answer
        assert "click" not in loaded(goal, "scan", public)
    assert "click" not in loaded(goal, "scan", public, "--no-ledger", "--format", "json")
    assert "click" not in loaded(goal, "scan", "--hash-name", "someone")
    assert "click" in loaded(goal, "scan", "--help")  # the sanity check


def test_help_opens_no_store(goal: Path) -> None:
    modules = loaded(goal, "--help")
    assert not modules & (READS | {"loopx.store.select", "loopx.engine.core"})


def _process(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m loopx ARGS --root ROOT` as a user runs it (the quick exit included)."""
    env = {**os.environ, "LOOPX_NOW": T0, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "loopx", *args, "--root", str(root)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
    )


def test_a_quick_exit_loses_no_output_exit_code_or_write(goal: Path) -> None:
    """Every-turn calls end without tearing the interpreter down (cli.main.QUICK_EXIT): what
    they print, their exit code and what they wrote are as after an ordinary exit."""
    shown = _process(goal, "status", "--goal-id", "demo", "--format", "json")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == run_cli(["status", "--goal-id", "demo", "--format", "json",
                                    "--root", str(goal)]).stdout  # fmt: skip
    missing = _process(goal, "status", "--goal-id", "nope", "--format", "json")
    assert missing.returncode == 3 and '"goal_not_found"' in missing.stdout + missing.stderr
    claim = ("todo", "claim", "--goal-id", "demo", "--todo-id", "t1", "--agent-id", "a")
    done = _process(goal, *claim, "--session-id", "s", "--format", "json")
    assert done.returncode == 0 and '"applied"' in done.stdout, done.stderr
    listed = run_cli(["log", "--goal-id", "demo", "--root", str(goal), "--format", "json"])
    assert "todo.claimed" in listed.stdout


def test_handoff_inspect_imports_no_write_command(goal: Path) -> None:
    """`handoff inspect` reads: its group's writes (prepare, adopt) are declared, and the
    write commands imported, only when one of them is used (`cli.write.Declared`)."""
    actor = ["--goal-id", "demo", "--todo-id", "t1", "--agent-id", "a", "--session-id", "s"]
    for write in (["todo", "claim"], ["handoff", "prepare", "--work-summary", "w"]):
        assert run_cli([*write, *actor, "--root", str(goal)]).exit_code == 0
    inspect = ("handoff", "inspect", "--goal-id", "demo", "--todo-id", "t1")
    modules = loaded(goal, *inspect, "--workspace", str(goal))
    assert "loopx.engine.commands" not in modules and not modules & NEVER


def test_a_scan_imports_no_write_command(goal: Path) -> None:
    """`loopx scan` reads allow entries, never writes one: the write side of `loopx allow
    finding` (`loopx.build.allowances.confirm`) is imported only when a confirm runs."""
    out = goal / "site"
    assert run_cli(["build", "--root", str(goal), "--out", str(out)]).exit_code == 0
    modules = loaded(goal, "scan", str(out / "public"))
    assert "loopx.build.allowances" in modules  # the scan did look at the allow entries
    assert "loopx.engine.commands" not in modules
