"""The README documents every command (with an example) and every error code (with its exit
code), so adding either without documenting it fails here."""

from __future__ import annotations

import re
from pathlib import Path

import click

from loopx.cli.main import COMMANDS, cli
from loopx.model.errors import EXIT_CODES

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 4)
    return README[start : end if end > 0 else None]


def commands() -> list[str]:
    ctx = click.Context(cli)
    out = []
    for name in sorted(COMMANDS):
        command = cli.get_command(ctx, name)
        if isinstance(command, click.Group):
            out += [f"{name} {sub}" for sub in sorted(command.commands)]
        else:
            out.append(name)
    return out


def test_every_command_has_a_row_with_an_example() -> None:
    reference = section("Command reference")
    rows = {}
    for line in reference.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 3:
            rows[cells[0].strip("`").split(" [")[0]] = cells[1]
    for name in commands():
        assert name in rows, f"README command reference lacks `{name}`"
        assert rows[name].startswith(f"`loopx {name}"), f"`{name}` needs a one-line example"


def source_codes() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "loopx").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        found |= set(re.findall(r'code\s*=\s*"([a-z_]+)"', text))
        found |= set(re.findall(r'_invalid\(\s*"([a-z_]+)"', text))
    found |= {"todo_exists", "gate_exists", "evidence_exists", "run_exists", "note_exists"}
    return found - {"error", "not_found", "conflict"}  # the bare class codes are never raised


def documented_codes() -> dict[str, int]:
    table: dict[str, int] = {}
    for line in section("Errors and exit codes").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 3 and cells[1].isdigit():
            for code in re.findall(r"`([a-z_]+)`", cells[0]):
                table[code] = int(cells[1])
    return table


def test_every_error_code_is_documented_with_its_exit_code() -> None:
    table = documented_codes()
    missing = sorted(source_codes() - set(table))
    assert missing == [], f"README error table lacks: {missing}"
    assert set(table.values()) <= set(EXIT_CODES)
    for row in ("invalid_id", "goal_not_found", "revision_conflict", "ledger_corrupt"):
        assert row in table
    assert (table["invalid_id"], table["goal_not_found"], table["revision_conflict"]) == (2, 3, 4)
    assert (table["ledger_corrupt"], table["io_error"], table["internal_error"]) == (5, 5, 1)


def test_the_exit_code_table_matches_the_error_tree() -> None:
    exits = section("Errors and exit codes")
    for code in EXIT_CODES:
        assert re.search(rf"^\| {code} \| ", exits, re.M), f"exit code {code} is not explained"


def test_top_level_help_names_every_exit_code() -> None:
    from click.testing import CliRunner

    text = " ".join(CliRunner().invoke(cli, ["--help"]).output.split())
    listed = text.split("Exit codes:", 1)[1]
    for code in EXIT_CODES:
        assert re.search(rf"\b{code} [a-z]", listed), f"loopx --help does not explain exit {code}"


def test_concepts_name_every_domain_term_and_the_visibility_defaults() -> None:
    concepts = section("Concepts")
    for term in ("goal", "todo", "gate", "evidence", "run", "claim", "frontier", "attention"):
        assert f"**{term}**" in concepts, term
    assert "evidence and notes are `private`" in " ".join(concepts.split())
    for state in ("needs_user", "ready_for_agent", "waiting", "blocked", "done"):
        assert f"`{state}`" in concepts
