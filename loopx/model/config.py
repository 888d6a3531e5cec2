"""The project configuration (`loopx.toml`, or `[tool.loopx]` in `pyproject.toml`) as a typed,
validated value. Reading the file is the store's job (`loopx.store.config`); here a parsed
mapping is checked against `schemas/config.schema.json` and every problem reported at once,
by key, never by value."""

from __future__ import annotations

from dataclasses import field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import orjson

from loopx.model.errors import InvalidInput
from loopx.model.records import frozen
from loopx.model.schema_problems import schema_problem
from loopx.resources import resource_dir

CONFIG_SCHEMA = "config.schema.json"
MESSAGE_PROBLEMS = 12
COMMIT_PLACEHOLDER = "{commit}"


@frozen  # a frozen dataclass whose methods are not compiled per class (model.records)
class PublishConfig:
    """The `[publish]` table: where `loopx publish` ships the public partition."""

    git_branch: str | None = None
    prefix: str | None = None
    nojekyll: bool | None = None
    cname: str | None = None
    remote: str | None = None
    push: bool | None = None
    identity: str | None = None


@frozen
class ProjectConfig:
    """Every key is optional; an absent file is `ProjectConfig()`. `source` names the file it
    came from (`loopx.toml`, `pyproject.toml`) or is None."""

    source: str | None = None
    title: str | None = None
    description: str | None = None
    base_url: str | None = None
    repository_url: str | None = None
    commit_url: str | None = None
    goal: str | None = None
    audiences: tuple[str, ...] | None = None
    out: str | None = None
    publish: PublishConfig = field(default_factory=PublishConfig)

    @property
    def name(self) -> str:
        """The project's name on every page."""
        return self.title or "loopx"

    def pages(self) -> dict[str, str | None]:
        """What the pages take from the configuration (recorded in the build manifest, so a
        changed title or link template renders every page again)."""
        return {
            "title": self.title,
            "description": self.description,
            "base_url": self.base_url,
            "repository_url": self.repository_url,
            "commit_url": self.commit_url,
        }

    def repository_link(self, repository: str | None = None) -> str | None:
        """The configured repository, else a goal's `repository` when it is a web address."""
        return self.repository_url or (repository if _is_web_url(repository) else None)

    def commit_link(self, revision: str | None, repository: str | None = None) -> str | None:
        """The web page of `revision`: the `commit_url` template, else `<repository>/commit/
        <revision>` for the configured repository (or the goal's `repository` when it is an
        http(s) URL). None when nothing says where commits live or the revision is no hash."""
        if not revision or not _is_hash(revision):
            return None
        if self.commit_url:
            return self.commit_url.replace(COMMIT_PLACEHOLDER, revision)
        base = self.repository_link(repository)
        return f"{base.rstrip('/')}/commit/{revision}" if base else None


def _is_hash(value: str) -> bool:
    return 7 <= len(value) <= 64 and not value.strip("0123456789abcdef")


@lru_cache(maxsize=1024)  # asked per page and per commit link of a build, of a few addresses
def _is_web_url(value: str | None) -> bool:
    if not value or not value.startswith(("https://", "http://")):
        return False
    return not any(c.isspace() or c in "\"'<>\\{}" for c in value)


def checker_sources(*modules: str) -> bytes:
    """The schema and the code that check and type a configuration (this module and the
    `modules` that read it, by `__file__`), for a memo's key: files of the installed
    package, not of the project."""
    parts = [(resource_dir("schemas") / CONFIG_SCHEMA).read_bytes(), Path(__file__).read_bytes()]
    parts += [Path(module).read_bytes() for module in modules]
    return b"".join(len(p).to_bytes(8, "big") + p for p in parts)


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    schema = orjson.loads((resource_dir("schemas") / CONFIG_SCHEMA).read_bytes())
    return Draft202012Validator(schema)


def _problem(error: Any) -> str:
    """What is wrong with one key, without repeating its value (it may be a secret)."""
    kind, schema = error.validator, error.schema
    if kind == "additionalProperties":
        allowed = ", ".join(sorted(schema.get("properties", {})))
        return f"holds keys loopx does not know (known: {allowed})"
    if kind in ("minItems", "uniqueItems"):
        return "must list at least one value, each once"
    if kind == "pattern":
        return f"must be {schema['title']}" if "title" in schema else "must not be blank"
    return schema_problem(error)


def _where(parts: Any) -> str:
    names = [str(p) if not isinstance(p, int) else f"[{p}]" for p in parts]
    return ".".join(names).replace(".[", "[") or "(top level)"


def parse_config(data: Any, source: str) -> ProjectConfig:
    """`data` (a parsed TOML table) checked and typed; `invalid_config` naming every bad key."""
    problems = sorted(
        {(_where(e.absolute_path), _problem(e)) for e in _validator().iter_errors(data)}
    )
    if problems:
        shown = "; ".join(f"{where} {problem}" for where, problem in problems[:MESSAGE_PROBLEMS])
        more = len(problems) - MESSAGE_PROBLEMS
        if more > 0:
            shown += f"; and {more} more"
        raise InvalidInput(
            f"{source}: {shown}",
            code="invalid_config",
            problems=[{"key": where, "problem": problem} for where, problem in problems],
        )
    return typed_config(data, source)


def typed_config(data: Any, source: str) -> ProjectConfig:
    """`data`, a table `parse_config` found valid, as the typed value."""
    site = data.get("site", {})
    repo = data.get("repository", {})
    defaults = data.get("defaults", {})
    publish = data.get("publish", {})
    audiences = defaults.get("audiences")
    return ProjectConfig(
        source=source,
        title=site.get("title"),
        description=site.get("description"),
        base_url=site.get("base_url"),
        repository_url=repo.get("url"),
        commit_url=repo.get("commit_url"),
        goal=defaults.get("goal"),
        audiences=None
        if audiences is None
        else tuple(a for a in ("public", "team", "private") if a in audiences),
        out=defaults.get("out"),
        publish=PublishConfig(**{k: publish.get(k) for k in PublishConfig.__dataclass_fields__}),
    )
