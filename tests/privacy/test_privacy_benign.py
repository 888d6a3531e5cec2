"""A scanner that cries wolf gets switched off: zero findings on ordinary public documents."""

from __future__ import annotations

import html
import json
import random
import uuid
from urllib.parse import quote

import pytest

from loopx.privacy.redact import redact
from loopx.privacy.scanner import Scanner


def _words(text: str) -> list[str]:
    return text.split()


WORDS = _words(
    "the a of and to in is was for on that with as by at from this be are it an or not "
    "agent build review page status todo goal evidence ledger run gate frontier handoff merge "
    "check test pass fail retry claim lease owner revision commit branch release deploy schema "
    "render index graph summary note decision question approve reject defer open done blocked "
    "token tokens secret secrets password passwords key keys auth author bearer basic home users "
    "root user admin access private public session api client credential hash digest sig "
    "proj ant sk hf gsk dapi pul lin hvs ya eyJ AKIA ghp glpat xoxb npm pypi SG key- EAAA Q~"
)

NEAR_MISSES = [
    "git@github.com:loopx-demo/app.git",
    "ssh://git@github.com/loopx-demo/app.git",
    "https://bob@github.com/loopx-demo/app",
    "icon@2x.png and logo@3x.webp",
    "npm i @scope/pkg@1.2.3",
    "preview on 127.0.0.1:8000 or localhost:3000 or [::1]:8080 or 0.0.0.0",
    "run it from ~/project or ~ or ~/ — about ~20 minutes, ~~struck~~",
    "versions 1.10.2.3, 10.0.1, v2.3.4-rc.1+build.5 and 3.12",
    "max_tokens: 4096, token_count = 123456789, token_budget: 50000",
    "def get_token(self): return self.token_store.current()",
    "password_hash = sha256:" + "ab" * 32,
    "api_key_id: key-rotation-2025, secret_name: DEPLOY_KEY",
    'apiKey: "${OPENAI_API_KEY}", token: <your-token-here>, password = "********"',
    "password: [redacted:password-assignment]",
    "Authorization: Bearer [redacted:jwt]",
    "the bearer of good news; basic functionality works; author: JohnSmith",
    "secret sauce: keep it simple; the key idea is caching",
    "C++ and a + b = c; 50% done; 100 %",
    "https://example.com/docs?page=2&q=status%20page#top",
    "https://github.com/loopx-demo/app/pull/12",
    "https://www.python.org/~guido/ and https://example.edu/home/alice/index.html",
    "https://api.github.com/users/octocat/repos",
    "See /usr/local/bin, ./site/index.html and templates/home/page.html",
    "blocked by 10 items; 192 tests; 172 files",
    "AccountName=public-docs",
    "hf_transfer_enabled and sk-learn-tutorial and ghp_ prefix docs",
    # shapes seen in real code and docs
    "x[~mask] = y[~valid] / z; flags & ~opt; (~typing.Callable)",
    "def f(startToken:Token=None, offendingToken:Token=None): ...",
    '"NextToken": "9f4d9f69-275a-41fe-b58e-2b837bd9ba48", --next-token 9f4d9f69-275a-41fe',
    "key = self.settings.api_key; token = make_token(user_id, secret_b64)",
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCoeR9ieZTjQ3pXCHczuAYZFjlF7tuBkXuEAAAqwerty12345",
    "X-Amz-Credential=AKIAEXAMPLEPBUMBC3GA%2F20170824%2Fus-west-2",
    'proxy = "http://a:b@localhost:3128/"',
    '_SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"',
    "-----BEGIN RSA PRIVATE KEY-----\\nkey omitted for brevity\\n-----END RSA PRIVATE KEY-----",
    "private ranges: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 and 169.254.0.0/16",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
]


def _hex(rng: random.Random, n: int) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


def _prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _record(rng: random.Random, i: int) -> dict[str, object]:
    return {
        "schema": "loopx.status/v1",
        "todo_id": f"todo-{i:04d}",
        "title": _prose(rng, rng.randint(3, 9)),
        "summary": _prose(rng, rng.randint(10, 40)),
        "revision": _hex(rng, 40),
        "short_rev": _hex(rng, 7),
        "head_hash": "sha256:" + _hex(rng, 64),
        "blob": _hex(rng, 64),
        "event_id": f"evt-{_hex(rng, 16)}",
        "operation_id": f"op-{i}:{_hex(rng, 8)}",
        "uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "recorded_at": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z",
        "date": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "version": f"{rng.randint(0, 12)}.{rng.randint(0, 30)}.{rng.randint(0, 99)}",
        "pr": f"https://github.com/loopx-demo/app/pull/{rng.randint(1, 5000)}",
        "docs": f"https://example.com/docs?page={rng.randint(1, 99)}",
        "numbers": [rng.randint(0, 10**9) for _ in range(3)],
        "ratio": round(rng.random(), 4),
        "note": rng.choice(NEAR_MISSES),
    }


def _html(record: dict[str, object]) -> str:
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in record.items()
    )
    return (
        f'<!doctype html><html lang="en"><head><title>{html.escape(str(record["title"]))}'
        f'</title></head><body><a href="{html.escape(str(record["docs"]))}&amp;ref=status">docs'
        f'</a><a href="/search?q={quote(str(record["title"]))}">find</a><table>{rows}</table>'
        "</body></html>"
    )


def benign_documents(count: int = 1200, seed: int = 1234) -> list[str]:
    rng = random.Random(seed)
    docs: list[str] = []
    for i in range(count):
        record = _record(rng, i)
        form = i % 4
        if form == 0:
            docs.append(json.dumps(record, indent=2, sort_keys=True))
        elif form == 1:
            docs.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
        elif form == 2:
            docs.append(_html(record))
        else:
            docs.append("\n".join(f"- **{k}**: {v}" for k, v in record.items()))
    return docs


DOCS = benign_documents()


def test_at_least_a_thousand_documents() -> None:
    assert len(DOCS) >= 1000


@pytest.mark.parametrize("chunk", range(4))
def test_benign_documents_have_no_findings(chunk: int) -> None:
    scanner = Scanner(
        ["team-only objective text", "sha256:" + "0f" * 32, "private-todo-7781"], machine=False
    )
    noisy = {}
    for n, doc in enumerate(DOCS[chunk::4]):
        findings = scanner.scan_text(doc)
        if findings:
            noisy[n] = [(f.kind, f.encoding, doc[f.offset : f.offset + 40]) for f in findings]
    assert noisy == {}


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_not_findings(text: str) -> None:
    assert Scanner(machine=False).scan_text(text) == []
    assert redact(text) == (text, {})
