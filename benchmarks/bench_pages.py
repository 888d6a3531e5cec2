"""What the README-facing artifacts (issue 14) cost a build: the search index, the Atom feeds
and the badges, on the synthetic root of `benchmarks/gen_root.py` (50 goals, 10,000 todos,
100,000 events).

    python -m benchmarks.bench_pages            # about a minute on 2 cores
    python -m benchmarks.bench_pages --quick    # a tenth of the size

Measures CPU time of this process (the machine is shared, so wall time is noisy): a full
in-memory `make_site` of the public and team partitions (serial), and, on the same folded
states, what the new artifacts add: collecting the search items and feed entries of every
visible goal (done on every build, also when goals are carried over) and rendering the
search index, the feeds and the badges.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from benchmarks.gen_root import generate
from loopx.build.pipeline import gather, make_site
from loopx.build.site import visibility_split
from loopx.model.config import ProjectConfig
from loopx.privacy.audience import Lens
from loopx.projections.badge import goal_badge
from loopx.projections.feed import feed, goal_entries
from loopx.projections.index import goal_summary
from loopx.projections.search import search_index, search_items
from loopx.render.badge import to_svg
from loopx.render.env import render
from loopx.render.jsonout import dumps
from loopx.store.filestore import FileStore


def cpu(fn):  # type: ignore[no-untyped-def]
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    os.environ["LOOPX_BUILD_WORKERS"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        generate(root, goals=50 // scale, todos=10000 // scale, events=100000 // scale)
        goals = gather(FileStore(root))
        audiences = ("public", "team")
        build_s, (site, _) = cpu(lambda: make_site(root, audiences, None))
        project = ProjectConfig()

        def collect() -> tuple[int, int]:
            n_items = n_entries = 0
            for audience in audiences:
                visible = sorted(visibility_split(goals, audience)[0])
                lens = Lens(audience)
                items = [i for g in visible for i in search_items(goals[g], lens)]
                entries = [e for g in visible for e in goal_entries(goals[g], lens, "")]
                n_items += len(items)
                n_entries += len(entries)
            return n_items, n_entries

        collect_s, (n_items, n_entries) = cpu(collect)

        def draw() -> int:
            size = 0
            for audience in audiences:
                visible = sorted(visibility_split(goals, audience)[0])
                lens = Lens(audience)
                items = [i for g in visible for i in search_items(goals[g], lens)]
                size += len(dumps(search_index(items, audience)))
                for g in visible:
                    fd = feed(goal_entries(goals[g], lens, ""), feed_id="x", title="t")
                    size += len(
                        render(
                            "feed.xml",
                            fd=fd,
                            base=None,
                            self_href=None,
                            page="index.html",
                            author=project.name,
                            generator="g",
                        )
                    )
                    size += len(to_svg(goal_badge(goal_summary(goals[g], lens))))
            return size

        draw_s, size = cpu(draw)
        new = [
            p
            for p in site.artifacts
            if p.endswith(("feed.xml", "badge.svg", "badge.json", "search.json", "search-index.js"))
        ]
        print(f"root: {len(goals)} goals, {sum(len(s.todos) for s in goals.values())} todos")
        print(
            f"make_site public+team (serial, CPU): {build_s:.2f} s, {len(site.artifacts)} files "
            f"({len(new)} of them feeds, badges and search indexes)"
        )
        print(
            f"collect search items + feed entries (every build): {collect_s:.3f} s "
            f"({n_items} items, {n_entries} entries) = "
            f"{100 * collect_s / build_s:.1f}% of the build"
        )
        print(
            f"render search index, feeds, goal badges (CPU, recomputed here): {draw_s:.3f} s, "
            f"{size / 1e6:.1f} MB = {100 * draw_s / build_s:.1f}% of the build"
        )


if __name__ == "__main__":
    main()
