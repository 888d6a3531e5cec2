"""The committed site/ is the build of the demo project, byte for byte (the golden tree).

Regenerate it deliberately with `scripts/regenerate-site` after a change to the output.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from loopx.build.pipeline import build
from loopx.engine.demo import REV_NEW, create_demo

SITE = Path(__file__).resolve().parent.parent / "site"


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_committed_site_matches_a_fresh_build(tmp_path: Path) -> None:
    create_demo(tmp_path / "demo")
    build(tmp_path / "demo", tmp_path / "site", head=REV_NEW)
    expected, actual = _tree(tmp_path / "site"), _tree(SITE)
    assert sorted(actual) == sorted(expected), "file lists differ: run scripts/regenerate-site"
    for path, data in expected.items():
        if actual[path] != data:
            diff = "\n".join(
                difflib.unified_diff(
                    actual[path].decode(errors="replace").splitlines(),
                    data.decode(errors="replace").splitlines(),
                    f"site/{path} (committed)",
                    f"site/{path} (fresh build)",
                    lineterm="",
                    n=1,
                )
            )
            raise AssertionError(f"site/{path} is stale; run scripts/regenerate-site\n{diff}")
