"""`loopx publish`: ship the public partition only, after the boundary scan passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopx.build import gitpublish, outdir
from loopx.build.boundary import enforce, non_public_strings, project_names, scan_public
from loopx.build.pipeline import AUTO, make_site, manifest_entries, resolve_head
from loopx.build.writer import Entry, write_tree
from loopx.privacy.scanner import Scanner
from loopx.render.jsonout import dumps

PUBLIC = "public/"
PUBLISHED = gitpublish.LISTING  # `.loopx-published`
PUBLISHED_SCHEMA = gitpublish.LISTING_SCHEMA  # `loopx.published/v1`, on a branch as in a folder


def _public_files(site: Any) -> dict[str, bytes]:
    return {
        path[len(PUBLIC) :]: a.data
        for path, a in site.artifacts.items()
        if a.audience == "public" and path.startswith(PUBLIC)
    }


def publish(
    root: Path,
    *,
    to_dir: Path | None = None,
    branch: gitpublish.BranchTarget | None = None,
    head: str | None = AUTO,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Publish to a folder (`to_dir`) or a git branch (`branch`), after the boundary scan.
    `overwrite`: with `to_dir`, replace files no earlier publish (or build) wrote there."""
    # Every refusal about the branch comes before the build.
    plan = gitpublish.plan(root, branch) if branch is not None else None
    head = resolve_head(root, head)
    site, (goals, store) = make_site(root, ("public",), head)
    forbidden = non_public_strings(goals).with_names(project_names(root))
    enforce(scan_public(site, forbidden), goals, forbidden)
    files = _public_files(site)
    sources = ", ".join(
        f"{g}@{s['revision']}"
        for g, s in sorted(site.sources.items())
        if s["visibility"] == "public"
    )
    result: dict[str, Any] = {"files": len(files), "sources": sources}
    if to_dir is not None:
        result.update(_publish_to(root, to_dir, files, overwrite))
        return result
    assert plan is not None
    result.update(
        gitpublish.commit(
            root,
            plan,
            files,
            scanner=forbidden.scanner(),
            typed=_typed_scanner(plan.target, goals, store),
            default_message=f"loopx publish: {sources or 'no goals'}",
        )
    )
    return result


def _publish_to(root: Path, to_dir: Path, files: dict[str, bytes], overwrite: bool) -> Any:
    """Copy the public files into `to_dir` under the output-folder rules (`outdir`): only
    files an earlier publish (or build) listed are replaced, only those with the hash it
    recorded are removed; anything else is `output_not_ours` unless `overwrite`. In a folder,
    `.loopx-published` records each file's hash (`loopx.published/v1`)."""
    listing = {p: {"sha256": outdir.sha256(d), "bytes": len(d)} for p, d in sorted(files.items())}
    files = {**files, PUBLISHED: dumps({"schema": PUBLISHED_SCHEMA, "files": listing})}
    # What a publish may create or delete: the top-level names it writes, nothing else (a
    # forged listing naming `src/main.py` with its right hash deletes nothing).
    layout = outdir.Layout(
        frozenset(p for p in files if "/" not in p),
        frozenset(p.split("/")[0] for p in files if "/" in p),
    )
    with outdir.open_folder(to_dir, root) as folder, outdir.lock(root, to_dir):
        previous = {**manifest_entries(folder), **_listed(folder)}
        report = write_tree(folder, files, previous, overwrite=overwrite, layout=layout)
    return {"to": str(to_dir), "written": len(report.written), "kept": report.kept}


def _listed(folder: outdir.Folder) -> dict[str, Entry]:
    """What the folder's `.loopx-published` says an earlier publish wrote. A plain list of
    names (an older loopx) has no hashes: its files may be replaced, but never deleted."""
    entries = manifest_entries(folder, PUBLISHED)
    if entries:
        return entries
    try:
        raw = folder.read(PUBLISHED, gitpublish.MAX_LISTING)
    except (outdir.UnsafeOutput, OSError):
        return {}
    if raw is None:
        return {}
    names = raw.decode("utf-8", "replace").split("\n")
    return {n: ("", None) for n in names if n} | {PUBLISHED: (None, None)}


def _typed_scanner(target: gitpublish.BranchTarget, goals: Any, store: Any) -> Any:
    """What a message or identity typed by a person is also checked against: the private text
    in the blob store (as `loopx scan` does), narrowed to what occurs in them."""
    typed = [t for t in (target.message, target.identity) if t and t != gitpublish.DEFAULT_IDENTITY]
    if not typed:
        return None
    with store.reading_blobs():
        found = non_public_strings(goals, store.get_blob).within(typed)
    return Scanner(sorted(found.texts), forbidden_ids=sorted(found.ids), machine=False, rules=False)
