"""Project and render every artifact of a build, in memory (gather before write).

Layout of a build folder:

    manifest.json
    <audience>/index.html, index.json, style.css
    <audience>/goals/<goal>/index.html, status.json, graph.{json,mmd,dot,html},
                            todos/<todo>.html
    team|private only:      workbench.md, workbench.html, review.md, review.json,
                            handoffs/<todo>.{md,json}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from loopx.build.artifacts import AnyArtifact, Artifact, Site
from loopx.build.validate import check
from loopx.model.config import ProjectConfig
from loopx.model.ids import visible_to
from loopx.privacy.audience import Lens
from loopx.projections import badge as badge_mod
from loopx.projections import feed as feed_mod
from loopx.projections import graph as graph_mod
from loopx.projections import handoff
from loopx.projections.base import GENERATOR, evidence_item, ordered_todos
from loopx.projections.index import goal_summary, index
from loopx.projections.review import review_packet
from loopx.projections.search import search_index
from loopx.projections.status import status
from loopx.projections.workbench import with_header, workbench
from loopx.render import graph as graph_source
from loopx.render.badge import to_svg as badge_svg
from loopx.render.env import environment, render
from loopx.render.handoff import render_digest_markdown
from loopx.render.jsonout import dumps
from loopx.render.markdown import to_html
from loopx.render.svg import to_svg
from loopx.resources import resource_dir
from loopx.state.entities import GoalState

BlobReader = Callable[[str], bytes | None]


def _json(site: Site, path: str, data: dict[str, Any], audience: str, goal: str | None) -> None:
    if site.validate:
        check(data["schema"], data, path)
    site.add(Artifact(path, dumps(data), audience, data["schema"], goal))


def _text(
    site: Site, path: str, text: str, audience: str, goal: str | None, schema: str | None = None
) -> None:
    site.add(Artifact(path, text.encode("utf-8"), audience, schema, goal))


def build_goal(
    site: Site,
    state: GoalState,
    audience: str,
    *,
    head: str | None,
    visible_goals: set[str],
    read_blob: BlobReader | None,
    project: ProjectConfig | None = None,
) -> dict[str, Any]:
    """Every artifact of one goal for one audience; returns its index row."""
    base = f"{audience}/goals/{state.goal_id}"
    root = "../../"
    project = project or ProjectConfig()
    common = {"generator": GENERATOR, "audience": audience, "project": project}

    def lens() -> Lens:
        return Lens(audience, read_blob)

    pending = handoff.pending_handoffs(state, audience=audience)
    st = status(state, lens(), head=head, visible_goals=visible_goals, handoffs=pending)
    _json(site, f"{base}/status.json", st, audience, state.goal_id)

    gr = graph_mod.graph(state, lens())
    _json(site, f"{base}/graph.json", gr, audience, state.goal_id)
    mermaid = graph_source.to_mermaid(gr)
    _text(site, f"{base}/graph.mmd", mermaid, audience, state.goal_id)
    _text(site, f"{base}/graph.dot", graph_source.to_dot(gr), audience, state.goal_id)
    hrefs = {n["id"]: f"todos/{n['ref']}.html" for n in gr["nodes"] if n["kind"] == "todo"}
    svg = to_svg(gr, hrefs)
    _text(
        site,
        f"{base}/graph.html",
        render(
            "html/graph.html",
            gr=gr,
            svg=svg,
            mermaid=mermaid,
            root=root,
            title=st["goal"]["title"],
            updated_at=st["goal"]["updated_at"],
            **common,
        ),
        audience,
        state.goal_id,
    )

    # The workbench exists for every audience (a public one is what an open-source
    # repository commits); review packets and handoff digests are for the team.
    wb = workbench(state, lens(), head=head, visible_goals=visible_goals)
    wb_md = with_header(wb, render("markdown/workbench.md.j2", wb=wb))
    _text(site, f"{base}/workbench.md", wb_md, audience, state.goal_id)
    _text(
        site,
        f"{base}/workbench.html",
        render(
            "html/workbench.html",
            wb=wb,
            reasons=st["attention"]["reasons"],
            pages={t for t, todo in state.todos.items() if lens().sees(todo.visibility)},
            root=root,
            **common,
        ),
        audience,
        state.goal_id,
    )
    extra: list[dict[str, str]] = [{"href": "workbench.html", "label": "Workbench"}]
    if audience != "public":
        rp = review_packet(state, lens(), head=head, visible_goals=visible_goals)
        _json(site, f"{base}/review.json", rp, audience, state.goal_id)
        rp_md = render("markdown/review.md.j2", rp=rp)
        _text(site, f"{base}/review.md", rp_md, audience, state.goal_id)
        _document(site, base, "review", "Review packet", rp_md, st, audience, root, project)
        extra.append({"href": "review.html", "label": "Review packet"})
        extra += _handoffs(site, handoff, state, audience, base, head, read_blob)

    _text(
        site,
        f"{base}/index.html",
        render("html/goal.html", st=st, extra_links=extra, root=root, **common),
        audience,
        state.goal_id,
    )
    _todo_pages(site, state, lens(), audience, base, head, st, project)
    _feed(
        site,
        f"{base}/feed.xml",
        feed_mod.goal_entries(state, lens(), ""),
        audience,
        state.goal_id,
        project,
        title=f"{st['goal']['title']} · {project.name}",
        within=f"goals/{state.goal_id}/",
    )
    row = goal_summary(state, lens(), st["attention"]["state"], st["attention"]["reasons"])
    _badge(site, f"{base}/badge", badge_mod.goal_badge(row), audience, state.goal_id)
    return row


def _feed(
    site: Site,
    path: str,
    entries: list[dict[str, Any]],
    audience: str,
    goal: str | None,
    project: ProjectConfig,
    *,
    title: str,
    within: str,
) -> None:
    """An Atom feed of `entries`. Links are relative to the feed; in the public partition with
    a configured `base_url` they are resolved against it (xml:base) and the feed names itself."""
    base = f"{project.base_url.rstrip('/')}/{within}" if project.base_url else None
    public = audience == "public" and base is not None
    fd = feed_mod.feed(
        entries, feed_id=f"urn:loopx:{goal or 'project'}:{audience}:feed", title=title
    )
    xml = render(
        "feed.xml",
        fd=fd,
        base=base if public else None,
        self_href="feed.xml" if public else None,
        page="index.html",
        author=project.name,
        generator=GENERATOR,
    )
    _text(site, path, xml, audience, goal)


def _badge(site: Site, stem: str, doc: dict[str, Any], audience: str, goal: str | None) -> None:
    """`<stem>.svg` to put in a README, and `<stem>.json` for a shields.io endpoint badge."""
    if site.validate:
        check(badge_mod.SCHEMA, doc, f"{stem}.json")
    site.add(Artifact(f"{stem}.json", dumps(doc), audience, badge_mod.SCHEMA, goal))
    _text(site, f"{stem}.svg", badge_svg(doc), audience, goal)


def _document(
    site: Site,
    base: str,
    name: str,
    label: str,
    markdown: str,
    st: dict[str, Any],
    audience: str,
    root: str,
    project: ProjectConfig,
) -> None:
    body = markdown.split("\n", 1)[1] if markdown.startswith("<!-- loopx:") else markdown
    _text(
        site,
        f"{base}/{name}.html",
        render(
            "html/document.html",
            title=f"{label} · {st['goal']['title']}",
            body=to_html(body),
            goal_id=st["source"]["goal_id"],
            goal_href="index.html",
            self_href=f"{name}.html",
            label=label.lower(),
            source_href=f"{name}.md",
            revision=st["source"]["revision"],
            updated_at=st["goal"]["updated_at"],
            root=root,
            generator=GENERATOR,
            audience=audience,
            project=project,
        ),
        audience,
        st["source"]["goal_id"],
    )


def _handoffs(
    site: Site,
    handoff: Any,
    state: GoalState,
    audience: str,
    base: str,
    head: str | None,
    read_blob: BlobReader | None,
) -> list[dict[str, str]]:
    """One handoff digest per todo with a note (team and private builds only)."""
    facts = {"head": head} if head else None
    digests = handoff.handoff_digests(
        state, audience=audience, read_blob=read_blob, workspace_facts=facts
    )
    links = []
    for todo_id, digest in sorted(digests.items()):
        _json(site, f"{base}/handoffs/{todo_id}.json", digest, audience, state.goal_id)
        _text(
            site,
            f"{base}/handoffs/{todo_id}.md",
            render_digest_markdown(digest),
            audience,
            state.goal_id,
        )
        links.append({"href": f"handoffs/{todo_id}.md", "label": f"Handoff: {todo_id}"})
    return links


def _todo_pages(
    site: Site,
    state: GoalState,
    lens: Lens,
    audience: str,
    base: str,
    head: str | None,
    st: dict[str, Any],
    project: ProjectConfig,
) -> None:
    from loopx.projections.base import todo_card

    todos = [t for t in ordered_todos(state) if lens.sees(t.visibility)]
    visible = {t.todo_id for t in todos}
    dependents: dict[str, list[str]] = {}
    for t in todos:
        for d in t.depends_on:
            if d in visible:
                dependents.setdefault(d, []).append(t.todo_id)
    evidence: dict[str, list[Any]] = {}
    for e in sorted(state.evidence.values(), key=lambda e: e.created_seq):
        if e.todo_id is not None and e.todo_id in visible and lens.sees(e.visibility):
            evidence.setdefault(e.todo_id, []).append(e)
    gates: dict[str, list[Any]] = {}
    for g in sorted(state.gates.values(), key=lambda g: g.created_seq):
        if lens.sees(g.visibility):
            for held in g.blocks:
                gates.setdefault(held, []).append(g)
    titles = {t.todo_id: lens.text(t.title) for t in todos}
    template = environment().get_template("html/todo.html")
    for t in todos:
        card = todo_card(t, lens, state)
        page = template.render(
            t=card,
            facts=_todo_facts(t, lens),
            titles=titles,
            goal_id=state.goal_id,
            goal_title=st["goal"]["title"],
            repository=st["goal"]["repository"],
            revision=st["source"]["revision"],
            updated_at=st["goal"]["updated_at"],
            root="../../../",
            dependents=dependents.get(t.todo_id, []),
            gates=[
                {"status": g.status, "question": lens.text(g.question)}
                for g in gates.get(t.todo_id, [])
            ],
            evidence=[evidence_item(e, lens, head) for e in evidence.get(t.todo_id, [])],
            generator=GENERATOR,
            audience=audience,
            project=project,
        )
        _text(site, f"{base}/todos/{t.todo_id}.html", page, audience, state.goal_id)


def _todo_facts(todo: Any, lens: Lens) -> dict[str, Any]:
    """Who does a todo and when it was opened and closed, from ledger time; the completion
    summary follows the todo's own visibility (the lens decides, as for its title). Who holds
    it is named only below the public audience."""
    facts: dict[str, Any] = {
        "who": "a person" if todo.role == "user" else "an agent",
        "created_at": todo.created_at,
        "closed_at": todo.closed_at,
        "summary": lens.text(todo.summary) if todo.summary is not None else None,
        "holder": None,
    }
    if not lens.is_public and todo.claim is not None:
        facts["holder"] = todo.claim["agent_id"]
    return facts


def goal_artifacts(
    state: GoalState,
    audience: str,
    *,
    head: str | None,
    visible_goals: set[str],
    read_blob: BlobReader | None,
    validate: bool,
    project: ProjectConfig | None = None,
) -> tuple[list[AnyArtifact], dict[str, Any]]:
    """Every artifact of one goal for one audience, and its index row (a unit of work that
    can run in another process and be cached)."""
    site = Site(head=head, validate=validate)
    row = build_goal(
        site,
        state,
        audience,
        head=head,
        visible_goals=visible_goals,
        read_blob=read_blob if audience == "private" else None,
        project=project,
    )
    return list(site.artifacts.values()), row


def audience_artifacts(
    site: Site,
    audience: str,
    rows: list[dict[str, Any]],
    hidden: dict[str, int],
    project: ProjectConfig | None = None,
    entries: list[dict[str, Any]] | None = None,
    search: list[dict[str, Any]] | None = None,
) -> None:
    """The audience's index pages, badge, feed and stylesheet, from the goals' index rows
    (and `entries`: the feed entries of the goals it may see)."""
    idx = index(rows, Lens(audience), hidden)
    _json(site, f"{audience}/index.json", idx, audience, None)
    changed = max((r["updated_at"] for r in idx["goals"]), default=None)
    _text(
        site,
        f"{audience}/index.html",
        render(
            "html/index.html",
            idx=idx,
            root="",
            generator=GENERATOR,
            audience=audience,
            project=project or ProjectConfig(),
            updated_at=changed,
        ),
        audience,
        None,
    )
    project = project or ProjectConfig()
    _badge(
        site,
        f"{audience}/badge",
        badge_mod.project_badge(idx["goals"], project.name),
        audience,
        None,
    )
    _feed(
        site,
        f"{audience}/feed.xml",
        entries or [],
        audience,
        None,
        project,
        title=project.name,
        within="",
    )
    found = search_index(search or [], audience)
    _json(site, f"{audience}/search.json", found, audience, None)
    # The same index as a script, so search works from file:// (no fetch there).
    _text(site, f"{audience}/search-index.js", _script_data(found), audience, None)
    script = (resource_dir("templates") / "search.js").read_bytes()
    site.add(Artifact(f"{audience}/search.js", script, audience))
    css = (resource_dir("templates") / "style.css").read_bytes()
    site.add(Artifact(f"{audience}/style.css", css, audience))


def _script_data(data: dict[str, Any]) -> str:
    """`data` as a script assigning `window.loopxSearch`; `<`, `>`, `&` and the two line
    separators JSON allows but old JavaScript did not are written as escapes."""
    text = dumps(data).decode("utf-8").rstrip("\n")
    for char in ("<", ">", "&", "\u2028", "\u2029"):
        text = text.replace(char, f"\\u{ord(char):04x}")
    return f"window.loopxSearch = {text};\n"


def visibility_split(goals: dict[str, GoalState], audience: str) -> tuple[set[str], dict[str, int]]:
    """The goals this audience may see, and how many of each visibility it may not."""
    visible = {g for g, st in goals.items() if visible_to(st.visibility, audience)}
    hidden = Counter(st.visibility for g, st in goals.items() if g not in visible)
    return visible, dict(hidden)
