"""The privacy layer's public API, pinned: other layers call exactly these names."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import loopx.privacy.redact as redact_module
import loopx.privacy.rules as rules_module
import loopx.privacy.scanner as scanner_module
from loopx.privacy.redact import redact
from loopx.privacy.scanner import Finding, Scanner, scan_paths


def test_finding_fields() -> None:
    fields = [f.name for f in dataclasses.fields(Finding)]
    assert fields == ["kind", "path", "line", "column", "offset", "encoding"]
    assert Finding.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_signatures() -> None:
    scanner = inspect.signature(Scanner)
    assert list(scanner.parameters) == [
        *("forbidden", "machine", "forbidden_ids", "allow", "rules", "name_hashes", "allowed"),
        "stem",
    ]
    assert scanner.parameters["machine"].kind is inspect.Parameter.KEYWORD_ONLY
    assert list(inspect.signature(Scanner.scan_text).parameters) == ["self", "text", "path"]
    assert list(inspect.signature(Scanner.scan_bytes).parameters) == ["self", "data", "path"]
    assert list(inspect.signature(scan_paths).parameters) == ["paths", "scanner"]
    assert list(inspect.signature(redact).parameters) == ["text", "scanner"]


def test_privacy_imports_only_the_model_layer() -> None:
    for module in (rules_module, scanner_module, redact_module):
        tree = ast.parse(Path(module.__file__ or "").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("loopx"):
                assert node.module.startswith(("loopx.model", "loopx.privacy")), node.module
