"""Micro-benchmark of the public-boundary scan: throughput over a public build's worth of text.

Generates ~10,000 small public JSON and HTML documents (status-page shaped: prose, hashes,
revisions, event ids, dates, public URLs, escaped quotes) and times `Scanner.scan_text` over
them with 1,000 forbidden strings. Run: ``python benchmarks/bench_scan.py [--docs N]``. Wall time
suffers when other processes share the machine; CPU time is this process's own cost.
"""

from __future__ import annotations

import argparse
import html
import json
import random
import time

from loopx.privacy.scanner import Scanner


def _words(text: str) -> list[str]:
    return text.split()


WORDS = _words(
    "the agent build review page status todo goal evidence ledger run gate frontier handoff "
    "merge check test pass fail retry claim lease owner revision commit branch release deploy "
    "schema render index graph summary note decision question approve reject defer open done "
    "blocked active cancelled priority depends successor session quota policy public team "
    "project cache manifest publish serve watch rebuild diff golden fixture output error"
)
TITLES = ("Fix", "Add", "Port", "Check", "Render", "Publish", "Review")


def _prose(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    if rng.random() < 0.5:
        words.insert(rng.randrange(len(words)), "don't")
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), '"quoted"')
    if rng.random() < 0.2:
        words.insert(rng.randrange(len(words)), "A & B")
    return " ".join(words).capitalize() + "."


def _todo(rng: random.Random, i: int) -> dict[str, object]:
    return {
        "id": f"todo-{i:05d}",
        "title": f"{rng.choice(TITLES)} {' '.join(rng.choice(WORDS) for _ in range(6))}",
        "status": rng.choice(["open", "active", "done", "blocked"]),
        "summary": _prose(rng, 40),
        "revision": f"{rng.getrandbits(160):040x}",
        "evidence": [
            {
                "ref": f"sha256:{rng.getrandbits(256):064x}",
                "event": f"evt-{rng.getrandbits(64):016x}",
                "observed_at": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z",
                "url": f"https://github.com/loopx-demo/app/pull/{rng.randint(1, 999)}",
                "note": _prose(rng, 25),
            }
            for _ in range(2)
        ],
        "version": f"{rng.randint(0, 3)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
        "docs": f"https://example.com/docs?page={rng.randint(1, 9)}&q=status%20page",
    }


def _html(todo: dict[str, object]) -> str:
    evidence = todo["evidence"]
    assert isinstance(evidence, list)
    items = "".join(
        f'<li><a href="{html.escape(e["url"])}">{html.escape(e["ref"])}</a> '
        f"<time>{e['observed_at']}</time> {html.escape(e['note'])}</li>"
        for e in evidence
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(str(todo['title']))}</title></head><body><main>"
        f'<h1>{html.escape(str(todo["title"]))}</h1><p class="status">{todo["status"]}</p>'
        f"<p>{html.escape(str(todo['summary']))}</p><ul>{items}</ul>"
        f"<footer>rev {todo['revision']} · v{todo['version']}</footer></main></body></html>\n"
    )


def documents(count: int, seed: int = 7) -> list[str]:
    """`count` public documents, alternating JSON and HTML."""
    rng = random.Random(seed)
    docs = []
    for i in range(count):
        todo = _todo(rng, i)
        if i % 2:
            docs.append(_html(todo))
        else:
            docs.append(json.dumps(todo, indent=2, sort_keys=True) + "\n")
    return docs


def forbidden(count: int, seed: int = 11) -> list[str]:
    """Team/private strings: field texts and ids that never occur in the public documents."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        if i % 3 == 0:
            out.append(f"sha256:{rng.getrandbits(256):064x}")
        elif i % 3 == 1:
            out.append(f"private-todo-{rng.getrandbits(40):010x}")
        else:
            out.append(f"Team note {i}: {' '.join(rng.choice(WORDS) for _ in range(8))} zq{i}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--forbidden", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    docs = documents(args.docs)
    size = sum(len(d.encode()) for d in docs)
    started = time.perf_counter()
    scanner = Scanner(forbidden(args.forbidden))
    setup = time.perf_counter() - started
    scanner.scan_text(docs[0])  # build the shared anchor automaton outside the timing

    best = best_cpu = float("inf")
    findings = 0
    for _ in range(args.repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        findings = sum(len(scanner.scan_text(doc)) for doc in docs)
        best = min(best, time.perf_counter() - started)
        best_cpu = min(best_cpu, time.process_time() - started_cpu)
    mb = size / 1e6
    print(
        f"{len(docs)} documents, {mb:.1f} MB, {args.forbidden} forbidden strings, "
        f"{findings} findings\n"
        f"scan: {best:.3f} s wall = {mb / best:.1f} MB/s ({best / len(docs) * 1e6:.1f} us/doc); "
        f"{best_cpu:.3f} s CPU = {mb / best_cpu:.1f} MB/s; scanner setup {setup * 1e3:.0f} ms"
    )


if __name__ == "__main__":
    main()
