"""What a rebuild process imports: modules only a rare branch uses are imported there."""

from __future__ import annotations

import subprocess
import sys


def test_the_build_modules_import_no_tool_only_module() -> None:
    """`textwrap` (only the base64 table's generator uses it) and `secrets` (only a new
    covered set of the scan memo is named with it) are not imported with the build."""
    code = (
        "import sys, loopx.build.pipeline, loopx.build.reuse, loopx.build.outputs; "
        "print(sorted(m for m in ('textwrap', 'secrets') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
