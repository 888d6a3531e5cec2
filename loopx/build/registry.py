"""The projection registry: every projection declares what it makes, for whom.

A `Projection` names its scope (one goal, or an audience's whole site), the audiences it is
made for, a pure `project` step (folded state → data) and its `outputs`: each a path (`*`
where it makes one file per item), the template it renders (if any) and a `render` step
(data → text, bytes, or a JSON document checked against its schema). `links` puts it on the
goal page. The built-in projections live one per module in `loopx.build.outputs`. The build,
the single-projection commands and the build memo's fingerprint iterate this registry, and
what a projection makes is listed in the manifest, checked and boundary-scanned like every
other file: a new projection is one module (plus its template).

A build projects everything for a goal and audience first (`Context.project_all`), then
renders every output (`Context.files`). A many-file output may also declare what each of its
files is made of (`Output.inputs`) and make one file from those inputs alone (`Output.make`):
a rebuild then makes only the files whose inputs changed and carries the others over
(`Context.carry`), each keyed by a digest of its inputs (`input_key`).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Literal

import orjson

from loopx.model.config import ProjectConfig
from loopx.model.records import Mutable, Value
from loopx.privacy.audience import AUDIENCES, BlobReader, Lens
from loopx.projections.base import GENERATOR
from loopx.render.jsonout import dumps
from loopx.state.entities import GoalState

Scope = Literal["goal", "audience"]
ROW = "summary"  # the goal projection whose data is the goal's row in its audience's index
Content = str | bytes | dict[str, Any]  # text; bytes as they are; a JSON document


@dataclass(frozen=True, repr=False, eq=False)
class Output(Value):
    """One kind of file a projection makes. `path` is relative to the goal's folder (or the
    audience's); with a `*`, `render` returns {item: content}, one file per item."""

    path: str
    render: Callable[[Any, Any], Any]  # (context, projected data) → Content or {item: Content}
    template: str | None = None
    schema: str | None = None  # of a JSON document without a "schema" member of its own
    # A many-file output may instead say what each file is made of, item → inputs (`inputs`,
    # data orjson can write: dicts, lists, text, numbers, dataclasses), and make one file
    # from its inputs and nothing else (`make`): then `render` is `per_item(inputs, make)`,
    # and a rebuild makes only the files whose inputs changed (`Context.carry`).
    inputs: Callable[[Any, Any], dict[str, Any]] | None = None
    make: Callable[[Any], Any] | None = None  # (an item's inputs) → Content

    @property
    def many(self) -> bool:
        return "*" in self.path

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile("[^/]+".join(re.escape(part) for part in self.path.split("*")))


@dataclass(frozen=True, repr=False, eq=False)
class Projection(Value):
    """One projection: its name (unique within its scope) and what it makes, for whom."""

    name: str
    scope: Scope
    project: Callable[[Any], Any]  # (context) → data; pure
    outputs: tuple[Output, ...]
    audiences: frozenset[str] = frozenset(AUDIENCES)
    links: Callable[[Any], list[dict[str, str]]] | None = None  # data → goal-page links

    def output(self, path: str) -> Output:
        for out in self.outputs:
            if out.path == path:
                return out
        raise KeyError(f"{self.name} makes no {path}")


def per_item(
    inputs: Callable[[Any, Any], dict[str, Any]], make: Callable[[Any], Any]
) -> Callable[[Any, Any], dict[str, Any]]:
    """The `render` of an output that declares `inputs` and `make`: every item made."""
    return lambda ctx, data: {item: make(given) for item, given in inputs(ctx, data).items()}


def input_key(inputs: Any) -> str | None:
    """A digest of everything one file is made of (None when orjson cannot write it: then
    the file is made every time, never carried over)."""
    try:
        raw = orjson.dumps(inputs, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return None
    return hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True, repr=False, eq=False)
class File(Value):
    """A rendered file, its path relative to the build folder. `key`: the digest of its
    inputs, when its output declares them and the build keeps keys (`Context.carry`)."""

    path: str
    data: bytes
    schema: str | None = None
    doc: dict[str, Any] | None = None  # the JSON document, for schema validation
    key: str | None = None


_EXTRA: list[Projection] = []


def projections(scope: Scope | None = None, audience: str | None = None) -> list[Projection]:
    """The registered projections (of `scope`, made for `audience`, when given), in order."""
    from loopx.build.outputs import BUILTIN

    return [
        p
        for p in (*BUILTIN, *_EXTRA)
        if scope in (None, p.scope) and (audience is None or audience in p.audiences)
    ]


def find(scope: Scope, name: str) -> Projection:
    for p in projections(scope):
        if p.name == name:
            return p
    raise KeyError(f"no {scope} projection {name!r}")


@contextlib.contextmanager
def registered(projection: Projection) -> Iterator[Projection]:
    """Add a projection for the duration of the block (an extension, or a test)."""
    if any(
        p.scope == projection.scope and p.name == projection.name
        for p in projections(projection.scope)
    ):
        raise ValueError(f"a {projection.scope} projection {projection.name!r} exists")
    _EXTRA.append(projection)
    try:
        yield projection
    finally:
        _EXTRA.remove(projection)


@dataclass(kw_only=True, repr=False, eq=False)
class Context(Mutable):
    """What one goal's (or one audience's) projections are made from, and what they made.
    `ctx[name]` is the data of the projection `name`, projected on first use."""

    scope: ClassVar[Scope]
    audience: str
    head: str | None
    project: ProjectConfig
    read_blob: BlobReader | None = None
    projected: dict[str, Any] = field(default_factory=dict)
    made: dict[str, Any] = field(default_factory=dict)
    # (path, key of its inputs) → the file an earlier build made of the same inputs (carried
    # over instead of made again), or None. Unset, files are neither keyed nor carried.
    carry: Callable[[str, str], Any] | None = None

    def lens(self) -> Lens:
        """A fresh lens: each projection counts its own omissions."""
        return Lens(self.audience, self.read_blob)

    @property
    def common(self) -> dict[str, Any]:
        return {"generator": GENERATOR, "audience": self.audience, "project": self.project}

    def __getitem__(self, name: str) -> Any:
        if name not in self.projected:
            self.projected[name] = find(self.scope, name).project(self)
        return self.projected[name]

    def once(self, key: str, make: Callable[[], Any]) -> Any:
        """`make()`, computed once per context (a rendered text two outputs share)."""
        if key not in self.made:
            self.made[key] = make()
        return self.made[key]

    def project_all(self) -> None:
        for p in projections(self.scope, self.audience):
            self[p.name]

    def links(self) -> list[dict[str, str]]:
        """The goal page's links to the other files of the goal, in registry order."""
        return [
            link
            for p in projections(self.scope, self.audience)
            if p.links is not None
            for link in p.links(self[p.name])
        ]

    def folder(self) -> str:
        return self.audience

    def render(self, projection: Projection, output: Output) -> list[File]:
        """The files of one output, checked against the path it declares."""
        if output.inputs is not None and output.make is not None and self.carry is not None:
            return self._render_items(projection, output)
        made = output.render(self, self[projection.name])
        items = made.items() if output.many else [(None, made)]
        return [
            _file(self._path(projection, output, item), content, output.schema)
            for item, content in items
        ]

    def _path(self, projection: Projection, output: Output, item: str | None) -> str:
        rel = output.path if item is None else output.path.replace("*", item)
        if not output.pattern.fullmatch(rel) or "/" in (item or ""):
            raise ValueError(f"{projection.name} made {rel!r}, not a {output.path}")
        return f"{self.folder()}/{rel}"

    def _render_items(self, projection: Projection, output: Output) -> list[Any]:
        """Each file of an output that declares its inputs: the file `carry` holds for the
        same path and inputs, else made of those inputs and keyed by them."""
        assert output.inputs is not None and output.make is not None and self.carry is not None
        files: list[Any] = []
        for item, given in output.inputs(self, self[projection.name]).items():
            path = self._path(projection, output, item)
            key = input_key(given)
            held = self.carry(path, key) if key is not None else None
            if held is not None:
                files.append(held)
                continue
            made = _file(path, output.make(given), output.schema)
            files.append(File(made.path, made.data, made.schema, made.doc, key))
        return files

    def text(self, name: str, path: str) -> str:
        """The one file `path` of the projection `name`, as text (single-projection commands)."""
        projection = find(self.scope, name)
        (made,) = self.render(projection, projection.output(path))
        return made.data.decode("utf-8")

    def files(self) -> list[Any]:
        """Project everything, then render every output of every projection (a `File`, or
        what `carry` held for it)."""
        self.project_all()
        return [
            f
            for p in projections(self.scope, self.audience)
            for out in p.outputs
            for f in self.render(p, out)
        ]


@dataclass(kw_only=True, repr=False, eq=False)
class GoalContext(Context):
    """What a goal-scope projection renders from: one goal's state for one audience."""

    scope: ClassVar[Scope] = "goal"
    state: GoalState
    visible_goals: set[str]  # the goals this audience may see (links to other goals)
    layouts: Any = None  # task-graph layouts by shape kept between builds (`render.svg.Known`)

    def folder(self) -> str:
        return f"{self.audience}/goals/{self.state.goal_id}"


@dataclass(kw_only=True, repr=False, eq=False)
class AudienceContext(Context):
    """What an audience-scope projection renders from: every goal that audience sees."""

    scope: ClassVar[Scope] = "audience"
    goals: dict[str, GoalState] = field(default_factory=dict)  # the goals it may see
    hidden: dict[str, int] = field(default_factory=dict)  # how many of each visibility not
    rows: list[dict[str, Any]] = field(default_factory=list)  # the goals' index rows
    # goal → what the audience's files take from it (search items, newest feed entries),
    # carried with the goal's unit when its key is unchanged (`part`)
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def part(self, goal_id: str, name: str, make: Callable[[], Any]) -> Any:
        """What the audience file `name` takes from one goal: what its unit carried over,
        else `make()` (kept in `parts` for the next build). `make` must return JSON data
        (what the build memo holds must read back the same)."""
        held = self.parts.setdefault(goal_id, {})
        if name not in held:
            held[name] = make()
        return held[name]


def _file(path: str, content: Content, schema: str | None) -> File:
    if isinstance(content, dict):
        return File(path, dumps(content), schema or content["schema"], content)
    if isinstance(content, str):
        return File(path, content.encode("utf-8"))
    return File(path, content)
