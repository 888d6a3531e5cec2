"""Recall of the boundary scanner on a public reference: gitleaks' own rule examples.

gitleaks (https://github.com/gitleaks/gitleaks) validates every rule it ships against true and
false positives written next to the rule in ``cmd/generate/config/rules/*.go``: literal
strings, and samples built from a prefix plus a random string drawn from a regex, set in the
assignment contexts of ``utils.GenerateSampleSecrets``. This script reads those files (it never
runs or copies gitleaks code), rebuilds each example the same way (its own small regex sampler;
seeded, so figures repeat), and runs every one through loopx's redaction, as a public field
would be. A true positive counts as found when loopx flags a credential anywhere in it; a false
positive counts as flagged likewise.

Recall is reported per gitleaks rule file (one provider each), with the providers loopx has a
rule for marked; precision as the share of gitleaks' false-positive examples loopx leaves alone.

Run: ``python -m benchmarks.bench_recall [--gitleaks /work/ref/gitleaks] [--write]``
(``--write`` replaces the recall section of benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import ast
import random
import re
import string
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from loopx.privacy.rules import CREDENTIAL_KINDS
from loopx.privacy.scanner import Scanner

RESULTS = Path(__file__).with_name("RESULTS.md")
START, END = "<!-- bench_recall:start -->", "<!-- bench_recall:end -->"

#: gitleaks rule files for providers loopx has a specific rule for (the rest is covered, if at
#: all, by the generic keyword + entropy rules).
COVERED = frozenset(
    {
        "1password",
        "adobe",
        "age",
        "alibaba",
        "anthropic",
        "asana",
        "atlassian",
        "aws",
        "azure",
        "beamer",
        "cloudflare",
        "curl",
        "databricks",
        "definednetworking",
        "digitalocean",
        "discord",
        "docker",
        "doppler",
        "dropbox",
        "duffel",
        "easypost",
        "facebook",
        "gcp",
        "github",
        "gitlab",
        "gocardless",
        "grafana",
        "groq",
        "harness",
        "hashicorp",
        "hashicorp_vault",
        "heroku",
        "huggingface",
        "intra42",
        "jwt",
        "launchdarkly",
        "linear",
        "linkedin",
        "mailchimp",
        "mailgun",
        "mapbox",
        "newrelic",
        "notion",
        "npm",
        "octopusdeploy",
        "openai",
        "perplexity",
        "planetscale",
        "postman",
        "privatekey",
        "pulumi",
        "pypi",
        "sendgrid",
        "sentry",
        "shopify",
        "sidekiq",
        "slack",
        "sourcegraph",
        "square",
        "stripe",
        "supabase",
        "teams",
        "telegram",
        "twilio",
    }
)

# --- a small sampler for the regexes gitleaks draws secrets from -------------------------------

_UTILS = {
    "Numeric": "[0-9]{%s}",
    "Hex": "[a-f0-9]{%s}",
    "AlphaNumeric": "[a-z0-9]{%s}",
    "AlphaNumericExtendedShort": "[a-z0-9_-]{%s}",
    "AlphaNumericExtended": "[a-z0-9=_\\-]{%s}",
    "AlphaNumericExtendedLong": "[a-z0-9\\/=_\\+\\-]{%s}",
}
_HEX_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_CLASSES = {"d": string.digits, "w": string.ascii_letters + string.digits + "_", "s": " "}


class Unsupported(Exception):
    """An expression or regex this reader does not evaluate (the example is skipped)."""


class _Sampler:
    """Draws one random string from a regex of classes, literals, groups and counts."""

    def __init__(self, pattern: str, rng: random.Random) -> None:
        self.p, self.i, self.rng = pattern, 0, rng

    def sample(self) -> str:
        out = self._alternatives()
        if self.i != len(self.p):
            raise Unsupported(self.p)
        return out

    def _alternatives(self) -> str:
        options = [self._sequence()]
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            options.append(self._sequence())
        return self.rng.choice(options)

    def _sequence(self) -> str:
        out = []
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            atom = self._atom()
            low, high = self._count()
            out.append("".join(atom() for _ in range(self.rng.randint(low, high))))
        return "".join(out)

    def _atom(self):  # type: ignore[no-untyped-def]
        p, ch = self.p, self.p[self.i]
        if ch == "[":
            chars = self._class()
            return lambda: self.rng.choice(chars)
        if ch == "(":
            self.i += 1
            if p.startswith("?:", self.i):
                self.i += 2
            elif p.startswith("?i)", self.i) or p.startswith("?", self.i):
                raise Unsupported(p)
            start = self.i
            text = self._alternatives()
            end = self.i
            if self.i >= len(p) or p[self.i] != ")":
                raise Unsupported(p)
            self.i += 1
            inner = p[start:end]
            return lambda: _Sampler(inner, self.rng).sample() if inner else text
        if ch == "\\":
            self.i += 2
            esc = p[self.i - 1]
            if esc in _CLASSES:
                return lambda: self.rng.choice(_CLASSES[esc])
            return lambda: esc
        if ch in "^$":
            self.i += 1
            return lambda: ""
        if ch == ".":
            self.i += 1
            return lambda: self.rng.choice(string.ascii_letters)
        self.i += 1
        return lambda: ch

    def _class(self) -> str:
        p = self.p
        self.i += 1
        negate = p[self.i] == "^"
        if negate:
            raise Unsupported(p)
        chars: list[str] = []
        while p[self.i] != "]":
            ch = p[self.i]
            if ch == "\\":
                esc = p[self.i + 1]
                chars.extend(_CLASSES.get(esc, esc))
                self.i += 2
                continue
            if p[self.i + 1] == "-" and p[self.i + 2] != "]":
                chars.extend(chr(c) for c in range(ord(ch), ord(p[self.i + 2]) + 1))
                self.i += 3
                continue
            chars.append(ch)
            self.i += 1
        self.i += 1
        return "".join(chars)

    def _count(self) -> tuple[int, int]:
        p = self.p
        if self.i >= len(p):
            return 1, 1
        ch = p[self.i]
        if ch == "{":
            end = p.index("}", self.i)
            body = p[self.i + 1 : end]
            self.i = end + 1
            low, _, high = body.partition(",")
            return int(low), int(high) if high else (int(low) if not _ else int(low) + 8)
        if ch in "?*+":
            self.i += 1
            return {"?": (0, 1), "*": (0, 4), "+": (1, 4)}[ch]
        return 1, 1


# --- reading the rule files -------------------------------------------------------------------

_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|`[^`]*`')


def _literal(token: str) -> str:
    if token.startswith("`"):
        return token[1:-1]
    return str(ast.literal_eval(token))


@dataclass
class Example:
    rule_id: str
    provider: str
    text: str
    positive: bool


@dataclass
class _Reader:
    rng: random.Random
    skipped: int = 0
    examples: list[Example] = field(default_factory=list)

    def _split_args(self, text: str) -> list[str]:
        """Top-level comma-separated parts of `text` (strings and brackets respected)."""
        parts, depth, last, i = [], 0, 0, 0
        while i < len(text):
            ch = text[i]
            if ch in '"`':
                match = _STRING.match(text, i)
                if match is None:
                    raise Unsupported(text)
                i = match.end()
                continue
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(text[last:i])
                last = i + 1
            i += 1
        parts.append(text[last:])
        return [p.strip() for p in parts if p.strip()]

    def _call_body(self, text: str, open_at: int) -> tuple[str, int]:
        """The text inside the bracket opening at `open_at`, and the index after its close."""
        depth, i = 0, open_at
        while i < len(text):
            ch = text[i]
            if ch in '"`':
                match = _STRING.match(text, i)
                if match is None:
                    raise Unsupported(text)
                i = match.end()
                continue
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
                if depth == 0:
                    return text[open_at + 1 : i], i + 1
            i += 1
        raise Unsupported(text)

    def value(self, expr: str) -> list[str]:
        """The strings an expression stands for (a list for GenerateSampleSecrets)."""
        expr = re.sub(r"//[^\n]*", "", expr).strip().rstrip(".").rstrip(".").rstrip(".")
        if expr.startswith("utils.GenerateSampleSecrets("):
            body, _ = self._call_body(expr, expr.index("("))
            ident, secret = self._split_args(body)
            return [c.format(i=_literal(ident), s=s) for s in self.value(secret) for c in _CONTEXTS]
        if expr.startswith("utils.GenerateSampleSecret("):
            body, _ = self._call_body(expr, expr.index("("))
            ident, secret = self._split_args(body)
            return [_CONTEXTS[0].format(i=_literal(ident), s=s) for s in self.value(secret)]
        return ["".join(self._concat(expr))]

    def _concat(self, expr: str) -> list[str]:
        out, i = [], 0
        while i < len(expr):
            ch = expr[i]
            if ch.isspace() or ch == "+":
                i += 1
                continue
            if ch in '"`':
                match = _STRING.match(expr, i)
                if match is None:
                    raise Unsupported(expr)
                out.append(_literal(match.group()))
                i = match.end()
                continue
            if expr.startswith("secrets.NewSecret(", i):
                body, i = self._call_body(expr, expr.index("(", i))
                out.append(_Sampler(self._pattern(body), self.rng).sample())
                continue
            raise Unsupported(expr)
        return out

    def _pattern(self, expr: str) -> str:
        parts, i = [], 0
        while i < len(expr):
            ch = expr[i]
            if ch.isspace() or ch == "+":
                i += 1
                continue
            if ch in '"`':
                match = _STRING.match(expr, i)
                if match is None:
                    raise Unsupported(expr)
                parts.append(_literal(match.group()))
                i = match.end()
                continue
            match = re.compile(r'utils\.(\w+)\((?:"(\d+)")?\)').match(expr, i)
            if match is None:
                raise Unsupported(expr)
            name, size = match.groups()
            if name == "Hex8_4_4_4_12":
                parts.append(_HEX_UUID)
            elif name in _UTILS and size:
                parts.append(_UTILS[name] % size)
            else:
                raise Unsupported(expr)
            i = match.end()
        return "".join(parts)

    def read(self, path: Path) -> None:
        source = path.read_text()
        provider = path.stem
        for body in re.split(r"\nfunc ", source)[1:]:
            rule = re.search(r'RuleID:\s*"([^"]+)"', body)
            if rule is None:
                continue
            for name, positive in (("tps", True), ("fps", False)):
                for match in re.finditer(rf"\b{name}\s*:?=\s*(append\({name},\s*)?", body):
                    start = match.end()
                    try:
                        if body.startswith("[]string{", start):
                            inner, _ = self._call_body(body, start + len("[]string"))
                            items = self._split_args(inner)
                        else:
                            open_at = body.index("(", start)
                            call, _ = self._call_body(body, open_at)
                            items = [body[start:open_at] + "(" + call + ")"]
                    except (Unsupported, ValueError):
                        self.skipped += 1
                        continue
                    for item in items:
                        try:
                            texts = self.value(item)
                        except (Unsupported, ValueError, SyntaxError, IndexError, KeyError):
                            self.skipped += 1
                            continue
                        for text in texts:
                            if not text.strip():  # an expression this reader cannot evaluate
                                self.skipped += 1
                                continue
                            self.examples.append(Example(rule.group(1), provider, text, positive))


# Assignment contexts a secret is set in (the kinds of places gitleaks samples: config files,
# source code, YAML, JSON); `i` is the provider's name, `s` the secret.
_CONTEXTS = (
    '{i}_api_token = "{s}"',
    "{i}Token={s}",
    '{{"{i}_token": "{s}"}}',
    "{i}_token: {s}",
    '{i}Token := "{s}"',
)


def measure(gitleaks: Path, seed: int = 13) -> dict[str, object]:
    reader = _Reader(random.Random(seed))
    for path in sorted((gitleaks / "cmd/generate/config/rules").glob("*.go")):
        reader.read(path)
    scanner = Scanner(machine=False)
    credential = frozenset(CREDENTIAL_KINDS)
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # provider -> [found, total]
    flagged = [0, 0]
    for ex in reader.examples:
        hit = any(h.kind in credential for h in scanner.hits(ex.text))
        if ex.positive:
            found[ex.provider][1] += 1
            found[ex.provider][0] += hit
        else:
            flagged[1] += 1
            flagged[0] += hit
    return {"found": dict(found), "flagged": flagged, "skipped": reader.skipped}


def _table(result: dict[str, object]) -> str:
    found: dict[str, list[int]] = result["found"]  # type: ignore[assignment]
    rows = [
        "| provider (gitleaks rule file) | loopx rule | found / examples | recall |",
        "|---|---|---:|---:|",
    ]
    totals = {True: [0, 0], False: [0, 0]}
    for provider in sorted(found):
        hit, total = found[provider]
        covered = provider in COVERED
        totals[covered][0] += hit
        totals[covered][1] += total
        rows.append(
            f"| {provider} | {'yes' if covered else 'generic only'} | {hit} / {total} | "
            f"{100 * hit / total:.0f}% |"
        )
    lines = []
    for covered, label in ((True, "providers with a loopx rule"), (False, "other providers")):
        hit, total = totals[covered]
        lines.append(
            f"- {label}: {hit} of {total} examples found ({100 * hit / max(total, 1):.1f}%)"
        )
    all_hit = totals[True][0] + totals[False][0]
    all_total = totals[True][1] + totals[False][1]
    lines.append(f"- all: {all_hit} of {all_total} ({100 * all_hit / max(all_total, 1):.1f}%)")
    fp_hit, fp_total = result["flagged"]  # type: ignore[misc]
    lines.append(
        f"- gitleaks' false-positive examples left alone: {fp_total - fp_hit} of {fp_total} "
        f"({100 * (fp_total - fp_hit) / max(fp_total, 1):.1f}%)"
    )
    lines.append(f"- examples this reader could not rebuild (skipped): {result['skipped']}")
    return "\n".join(lines) + "\n\n" + "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gitleaks", type=Path, default=Path("/work/ref/gitleaks"))
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    if not (args.gitleaks / "cmd/generate/config/rules").is_dir():
        print(f"no gitleaks checkout at {args.gitleaks}", file=sys.stderr)
        return 2
    table = _table(measure(args.gitleaks))
    print(table)
    if args.write:
        section = (
            f"{START}\n## Recall on a public reference (gitleaks rule examples)\n\n"
            f"Command: `python -m benchmarks.bench_recall --gitleaks /work/ref/gitleaks --write` "
            f"(seeded). True positives and false positives that gitleaks writes next to each "
            f"of its rules, rebuilt and run through loopx's redaction as a public field is.\n\n"
            f"{table}{END}"
        )
        text = RESULTS.read_text()
        if START in text:
            text = text[: text.index(START)] + section + text[text.index(END) + len(END) :]
        else:
            text = text.rstrip("\n") + "\n\n" + section + "\n"
        RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
