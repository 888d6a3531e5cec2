"""The project configuration: loopx.toml or [tool.loopx] in pyproject.toml, validated with
schemas/config.schema.json, read like every untrusted file, and read by the commands (flags
and LOOPX_GOAL_ID win)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopx.model.config import ProjectConfig
from loopx.model.errors import InvalidInput
from loopx.store.config import CONFIG_CAP, load_config
from tests.conftest import T0, run_cli

FULL = """
[site]
title = "Acme status"
description = "What the agents are doing on Acme"
base_url = "https://acme.example.org/status/"

[repository]
url = "https://github.com/acme/app"
commit_url = "https://git.acme.example.org/app/commit/{commit}?view=full"

[defaults]
goal = "launch"
audiences = ["team", "public"]
out = "build/status"

[publish]
git_branch = "gh-pages"
prefix = "status"
nojekyll = false
cname = "status.acme.example.org"
remote = "upstream"
push = true
identity = "Status Bot <bot@acme.example.org>"
"""


def _refused(root: Path) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        load_config(root)
    assert caught.value.code == "invalid_config"
    return caught.value


def test_no_file_is_the_defaults(tmp_path: Path) -> None:
    assert load_config(tmp_path) == ProjectConfig()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert load_config(tmp_path) == ProjectConfig()


def test_every_key_of_loopx_toml(tmp_path: Path) -> None:
    (tmp_path / "loopx.toml").write_text(FULL)
    config = load_config(tmp_path)
    assert config.source == "loopx.toml"
    assert (config.title, config.base_url) == ("Acme status", "https://acme.example.org/status/")
    assert config.description == "What the agents are doing on Acme"
    assert config.repository_url == "https://github.com/acme/app"
    assert config.goal == "launch" and config.out == "build/status"
    assert config.audiences == ("public", "team")  # ordered by scope, like --audience
    p = config.publish
    assert (p.git_branch, p.prefix, p.nojekyll, p.cname) == (
        "gh-pages",
        "status",
        False,
        "status.acme.example.org",
    )
    assert (p.remote, p.push, p.identity) == (
        "upstream",
        True,
        "Status Bot <bot@acme.example.org>",
    )
    rev = "0123456789abcdef0123456789abcdef01234567"
    assert config.commit_link(rev) == f"https://git.acme.example.org/app/commit/{rev}?view=full"
    assert config.commit_link("not-a-hash") is None


def test_commit_links_without_a_template(tmp_path: Path) -> None:
    rev = "abcdef0"
    bare = ProjectConfig()
    assert bare.commit_link(rev) is None
    assert (
        bare.commit_link(rev, "https://github.com/o/r/") == f"https://github.com/o/r/commit/{rev}"
    )
    assert bare.commit_link(rev, "git@github.com:o/r.git") is None  # not a web address
    assert bare.commit_link(rev, "https://x.org/<script>") is None
    repo = ProjectConfig(repository_url="https://gitlab.com/o/r")
    assert repo.commit_link(rev, "https://github.com/x/y") == f"https://gitlab.com/o/r/commit/{rev}"


def test_pyproject_tool_table_and_loopx_toml_wins(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.loopx.site]\ntitle = "From pyproject"\n'
        '[tool.loopx.defaults]\ngoal = "g1"\n'
    )
    config = load_config(tmp_path)
    assert (config.title, config.goal, config.source) == (
        "From pyproject",
        "g1",
        "pyproject.toml [tool.loopx]",
    )
    (tmp_path / "loopx.toml").write_text('[site]\ntitle = "From loopx.toml"\n')
    config = load_config(tmp_path)
    assert (config.title, config.goal, config.source) == ("From loopx.toml", None, "loopx.toml")
    # with loopx.toml present, a broken pyproject.toml is not read at all
    (tmp_path / "pyproject.toml").write_text("[tool.loopx\n")
    assert load_config(tmp_path).title == "From loopx.toml"
    (tmp_path / "loopx.toml").unlink()
    assert "pyproject.toml: is not valid TOML (at line 1" in _refused(tmp_path).message


def test_every_problem_at_once_by_key_never_by_value(tmp_path: Path) -> None:
    secret = "ghp_" + "S3cr3t" * 6
    (tmp_path / "loopx.toml").write_text(
        f'[site]\ntitle = "{secret}"\nbase_url = "ftp://{secret}"\nlogo = "{secret}"\n'
        f'[repository]\ncommit_url = "https://x.org/{secret}"\n'
        f'[defaults]\ngoal = "{secret.upper()}"\nout = "../{secret}"\naudiences = ["everyone"]\n'
        f'[publish]\npush = "{secret}"\ncname = "{secret} x"\n'
        f"[{secret}]\nx = 1\n"
    )
    err = _refused(tmp_path)
    assert secret not in err.message and secret not in json.dumps(err.to_dict())
    assert secret.upper() not in err.message
    keys = [p["key"] for p in err.details["problems"]]
    assert keys == sorted(keys) and len(keys) == 9
    for key in ("site.base_url", "repository.commit_url", "defaults.goal", "defaults.out"):
        assert key in err.message
    assert "defaults.audiences[0] must be one of: public, team, private" in err.message
    assert "publish.push must be a boolean" in err.message
    assert "site holds keys loopx does not know (known: base_url, description, title)" in (
        err.message
    )
    assert "\n" not in err.message


@pytest.mark.parametrize(
    "text",
    [
        '[site]\ntitle = ""\n',
        '[site]\ntitle = "   "\n',
        '[publish]\ngit_branch = "a..b"\n',
        'defaults = "x"\n',
        '[repository]\ncommit_url = "https://x.org/commit/"\n',
        "[defaults]\naudiences = []\n",
        '[defaults]\nout = "/abs"\n',
    ],
)
def test_single_bad_values(tmp_path: Path, text: str) -> None:
    (tmp_path / "loopx.toml").write_text(text)
    _refused(tmp_path)


def test_the_file_is_read_like_untrusted_input(tmp_path: Path) -> None:
    outside = tmp_path / "outside.toml"
    outside.write_text('[site]\ntitle = "elsewhere"\n')
    root = tmp_path / "proj"
    root.mkdir()
    (root / "loopx.toml").symlink_to(outside)
    assert "symlink" in _refused(root).message
    (root / "loopx.toml").unlink()
    (root / "loopx.toml").mkdir()
    assert "not a regular file" in _refused(root).message
    (root / "loopx.toml").rmdir()
    os.mkfifo(root / "loopx.toml")  # would block a plain open() forever
    assert "not a regular file" in _refused(root).message
    (root / "loopx.toml").unlink()
    (root / "loopx.toml").write_bytes(b"# " + b"x" * CONFIG_CAP + b"\n")
    assert "larger than the limit" in _refused(root).message
    (root / "loopx.toml").write_bytes(b'[site]\ntitle = "\xff"\n')
    assert "not UTF-8" in _refused(root).message
    (root / "loopx.toml").write_text('[site]\ntitle = "unterminated secret-ish\n')
    err = _refused(root)
    assert "secret-ish" not in err.message and "is not valid TOML (at line 2" in err.message


# -- through the CLI -----------------------------------------------------------------------


def _goals(root: Path, *ids: str) -> None:
    assert run_cli(["init", "--root", str(root)]).exit_code == 0
    for goal_id in ids:
        made = run_cli(
            [
                "goal",
                "create",
                "--root",
                str(root),
                "--goal-id",
                goal_id,
                "--title",
                goal_id,
                "--objective",
                "o",
                "--visibility",
                "public",
            ]
        )
        assert made.exit_code == 0, made.stderr


def test_default_goal_flag_beats_env_beats_config(tmp_path: Path) -> None:
    _goals(tmp_path, "alpha", "beta", "gamma")
    add = ["todo", "add", "--root", str(tmp_path), "--title", "t", "--format", "json"]
    assert run_cli(add).exit_code == 2  # three active goals, none named: goal_required
    (tmp_path / "loopx.toml").write_text('[defaults]\ngoal = "beta"\n')
    assert run_cli(add).json()["receipt"]["goal_id"] == "beta"
    env = {"LOOPX_GOAL_ID": "gamma"}
    assert run_cli(add, env=env).json()["receipt"]["goal_id"] == "gamma"
    assert run_cli([*add, "--goal-id", "alpha"], env=env).json()["receipt"]["goal_id"] == "alpha"
    assert run_cli(["next", "--root", str(tmp_path), "--json"]).json()["goal_id"] == "beta"
    # a configured goal that does not exist is an error, not a silent fallback
    (tmp_path / "loopx.toml").write_text('[defaults]\ngoal = "nope"\n')
    gone = run_cli(add)
    assert gone.exit_code == 3 and gone.json()["error"]["code"] == "goal_not_found"


def test_build_reads_out_and_audiences_flags_override(tmp_path: Path) -> None:
    _goals(tmp_path, "alpha")
    (tmp_path / "loopx.toml").write_text(
        '[defaults]\nout = "pages/status"\naudiences = ["public"]\n'
    )
    elsewhere = tmp_path / "sub"
    elsewhere.mkdir()
    built = run_cli(["build", "--root", str(tmp_path), "--format", "json"], cwd=elsewhere)
    assert built.exit_code == 0, built.stderr
    out = tmp_path / "pages" / "status"  # relative to the project root, not the cwd
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["audiences"] == ["public"]
    assert not (elsewhere / "site").exists()
    checked = run_cli(["build", "--root", str(tmp_path), "--check"], cwd=elsewhere)
    assert checked.exit_code == 0, checked.stderr
    flags = run_cli(
        ["build", "--root", str(tmp_path), "--out", str(tmp_path / "x"), "--audience", "team"]
    )
    assert flags.exit_code == 0, flags.stderr
    assert json.loads((tmp_path / "x" / "manifest.json").read_text())["audiences"] == ["team"]


def test_build_out_and_audiences_flag_beats_env_beats_config(tmp_path: Path) -> None:
    _goals(tmp_path, "alpha")
    (tmp_path / "loopx.toml").write_text('[defaults]\nout = "conf"\naudiences = ["public"]\n')
    build = ["build", "--root", str(tmp_path), "--json"]

    def built(args: list[str], env: dict[str, str]) -> tuple[str, list[str]]:
        result = run_cli(args, env=env, cwd=tmp_path)
        assert result.exit_code == 0, result.stderr
        out = Path(result.json()["out"])
        return out.name, json.loads((tmp_path / out / "manifest.json").read_text())["audiences"]

    assert built(build, {}) == ("conf", ["public"])
    env = {"LOOPX_OUT": "from-env", "LOOPX_AUDIENCE": "team"}
    assert built(build, env) == ("from-env", ["team"])
    flags = [*build, "--out", "from-flag", "--audience", "public,team"]
    assert built(flags, env) == ("from-flag", ["public", "team"])
    checked = run_cli([*build, "--check"], env=env, cwd=tmp_path)
    assert checked.exit_code == 0, checked.stderr  # --check reads the same defaults


def test_single_projection_audience_flag_beats_env_beats_config(tmp_path: Path) -> None:
    """One audience: the widest of the configured ones the command takes, else its own."""
    _goals(tmp_path, "alpha")
    r = ["--root", str(tmp_path), "--goal-id", "alpha", "--json"]

    def audience(*args: str, env: dict[str, str] | None = None) -> str:
        result = run_cli([*args, *r], env=env)
        assert result.exit_code == 0, result.stderr
        return result.json()["audience"]

    assert audience("workbench") == "team"  # nothing configured: the command's default
    (tmp_path / "loopx.toml").write_text('[defaults]\naudiences = ["public"]\n')
    assert audience("workbench") == "public"
    assert audience("workbench", env={"LOOPX_AUDIENCE": "public,team"}) == "team"
    assert audience("workbench", "--audience", "team", env={"LOOPX_AUDIENCE": "public"}) == "team"
    graph = run_cli(["graph", *r])
    assert graph.exit_code == 0 and graph.json()["audience"] == "public"
    assert graph.json() == run_cli(["graph", *r, "--audience", "public"]).json()
    (tmp_path / "loopx.toml").write_text('[defaults]\naudiences = ["public", "team", "private"]\n')
    assert audience("workbench") == "team"  # it takes public and team only
    assert run_cli(["graph", *r]).json()["audience"] == "private"
    # review takes team and private: configured public only, it keeps its own default
    (tmp_path / "loopx.toml").write_text('[defaults]\naudiences = ["public"]\n')
    assert run_cli(["review", *r]).json()["audience"] == "team"


def test_a_bad_audience_in_the_environment_is_a_clear_error(tmp_path: Path) -> None:
    _goals(tmp_path, "alpha")
    env = {"LOOPX_AUDIENCE": "everyone"}
    for args in (["build"], ["workbench", "--goal-id", "alpha"]):
        result = run_cli([*args, "--root", str(tmp_path), "--json"], env=env, cwd=tmp_path)
        assert result.exit_code == 2, result.stdout
        error = result.json()["error"]
        assert error["code"] == "invalid_audience"
        assert error["message"].startswith("LOOPX_AUDIENCE: audiences must be")
    assert not (tmp_path / "site").exists()
    text = run_cli(["build", "--root", str(tmp_path)], env=env, cwd=tmp_path)
    assert text.stderr.count("\n") == 1 and "Traceback" not in text.stderr


def test_help_names_where_a_left_out_option_comes_from() -> None:
    for args in (["build"], ["serve"], ["workbench"], ["graph"], ["review"], ["diff"]):
        shown = " ".join(run_cli([*args, "--help"]).stdout.split())
        assert "Left out: LOOPX_AUDIENCE, else defaults.audiences" in shown, args
    shown = " ".join(run_cli(["build", "--help"]).stdout.split())
    assert "Left out: LOOPX_OUT, else defaults.out" in shown


def test_a_bad_config_is_one_line_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    _goals(tmp_path, "alpha")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    (tmp_path / "loopx.toml").write_text("[defaults]\nout = 42\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPX_")}
    env["LOOPX_NOW"] = T0
    proc = subprocess.run(
        [sys.executable, "-m", "loopx", "build"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        "loopx: error [invalid_config]: loopx.toml: defaults.out must be a string\n"
    )
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert [p for p in after if p not in before] == [Path("loopx.toml")]
    as_json = run_cli(["todo", "add", "--root", str(tmp_path), "--title", "t", "--json"])
    assert as_json.exit_code == 2
    assert as_json.json()["error"]["code"] == "invalid_config"


def _remembering(tmp_path: Path) -> Path:
    (tmp_path / ".loopx").mkdir()
    return tmp_path / ".loopx" / "cache" / "config.json"


def test_a_valid_file_is_parsed_and_checked_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table found valid is remembered for exactly these bytes: the next call neither
    parses (tomllib) nor checks (jsonschema) it, and reads the same configuration."""
    from loopx.store import config as store_config

    memo = _remembering(tmp_path)
    (tmp_path / "loopx.toml").write_text(FULL)
    first = load_config(tmp_path)
    assert memo.is_file()

    def parsed(*args: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(store_config, "_parse", parsed)
    monkeypatch.setattr(store_config, "parse_config", parsed)
    assert load_config(tmp_path) == first and first.source == "loopx.toml"
    (tmp_path / "loopx.toml").write_text(FULL.replace("Acme status", "Acme"))
    with pytest.raises(AssertionError):  # other bytes: parsed and checked again
        load_config(tmp_path)
    monkeypatch.undo()
    assert load_config(tmp_path).title == "Acme"


def test_an_invalid_file_is_refused_though_a_valid_one_was_remembered(tmp_path: Path) -> None:
    _remembering(tmp_path)
    (tmp_path / "loopx.toml").write_text(FULL)
    load_config(tmp_path)
    (tmp_path / "loopx.toml").write_text(FULL + "\n[extra]\nkey = 1\n")
    assert "extra" not in str(_refused(tmp_path).details)  # refused by key, as ever
    assert _refused(tmp_path).code == "invalid_config"  # and again: never remembered


def test_a_pyproject_without_a_loopx_table_is_remembered_as_the_defaults(tmp_path: Path) -> None:
    memo = _remembering(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert load_config(tmp_path) == ProjectConfig() == load_config(tmp_path)
    assert json.loads(memo.read_text())["table"] is None
    (tmp_path / "pyproject.toml").write_text('[tool.loopx.site]\ntitle = "T"\n')
    assert load_config(tmp_path).source == "pyproject.toml [tool.loopx]"


def test_a_memo_of_other_bytes_or_code_is_not_read(tmp_path: Path) -> None:
    memo = _remembering(tmp_path)
    (tmp_path / "loopx.toml").write_text(FULL)
    load_config(tmp_path)
    held = json.loads(memo.read_text())
    held["table"]["site"]["title"] = "Planted"
    memo.write_text(json.dumps({**held, "key": "0" * 64}))
    assert load_config(tmp_path).title == "Acme status"
    memo.write_text("not json")
    assert load_config(tmp_path).title == "Acme status"


def test_a_folder_without_state_gets_no_memo(tmp_path: Path) -> None:
    (tmp_path / "loopx.toml").write_text(FULL)
    assert load_config(tmp_path).title == "Acme status"
    assert not (tmp_path / ".loopx").exists()


def test_a_memo_a_checkout_brings_is_not_trusted(tmp_path: Path) -> None:
    """Everything a memo's key is made of but the file's identity on disk can be worked out
    from a checkout; a checkout that brings `.loopx/cache/config.json` (a planted table the
    schema refuses, under the key of its own loopx.toml) is parsed and checked all the same."""
    import shutil

    origin = tmp_path / "origin"
    origin.mkdir()
    memo = _remembering(origin)
    (origin / "loopx.toml").write_text(FULL)
    load_config(origin)
    held = json.loads(memo.read_text())
    held["table"]["defaults"] = {"out": "../../outside"}  # refused by the schema
    held["table"]["publish"] = {"git_branch": "--upload-pack=evil"}
    memo.write_text(json.dumps(held))
    clone = tmp_path / "clone"
    shutil.copytree(origin, clone)  # new files: as a checkout makes them
    config = load_config(clone)
    assert config.out != "../../outside" and config.publish.git_branch != "--upload-pack=evil"


def test_the_configuration_records_behave_as_frozen_dataclasses() -> None:
    """`@frozen` (model.records) in place of `dataclass(frozen=True)`: the same fields,
    equality, hash, repr, `replace` and refusal to change, without compiled methods."""
    import dataclasses

    from loopx.model.config import PublishConfig

    for cls in (ProjectConfig, PublishConfig):
        names = [f.name for f in dataclasses.fields(cls)]
        twin = dataclasses.make_dataclass(
            cls.__name__,
            [(f.name, f.type, f) for f in dataclasses.fields(cls)],
            frozen=True,
        )
        ours, theirs = cls(), twin()
        assert repr(ours) == repr(theirs) and names == [f.name for f in dataclasses.fields(twin)]
        with pytest.raises(dataclasses.FrozenInstanceError):
            ours.source = "x"  # type: ignore[misc]
        with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
            cls(nope=1)  # type: ignore[call-arg]
    one = ProjectConfig(title="T", audiences=("team",))
    assert one == ProjectConfig(title="T", audiences=("team",)) != ProjectConfig(title="U")
    assert hash(one) == hash(ProjectConfig(title="T", audiences=("team",)))
    assert dataclasses.replace(one, title="U") == ProjectConfig(title="U", audiences=("team",))
    assert one.publish == PublishConfig() and one.publish is not ProjectConfig().publish


def test_a_linked_cache_folder_gets_no_memo_and_is_not_read(tmp_path: Path) -> None:
    """`.loopx/cache` a link (a checkout can make one): the memo is neither written through
    it nor read from it; the file is parsed and checked."""
    root, outside = tmp_path / "proj", tmp_path / "outside"
    (root / ".loopx").mkdir(parents=True)
    outside.mkdir()
    (root / ".loopx" / "cache").symlink_to(outside)
    (root / "loopx.toml").write_text(FULL)
    assert load_config(root).title == "Acme status"
    assert list(outside.iterdir()) == []
    (outside / "config.json").write_text('{"key": "x", "table": {}}')
    assert load_config(root).title == "Acme status"
