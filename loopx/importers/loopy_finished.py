"""Parse loopy-loop's `project_state/finished.md`: the outer role's accepted-work ledger.

The file is free-form Markdown written by agents. loopy-loop documents its shape only by
convention: one entry per accepted piece of work, as a list item or a `##` section, naming the
delivery evidence (PR URL, branch, merge commit, checks/CI status) and logical references
(`repo:/path`, `session:/path`). This module splits entries and pulls those facts out; it never
fails on what it does not recognise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from loopx.importers.sanitize import first_line, has_local_path, norm_time

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_ITEM = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
_STAMP = re.compile(
    r"\b\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?\b"
)
_TASK = re.compile(r"\b(T\d{2,6})\b")
_PR_URL = re.compile(r"https?://[^\s)>\]\"'`]+/(?:pull|pulls|merge_requests)/\d+")
_PR_NUM = re.compile(r"(?i)\b(?:PR|pull request)\s*#(\d+)\b")
_BRANCH = re.compile(r"(?i)\bbranch\b\s*[:=]?\s*(`[^`\s]+`|[A-Za-z0-9][\w./-]*)")
_COMMIT = re.compile(
    r"(?i)\b(merge(?:d)?(?:\s+commit)?|squash(?:ed)?(?:\s+commit)?|commit(?:ted)?|sha)\b"
    r"[^0-9a-f\n]{0,24}?\b([0-9a-f]{7,40})\b"
)
_CHECKS = re.compile(r"(?i)\b(checks?|ci)\b\s*[:=]?\s*([^\n;,.()]{1,60})")
_LOGICAL = re.compile(
    r"\b(?:(?:repo|session|root|parent):/|(?:session|trace):[\w.-]+:/)[^\s)>\]\"'`,;]+"
)
_BRANCH_STOP = frozenset(
    [
        "is",
        "was",
        "the",
        "a",
        "an",
        "and",
        "to",
        "of",
        "with",
        "for",
        "on",
        "in",
        "at",
        "from",
        "into",
        "off",
        "main's",
        "protection",
    ]
)
_CHECK_WORDS = re.compile(
    r"(?i)\b(pass(?:ed|ing)?|green|success(?:ful)?|ok|fail(?:ed|ing|ure)?|red|pending|"
    r"running|skipped|cancel(?:l)?ed)\b"
)


@dataclass
class Delivery:
    prs: list[str] = field(default_factory=list)
    branches: list[str] = field(default_factory=list)
    commits: list[tuple[str, str]] = field(default_factory=list)  # (label, sha)
    checks: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)  # logical refs: repo:/x, session:/y


@dataclass
class FinishedEntry:
    index: int  # 1-based position in the file
    title: str
    text: str
    timestamp: str | None = None
    task: str | None = None
    delivery: Delivery = field(default_factory=Delivery)


def _entries(text: str) -> list[str]:
    lines = text.splitlines()
    sectioned = any((m := _HEADING.match(line)) and len(m.group(1)) >= 2 for line in lines)
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in lines:
        heading = _HEADING.match(line)
        if heading and len(heading.group(1)) == 1:
            current = None  # the file's title, not an entry
            continue
        starts = (heading is not None) if sectioned else (_ITEM.match(line) is not None)
        if starts:
            current = [line]
            blocks.append(current)
        elif current is not None:
            current.append(line)
    return ["\n".join(block).strip() for block in blocks if "\n".join(block).strip()]


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def delivery_of(text: str) -> Delivery:
    """The delivery facts named in one entry."""
    d = Delivery()
    d.prs = _unique(
        [u for u in _PR_URL.findall(text) if "@" not in u.split("/")[2]]
        + [f"PR #{n}" for n in _PR_NUM.findall(text)]
    )
    for raw in _BRANCH.findall(text):
        name = raw.strip("`")
        if name.lower() not in _BRANCH_STOP and not has_local_path(name):
            d.branches.append(name)
    d.branches = _unique(d.branches)
    seen: set[str] = set()
    for label, sha in _COMMIT.findall(text):
        sha = sha.lower()
        if sha not in seen:
            seen.add(sha)
            kind = "merge commit" if label.lower().startswith(("merge", "squash")) else "commit"
            d.commits.append((kind, sha))
    for _, status in _CHECKS.findall(text):
        status = status.strip().strip("`*")
        if _CHECK_WORDS.search(status):
            d.checks.append(status)
    d.checks = _unique(d.checks)
    d.refs = _unique([r.rstrip(".") for r in _LOGICAL.findall(text)])
    return d


def parse_finished(text: str) -> list[FinishedEntry]:
    """Every entry of a finished ledger, in file order."""
    out: list[FinishedEntry] = []
    for index, block in enumerate(_entries(text), start=1):
        head = block.splitlines()[0]
        stamp = _STAMP.search(head)
        title_src = block
        if stamp:
            title_src = (head[: stamp.start()] + head[stamp.end() :]).strip(" -—:|")
        title = first_line(title_src.strip(" -—:|")) or first_line(block)
        task = _TASK.search(block)
        out.append(
            FinishedEntry(
                index=index,
                title=title,
                text=block,
                timestamp=norm_time(stamp.group(0)) if stamp else None,
                task=task.group(1) if task else None,
                delivery=delivery_of(block),
            )
        )
    return out
