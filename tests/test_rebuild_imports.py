"""What a rebuild process imports: modules only a rare branch uses are imported there."""

from __future__ import annotations

import subprocess
import sys


def test_the_build_modules_import_no_tool_only_module() -> None:
    """`textwrap` (only the base64 table's generator uses it), `secrets` (only a new
    covered set of the scan memo is named with it) and `socket` (only a host without
    `os.uname` asks it this host's name; a pool of workers brings it) are not imported with
    the build or the scan."""
    code = (
        "import sys, loopx.build.pipeline, loopx.build.reuse, loopx.build.outputs, "
        "loopx.build.folderscan; "
        "print(sorted(m for m in ('textwrap', 'secrets', 'socket') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
