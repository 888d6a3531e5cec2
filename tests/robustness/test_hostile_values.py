"""Item 10 of the checkout issue, input by input: each gets its documented code and exit
status, in text and JSON mode, with no traceback and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

G = ["--goal-id", "demo"]
CASES: list[tuple[list[str], dict[str, str], int, str]] = [
    (["todo", "add", *G, "--title", "x", "--expected-revision", "9" * 23], {}, 2, "usage_error"),
    (["todo", "add", *G, "--title", "x", "--expected-revision", str(2**53)], {}, 2, "usage_error"),
    (["todo", "add", *G, "--title", "\udcff\udcfe"], {}, 2, "invalid_utf8"),
    (["todo", "add", *G, "--title", "x", "--todo-id", "t\udc80"], {}, 2, "invalid_utf8"),
    (["status"], {"LOOPX_AGENT_ID": "a\udcff"}, 2, "invalid_utf8"),
    (["quota", "set", *G, "--budget", "18446744073709551616"], {}, 2, "usage_error"),
    (["handoff", "inspect", *G, "--todo-id", "t1", "--max-chars", "1e23"], {}, 2, "usage_error"),
    (
        ["todo", "claim", *G, "--todo-id", "t1", "--agent-id", "a"],
        {"LOOPX_NOW": "9999-12-31T23:00:00Z"},
        2,
        "invalid_time",
    ),
    (
        ["todo", "claim", *G, "--todo-id", "t1", "--agent-id", "a"],
        {"LOOPX_NOW": "0001-01-01T00:00:00Z"},
        2,
        "invalid_time",
    ),
    (
        ["todo", "claim", *G, "--todo-id", "t1", "--agent-id", "a", "--lease-seconds", "2592000"],
        {"LOOPX_NOW": "8999-12-31T23:00:00Z"},
        2,
        "time_out_of_range",
    ),
]


@pytest.mark.parametrize(("args", "env", "exit_code", "code"), CASES)
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_each_hostile_value_has_its_code(
    project: Path, args: list[str], env: dict[str, str], exit_code: int, code: str, fmt: str
) -> None:
    assert (
        run_cli(
            ["todo", "add", *G, "--todo-id", "t1", "--title", "t", "--root", str(project)]
        ).exit_code
        == 0
    )
    ledger = project / ".loopx" / "goals" / "demo" / "ledger.jsonl"
    before = ledger.read_bytes()
    got = run_cli([*args, "--root", str(project), "--format", fmt], env=env)
    assert got.exit_code == exit_code, got.stdout + got.stderr
    assert "Traceback" not in got.stdout + got.stderr
    if fmt == "json":
        assert json.loads(got.stdout)["error"]["code"] == code
        assert got.stderr == ""
    else:
        assert got.stderr.startswith(f"loopx: error [{code}]: ") and got.stderr.count("\n") == 1
    assert "\udcff" not in got.stdout + got.stderr
    assert ledger.read_bytes() == before


@pytest.mark.parametrize("content", ["{}", "[]", "null", '{"goal": []}', '{"goal": {}}'])
def test_diff_on_a_build_whose_status_is_not_an_artifact(
    project: Path, tmp_path: Path, content: str
) -> None:
    r = ["--root", str(project)]
    for name in ("a", "b"):
        assert run_cli(["build", "--out", str(tmp_path / name), *r]).exit_code == 0
    status = tmp_path / "a" / "team" / "goals" / "demo" / "status.json"
    status.write_text(content)
    for fmt in ("text", "json"):
        got = run_cli(
            [
                "diff",
                str(tmp_path / "a"),
                str(tmp_path / "b"),
                "--audience",
                "team",
                "--format",
                fmt,
                *r,
            ]
        )
        assert got.exit_code == 2, got.stdout + got.stderr
        shown = json.loads(got.stdout)["error"]["code"] if fmt == "json" else got.stderr
        assert "invalid_build" in shown
