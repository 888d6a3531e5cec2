"""`loopx.status/v2`: what a goal waits for in its status document (monitors with their next
wake, backoff and last observation; gates asking again; the next wake), the watch's text only
for the audiences that may read it; and the documented upgrade of a real `loopx.status/v1`
document (tests/fixtures/status-v1, written by loopx before v2), which `loopx diff` uses to
read an older build."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from loopx.build.validate import problems
from loopx.projections.status_upgrade import upgrade
from tests.conftest import run_cli

FIXTURES = Path(__file__).parent / "fixtures" / "status-v1"
HEAD = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"


def v1(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return doc


def _cli(root: Path, *args: str, now: str = "2026-03-01T12:00:00Z") -> Any:
    env = {"LOOPX_NOW": now, "LOOPX_AGENT_ID": "agent-a", "LOOPX_SESSION_ID": "s1"}
    done = run_cli([*args, "--root", str(root)], env=env)
    assert done.exit_code == 0, (args, done.stderr)
    return done


@pytest.fixture
def waiting_goal(tmp_path: Path) -> Path:
    """The fixture's goal, made again: a public goal whose code is done and whose public CI
    monitor was observed unchanged once; a team gate that asks again on 2 March."""
    root = tmp_path / "proj"
    root.mkdir()
    g = ("--goal-id", "fmt")
    _cli(root, "init")
    _cli(root, "goal", "create", *g, "--title", "Add --format json", "--objective",
         "JSON output", "--visibility", "public")  # fmt: skip
    _cli(root, "todo", "add", *g, "--todo-id", "impl", "--title", "Add --format json to the CLI",
         "--visibility", "public")  # fmt: skip
    _cli(root, "monitor", "add", *g, "--todo-id", "ci", "--title", "CI on the branch", "--watch",
         "ci:github/actions/1234567", "--every", "600", "--backoff", "exponential", "--cap",
         "3600", "--visibility", "public")  # fmt: skip
    _cli(root, "todo", "claim", *g, "--todo-id", "impl")
    _cli(root, "todo", "complete", *g, "--todo-id", "impl")
    _cli(root, "monitor", "observe", *g, "--todo-id", "ci", "--result", "unchanged",
         "--summary", "queued")  # fmt: skip
    return root


def _build(root: Path, out: Path) -> dict[str, dict[str, Any]]:
    _cli(root, "build", "--out", str(out), "--audience", "public,team", "--head", HEAD,
         "--validate")  # fmt: skip
    return {
        aud: json.loads((out / aud / "goals" / "fmt" / "status.json").read_text())
        for aud in ("public", "team")
    }


def test_status_v2_says_what_the_goal_waits_for(waiting_goal: Path, tmp_path: Path) -> None:
    built = _build(waiting_goal, tmp_path / "site")
    public, team = built["public"], built["team"]
    for doc in (public, team):
        assert doc["schema"] == "loopx.status/v2" and problems("loopx.status/v2", doc) == []
        assert doc["attention"]["state"] == "waiting"
        assert doc["attention"]["next_wake"] == {
            "at": "2026-03-01T12:10:00Z",
            "kind": "monitor",
            "id": "ci",
        }
        # Waiting on a monitor is not being stuck.
        assert [r["state"] for r in doc["attention"]["reasons"]] == ["waiting"]
        (ci,) = doc["monitors"]["items"]
        assert ci["next_at"] == "2026-03-01T12:10:00Z" and not ci["due"]
        assert ci["backoff"] == {"kind": "exponential", "seconds": 600, "cap": 3600}
        assert (ci["observations"], ci["last_result"]) == (1, "unchanged")
        assert [w["id"] for w in doc["waiting_for"]] == ["ci"]
    # The watch ref itself: team only; the public sees its kind, and the omission is counted.
    assert team["monitors"]["items"][0]["watch"] == "ci:github/actions/1234567"
    assert "watch" not in public["monitors"]["items"][0]
    assert public["waiting_for"][0]["what"] == "watching ci"
    assert public["omissions"]["omitted"]["monitor watches"] == 1
    for aud, watch in (("public", "watching ci "), ("team", "watching ci:github/actions/1234567")):
        wb = (tmp_path / "site" / aud / "goals" / "fmt" / "workbench.html").read_text()
        assert '<h2 id="h-waiting">Waiting for</h2>' in wb and watch in wb, aud
    for path in (tmp_path / "site" / "public").rglob("*"):
        if path.is_file():
            assert b"github/actions/1234567" not in path.read_bytes(), path
    leaky = copy.deepcopy(public)
    leaky["monitors"]["items"][0]["watch"] = "ci:github/actions/1234567"
    assert problems("loopx.status/v2", leaky)

    # A gate that asks again: its time in the gate, in waiting_for and as the next wake.
    _cli(waiting_goal, "gate", "open", "--goal-id", "fmt", "--gate-id", "stable", "--question",
         "Is error_code a stable field?", "--authority", "maintainer", "--blocks-goal",
         "--ask-again-at", "2026-03-01T12:05:00Z", now="2026-03-01T12:01:00Z")  # fmt: skip
    team = _build(waiting_goal, tmp_path / "site")["team"]
    assert team["gates"]["items"][0]["ask_again_at"] == "2026-03-01T12:05:00Z"
    assert team["attention"]["next_wake"] == {
        "at": "2026-03-01T12:05:00Z",
        "kind": "gate",
        "id": "stable",
    }
    assert [(w["kind"], w["id"]) for w in team["waiting_for"]] == [
        ("gate", "stable"),
        ("monitor", "ci"),
    ]
    page = (tmp_path / "site" / "team" / "goals" / "fmt" / "index.html").read_text()
    assert '<h2 id="h-waiting">Waiting for</h2>' in page and "ask again on" in page


def test_the_upgrade_reads_a_real_v1_document_as_v2() -> None:
    for name in ("public", "team"):
        old = v1(name)
        assert old["schema"] == "loopx.status/v1" and problems("loopx.status/v1", old) == []
        before = copy.deepcopy(old)
        new = upgrade(old)
        assert old == before  # pure: the input is not changed
        assert problems("loopx.status/v2", new) == []
        assert new["schema"] == "loopx.status/v2" and new["upgraded_from"] == "loopx.status/v1"
        # What v1 never recorded is empty, never guessed; everything else is carried.
        assert new["attention"]["next_wake"] is None
        assert new["monitors"] == {"due": 0, "items": []} and new["waiting_for"] == []
        assert all(g["ask_again_at"] is None for g in new["gates"]["items"])
        dropped = {"schema", "upgraded_from", "monitors", "waiting_for"}
        assert {k: v for k, v in new.items() if k not in dropped} | {
            "attention": old["attention"],
            "gates": old["gates"],
        } == {k: v for k, v in old.items() if k != "schema"}
        assert upgrade(new) is new  # a v2 document is read as it is
    with pytest.raises(ValueError):
        upgrade({"schema": "loopx.index/v1"})


def test_diff_reads_an_older_build_through_the_upgrade(waiting_goal: Path, tmp_path: Path) -> None:
    """`loopx diff` between a build written as v1 and one written now; and between two v2
    builds, where a monitor's observations are a change."""
    old = tmp_path / "old"
    (old / "public" / "goals" / "fmt").mkdir(parents=True)
    (old / "manifest.json").write_text("{}\n")
    shutil.copyfile(FIXTURES / "public.json", old / "public" / "goals" / "fmt" / "status.json")
    shutil.copyfile(FIXTURES / "public-graph.json", old / "public" / "goals" / "fmt" / "graph.json")
    _build(waiting_goal, tmp_path / "mid")
    _cli(waiting_goal, "monitor", "observe", "--goal-id", "fmt", "--todo-id", "ci", "--result",
         "unchanged", "--summary", "running", now="2026-03-01T12:10:00Z")  # fmt: skip
    _build(waiting_goal, tmp_path / "new")

    def diff(a: Path, b: Path) -> dict[str, Any]:
        done = _cli(waiting_goal, "diff", str(a), str(b), "--audience", "public", "--format",
                    "json")  # fmt: skip
        return done.json()  # type: ignore[no-any-return]

    # v1 never recorded monitors: the upgrade says so, and the diff claims nothing of them.
    assert all(c["kind"] != "monitor_observed" for c in diff(old, tmp_path / "new")["changes"])
    observed = diff(tmp_path / "mid", tmp_path / "new")["changes"]
    assert [c["kind"] for c in observed] == ["monitor_observed"]
    assert observed[0]["text"] == (
        "monitor ci observed 1 time(s), last unchanged: next wake 2026-03-01T12:30:00Z"
    )
    # Two ledger revisions read the same way.
    revisions = [
        str(
            json.loads((tmp_path / b / "public/goals/fmt/status.json").read_text())["source"][
                "revision"
            ]
        )
        for b in ("mid", "new")
    ]
    by_revision = _cli(waiting_goal, "diff", "--goal-id", "fmt", *revisions, "--audience",
                       "public", "--format", "json").json()["changes"]  # fmt: skip
    assert [c["text"] for c in by_revision] == [c["text"] for c in observed]
    broken = json.loads((FIXTURES / "public.json").read_text())
    broken["schema"] = "loopx.status/v9"
    (old / "public" / "goals" / "fmt" / "status.json").write_text(json.dumps(broken))
    refused = run_cli(
        [
            "diff",
            str(old),
            str(tmp_path / "new"),
            "--audience",
            "public",
            "--root",
            str(waiting_goal),
        ]
    )
    assert refused.exit_code != 0 and "invalid_build" in refused.stderr


def test_the_handoff_digest_says_what_the_goal_waits_for(waiting_goal: Path) -> None:
    """Every format of a digest (and the build's) names the monitor a todo is, its next
    wake, and what the goal waits for."""
    g = ("--goal-id", "fmt")
    _cli(waiting_goal, "monitor", "add", *g, "--todo-id", "pr", "--title", "Review", "--watch",
         "pr:octo/repo#7", "--every", "3600", "--first-at", "2026-03-01T13:00:00Z")  # fmt: skip
    _cli(waiting_goal, "todo", "claim", *g, "--todo-id", "pr")
    _cli(waiting_goal, "handoff", "prepare", *g, "--todo-id", "pr", "--work-summary",
         "Asked for a review", "--workspace", str(waiting_goal))  # fmt: skip
    inspect = ("handoff", "inspect", *g, "--todo-id", "pr", "--workspace", str(waiting_goal))
    now = "2026-03-01T12:05:00Z"
    digest = _cli(waiting_goal, *inspect, "--format", "json", now=now).json()
    assert problems("loopx.handoff/v1", digest) == []
    assert digest["todo"]["monitor"]["watch"] == "pr:octo/repo#7"
    assert digest["todo"]["monitor"]["next_at"] == "2026-03-01T13:00:00Z"
    assert digest["waiting"]["next_wake"] == {"at": "2026-03-01T12:10:00Z", "kind": "monitor",
                                              "id": "ci"}  # fmt: skip
    assert [w["id"] for w in digest["waiting"]["items"]] == ["ci", "pr"]
    text = _cli(waiting_goal, *inspect, "--format", "text", now=now).stdout
    assert (
        "WAITING FOR" in text and "Watches pr:octo/repo#7: next look 2026-03-01T13:00:00Z" in text
    )
    md = _cli(waiting_goal, *inspect, "--format", "markdown", now=now).stdout
    assert "## Waiting for" in md and "backoff fixed from 3600 s" in md
    short = _cli(waiting_goal, *inspect, "--format", "digest", now=now).stdout
    assert "## Waiting for" in short and "- 2026-03-01T12:10:00Z: `ci` watching ci:" in short


def test_diff_of_a_build_whose_monitors_are_not_loopx_s_is_invalid_build(
    waiting_goal: Path, tmp_path: Path
) -> None:
    """A build folder is untrusted: a monitor whose observations are not a count is
    `invalid_build` (one line), not an internal error of comparing them."""
    _build(waiting_goal, tmp_path / "a")
    _build(waiting_goal, tmp_path / "b")
    doc = tmp_path / "b" / "public" / "goals" / "fmt" / "status.json"
    forged = json.loads(doc.read_text())
    forged["monitors"]["items"][0]["observations"] = "many"
    doc.write_text(json.dumps(forged))
    args = ["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--audience", "public"]
    refused = run_cli([*args, "--root", str(waiting_goal)])
    assert refused.exit_code != 0 and "invalid_build" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
