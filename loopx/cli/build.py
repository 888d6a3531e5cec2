"""`loopx build`, `loopx diff`, `loopx publish`, `loopx serve`: their click declarations
(`build` runs `loopx.cli.build_run.run_build`, which the quick parser calls too)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from loopx.cli.build_run import findings_printed, kept_line, parse_head, project_root, run_build
from loopx.cli.common import audience_option, common, echo, emit, path_option

if TYPE_CHECKING:  # imported where used: `loopx --help` stays fast
    from loopx.build.gitpublish import BranchTarget

HEAD_HELP = (
    "Git revision that decides evidence freshness (default: HEAD of the project "
    "folder when it is a checkout; 'none' for no checkout)."
)
COMMITTED_HEAD_HELP = (
    "Compare evidence with this git commit ('auto': the project's HEAD). Default: none, so "
    "the output names the commit each item was observed at and stays true after a commit."
)


OVERWRITE_HELP = (
    "Replace files in the output folder that no manifest of ours lists (by default they are "
    "refused as output_not_ours)."
)


# build and serve: the audiences to build for (the project configuration may say; see
# cli/defaults.py).
AUDIENCES = click.option(
    "--audience",
    "audiences",
    default="public,team",
    show_default=True,
    help="Comma-separated audiences: public, team, private.",
)


@click.command("build")
@path_option(
    "--out",
    folder=True,
    show_default="site",
    help="Output folder.",
)
@AUDIENCES
@click.option("--head", default=None, help=COMMITTED_HEAD_HELP)
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
@click.option("--overwrite", is_flag=True, help=OVERWRITE_HELP)
@common()
def build_cmd(
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
    """Build every projection of every goal into OUT, deterministically.

    Gathers and renders everything in memory (with --validate, checks each JSON artifact
    against its schema), scans every public byte, then writes each changed file once,
    all-or-nothing. OUT is locked while it is written (a second build into it waits); no
    link in it is followed, and only files a manifest of ours wrote are replaced or removed.
    """
    run_build(
        out=out,
        audiences=audiences,
        head=head,
        check_only=check_only,
        validate=validate,
        force=force,
        overwrite=overwrite,
        root=root,
        fmt=fmt,
    )


@click.command("diff")
@click.argument("old")
@click.argument("new")
@click.option(
    "--goal-id",
    default=None,
    help="With two ledger revisions (numbers) instead of two build folders.",
)
@audience_option(
    "public",
    "team",
    "private",
    help="Whose facts to compare; public output is boundary-scanned before it is printed.",
)
@common(formats=("text", "markdown", "json"))
def diff_cmd(
    old: str, new: str, goal_id: str | None, audience: str, root: Path | None, fmt: str
) -> None:
    """Explain what changed between two builds (OLD NEW folders) or two ledger revisions
    (--goal-id G OLD NEW) in domain terms: todos opened and closed, gates resolved,
    evidence added."""
    from loopx.build.diffing import diff_builds, diff_revisions, render_markdown, render_text

    if goal_id is not None:
        changes = diff_revisions(project_root(root), goal_id, old, new, audience)
    else:
        changes = diff_builds(Path(old), Path(new), audience)
    if fmt == "markdown":
        out = render_markdown(changes, old, new)
    elif fmt == "json":
        from loopx.render.jsonout import dumps

        out = dumps(changes).decode("utf-8")
    else:
        out = render_text(changes) + "\n"
    if audience == "public":
        from loopx.build.single import scan_public_output
        from loopx.cli.common import open_store
        from loopx.model.errors import NotFound

        try:
            store = open_store(root)
        except NotFound:  # two build folders outside any project: the rules alone
            store = None
        goals = [goal_id] if goal_id is not None else None  # two builds: any goal
        scan_public_output(store, f"diff.{fmt}", out.encode("utf-8"), goals)
    if fmt == "json":
        click.echo(out, nl=False)
        return
    # Text and Markdown for a terminal: rendered again (after the scan saw the real values)
    # from values whose control characters and newlines are escaped, one change per line.
    from loopx.cli.terminal import fields_in_place

    fields_in_place(changes)
    shown = render_markdown(changes, old, new) if fmt == "markdown" else render_text(changes)
    echo(shown if fmt == "markdown" else shown + "\n", nl=False)


@click.command("publish")
@path_option("--to", "to_dir", folder=True, help="Copy the public partition into this folder.")
@click.option(
    "--git-branch",
    default=None,
    help="Commit the public partition to this branch (e.g. gh-pages) of the project's git "
    "repository, on a history of its own; the checked-out branch, index and work tree are "
    "never touched.",
)
@click.option(
    "--prefix",
    default=None,
    metavar="DIR",
    help="With --git-branch: publish into this folder of the branch and keep the rest.",
)
@click.option(
    "--nojekyll/--no-nojekyll",
    default=None,
    help="With --git-branch and no --prefix: add an empty .nojekyll at the root (GitHub "
    "Pages serves the files as they are). Default: on.",
)
@click.option(
    "--cname", default=None, metavar="DOMAIN", help="With --git-branch: write a CNAME file."
)
@click.option(
    "--message",
    default=None,
    help="Commit message (default names the sources); scanned like every public byte.",
)
@click.option(
    "--identity",
    default=None,
    metavar="'NAME <EMAIL>'",
    help="Author and committer of the publish commit (or LOOPX_PUBLISH_IDENTITY; default "
    "'loopx <loopx@localhost>', never your git identity).",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace files that no earlier publish wrote (with --git-branch: and a branch that "
    "shares history with another, by a fresh orphan commit).",
)
@click.option(
    "--push/--no-push",
    default=None,
    help="With --git-branch: push the branch afterwards (default: off).",
)
@click.option(
    "--remote",
    default=None,
    help="With --git-branch: the remote to push to and continue from (default: origin).",
)
@click.option("--head", default=None, help=HEAD_HELP)
@common()
def publish_cmd(
    to_dir: Path | None,
    git_branch: str | None,
    prefix: str | None,
    nojekyll: bool | None,
    cname: str | None,
    message: str | None,
    identity: str | None,
    overwrite: bool,
    push: bool | None,
    remote: str | None,
    head: str | None,
    root: Path | None,
    fmt: str,
) -> None:
    """Ship the public partition only, after the boundary scan passes: into a folder, or as a
    commit on a git branch for GitHub Pages. The [publish] settings of the project
    configuration fill in what the flags leave out (with --to, they are not used)."""
    from loopx.build.publish import publish

    project = project_root(root)
    flags = {
        "git_branch": git_branch,
        "prefix": prefix,
        "nojekyll": nojekyll,
        "cname": cname,
        "message": message,
        "identity": identity,
        "push": push,
        "remote": remote,
    }
    branch = _branch(project, to_dir, flags, overwrite)
    with findings_printed(fmt):
        result: dict[str, Any] = publish(
            project,
            to_dir=to_dir,
            branch=branch,
            head=parse_head(head, "auto"),
            overwrite=overwrite,
        )
    emit(fmt, result, lambda: _published_text(result, to_dir))


GIT_ONLY = {
    "prefix": "--prefix",
    "nojekyll": "--[no-]nojekyll",
    "cname": "--cname",
    "message": "--message",
    "identity": "--identity",
    "push": "--[no-]push",
    "remote": "--remote",
}
CONFIGURED = ("prefix", "cname", "identity", "remote", "nojekyll", "push")


def _branch(
    project: Path, to_dir: Path | None, flags: dict[str, Any], overwrite: bool
) -> BranchTarget | None:
    """The git branch to publish to (None with --to): the flags, and the [publish] settings
    of the project configuration for what they leave out (not with --to). Exactly one of
    --to and --git-branch; the branch's options only with it."""
    from loopx.build.gitpublish import BranchTarget
    from loopx.model.errors import InvalidInput
    from loopx.store.config import load_config

    if to_dir is None:
        conf = load_config(project).publish
        if flags["git_branch"] is None:
            flags["git_branch"] = conf.git_branch
        if flags["git_branch"] is not None:
            for key in CONFIGURED:
                flags[key] = flags[key] if flags[key] is not None else getattr(conf, key)
    if (to_dir is None) == (flags["git_branch"] is None):
        raise InvalidInput(
            "give exactly one of --to DIR or --git-branch BRANCH", code="usage_error"
        )
    misused = [flag for key, flag in GIT_ONLY.items() if flags[key] is not None]
    if to_dir is not None and misused:
        raise InvalidInput(f"{', '.join(misused)} only apply to --git-branch", code="usage_error")
    if to_dir is not None:
        return None
    return BranchTarget(
        branch=flags["git_branch"],
        prefix=flags["prefix"] or "",
        nojekyll=flags["nojekyll"] is not False,
        cname=flags["cname"],
        message=flags["message"],
        identity=flags["identity"],
        overwrite=overwrite,
        push=bool(flags["push"]),
        remote=flags["remote"],
    )


def _published_text(result: dict[str, Any], to_dir: Path | None) -> str:
    if to_dir is not None:
        return f"published {result['files']} public files to {to_dir}" + (
            f"\n{kept_line(result['kept'])}" if result.get("kept") else ""
        )
    where = f"branch {result['branch']}" + (
        f", folder {result['prefix']}/" if result["prefix"] else ""
    )
    done = "committed" if result["changed"] else "unchanged"
    lines = [
        f"published {result['files']} public files to {where} ({done}: {result['commit'][:12]})"
    ]
    if result["pushed"]:
        lines.append(f"pushed to {result['remote']}")
    lines.append(f"next: {result['next']}")
    return "\n".join(lines)


@click.command("serve")
@click.option("--port", type=click.IntRange(0, 65535), default=8321, show_default=True)
@AUDIENCES
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
) -> None:
    """Build into a temporary folder, serve it on 127.0.0.1, and rebuild when the ledger
    changes. Open pages refresh themselves after a rebuild; a failed rebuild keeps the last
    good site and says why."""
    from loopx.build.pipeline import parse_audiences
    from loopx.build.serve import serve

    project = project_root(root)
    serve(
        project,
        port=port,
        audiences=parse_audiences(audiences),
        head=parse_head(head, "auto"),
        debounce=debounce,
        log=lambda line: echo(line, err=True),
    )
