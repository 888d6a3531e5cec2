"""Two folders holding sessions with the same id: the second is refused, clearly, with nothing
written, and `--goal-id` imports it under another id.

The real `goal-met` and `noop-max-turns` fixtures both hold session
`001_write-file-hello-txt-containing-word`.
"""

from __future__ import annotations

from pathlib import Path

from loopy_builder import GOAL_MET_SESSION as SESSION
from loopy_builder import copy_012
from loopy_checks import new_store

from tests.conftest import CliResult, run_cli

WHERE = f".loopy_loop/sessions/{SESSION}"
MESSAGE = (
    f"goal {SESSION} already exists and was not imported from this session; "
    "import it under another id with --goal-id"
)


def _tree(root: Path) -> dict[str, bytes]:
    """Every file loopx keeps (ledgers, private blobs, caches), byte for byte."""
    state = root / ".loopx"
    return {
        p.relative_to(state).as_posix(): p.read_bytes() for p in state.rglob("*") if p.is_file()
    }


def _import(root: Path, source: Path, *extra: str) -> CliResult:
    return run_cli(["import", "loopy-loop", str(source), "--root", str(root), *extra])


def _clash(tmp_path: Path) -> tuple[Path, Path]:
    root = new_store(tmp_path / "loopx").root
    assert _import(root, copy_012("goal-met", tmp_path)).exit_code == 0
    return root, copy_012("noop-max-turns", tmp_path)


def test_clash_in_text_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    root, other = _clash(tmp_path)
    before = _tree(root)
    got = _import(root, other)
    assert got.exit_code == 2  # something was left out (README: Importing loopy-loop sessions)
    assert got.stdout == (f"{SESSION}: not imported\nproblems:\n  error   {WHERE}: {MESSAGE}\n")
    assert got.stderr == ""
    assert _tree(root) == before


def test_clash_in_json_names_the_problem_with_a_code(tmp_path: Path) -> None:
    root, other = _clash(tmp_path)
    before = _tree(root)
    got = _import(root, other, "--format", "json")
    assert got.exit_code == 2
    data = got.json()
    assert (data["ok"], data["applied"], data["replayed"]) == (False, 0, 0)
    assert data["problems"] == [
        {
            "path": WHERE,
            "message": MESSAGE,
            "severity": "error",
            "session_id": SESSION,
            "code": "goal_exists",
        }
    ]
    (session,) = data["sessions"]
    assert (session["goal_id"], session["imported"], session["goal_status"]) == (
        SESSION,
        False,
        None,
    )
    assert _tree(root) == before


def test_goal_id_imports_it_beside_the_other(tmp_path: Path) -> None:
    root, other = _clash(tmp_path)
    taken = (root / ".loopx" / "goals" / SESSION / "ledger.jsonl").read_bytes()
    got = _import(root, other, "--goal-id", "other", "--format", "json")
    assert got.exit_code == 0, got.stdout
    data = got.json()
    assert data["ok"] and data["problems"] == [] and data["applied"] > 0
    assert data["sessions"][0]["goal_id"] == "other"
    assert data["sessions"][0]["goal_status"] == "active"  # stopped at max_turns
    assert (root / ".loopx" / "goals" / SESSION / "ledger.jsonl").read_bytes() == taken
    before = _tree(root)
    again = _import(root, other, "--goal-id", "other", "--format", "json")
    assert again.exit_code == 0
    assert (again.json()["applied"], again.json()["problems"]) == (0, [])
    assert _tree(root) == before
    status = run_cli(["status", "--root", str(root), "--goal-id", "other", "--format", "json"])
    assert status.exit_code == 0, status.stderr
