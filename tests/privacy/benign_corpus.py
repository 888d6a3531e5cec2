"""A corpus of realistic public strings that must pass the boundary untouched.

Grown from the false positives issue 13 measured (versions read as private IPs, example
addresses, `key = value` titles, default broker URLs, overlapping team text) into release
notes, commit messages, doc URLs, SHAs, UUIDs, versions, paths, example addresses and code, the
way they appear in todo titles, gate questions and evidence summaries. Built from a seeded
generator, so it is the same on every run.
"""

from __future__ import annotations

import random
import uuid

# The cases issue 13 measured as altered or blocked.
ISSUE_CASES = [
    "Write to docs@example.com about the launch",
    "Mail ops@example.org and team@example.net the schedule",
    "Commits by noreply@github.com are bot merges",
    "Co-authored-by: octocat <583231+octocat@users.noreply.github.com>",
    "Upgrade to 10.2.0.1",
    "Firmware 10.12.4.2",
    "build 172.17.0.2-final",
    "api_key = settings.api_key",
    "service_key = not-set",
    "password_hash_algorithm = argon2id",
    "token_endpoint_auth_method = client_secret_basic",
    "Rename service_key = not-set",
    "amqp://guest:guest@localhost",
    "amqp://guest:guest@localhost:5672//",
]

# (id, title) of todos whose ids once blocked the build.
ISSUE_IDS = [
    ("upgrade-to-10.2.0.1", "Upgrade the appliance firmware"),
    ("build-192.168.1.20-fix", "Fix the build for the lab appliance image"),
]

# (team text, public text that contains it): the team text must not block the public one.
OVERLAPS = [
    ("Release 2.4.1", "Release 2.4.1: fix crash on empty config"),
    ("Migrate to Postgres 16", "Migrate to Postgres 16 before the freeze"),
    ("Rotate the signing keys", "Rotate the signing keys after the audit"),
    ("Update the onboarding docs", "Update the onboarding docs for the new CLI"),
    ("Fix flaky integration tests", "Fix flaky integration tests in CI matrix"),
    ("Drop Python 3.8 support", "Drop Python 3.8 support in the next minor"),
    ("Add retry with backoff", "Add retry with backoff to the webhook sender"),
    ("Benchmark the cold start", "Benchmark the cold start on the smallest runner"),
]

#: A private todo whose id is a common word: it must not block public text that uses the word.
COMMON_WORD_IDS = ["refactor", "cleanup", "followup"]

_SCOPES = [
    "parser",
    "cli",
    "build",
    "scan",
    "ledger",
    "store",
    "render",
    "docs",
    "ci",
    "deps",
    "api",
    "auth",
    "cache",
    "graph",
    "web",
]
_TYPES = ["feat", "fix", "docs", "chore", "refactor", "perf", "test", "build", "ci", "style"]
_VERBS = [
    "handle empty input",
    "keep sort order stable",
    "avoid quadratic scan on long lines",
    "report the failing path",
    "retry on transient network errors",
    "respect --quiet in every command",
    "close file handles on error",
    "skip hidden folders when walking",
    "accept trailing slashes in URLs",
    "cap the digest at the budget",
    "name the schema in every artifact",
    "document the exit codes",
    "pin the minimum click version",
    "speed up the cold import",
    "drop the unused helper",
]
_FIXES = [
    "fix crash on empty config",
    "faster startup on large repositories",
    "new --format json for every command",
    "Windows paths in the importer",
    "clearer error when the root is missing",
    "smaller wheels",
    "support Python 3.13",
    "deterministic graph layout",
    "a typo in the status page",
    "the timezone of recorded times",
]
_DOC_URLS = [
    "https://docs.python.org/3/library/re.html#re.fullmatch",
    "https://docs.python.org/3/library/unicodedata.html",
    "https://docs.github.com/en/actions/using-workflows/workflow-syntax-for-github-actions",
    "https://docs.github.com/en/authentication/keeping-your-account-and-data-secure",
    "https://developer.mozilla.org/en-US/docs/Web/HTTP/Headers/Authorization",
    "https://developer.mozilla.org/en-US/docs/Web/API/fetch",
    "https://www.rfc-editor.org/rfc/rfc2606",
    "https://www.rfc-editor.org/rfc/rfc6761.html#section-6.5",
    "https://datatracker.ietf.org/doc/html/rfc1918",
    "https://peps.python.org/pep-0621/",
    "https://packaging.python.org/en/latest/specifications/pyproject-toml/",
    "https://click.palletsprojects.com/en/8.1.x/options/",
    "https://jinja.palletsprojects.com/en/3.1.x/templates/#autoescaping",
    "https://mermaid.js.org/syntax/flowchart.html",
    "https://graphviz.org/doc/info/lang.html",
    "https://json-schema.org/draft/2020-12/json-schema-core",
    "https://github.com/loopx-demo/app/pull/128",
    "https://github.com/loopx-demo/app/issues/42#issuecomment-1843",
    "https://github.com/loopx-demo/app/compare/v1.2.0...v1.3.0",
    "https://gitlab.com/loopx-demo/app/-/merge_requests/17",
    "https://pypi.org/project/loopx/0.4.2/",
    "https://example.com/docs?page=2&q=status%20page#top",
    "https://example.org/api/v2/items?limit=50&cursor=abc",
    "http://localhost:8321/goals/launch/",
    "http://127.0.0.1:8000/index.html",
]
_PATHS = [
    "src/loopx/privacy/scanner.py",
    "loopx/build/pipeline.py",
    "tests/privacy/test_privacy_corpus.py",
    "templates/html/goal.html",
    "/usr/local/bin/python3",
    "/etc/ssl/certs/ca-certificates.crt",
    "/var/lib/postgresql/data",
    "/opt/homebrew/bin/git",
    "./scripts/regenerate-site",
    "../shared/DESIGN.md",
    "~/.config/loopx/config.toml",
    "site/public/goals/launch/status.json",
    "C:\\Program Files\\Git\\bin\\git.exe",
    "docs/adr/0007-append-only-ledger.md",
    ".github/workflows/ci.yml",
]
_EMAILS = [
    "docs@example.com",
    "security@example.org",
    "billing@example.net",
    "alice@example.com",
    "noreply@github.com",
    "no-reply@example.com",
    "41898282+github-actions[bot]@users.noreply.github.com",
    "49699333+dependabot[bot]@users.noreply.github.com",
    "user@host.test",
    "ci@example.invalid",
    "nobody@nowhere.invalid",
    "dev@app.localhost",
]
_CODE = [
    "api_key = settings.api_key",
    "token = make_token(user_id)",
    "secret_name = DEPLOY_KEY",
    "password = os.environ['DB_PASSWORD']",
    'password = "${DB_PASSWORD}"',
    "auth_method = client_secret_post",
    "token_type = bearer",
    "max_tokens = 4096",
    "session_key = request.cookies.get(name)",
    "private_key_path = config.key_file",
    "if token is None: raise AuthError()",
    "def get_token(self) -> str: return self._token",
    "export PATH=$HOME/.local/bin:$PATH",
    "redis://localhost:6379/0",
    "postgres://postgres:postgres@localhost:5432/test",
    "mongodb://root:example@localhost:27017/",
    "mysql://root:root@127.0.0.1:3306/app",
    "docker run -p 5432:5432 -e POSTGRES_PASSWORD=postgres postgres:16",
    "AUTH_TOKEN: ${{ secrets.AUTH_TOKEN }}",
    "curl -H 'Authorization: Bearer $TOKEN' https://api.example.com/v1/me",
    "x = a[~mask] + b",
    "password_min_length = 12",
    "credential_helper = store",
    "client_secret_env = LOOPX_CLIENT_SECRET",
]
_VERSION_LEADS = [
    "Upgrade to",
    "Update to",
    "Bump to",
    "Pin to",
    "Firmware",
    "Release",
    "Version",
    "Requires Python",
    "Build",
    "Node",
    "Kernel",
]


def _version(rng: random.Random, parts: int) -> str:
    first = rng.choice([10, 172, 192, 169, 1, 2, 3, 4, 5, 11, 20])
    rest = [str(rng.randint(0, 30)) for _ in range(parts - 1)]
    return ".".join([str(first), *rest])


def corpus() -> list[str]:
    """At least 1,000 distinct realistic public strings (titles are at most 500 characters)."""
    rng = random.Random(13)
    out: list[str] = list(ISSUE_CASES)
    out += [public for _, public in OVERLAPS]
    out += [f"Follow up on the {w} of the parser" for w in COMMON_WORD_IDS]
    out += [f"Read {u}" for u in _DOC_URLS]
    out += [f"See {p} for the details" for p in _PATHS]
    out += [f"Ask {e} before the release" for e in _EMAILS]
    out += [f"Review `{c}`" for c in _CODE]
    out += list(_CODE)
    for fix in _FIXES:
        for _ in range(4):
            out.append(
                f"Release {rng.randint(0, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}: {fix}"
            )
    for _ in range(300):
        kind, scope, verb = rng.choice(_TYPES), rng.choice(_SCOPES), rng.choice(_VERBS)
        out.append(f"{kind}({scope}): {verb} (#{rng.randint(1, 2000)})")
    for _ in range(140):
        lead = rng.choice(_VERSION_LEADS)
        version = _version(rng, rng.choice([3, 4]))
        suffix = rng.choice(["", "-final", "-rc1", " LTS", " (security fix)"])
        out.append(f"{lead} {version}{suffix}")
    for _ in range(60):
        slug = f"build-{_version(rng, 4)}-{rng.choice(['fix', 'final', 'hotfix', 'lab'])}"
        out.append(f"Tag {slug} after the smoke test")
    for _ in range(120):
        sha = f"{rng.getrandbits(160):040x}"
        out.append(
            rng.choice(
                [
                    f"Merged {sha} into main",
                    f"Revert {sha[:7]}: broke the Windows build",
                    f"Bisected to {sha[:12]}",
                    f"CI green at {sha}",
                    f"Evidence bound to sha256:{rng.getrandbits(256):064x}",
                ]
            )
        )
    for _ in range(80):
        ident = uuid.UUID(int=rng.getrandbits(128), version=4)
        out.append(
            rng.choice(
                [
                    f"Request id {ident} timed out",
                    f"Trace {ident} shows the retry",
                    f"Run {ident} completed in 42 s",
                ]
            )
        )
    for _ in range(80):
        a, b = rng.choice(_DOC_URLS), rng.choice(_PATHS)
        out.append(f"Per {a}, move the check into {b}")
    for _ in range(60):
        out.append(
            f"{rng.choice(_VERBS).capitalize()} in {rng.choice(_PATHS)} "
            f"({rng.choice(_TYPES)}, {rng.randint(2, 90)} lines)"
        )
    for _ in range(40):
        out.append(
            f"Notify {rng.choice(_EMAILS)} when {rng.choice(_FIXES)} ships in "
            f"v{rng.randint(1, 4)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"
        )
    seen: set[str] = set()
    unique = [s for s in out if not (s in seen or seen.add(s))]  # type: ignore[func-returns-value]
    return unique
