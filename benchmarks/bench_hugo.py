"""Cold full build, `loopx build` against Hugo on the same pages, alternating, in one run.

    benchmarks/setup                    # MkDocs and Debian's `hugo` package
    python -m benchmarks.bench_hugo     # a few minutes on 2 cores; writes benchmarks/RESULTS.md

On the root of `benchmarks/gen_root.py` (50 goals, 10,000 todos, 100,000 events), loopx
builds the public and team partitions into an empty folder with no snapshot, build memo or
scan memo (as a fresh checkout's CI does), and Hugo builds the same pages from Markdown: per
audience one page per visible goal and one per visible todo, with the same titles, statuses,
dependencies, gates and evidence (`gen_root.write_markdown`, turned into a Hugo site with
minimal layouts). Each round runs both, one after the other, in alternating order, so both
see the same load; the report gives medians of wall and CPU time (user + system, children
included) and their ratios. Without `hugo` on PATH the benchmark says so and stops (exit 2).

Every round builds into a folder of its own, and the folders are removed only once every
round is timed: on a file system that does not reuse an inode soon after it is deleted
(ext4 without a journal skips inodes deleted in the last 5 s, or 300 s while their inode
table block is dirty), removing one round's 8,000-odd files made every file the next round
created scan past them (a third of a cold build's CPU time, in `perf`), for whichever tool
came next. Neither tool's memory is sampled while it is timed (`bench_build.run(...,
sample=False)`): reading the page tables of loopx's three processes every 20 ms costs more
than Hugo's one.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks import gen_root
from benchmarks.bench_build import (
    RESULTS,
    _build_cmd,
    _clear_caches,
    _machine,
    _must,
    run,
    workdir,
)
from benchmarks.bench_engine import pace

START_MARK = "<!-- bench_hugo:start -->"
END_MARK = "<!-- bench_hugo:end -->"
MB = 1024 * 1024

BASEOF = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ .Title }} · {{ site.Title }}</title>
<link rel="stylesheet" href="/style.css"></head>
<body><header><a href="/index.html">{{ site.Title }}</a>
{{ with .Parent }}› <a href="{{ .RelPermalink }}">{{ .Title }}</a>{{ end }}</header>
<main>{{ block "main" . }}{{ end }}</main>
<footer>Built from the synthetic root.</footer></body></html>
"""
SINGLE = '{{ define "main" }}{{ .Content }}{{ end }}\n'
LIST = (
    '{{ define "main" }}{{ .Content }}<ul>{{ range .Pages }}<li><a href="{{ .RelPermalink }}">'
    "{{ .Title }}</a></li>{{ end }}</ul>{{ end }}\n"
)
_LINK = re.compile(r"\]\(([^)\s]+)\.md\)")


def hugo_binary() -> str | None:
    return shutil.which("hugo")


def hugo_version(binary: str) -> str:
    out = subprocess.run([binary, "version"], capture_output=True, text=True, check=False)
    return out.stdout.strip()


def write_hugo(markdown: Path, site: Path) -> int:
    """The MkDocs project of `gen_root.write_markdown` as a Hugo site: each page's first
    heading becomes its title, links to `x.md` point at `x.html`, a goal's index is its
    section page. Returns the number of content pages."""
    content = site / "content"
    pages = 0
    for source in sorted((markdown / "docs").rglob("*.md")):
        rel = source.relative_to(markdown / "docs")
        text = source.read_text("utf-8")
        first, _, body = text.partition("\n")
        title = first.removeprefix("# ").strip()
        body = _LINK.sub(lambda m: f"]({m.group(1)}.html)", body)
        name = "_index.md" if rel.name == "index.md" else rel.name
        target = content / rel.parent / name
        target.parent.mkdir(parents=True, exist_ok=True)
        quoted = title.replace("\\", "\\\\").replace('"', '\\"')
        target.write_text(f'---\ntitle: "{quoted}"\n---\n{body}', "utf-8")
        pages += 1
    layouts = site / "layouts" / "_default"
    layouts.mkdir(parents=True, exist_ok=True)
    (layouts / "baseof.html").write_text(BASEOF, "utf-8")
    (layouts / "single.html").write_text(SINGLE, "utf-8")
    (layouts / "list.html").write_text(LIST, "utf-8")
    (site / "static").mkdir(exist_ok=True)
    (site / "static" / "style.css").write_text("body { font-family: sans-serif; }\n", "utf-8")
    (site / "hugo.toml").write_text(
        'baseURL = "https://example.org/"\ntitle = "Synthetic root"\nuglyURLs = true\n'
        'disableKinds = ["taxonomy", "term"]\n',
        "utf-8",
    )
    return pages


def _files(folder: Path) -> int:
    return sum(1 for p in folder.rglob("*") if p.is_file())


def bench(work: Path, *, size: tuple[int, int, int], rounds: int, hugo: str) -> dict[str, Any]:
    r: dict[str, Any] = {"machine": _machine(), "size": list(size), "hugo": hugo_version(hugo)}
    r["pace"] = [pace()]
    root, md, site = work / "root", work / "md", work / "hugo"
    goals, todos, events = size
    r["generated"] = gen_root.generate(root, goals=goals, todos=todos, events=events)
    gen_root.write_markdown(root, md)
    r["hugo_pages"] = write_hugo(md, site)
    loopx_runs, hugo_runs = [], []
    outputs: list[Path] = []  # removed only once every round is timed (see the docstring)
    for i in range(rounds):
        order = ("loopx", "hugo") if i % 2 == 0 else ("hugo", "loopx")
        for tool in order:
            if tool == "loopx":
                _cold(root)
                out = work / f"loopx-{i}"
                loopx_runs.append(_must(run(_build_cmd(root, out), sample=False), "loopx build"))
                r["loopx_files"] = _files(out)
            else:
                out = work / f"hugo-{i}"
                cmd = [hugo, "--quiet", "--source", str(site), "--destination", str(out)]
                hugo_runs.append(_must(run(cmd, sample=False), "hugo"))
                r["hugo_files"] = _files(out)
            outputs.append(out)
    for out in outputs:
        shutil.rmtree(out)
    r["loopx"] = _summary(loopx_runs)
    r["hugo_run"] = _summary(hugo_runs)
    r["wall_ratio"] = r["loopx"]["wall"] / r["hugo_run"]["wall"]
    r["cpu_ratio"] = r["loopx"]["cpu"] / r["hugo_run"]["cpu"]
    r["load_end"] = os.getloadavg()
    r["pace"].append(pace())
    return r


def _cold(root: Path) -> None:
    """No snapshot, no build memo, and no scan memo (`.loopx/private/cache/scan/`, where the
    previous round's build left the public files it found clean): a fresh checkout has
    none of them."""
    _clear_caches(root)
    shutil.rmtree(root / ".loopx" / "private" / "cache" / "scan", ignore_errors=True)


def _summary(runs: list[Any]) -> dict[str, Any]:
    return {
        "wall": statistics.median(m.seconds for m in runs),
        "cpu": statistics.median(m.cpu for m in runs),
        "maxrss": max(m.maxrss for m in runs),
        "walls": [round(m.seconds, 2) for m in runs],
        "cpus": [round(m.cpu, 2) for m in runs],
    }


def _mount(path: Path) -> str:
    """The type of the file system `path` is on (`/proc/self/mounts`), or '' if unknown."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return ""
    found, kind = "", ""
    target = str(path.resolve())
    for line in mounts:
        fields = line.split()
        inside = len(fields) > 2 and (target + "/").startswith(fields[1].rstrip("/") + "/")
        if inside and len(fields[1]) >= len(found):
            found, kind = fields[1], fields[2]
    return kind


def section(r: dict[str, Any], rounds: int, work: Path | None = None) -> str:
    m = r["machine"]
    load = ", ".join(f"{x:.1f}" for x in m["load"])
    end = ", ".join(f"{x:.1f}" for x in r["load_end"])
    lx, hg = r["loopx"], r["hugo_run"]
    verdict = (
        "met"
        if r["wall_ratio"] <= 1.0
        else ("within 1.5×" if r["wall_ratio"] <= 1.5 else "**not met**")
    )
    rows = [
        "| cold full build | wall (median) | CPU (median) | peak RSS | files written |",
        "|---|---:|---:|---:|---:|",
        f"| `loopx build` (public + team) | {lx['wall']:.2f} s | {lx['cpu']:.2f} s | "
        f"{lx['maxrss'] / MB:.0f} MB | {r['loopx_files']} |",
        f"| Hugo ({r['hugo_pages']} Markdown pages) | {hg['wall']:.2f} s | {hg['cpu']:.2f} s | "
        f"{hg['maxrss'] / MB:.0f} MB | {r['hugo_files']} |",
        f"| loopx / Hugo | {r['wall_ratio']:.2f}× | {r['cpu_ratio']:.2f}× | | |",
    ]
    return "\n".join(
        [
            START_MARK,
            "## Cold build against Hugo",
            "",
            f"Command: `benchmarks/setup && python -m benchmarks.bench_hugo --rounds {rounds}"
            + (f" --work {work}` (a {_mount(work) or 'file system'} folder; " if work else "` (")
            + f"loopx {m['loopx_commit']}, Python {m['python']}, {r['hugo']}, {m['cores']} "
            f"cores, {m['cpu'] or 'unknown CPU'}; load average {load} at the start, {end} at "
            "the end: the machine is shared, so wall times carry noise; CPU time is the steadier "
            "figure). The root of `benchmarks/gen_root.py` "
            f"({r['size'][0]} goals, {r['size'][1]} todos, {r['size'][2]} events); both tools "
            "build the same pages, one after the other, alternating which goes first, each "
            "round into a folder of its own (all removed at the end).",
            "",
            *rows,
            "",
            f"- Target: loopx ≤ 1.0× Hugo's wall time (≤ 1.5× at the least): {verdict}.",
            f"- All rounds, wall: loopx {lx['walls']} s, Hugo {hg['walls']} s; CPU: loopx "
            f"{lx['cpus']} s, Hugo {hg['cpus']} s.",
            f"- The machine's pace (`bench_engine.pace`, a fixed pure-Python loop in a fresh "
            f"interpreter): {r['pace'][0]:.0f} ms at the start, {r['pace'][1]:.0f} ms at the "
            "end; runs compare only at the same pace.",
            "- loopx writes more than the pages (status, graph, workbench and review JSON, "
            "Markdown, Mermaid and DOT, feeds, badges, search index, manifest) and scans every "
            "public byte before writing; Hugo also writes its RSS feeds and sitemap.",
            END_MARK,
        ]
    )


def write_results(text: str) -> None:
    old = RESULTS.read_text("utf-8") if RESULTS.exists() else "# Benchmark results\n"
    if START_MARK in old and END_MARK in old:
        a, b = old.index(START_MARK), old.index(END_MARK) + len(END_MARK)
        new = old[:a] + text + old[b:]
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    RESULTS.write_text(new, "utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--work", type=Path, help="working folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--rounds", type=int, default=5, help="cold builds of each tool")
    parser.add_argument("--quick", action="store_true", help="a tenth of the size (smoke run)")
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args(argv)
    hugo = hugo_binary()
    if hugo is None:
        print(
            "bench_hugo: Hugo is not installed (no `hugo` on PATH); run `benchmarks/setup` "
            "(Debian: apt-get install hugo)",
            file=sys.stderr,
        )
        return 2
    size = (10, 1000, 10_000) if args.quick else (gen_root.GOALS, gen_root.TODOS, gen_root.EVENTS)
    with workdir(args.work, args.keep) as work:
        r = bench(work, size=size, rounds=args.rounds, hugo=hugo)
    text = section(r, args.rounds, args.work)
    print(text)
    if not args.no_write and not args.quick:
        write_results(text)
        print(f"\nwrote {RESULTS.relative_to(RESULTS.parents[1])}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
