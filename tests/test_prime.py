"""`loopx prime` and `loopx agents-md`: the briefing an agent reads first, and the block that
tells it to."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from loopx.projections.agents_md import BEGIN, END, current_block, splice
from loopx.resources import resource_dir
from tests.conftest import run_cli


def ok(args: list[str], **kw: Any) -> Any:
    result = run_cli(args, **kw)
    assert result.exit_code == 0, result.stderr + result.stdout
    return result


@pytest.fixture
def work(project: Path) -> Path:
    """Goal demo: a ready todo, one held by agent-a, one held by a gate, one handed to agent-b."""
    r = ["--root", str(project), "--goal-id", "demo"]
    ok(["todo", "add", *r, "--todo-id", "ready-one", "--title", "Ready work", "--priority", "1"])
    ok(["todo", "add", *r, "--todo-id", "held", "--title", "Held work"])
    ok(["todo", "add", *r, "--todo-id", "mine", "--title", "My work"])
    ok(["todo", "add", *r, "--todo-id", "passed", "--title", "Passed on"])
    ok(
        ["gate", "open", *r, "--gate-id", "ship", "--question", "Ship it?"]
        + ["--authority", "maintainer", "--blocks", "held"]
    )
    ok(["todo", "claim", *r, "--todo-id", "mine", "--agent-id", "agent-a"])
    ok(["todo", "claim", *r, "--todo-id", "passed", "--agent-id", "agent-a"])
    ok(
        ["handoff", "prepare", *r, "--todo-id", "passed", "--agent-id", "agent-a"]
        + ["--work-summary", "Half done", "--next-step", "Finish", "--target-agent-id", "agent-b"]
        + ["--workspace", str(project)]
    )
    return project


def schema() -> jsonschema.Draft202012Validator:
    doc = json.loads((resource_dir("schemas") / "prime.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(doc)
    return jsonschema.Draft202012Validator(doc)


def test_primer_for_an_agent_names_its_claims_handoffs_frontier_and_gates(work: Path) -> None:
    a = ok(["prime", "--root", str(work), "--goal-id", "demo", "--agent-id", "agent-a"])
    text = a.stdout
    assert text.startswith("# loopx primer: demo\n")
    assert "You are agent `agent-a`" in text
    assert "loopx todo claim --goal-id demo --agent-id agent-a --todo-id TODO" in text
    assert "loopx handoff prepare --goal-id demo --agent-id agent-a" in text
    claims = text.split("## Your claims")[1].split("##")[0]
    assert "`mine`" in claims and "`passed`" in claims
    assert "`ready-one` p1 Ready work" in text
    assert "`ship` [pending] for maintainer: Ship it?; holds held" in text
    # agent-a's own note is not "waiting for" agent-a; agent-b sees it
    assert "Handoffs waiting for you (0)" in text
    b = ok(["prime", "--root", str(work), "--goal-id", "demo", "--agent-id", "agent-b"]).stdout
    assert "Handoffs waiting for you (1)" in b
    assert "`passed` Passed on: from agent-a" in b
    assert "Your claims (0)" in b
    # a third agent is not offered a note meant for agent-b
    c = ok(["prime", "--root", str(work), "--goal-id", "demo", "--agent-id", "agent-c"]).stdout
    assert "Handoffs waiting for you (0)" in c


def test_primer_json_is_valid_deterministic_and_matches_markdown(work: Path) -> None:
    args = ["prime", "--root", str(work), "--goal-id", "demo", "--agent-id", "agent-a"]
    first = ok([*args, "--format", "json"]).stdout
    assert first == ok([*args, "--format", "json"]).stdout
    data = json.loads(first)
    errors = [e.message for e in schema().iter_errors(data)]
    assert errors == []
    assert data["schema"] == "loopx.prime/v1"
    assert [c["todo_id"] for c in data["claims"]] == ["mine", "passed"]
    assert [t["todo_id"] for t in data["frontier"]] == ["ready-one"]
    assert data["gates"][0]["blocks"] == ["held"]
    assert data["source"]["goal_id"] == "demo" and data["source"]["revision"] > 0
    assert ok([*args, "--format", "text"]).stdout == ok(args).stdout


def test_primer_fits_its_budget_and_says_what_it_left_out(project: Path) -> None:
    r = ["--root", str(project), "--goal-id", "demo"]
    for i in range(40):
        ok(["todo", "add", *r, "--todo-id", f"t{i:02d}", "--title", f"Task {i} " + "x" * 90])
    full = ok(["prime", *r, "--format", "json", "--max-chars", "100000"]).json()
    assert len(full["frontier"]) == 8 and full["omitted"] == {"frontier": 32}
    for budget in (2500, 4000):
        md = ok(["prime", *r, "--max-chars", str(budget)]).stdout
        assert len(md) <= budget
        assert "Left out to fit" in md and "1. Pick work from the frontier" in md
        js = ok(["prime", *r, "--max-chars", str(budget), "--format", "json"]).stdout
        assert len(js) <= budget
        assert json.loads(js)["omitted"]["frontier"] > 32
    small = run_cli(["prime", *r, "--max-chars", "500"])
    assert small.exit_code == 2 and "budget_too_small" in small.stderr and small.stdout == ""
    assert run_cli(["prime", *r, "--max-chars", "0"]).exit_code == 2


def test_primer_without_a_goal_uses_the_only_one_or_lists_them(project: Path) -> None:
    root = ["--root", str(project)]
    assert ok(["prime", *root]).stdout.startswith("# loopx primer: demo\n")
    ok(["goal", "create", *root, "--goal-id", "other", "--title", "Other", "--objective", "O"])
    listing = ok(["prime", *root, "--format", "json"]).json()
    assert listing["goal"] is None
    assert [g["goal_id"] for g in listing["goals"]] == ["demo", "other"]
    assert schema().is_valid(listing)
    assert "Choose one: `loopx prime --goal-id ID" in ok(["prime", *root]).stdout
    chosen = ok(["prime", *root], env={"LOOPX_GOAL_ID": "other"}).stdout
    assert chosen.startswith("# loopx primer: other\n")
    # a closed goal does not count: the only active one is meant
    ok(["goal", "close", *root, "--goal-id", "other", "--outcome", "abandoned", "--reason", "x"])
    assert ok(["prime", *root]).stdout.startswith("# loopx primer: demo\n")
    missing = run_cli(["prime", *root, "--goal-id", "nope"])
    assert missing.exit_code == 3 and "goal_not_found" in missing.stderr


# -- agents-md ----------------------------------------------------------------------------


def test_agents_md_block_is_printed_and_spliced_between_markers(project: Path) -> None:
    printed = ok(["agents-md", "--root", str(project)]).stdout
    assert printed.startswith(BEGIN) and printed.rstrip().endswith(END)
    assert "loopx prime --agent-id YOUR-ID" in printed
    target = project / "AGENTS.md"
    target.write_text("# My project\n\nHand-written rules.\n", encoding="utf-8")
    out = ok(["agents-md", "--root", str(project), "--write", str(target)]).stdout
    assert "loopx block updated" in out
    text = target.read_text("utf-8")
    assert text.startswith("# My project\n\nHand-written rules.\n\n" + BEGIN)
    ok(["agents-md", "--root", str(project), "--write", str(target), "--check"])
    # text after the block, and an older block, are kept / replaced respectively
    edited = text.replace("Never edit", "Do not edit") + "\n## Afterword\nMine.\n"
    target.write_text(edited, encoding="utf-8")
    stale = run_cli(["agents-md", "--root", str(project), "--write", str(target), "--check"])
    assert stale.exit_code == 6 and "agents_md_stale" in stale.stderr
    assert target.read_text("utf-8") == edited  # --check writes nothing
    ok(["agents-md", "--root", str(project), "--write", str(target)])
    again = target.read_text("utf-8")
    assert again == text + "\n## Afterword\nMine.\n"
    unchanged = ok(["agents-md", "--root", str(project), "--write", str(target)]).stdout
    assert "unchanged" in unchanged
    # a goal id fills in the commands; a new file holds just the block
    fresh = project / "CLAUDE.md"
    ok(["agents-md", "--root", str(project), "--write", str(fresh), "--goal-id", "demo"])
    assert "--goal-id demo" in fresh.read_text("utf-8")
    assert fresh.read_text("utf-8").startswith(BEGIN)


def test_agents_md_refuses_unsafe_targets_and_writes_nothing(project: Path, tmp_path: Path) -> None:
    root = ["agents-md", "--root", str(project), "--write"]
    outside = tmp_path / "elsewhere.md"
    outside.write_text("x", encoding="utf-8")
    link = project / "LINK.md"
    link.symlink_to(outside)
    refused = run_cli([*root, str(link)])
    assert refused.exit_code == 2 and "not_regular_file" in refused.stderr
    assert outside.read_text("utf-8") == "x" and link.is_symlink()
    fifo = project / "FIFO.md"
    os.mkfifo(fifo)
    assert "not_regular_file" in run_cli([*root, str(fifo)]).stderr
    away = run_cli([*root, str(outside)])
    assert away.exit_code == 2 and "path_outside_project" in away.stderr
    (project / "sub").symlink_to(tmp_path)
    via = run_cli([*root, str(project / "sub" / "new.md")])
    assert "path_outside_project" in via.stderr and not (tmp_path / "new.md").exists()
    big = project / "BIG.md"
    big.write_bytes(b"a" * ((1 << 20) + 1))
    assert "file_too_large" in run_cli([*root, str(big)]).stderr
    broken = project / "BROKEN.md"
    broken.write_text(f"{BEGIN}\nhalf a block\n", encoding="utf-8")
    r = run_cli([*root, str(broken)])
    assert r.exit_code == 2 and "agents_md_markers" in r.stderr
    assert broken.read_text("utf-8") == f"{BEGIN}\nhalf a block\n"
    missing = run_cli([*root, str(project / "NONE.md"), "--check"])
    assert missing.exit_code == 6 and "agents_md_missing" in missing.stderr
    assert not (project / "NONE.md").exists()
    assert sorted(p.name for p in project.iterdir() if p.name.startswith(".") is False) == [
        "BIG.md",
        "BROKEN.md",
        "FIFO.md",
        "LINK.md",
        "sub",
    ]


def test_splice_keeps_every_byte_outside_the_block() -> None:
    block = f"{BEGIN}\nnew\n{END}\n"
    assert splice(None, block) == block
    assert splice("", block) == block
    assert splice("head", block) == "head\n\n" + block
    old = f"a\r\nb\n{BEGIN}\nold\n{END}\ntail  \n"
    assert splice(old, block) == f"a\r\nb\n{block}tail  \n"
    assert current_block(splice(old, block)) == block
    assert current_block("no markers") is None
    assert splice(f"x\n{BEGIN}\nold\n{END}", block) == "x\n" + block
