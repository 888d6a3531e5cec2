"""The documented GitHub Pages workflow (`docs/github-pages.yml`): its shape, and its shell
steps run for real, in order, in a scratch git repository holding the demo project."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from loopx.engine.demo import create_demo

WORKFLOW = Path(__file__).resolve().parent.parent / "docs/github-pages.yml"


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    loaded = yaml.safe_load(WORKFLOW.read_text("utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _uses(job: dict[str, Any]) -> list[str]:
    return [step["uses"].split("@")[0] for step in job["steps"] if "uses" in step]


def test_the_workflow_deploys_with_the_official_pages_actions(workflow: dict[str, Any]) -> None:
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    assert _uses(build) == [
        "actions/checkout",
        "actions/setup-python",
        "actions/configure-pages",
        "actions/upload-pages-artifact",
    ]
    assert _uses(deploy) == ["actions/deploy-pages"] and deploy["needs"] == "build"
    assert deploy["environment"]["name"] == "github-pages"
    assert workflow["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    # The uploaded folder is the public partition the run steps build and scan, nothing more.
    upload = next(s for s in build["steps"] if "upload-pages-artifact" in s.get("uses", ""))
    assert upload["with"]["path"] == f"{workflow['env']['LOOPX_OUT']}/public"
    runs = [s["run"] for s in build["steps"] if "run" in s]
    assert any("--audience public" in r for r in runs) and any("loopx scan" in r for r in runs)
    # The scan runs after the build and before anything is uploaded.
    order = [s.get("uses", s.get("run", "")) for s in build["steps"]]
    scan = next(i for i, s in enumerate(order) if "loopx scan" in s)
    assert scan < next(i for i, s in enumerate(order) if "upload-pages-artifact" in s)


def _env(workflow: dict[str, Any]) -> dict[str, str]:
    return {
        **os.environ,
        **workflow["env"],
        # pip may not reach an index here: loopx is installed already, so the install step
        # must find it satisfied (as it would install it on a fresh runner).
        "PIP_NO_INDEX": "1",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "LOOPX_NOW": "2026-03-01T12:00:00Z",
    }


def _run_steps(workflow: dict[str, Any], repo: Path) -> list[subprocess.CompletedProcess[str]]:
    env = _env(workflow)
    done = []
    for step in workflow["jobs"]["build"]["steps"]:
        if "run" not in step:
            continue
        # GitHub runs a `run:` step with `bash -e` on ubuntu runners.
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
        )
        done.append(proc)
        assert proc.returncode == 0, (step.get("name"), proc.stdout, proc.stderr)
    return done


def test_the_run_steps_build_and_scan_the_public_partition(
    workflow: dict[str, Any], tmp_path: Path
) -> None:
    repo = tmp_path / "project"
    create_demo(repo)
    git = [
        "git",
        "-c",
        "user.name=CI",
        "-c",
        "user.email=ci@example.org",
        "-c",
        "commit.gpgSign=false",
    ]
    git += ["-C", str(repo)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)  # .loopx/.gitignore keeps private/ out
    subprocess.run([*git, "commit", "-q", "-m", "status"], check=True)
    committed = subprocess.run(
        [*git, "ls-files"], check=True, capture_output=True, text=True
    ).stdout
    assert ".loopx/goals/launch/ledger.jsonl" in committed and "private/" not in committed

    steps = _run_steps(workflow, repo)
    assert "already satisfied" in steps[0].stdout.lower()
    assert "clean: nothing found (ledger included)" in steps[-1].stdout
    public = repo / workflow["env"]["LOOPX_OUT"] / "public"
    pages = {p.relative_to(public).as_posix() for p in public.rglob("*") if p.is_file()}
    assert {"index.html", "goals/launch/index.html", "style.css"} <= pages
    assert not (repo / workflow["env"]["LOOPX_OUT"] / "team").exists()

    # The scan step is the gate: a leak in the folder fails the job before the upload.
    page = public / "goals/launch/index.html"
    page.write_text(page.read_text("utf-8") + "<!-- jane.doe@corp.example -->\n", "utf-8")
    scan = next(
        s["run"] for s in workflow["jobs"]["build"]["steps"] if "loopx scan" in s.get("run", "")
    )
    proc = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", scan],
        cwd=repo,
        env=_env(workflow),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 7 and "email" in proc.stdout
    assert "jane.doe" not in proc.stdout + proc.stderr
