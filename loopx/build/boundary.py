"""The public boundary, second line: scan every public byte before it is written.

The scanner looks for credentials and personal or machine data, and for the exact text of
every non-public fact the ledger holds (team and private text, private ids and blob hashes),
in plain, JSON-, HTML- and URL-encoded form. Any finding stops the build; the report names
file, kind and position, never the matched text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from loopx.build.artifacts import Site
from loopx.model.errors import BoundaryViolation
from loopx.resources import resource_dir
from loopx.state.entities import GoalState

BlobReader = Any


def _texts(value: Any, read_blob: BlobReader | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, dict) and "blob" in value:
        out = [value["blob"], value["blob"].removeprefix("sha256:")]
        data = read_blob(value["blob"]) if read_blob else None
        if data is not None:
            out.append(data.decode("utf-8", "replace"))
        return out
    return [str(value)]


@dataclass(frozen=True)
class Forbidden:
    """What the ledger marks non-public: exact texts, and ids matched as whole ids."""

    texts: frozenset[str]
    ids: frozenset[str]

    def digest(self) -> str:
        body = "\0".join(sorted(self.texts)) + "\1" + "\0".join(sorted(self.ids))
        return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()

    def scanner(self) -> Any:
        from loopx.privacy.scanner import Scanner

        return Scanner(sorted(self.texts), forbidden_ids=sorted(self.ids))


def non_public_strings(goals: dict[str, GoalState], read_blob: BlobReader | None) -> Forbidden:
    """The exact strings the ledger marks non-public: must never appear in public output."""
    found: set[str] = set()
    ids: set[str] = set()
    public_text: set[str] = set()
    for state in goals.values():
        goal_private = state.visibility != "public"
        entities: list[tuple[str, list[Any], str]] = [
            (
                state.visibility,
                [state.title, state.objective, *state.acceptance, state.outcome_reason],
                state.goal_id,
            )
        ]
        entities += [
            (t.visibility, [t.title, t.acceptance, t.reason, t.summary], t.todo_id)
            for t in state.todos.values()
        ]
        entities += [
            (g.visibility, [g.question, g.rationale], g.gate_id) for g in state.gates.values()
        ]
        entities += [
            (e.visibility, [e.summary, *e.refs, e.body], e.evidence_id)
            for e in state.evidence.values()
        ]
        entities += [(n.visibility, [n.text], n.note_id) for n in state.notes.values()]
        entities += [(r.visibility, [r.summary, r.wait], r.run_id) for r in state.runs.values()]
        for visibility, values, entity_id in entities:
            texts = [t for v in values for t in _texts(v, read_blob)]
            if visibility == "public" and not goal_private:
                public_text.update(texts)
                continue
            found.update(texts)
            if visibility == "private":
                ids.add(entity_id)
        if state.visibility == "private":
            ids.add(state.goal_id)
    # Text that is also public (the same words on a public item) or part of the templates
    # themselves cannot leak anything; matching it would only cry wolf.
    boilerplate = _template_text()
    kept = {s for s in found if s.strip() and s not in public_text and s not in boilerplate}
    return Forbidden(frozenset(kept), frozenset(ids))


def _template_text() -> str:
    folder = resource_dir("templates")
    return "\n".join(p.read_text("utf-8") for p in sorted(folder.rglob("*")) if p.is_file())


def scan_public(
    site: Site, forbidden: Forbidden, cache: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Scan every public artifact; return findings (without the matched text).

    `cache` maps an artifact's sha256 to the digest of the forbidden set it was found clean
    against; such artifacts are not scanned again while that set is unchanged.
    """
    digest = forbidden.digest()
    scanner = None
    findings: list[dict[str, Any]] = []
    for path in sorted(site.artifacts):
        artifact = site.artifacts[path]
        if artifact.audience != "public":
            continue
        if cache is not None and cache.get(artifact.sha256) == digest:
            continue
        scanner = scanner or forbidden.scanner()
        found = [f.to_dict() for f in scanner.scan_bytes(artifact.data, path)]
        findings.extend(found)
        if cache is not None and not found:
            cache[artifact.sha256] = digest
    return findings


def enforce(findings: list[dict[str, Any]]) -> None:
    if findings:
        kinds = sorted({f["kind"] for f in findings})
        raise BoundaryViolation(
            f"public output failed the boundary scan: {len(findings)} finding(s) of kind "
            f"{', '.join(kinds)}; nothing was written",
            findings=findings[:100],
        )
