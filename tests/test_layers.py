"""Dependencies point one way (DESIGN.md, "Layers"): each layer imports only from the layers
above it in this list. Imports inside functions count too."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "loopx"
ORDER = ["model", "state", "store", "engine", "privacy", "projections", "render", "build", "cli"]
# Importers read foreign state into events: they sit beside the engine, below the CLI.
ALLOWED_EXTRA = {
    "importers": {"model", "state", "store", "engine", "privacy"},
    # The MCP server sits beside the CLI and calls the same functions.
    "mcp": {*ORDER, "importers", "mcp"},
}
SHARED = {"loopx", "loopx.resources"}  # the version and the resource locator


def _allowed(layer: str) -> set[str]:
    if layer in ALLOWED_EXTRA:
        return ALLOWED_EXTRA[layer] | {layer}
    # `loopx mcp` (a cli command) starts the server; the server calls the CLI's plain functions.
    return set(ORDER[: ORDER.index(layer) + 1]) | (
        {"importers", "mcp"} if layer == "cli" else set()
    )


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text("utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
    return [m for m in out if m == "loopx" or m.startswith("loopx.")]


def test_every_layer_imports_only_from_the_layers_above_it() -> None:
    problems = []
    for layer in [*ORDER, *ALLOWED_EXTRA]:
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for module in _imports(path):
                if module in SHARED:
                    continue
                target = module.split(".")[1]
                if target not in _allowed(layer):
                    problems.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert problems == []


def test_the_layers_exist() -> None:
    assert all((PACKAGE / layer / "__init__.py").is_file() for layer in ORDER)
