"""`loopx build` as a plain function, without click: what its click command
(`loopx.cli.build.build_cmd`) and the quick parser (`loopx.cli.quick`) both call with the
options as read, so the two ways in cannot drift. Also the pieces publish, serve and the
single projections share with it: `--head`, the project folder, printed scan findings.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from loopx.cli.output import echo, emit, print_findings

if TYPE_CHECKING:  # imported where used: a refused option costs no build import
    from loopx.build.pipeline import BuildResult, CheckResult


def run_build(
    *,
    out: Path | None,
    audiences: str,
    head: str | None,
    check_only: bool,
    validate: bool,
    force: bool,
    overwrite: bool,
    root: Path | None,
    fmt: str,
) -> None:
    """Build every projection of every goal into `out` (default `site`) and print what was
    done; with `check_only`, compare instead (`build_stale`, exit 6, when it differs)."""
    from loopx.build.pipeline import build, parse_audiences

    project = project_root(root)
    out = out if out is not None else Path("site")
    auds = parse_audiences(audiences)
    if check_only:
        result = _check(project, out, auds, audiences, head)
        emit(fmt, result.to_dict(), f"{out} is up to date")
        return
    if set(auds) - {"public"}:
        from loopx.build.exposure import guard_team_output

        guard_team_output(out, lambda line: echo(line, err=True), directory=True)
    with findings_printed(fmt):
        res = build(
            project,
            out,
            audiences=auds,
            head=parse_head(head),
            validate=validate,
            reuse=not force,
            overwrite=overwrite,
        )
    emit(fmt, {**res.to_dict(), "out": str(out)}, lambda: _built_text(res, out, auds))


def parse_head(value: str | None, default: str | None = None) -> str | None:
    """`--head`: a commit hash, 'auto' (the project's git HEAD) or 'none'; `default` when
    not given (AUTO for live views, None for committed artifacts)."""
    from loopx.engine.git import AUTO

    if value is None:
        return AUTO if default == AUTO else default
    if value.lower() == "none":
        return None
    if value.lower() == AUTO:
        return AUTO
    import re

    from loopx.model.errors import InvalidInput

    if not re.fullmatch(r"[0-9a-f]{7,64}", value):
        raise InvalidInput(
            "--head must be a git commit hash (7-64 hex digits), 'auto' or 'none'",
            code="invalid_revision",
        )
    return value


def project_root(root: Path | None) -> Path:
    """The project folder: `root`, else found from the current folder."""
    from loopx.store.root import find_root

    return find_root(root)


@contextlib.contextmanager
def findings_printed(fmt: str) -> Iterator[None]:
    """A refused boundary scan prints its findings first (in JSON mode they travel in the
    error envelope)."""
    from loopx.model.errors import BoundaryViolation

    try:
        yield
    except BoundaryViolation as err:
        if fmt != "json":
            print_findings(err.details.get("findings", []))
        raise


def kept_line(kept: list[str]) -> str:
    """The files a build or publish left in place, five named."""
    shown = ", ".join(kept[:5]) + (f" and {len(kept) - 5} more" if len(kept) > 5 else "")
    return (
        f"kept {len(kept)} file(s) an earlier build or publish listed, because they changed "
        f"since, a link is in the way, or the path is not one loopx writes: {shown}"
    )


def _check(
    project: Path, out: Path, auds: tuple[str, ...], audiences: str, head: str | None
) -> CheckResult:
    """`build --check`: the comparison, or `build_stale` naming the command that fixes it."""
    from loopx.build.pipeline import check
    from loopx.model.errors import CheckFailed

    result = check(project, out, audiences=auds, head=parse_head(head))
    if not result.ok:
        problems = (
            [f"stale: {p}" for p in result.stale]
            + [f"missing: {p}" for p in result.missing]
            + [f"extra: {p}" for p in result.extra]
        )
        raise CheckFailed(
            f"{out} is out of date ({len(problems)} file(s)); regenerate it with "
            f"`{_rebuild_command(out, audiences, head)}`: "
            f"{'; '.join(problems[:5])}{' …' if len(problems) > 5 else ''}",
            code="build_stale",
            **result.to_dict(),
        )
    return result


def _built_text(res: BuildResult, out: Path, auds: tuple[str, ...]) -> str:
    report = res.report
    assert report is not None  # a build that returns has written
    lines = [
        f"built {len(res.site.artifacts)} files into {out}: {len(report.written)} written, "
        f"{report.unchanged} unchanged, {len(report.removed)} removed"
    ]
    if report.kept:
        lines.append(kept_line(report.kept))
    if "public" in auds:
        lines.append(f"public boundary scan: clean; open {out}/public/index.html")
    if "team" in auds:
        lines.append(f"team pages: {out}/team/index.html")
    return "\n".join(lines)


def _rebuild_command(out: Path, audiences: str, head: str | None) -> str:
    import shlex

    cmd = f"loopx build --out {shlex.quote(str(out))}"
    if audiences != "public,team":
        cmd += f" --audience {shlex.quote(audiences)}"
    if head is not None:
        cmd += f" --head {shlex.quote(head)}"
    return cmd
