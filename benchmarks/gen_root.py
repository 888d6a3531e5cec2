"""A synthetic project root for the build benchmark, and the same content as MkDocs Markdown.

`generate(root)` writes 50 goals, 10,000 todos and 100,000 events in total (200 todos and
2,000 events per goal), deterministic for a seed:

- goal visibilities: 10 public, 30 team, 10 private (every 5th public, every 5th private);
  five team goals end abandoned;
- todos of mixed visibility (a public goal: 60% public, 30% team, 10% private todos), with
  dependencies (always on earlier todos, never on one that ends cancelled), priorities, a
  few user todos, acceptance notes;
- per goal: ~55% done (claim → heartbeats → evidence → run → complete; every third with a
  second piece of evidence at a newer revision, some at the checkout's revision), every 25th
  of those cancelled instead, a band of 15 claimed under live 30-day leases, three blocked,
  the rest open; four gates opened and approved, one pending; lessons, decisions and notes;
  progress runs; heartbeats fill the exact event budget;
- private text (titles, summaries, evidence bodies of private items) lives in the private
  blob store (each blob file, and its record in the pack), as the engine writes it; the
  ledger holds only `{"blob": "sha256:…"}`.

Envelopes have exactly the shape `engine.core.execute` produces; each event's data is
validated against its model, and each goal is appended through the FileStore's own writer in
one batch (one lock, one fsync), so seq, chain and checksums are the real ones. The generator
respects the engine's preconditions by construction (claims only of ready todos, completion
by the lease holder after its gates are resolved), so governed writes work on top of it.
Every entity id is unique across the whole root and no text is a substring of another, so
the public boundary scan has nothing to find.

`write_markdown(root, folder)` writes the equivalent MkDocs project for the public and team
audiences (what `loopx build` writes by default): `mkdocs.yml`, `docs/index.md`, per
audience and goal an index page, and one page per visible todo (title, status,
dependencies, dependents, gates, evidence).

Run: `python -m benchmarks.gen_root ROOT [--markdown DIR] [--verify]`.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import random
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from loopx.store.blobs import PACK, PACK_BLOB_BYTES, pack_record
from loopx.store.filestore import FileStore

START = "2026-01-05T08:00:00Z"
STEP = 30  # seconds between two events of one goal
HEAD = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"  # the checkout the benchmark builds for
AGENTS = ("agent-claude", "agent-codex", "agent-gemini")
VERBS = ("Refactor", "Test", "Document", "Benchmark", "Review", "Port", "Fix", "Profile")
NOUNS = (
    "ledger reader",
    "claim leases",
    "gate resolver",
    "status view",
    "frontier",
    "CLI parser",
    "snapshot cache",
    "graph layout",
)
RANK = {"public": 0, "team": 1, "private": 2}

GOALS, TODOS, EVENTS = 50, 10_000, 100_000


def goal_visibility(i: int) -> str:
    return "public" if i % 5 == 0 else "private" if i % 5 == 4 else "team"


_BASE = datetime(2026, 1, 5, 8, 0, 0)  # START


def _stamp(seconds: int) -> str:
    """START + seconds, in the ledger's format (strptime per event would cost seconds)."""
    return (_BASE + timedelta(seconds=seconds)).isoformat() + "Z"


def _rev(*parts: object) -> str:
    return hashlib.sha1(":".join(map(str, parts)).encode()).hexdigest()


class _Goal:
    """Collects one goal's envelopes, and its private blobs (written in bulk later)."""

    def __init__(self, goal_id: str, blobs: dict[str, bytes], validate: bool):
        self.goal_id = goal_id
        self.s = 0  # seconds since START
        self.envelopes: list[dict[str, Any]] = []
        self.blobs = blobs
        self.validate = validate
        if validate:
            from loopx.model.events import validate_data

            self._validate = validate_data

    def text(self, value: str, vis: str) -> Any:
        """As `Context.private_text`: private text goes to the blob store."""
        if vis != "private":
            return value
        data = value.encode("utf-8")
        ref = "sha256:" + hashlib.sha256(data).hexdigest()
        self.blobs[ref] = data
        return {"blob": ref}

    def add(self, event_type: str, data: dict[str, Any], vis: str, agent: str = "maintainer"):
        n = len(self.envelopes) + 1
        clean = {k: v for k, v in data.items() if v is not None}
        if self.validate:
            clean = self._validate(event_type, clean)
        op = f"gen-{self.goal_id}-{n:05d}"
        self.envelopes.append(
            {
                "operation_id": op,
                "op_hash": hashlib.sha256(f"{self.goal_id}:{op}".encode()).hexdigest(),
                "type": event_type,
                "v": 1,
                "goal_id": self.goal_id,
                "actor": {"agent_id": agent, "session_id": f"{agent}-s{n // 400:02d}"},
                "recorded_at": _stamp(self.s),
                "visibility": vis,
                "data": clean,
            }
        )
        self.s += STEP

    def after(self, seconds: int) -> str:
        """The time `seconds` after now (for lease expiries)."""
        return _stamp(self.s + seconds)


def _widest(a: str, b: str) -> str:
    return a if RANK[a] >= RANK[b] else b


def _goal_history(
    g: _Goal, gi: int, rng: random.Random, n_todos: int, n_events: int
) -> list[dict[str, Any]]:
    """One goal's history of exactly `n_events` events. Returns probes for governed writes:
    public todos claimed under a live lease (goal, todo, holder, a time after the history)."""
    gvis = goal_visibility(gi)
    gid = g.goal_id
    g.add(
        "goal.created",
        {
            "title": g.text(f"Synthetic goal {gid}: ship the {NOUNS[gi % len(NOUNS)]}", gvis),
            "objective": g.text(
                f"Goal {gid} drives {n_todos} todos to done with evidence at each revision.",
                gvis,
            ),
            "acceptance": [
                g.text(f"Every todo of {gid} done or cancelled", gvis),
                g.text(f"Status of {gid} answers on every turn", gvis),
            ],
            "repository": f"https://example.org/synthetic/{gid}.git",
            "policy": {"lease_seconds": 3600, "quota": 4 * n_events, "quota_unit": "runs"},
        },
        gvis,
    )
    for agent in AGENTS:
        g.add("agent.registered", {"agent_id": agent, "name": agent, "kind": "coding-agent"}, gvis)

    ids = [f"{gid}-t{i:04d}" for i in range(n_todos)]
    n_done = int(n_todos * 0.55)
    band = min(15, n_todos - n_done)
    n_blocked = min(3, n_todos - n_done - band)
    claimed_upto = n_done + band
    cancelled = {i for i in range(n_done) if i % 25 == 24}
    gated = [i for i in range(n_done) if i % 50 == 10 and i not in cancelled][:4]
    pending_on = min(claimed_upto + n_blocked + 5, n_todos - 1)

    # visibilities: the goal's own for private goals; a mix elsewhere
    def todo_vis() -> str:
        r = rng.random()
        if gvis == "private":
            return "private"
        if gvis == "public":
            return "public" if r < 0.6 else "team" if r < 0.9 else "private"
        return "team" if r < 0.85 else "private"

    vis = [todo_vis() for _ in ids]
    for i, tid in enumerate(ids):
        deps: list[str] = []
        if i >= 5 and rng.random() < 0.6:
            hi = min(i, n_done) if i < claimed_upto else i
            window = [j for j in range(max(0, hi - 40), hi) if j not in cancelled]
            if window:
                deps = sorted({ids[j] for j in rng.sample(window, k=min(len(window), 2))})
        g.add(
            "todo.added",
            {
                "todo_id": tid,
                "title": g.text(f"{rng.choice(VERBS)} {rng.choice(NOUNS)} ({tid})", vis[i]),
                "role": "user" if rng.random() < 0.04 else "agent",
                "kind": "task",
                "priority": rng.randint(0, 4),
                "depends_on": deps,
                "acceptance": g.text(f"Tests for {tid} pass and are reviewed.", vis[i])
                if i % 7 == 0
                else None,
            },
            vis[i],
        )

    # Fixed costs, then heartbeats absorb the rest of the budget exactly.
    n_cancel = len(cancelled)
    n_complete = n_done - n_cancel
    n_second = sum(1 for i in range(n_done) if i not in cancelled and i % 3 == 0)
    n_progress = sum(1 for i in range(n_done) if i not in cancelled and i % 4 == 1)
    n_notes = 6
    closing = 1 if gi % 10 == 7 else 0
    fixed = (
        (4 + n_todos)
        + n_complete * 5  # claim, renew, evidence, run, complete
        + n_second
        + n_progress
        + n_cancel * 3  # claim, note, cancel
        + 2 * len(gated)
        + band
        + n_blocked
        + 1  # pending gate
        + n_notes
        + closing
    )
    extra_total = n_events - fixed
    if extra_total < 0:
        raise ValueError("too few events for this many todos")
    extra, leftover = divmod(extra_total, max(n_complete, 1))

    def ev_vis(tvis: str) -> str:
        r = rng.random()
        own = "public" if r < 0.6 else "team" if r < 0.85 else "private"
        return _widest(own, tvis)

    k = 0
    for i in range(n_done):
        tid, tv = ids[i], vis[i]
        agent = AGENTS[i % len(AGENTS)]
        session = f"{agent}-{gid}-s{i // 20:02d}"
        g.add(
            "todo.claimed",
            {
                "todo_id": tid,
                "agent_id": agent,
                "session_id": session,
                "lease_expires_at": g.after(3600),
            },
            tv,
            agent,
        )
        if i in cancelled:
            g.add(
                "note.added",
                {
                    "note_id": f"{gid}-n{i:04d}",
                    "kind": "decision",
                    "text": g.text(f"{tid} is superseded by a later todo.", _widest("team", tv)),
                    "todo_id": tid,
                },
                _widest("team", tv),
                agent,
            )
            g.add(
                "todo.cancelled",
                {"todo_id": tid, "reason": g.text(f"Superseded ({tid}).", tv)},
                tv,
                agent,
            )
            continue
        beats = 1 + extra + (1 if k < leftover else 0)
        k += 1
        for _ in range(beats):
            g.add(
                "todo.renewed",
                {"todo_id": tid, "lease_expires_at": g.after(3600)},
                tv,
                agent,
            )
        if i in gated:
            gate_id = f"{gid}-q{i:04d}"
            gv = _widest("public" if i % 100 == 10 else "team", tv)
            g.add(
                "gate.opened",
                {
                    "gate_id": gate_id,
                    "question": g.text(f"Approve the approach for {tid}?", gv),
                    "authority": "maintainer",
                    "blocks": [tid],
                },
                gv,
            )
            g.add(
                "gate.resolved",
                {
                    "gate_id": gate_id,
                    "resolution": "approved",
                    "by": "maintainer",
                    "rationale": g.text(f"Approach for {tid} approved.", gv),
                },
                gv,
            )
        evidence = [f"{gid}-e{i:04d}a"]
        revs = [_rev(gid, i, "a")]
        if i % 3 == 0:
            evidence.append(f"{gid}-e{i:04d}b")
            revs.append(HEAD if i % 9 == 0 else _rev(gid, i, "b"))
        shown = evidence[-1]  # named in the todo's summary unless its evidence is private
        for eid, rev in zip(evidence, revs, strict=True):
            ev = ev_vis(tv)
            if ev == "private" and eid == shown:
                shown = ""
            g.add(
                "evidence.added",
                {
                    "evidence_id": eid,
                    "kind": "test" if i % 2 else "ci",
                    "summary": g.text(f"Tests pass for {tid} at {rev[:10]} ({eid})", ev),
                    "refs": [f"https://ci.example.org/{gid}/runs/{eid}"],
                    "revision": rev,
                    "todo_id": tid,
                    "body": g.text(f"log of {eid}\n" + "ok\n" * 20, "private")
                    if ev == "private"
                    else None,
                    "body_bytes": len(f"log of {eid}\n" + "ok\n" * 20) if ev == "private" else None,
                },
                ev,
                agent,
            )
        rv = _widest("team", tv)
        if i % 4 == 1:
            g.add(
                "run.recorded",
                {
                    "run_id": f"{gid}-r{i:04d}p",
                    "agent_id": agent,
                    "session_id": session,
                    "todo_id": tid,
                    "outcome": "progress",
                    "summary": g.text(f"Halfway through {tid} (run {gid}-r{i:04d}p).", rv),
                    "quota_spent": 1,
                },
                rv,
                agent,
            )
        g.add(
            "run.recorded",
            {
                "run_id": f"{gid}-r{i:04d}",
                "agent_id": agent,
                "session_id": session,
                "todo_id": tid,
                "outcome": "completed",
                "summary": g.text(f"Finished {tid} (run {gid}-r{i:04d}).", rv),
                "evidence_ids": evidence,
                "quota_spent": 1,
            },
            rv,
            agent,
        )
        g.add(
            "todo.completed",
            {
                "todo_id": tid,
                "summary": g.text(f"{tid} done; see {shown}." if shown else f"{tid} done.", tv),
                "evidence_ids": evidence,
            },
            tv,
            agent,
        )

    probes: list[dict[str, Any]] = []
    for j in range(band):
        i = n_done + j
        tid, agent = ids[i], AGENTS[j % len(AGENTS)]
        g.add(
            "todo.claimed",
            {
                "todo_id": tid,
                "agent_id": agent,
                "session_id": f"{agent}-{gid}-live",
                "lease_expires_at": g.after(30 * 86400),
            },
            vis[i],
            agent,
        )
        if vis[i] == "public":
            probes.append({"goal_id": gid, "todo_id": tid, "agent_id": agent})
    for j in range(n_blocked):
        i = claimed_upto + j
        g.add(
            "todo.blocked",
            {"todo_id": ids[i], "reason": g.text(f"{ids[i]} waits on upstream.", vis[i])},
            vis[i],
        )
    pv = _widest("public" if gvis == "public" else "team", vis[pending_on])
    g.add(
        "gate.opened",
        {
            "gate_id": f"{gid}-q-pending",
            "question": g.text(f"Should {ids[pending_on]} ship behind a flag?", pv),
            "authority": "maintainer",
            "blocks": [ids[pending_on]],
        },
        pv,
    )
    for n in range(n_notes):
        kind = ("lesson", "decision", "note")[n % 3]
        nv = "public" if gvis == "public" and n < 2 else ("team", "private")[n % 2]
        nv = _widest(nv, gvis)
        g.add(
            "note.added",
            {
                "note_id": f"{gid}-n-{kind}-{n}",
                "kind": kind,
                "text": g.text(f"{kind.capitalize()} {n} of {gid}: batch the heartbeats.", nv),
            },
            nv,
            AGENTS[n % len(AGENTS)],
        )
    if closing:
        g.add(
            "goal.closed",
            {"outcome": "abandoned", "reason": g.text(f"{gid} was folded into another.", gvis)},
            gvis,
        )
    if len(g.envelopes) != n_events:  # the budget arithmetic above is wrong
        raise RuntimeError(f"{gid}: generated {len(g.envelopes)} events, not {n_events}")
    return [dict(p, now=g.after(60)) for p in probes]


def generate(
    root: Path | str,
    *,
    goals: int = GOALS,
    todos: int = TODOS,
    events: int = EVENTS,
    seed: int = 0,
    validate: bool = True,
) -> dict[str, Any]:
    """Write the synthetic root (initialised if needed; it must hold no goal yet)."""
    if todos % goals or events % goals:
        raise ValueError("todos and events must divide evenly among the goals")
    t0 = time.perf_counter()
    store = FileStore(root)
    store.init()
    if store.goal_ids():
        raise ValueError(f"{root} already holds goals")
    rng = random.Random(seed)
    blobs: dict[str, bytes] = {}
    probes: list[dict[str, Any]] = []
    counts = {"public": 0, "team": 0, "private": 0}
    was_enabled = gc.isenabled()
    gc.disable()  # 100,000 small dicts: the collector would be most of the cost
    try:
        for gi in range(goals):
            goal_id = f"g{gi:02d}"
            g = _Goal(goal_id, blobs, validate)
            found = _goal_history(g, gi, rng, todos // goals, events // goals)
            probes = probes or found
            counts[goal_visibility(gi)] += 1
            with store.writing(goal_id) as writer:
                writer.append(g.envelopes)
    finally:
        if was_enabled:
            gc.enable()
    packed = []
    for ref, data in blobs.items():  # bulk: the engine's layout, one write each, no fsync
        path = store.blobs.path(ref)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if len(data) <= PACK_BLOB_BYTES:  # and in the pack, as `BlobStore.put` appends it
            packed.append(pack_record(ref.removeprefix("sha256:"), data))
    if packed:
        (store.blobs.base / PACK).write_bytes(b"".join(packed))
    return {
        "root": str(root),
        "goals": goals,
        "goal_visibility": counts,
        "todos": todos,
        "events": events,
        "blobs": len(blobs),
        "ledger_bytes": sum(store.ledger_path(g).stat().st_size for g in store.goal_ids()),
        "probes": probes,
        "head": HEAD,
        "seconds": round(time.perf_counter() - t0, 2),
    }


def verify(root: Path | str) -> dict[str, Any]:
    """Check the root the way a user would trust it: every chain verifies, every line is a
    valid envelope, and each goal folds to the expected shape."""
    from loopx.engine.core import load_state
    from loopx.model.events import Envelope, validate_data

    store = FileStore(root)
    events = todos = 0
    statuses: dict[str, int] = {}
    gc.disable()
    try:
        for goal_id in store.goal_ids():
            report = store.verify(goal_id)
            assert report.ok, (goal_id, report.to_dict())
            for env in store.read(goal_id).events:
                Envelope.model_validate(env)
                validate_data(env["type"], env["data"])
                events += 1
            state = load_state(store, goal_id).state
            assert state is not None
            todos += len(state.todos)
            for t in state.todos.values():
                statuses[t.status] = statuses.get(t.status, 0) + 1
    finally:
        gc.enable()
    return {"events": events, "todos": todos, "statuses": dict(sorted(statuses.items()))}


# -- the equivalent Markdown, for MkDocs --------------------------------------------------------


def _sees(audience: str, visibility: str) -> bool:
    return RANK[visibility] <= RANK[audience]


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|")


def write_markdown(root: Path | str, folder: Path | str) -> dict[str, Any]:
    """An MkDocs project holding the same pages `loopx build` writes for public and team:
    per audience a goal index per visible goal and one page per visible todo."""
    from loopx.engine.core import load_state

    store = FileStore(root)
    folder = Path(folder)
    docs = folder / "docs"
    states = {}
    for goal_id in store.goal_ids():
        state = load_state(store, goal_id).state
        assert state is not None
        states[goal_id] = state
    pages = 0
    nav: list[Any] = [{"Home": "index.md"}]
    home = ["# Synthetic root", ""]
    for audience in ("public", "team"):
        section = []
        home += [f"## {audience.capitalize()}", ""]
        for goal_id, st in sorted(states.items()):
            if not _sees(audience, st.visibility):
                continue
            base = docs / audience / goal_id
            base.mkdir(parents=True, exist_ok=True)
            todos = [t for t in st.todos.values() if _sees(audience, t.visibility)]
            visible = {t.todo_id for t in todos}
            dependents: dict[str, list[str]] = {}
            for t in todos:
                for d in t.depends_on:
                    if d in visible:
                        dependents.setdefault(d, []).append(t.todo_id)
            evidence: dict[str, list[Any]] = {}
            for e in st.evidence.values():
                if e.todo_id in visible and _sees(audience, e.visibility):
                    evidence.setdefault(e.todo_id, []).append(e)
            gates: dict[str, list[Any]] = {}
            for q in st.gates.values():
                if _sees(audience, q.visibility):
                    for t_id in q.blocks:
                        gates.setdefault(t_id, []).append(q)
            by_status: dict[str, int] = {}
            for t in todos:
                by_status[t.status] = by_status.get(t.status, 0) + 1
            index = [
                f"# {st.title}",
                "",
                f"Status: **{st.status}** · revision {st.revision}",
                "",
                "## Objective",
                "",
                str(st.objective),
                "",
                "## Acceptance",
                "",
                *[f"- {a}" for a in st.acceptance],
                "",
                "## Progress",
                "",
                ", ".join(f"{n} {s}" for s, n in sorted(by_status.items())),
                "",
                "## Todos",
                "",
                "| Todo | Status | Priority |",
                "|---|---|---|",
            ]
            for t in sorted(todos, key=lambda t: t.todo_id):
                index.append(f"| [{_md(t.title)}]({t.todo_id}.md) | {t.status} | p{t.priority} |")
                lines = [
                    f"# {t.title}",
                    "",
                    f"[{goal_id}](index.md) · `{t.todo_id}` · **{t.status}** · "
                    f"{t.role} · p{t.priority}",
                    "",
                ]
                if t.acceptance:
                    lines += ["## Acceptance", "", str(t.acceptance), ""]
                deps = [d for d in t.depends_on if d in visible]
                if deps:
                    lines += ["## Depends on", "", *[f"- [{d}]({d}.md)" for d in deps], ""]
                if dependents.get(t.todo_id):
                    lines += [
                        "## Needed by",
                        "",
                        *[f"- [{d}]({d}.md)" for d in dependents[t.todo_id]],
                        "",
                    ]
                if gates.get(t.todo_id):
                    lines += [
                        "## Gates",
                        "",
                        *[f"- {q.status}: {q.question}" for q in gates[t.todo_id]],
                        "",
                    ]
                if evidence.get(t.todo_id):
                    lines += ["## Evidence", "", "| Kind | Summary | Revision | Freshness |"]
                    lines += ["|---|---|---|---|"]
                    for e in evidence[t.todo_id]:
                        fresh = "current" if e.revision == HEAD else "historical"
                        refs = " ".join(f"<{r}>" for r in e.refs)
                        lines.append(
                            f"| {e.kind} | {_md(e.summary)} {refs} | `{(e.revision or '')[:10]}` "
                            f"| {fresh} |"
                        )
                    lines.append("")
                (base / f"{t.todo_id}.md").write_text("\n".join(lines), "utf-8")
                pages += 1
            (base / "index.md").write_text("\n".join(index) + "\n", "utf-8")
            pages += 1
            section.append({goal_id: f"{audience}/{goal_id}/index.md"})
            home.append(f"- [{st.title}]({audience}/{goal_id}/index.md)")
        nav.append({audience.capitalize(): section})
        home.append("")
    (docs / "index.md").write_text("\n".join(home), "utf-8")
    pages += 1
    # Nav lists the goal indexes only (they link to their todo pages), as the loopx site
    # does; a nav of 8,000 pages would be rendered into every page and is not a fair peer.
    # Search is off: loopx builds no search index either.
    config = {
        "site_name": "Synthetic root",
        "docs_dir": "docs",
        "site_dir": "site",
        "use_directory_urls": False,
        "theme": {"name": "mkdocs"},
        "plugins": [],
        "nav": nav,
    }
    # JSON is valid YAML: no YAML writer needed.
    (folder / "mkdocs.yml").write_text(json.dumps(config, indent=1) + "\n", "utf-8")
    return {"folder": str(folder), "pages": pages}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--goals", type=int, default=GOALS)
    parser.add_argument("--todos", type=int, default=TODOS)
    parser.add_argument("--events", type=int, default=EVENTS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", type=Path, help="also write the MkDocs project here")
    parser.add_argument("--verify", action="store_true", help="check chains, envelopes, fold")
    args = parser.parse_args(argv)
    summary = generate(
        args.root, goals=args.goals, todos=args.todos, events=args.events, seed=args.seed
    )
    print(json.dumps(summary, indent=1))
    if args.verify:
        print(json.dumps(verify(args.root), indent=1))
    if args.markdown:
        print(json.dumps(write_markdown(args.root, args.markdown), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
