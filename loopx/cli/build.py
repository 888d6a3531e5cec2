"""`loopx build`, `loopx diff`, `loopx publish`, `loopx serve`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from loopx.cli.common import common, echo, emit

HEAD_HELP = (
    "Git revision that decides evidence freshness (default: HEAD of the project "
    "folder when it is a checkout; 'none' for no checkout)."
)


def _head(value: str | None) -> str | None:
    from loopx.build.pipeline import AUTO

    if value is None:
        return AUTO
    if value.lower() == "none":
        return None
    import re

    from loopx.model.errors import InvalidInput

    if not re.fullmatch(r"[0-9a-f]{7,64}", value):
        raise InvalidInput(
            "--head must be a git commit hash (7-64 hex digits) or 'none'", code="invalid_revision"
        )
    return value


def _root(root: Path | None) -> Path:
    from loopx.store.root import find_root

    return find_root(root)


@click.command("build")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("site"),
    show_default=True,
    help="Output folder.",
)
@click.option(
    "--audience",
    "audiences",
    default="public,team",
    show_default=True,
    help="Comma-separated audiences: public, team, private.",
)
@click.option("--head", default=None, help=HEAD_HELP)
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Write nothing; exit 6 when the folder differs from a fresh build.",
)
@click.option("--validate", is_flag=True, help="Also check every JSON artifact against schemas/.")
@click.option(
    "--force",
    is_flag=True,
    help="Render every goal again (by default, goals unchanged since the last build into OUT "
    "are carried over).",
)
@common()
def build_cmd(
    out: Path,
    audiences: str,
    head: str | None,
    check_only: bool,
    validate: bool,
    force: bool,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Build every projection of every goal into OUT, deterministically.

    Gathers and renders everything in memory (with --validate, checks each JSON artifact
    against its schema), scans every public byte, then writes each changed file once,
    all-or-nothing.
    """
    from loopx.build.pipeline import build, check, parse_audiences
    from loopx.model.errors import CheckFailed

    project = _root(root)
    auds = parse_audiences(audiences)
    if check_only:
        result = check(project, out, audiences=auds, head=_head(head))
        if not result.ok:
            problems = (
                [f"stale: {p}" for p in result.stale]
                + [f"missing: {p}" for p in result.missing]
                + [f"extra: {p}" for p in result.extra]
            )
            raise CheckFailed(
                f"{out} is out of date ({len(problems)} file(s)); run `loopx build` to "
                f"regenerate: {'; '.join(problems[:5])}{' …' if len(problems) > 5 else ''}",
                code="build_stale",
                **result.to_dict(),
            )
        emit(fmt, result.to_dict(), f"{out} is up to date")
        return
    res = build(project, out, audiences=auds, head=_head(head), validate=validate, reuse=not force)
    data = res.to_dict()
    data["out"] = str(out)

    def text() -> str:
        assert res.report is not None
        lines = [
            f"built {data['files']} files into {out}: {len(res.report.written)} written, "
            f"{res.report.unchanged} unchanged, {len(res.report.removed)} removed"
        ]
        if "public" in auds:
            lines.append(f"public boundary scan: clean; open {out}/public/index.html")
        if "team" in auds:
            lines.append(f"team pages: {out}/team/index.html")
        return "\n".join(lines)

    emit(fmt, data, text)


@click.command("diff")
@click.argument("old")
@click.argument("new")
@click.option(
    "--goal-id",
    default=None,
    help="With two ledger revisions (numbers) instead of two build folders.",
)
@click.option(
    "--audience",
    default="team",
    show_default=True,
    type=click.Choice(["public", "team", "private"]),
)
@common(formats=("text", "markdown", "json"))
def diff_cmd(
    old: str, new: str, goal_id: str | None, audience: str, root: Path | None, fmt: str, debug: bool
) -> None:
    """Explain what changed between two builds (OLD NEW folders) or two ledger revisions
    (--goal-id G OLD NEW) in domain terms: todos opened and closed, gates resolved,
    evidence added."""
    from loopx.build.diffing import diff_builds, diff_revisions, render_markdown, render_text

    if goal_id is not None:
        changes = diff_revisions(_root(root), goal_id, old, new, audience)
    else:
        changes = diff_builds(Path(old), Path(new), audience)
    if fmt == "markdown":
        echo(render_markdown(changes, old, new), nl=False)
        return
    emit(fmt, changes, lambda: render_text(changes))


@click.command("publish")
@click.option(
    "--to",
    "to_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Copy the public partition into this folder.",
)
@click.option(
    "--git-branch",
    default=None,
    help="Commit the public partition to this branch of the project's git repo.",
)
@click.option("--head", default=None, help=HEAD_HELP)
@click.option("--message", default=None, help="Commit message (default names the sources).")
@common()
def publish_cmd(
    to_dir: Path | None,
    git_branch: str | None,
    head: str | None,
    message: str | None,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Ship the public partition only, after the boundary scan passes."""
    from loopx.build.publish import publish
    from loopx.model.errors import InvalidInput

    if (to_dir is None) == (git_branch is None):
        raise InvalidInput(
            "give exactly one of --to DIR or --git-branch BRANCH", code="usage_error"
        )
    result: dict[str, Any] = publish(
        _root(root), to_dir=to_dir, git_branch=git_branch, head=_head(head), message=message
    )
    where = to_dir if to_dir is not None else f"branch {git_branch}"
    emit(
        fmt,
        result,
        lambda: (
            f"published {result['files']} public files to {where}"
            + (f" (commit {result['commit'][:12]})" if result.get("commit") else "")
        ),
    )


@click.command("serve")
@click.option("--port", type=click.IntRange(0, 65535), default=8321, show_default=True)
@click.option("--audience", "audiences", default="public,team", show_default=True)
@click.option("--head", default=None, help=HEAD_HELP)
@click.option(
    "--debounce",
    type=click.FloatRange(0.01, 10),
    default=0.25,
    show_default=True,
    help="Seconds to wait for more ledger changes before rebuilding.",
)
@common()
def serve_cmd(
    port: int,
    audiences: str,
    head: str | None,
    debounce: float,
    root: Path | None,
    fmt: str,
    debug: bool,
) -> None:
    """Build into a temporary folder, serve it on 127.0.0.1, and rebuild when the ledger
    changes. Open pages refresh themselves after a rebuild; a failed rebuild keeps the last
    good site and says why."""
    from loopx.build.pipeline import parse_audiences
    from loopx.build.serve import serve

    serve(
        _root(root),
        port=port,
        audiences=parse_audiences(audiences),
        head=_head(head),
        debounce=debounce,
        log=lambda line: echo(line, err=True),
    )
