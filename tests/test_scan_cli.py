"""`loopx scan`: the boundary scan on any files or folders."""

from __future__ import annotations

import json
from pathlib import Path

from loopx.engine.demo import REV_NEW, create_demo
from tests.conftest import run_cli

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def test_scan_finds_credentials_without_echoing_them(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("All good: sha256:" + "ab" * 32 + "\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "leak.json").write_text(json.dumps({"token": TOKEN}) + "\n")
    result = run_cli(["scan", str(tmp_path), "--no-ledger", "--format", "json"])
    assert result.exit_code == 7
    error = result.json()["error"]
    assert error["code"] == "public_boundary_violation" and error["details"]["count"] == 1
    findings = error["details"]["findings"]
    assert [f["path"] for f in findings] == [f"{tmp_path.as_posix()}/sub/leak.json"]
    assert findings[0]["kind"].startswith("github")
    assert TOKEN not in result.stdout + result.stderr
    text = run_cli(["scan", str(tmp_path / "sub"), "--no-ledger"])
    assert text.exit_code == 7 and "leak.json:1:" in text.stdout and TOKEN not in text.stdout


def test_scan_of_a_clean_folder_exits_zero(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Ordinary prose about https://example.com/docs.\n")
    result = run_cli(["scan", str(tmp_path), "--no-ledger", "--format", "json"])
    assert result.exit_code == 0 and result.json()["clean"] is True


def test_scan_uses_the_ledger_non_public_text(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    create_demo(root)
    assert (
        run_cli(
            ["build", "--root", str(root), "--out", str(tmp_path / "site"), "--head", REV_NEW]
        ).exit_code
        == 0
    )
    public = run_cli(["scan", str(tmp_path / "site" / "public"), "--root", str(root)])
    assert public.exit_code == 0, public.stdout
    team = run_cli(
        ["scan", str(tmp_path / "site" / "team"), "--root", str(root), "--format", "json"]
    )
    assert team.exit_code == 7
    kinds = {f["kind"] for f in team.json()["error"]["details"]["findings"]}
    assert "non-public-text" in kinds
    assert "Markdown workbench for review" not in team.stdout


def test_scan_of_a_missing_path_is_not_found(tmp_path: Path) -> None:
    result = run_cli(["scan", str(tmp_path / "nope"), "--no-ledger"])
    assert result.exit_code == 3 and "path_not_found" in result.stderr
