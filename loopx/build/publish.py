"""`loopx publish`: ship the public partition only, after the boundary scan passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopx.build import gitpublish
from loopx.build.boundary import enforce, non_public_strings, scan_public
from loopx.build.pipeline import AUTO, make_site, previous_files, resolve_head
from loopx.build.writer import write_tree
from loopx.privacy.scanner import Scanner

PUBLIC = "public/"


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
) -> dict[str, Any]:
    """Publish to a folder (`to_dir`) or a git branch (`branch`), after the boundary scan."""
    # Every refusal about the branch comes before the build.
    plan = gitpublish.plan(root, branch) if branch is not None else None
    head = resolve_head(root, head)
    site, (goals, store) = make_site(root, ("public",), head)
    forbidden = non_public_strings(goals)
    enforce(scan_public(site, forbidden))
    files = _public_files(site)
    sources = ", ".join(
        f"{g}@{s['revision']}"
        for g, s in sorted(site.sources.items())
        if s["visibility"] == "public"
    )
    result: dict[str, Any] = {"files": len(files), "sources": sources}
    if to_dir is not None:
        to_dir.mkdir(parents=True, exist_ok=True)
        previous = _listed(to_dir)
        files[".loopx-published"] = ("\n".join(sorted(files)) + "\n").encode()
        write_tree(to_dir, files, previous | previous_files(to_dir))
        result["to"] = str(to_dir)
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


def _listed(folder: Path) -> set[str]:
    try:
        names = (folder / ".loopx-published").read_text("utf-8").split("\n")
    except FileNotFoundError:
        return set()
    return {n for n in names if n} | {".loopx-published"}


def _typed_scanner(target: gitpublish.BranchTarget, goals: Any, store: Any) -> Any:
    """What a message or identity typed by a person is also checked against: the private text
    in the blob store (as `loopx scan` does), narrowed to what occurs in them."""
    typed = [t for t in (target.message, target.identity) if t and t != gitpublish.DEFAULT_IDENTITY]
    if not typed:
        return None
    found = non_public_strings(goals, store.get_blob).within(typed)
    return Scanner(sorted(found.texts), forbidden_ids=sorted(found.ids), machine=False, rules=False)
