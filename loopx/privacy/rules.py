"""What the public-boundary scan looks for: credential formats and personal or machine data.

Each rule is a regex built from a publicly documented token format (or, for the generic rules, a
keyword context plus an entropy test) and a set of anchor literals, one of which every match
contains. A rule only runs on text that contains one of its anchors, so scanning a large build
costs one Aho-Corasick pass plus the few rules that can possibly match. Anchors are exact-case;
a case-insensitive rule lists its anchors as written, lowercase, UPPERCASE and Capitalized, so a
keyword in an odd casing (``pAssWord``) is not looked for.

Decisions on what is *not* a finding, so the scan does not cry wolf:
- hashes loopx writes (``sha256:<64 hex>``, 40/64-hex revisions and hashes, ``evt-<16 hex>``),
  UUIDs, ISO timestamps and versions match no rule: no rule fires on bare hex or digits; the
  generic assignment rules skip such values.
- ``127.0.0.0/8``, ``::1`` and ``0.0.0.0`` are the same on every machine and reveal nothing, so
  only RFC 1918 ranges, link-local ``169.254/16``, IPv6 ULA ``fc00::/7`` and link-local
  ``fe80::/10`` are private IPs; the ranges' own names (``10.0.0.0/8``) are not findings.
- code is not a secret: ``token = make_token(…)`` and ``key = self.settings.api_key``.
- a bare ``~`` or ``~/`` names the reader's own home and no user: not a finding; ``~alice/…``
  is. A ``~word`` not followed by ``/`` is as often code (``~mask``) or prose, and names must be
  lowercase as user names are by convention (``~NOTFOUND/`` is not a home).
- ``git@host:org/repo.git`` is the SSH remote form; ``git`` is a service user: not an e-mail;
  nor is the user part of a URL (``ssh://git@host/…``); a password there is ``url-password``.
- ``icon@2x.png`` style asset names are not e-mail addresses.
- placeholders in assignments (``$TOKEN``, ``${X}``, ``<token>``, ``[redacted:…]``, paths, URLs)
  are not secrets, which also keeps redacted output clean on a second scan.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property

from loopx.model.records import Value

CREDENTIAL = "credential"
PERSONAL = "personal"

Check = Callable[["re.Match[str]"], bool]
Locate = Callable[[str, int], "int | None"]


@dataclass(frozen=True, repr=False, eq=False)
class Rule(Value):
    """One kind of finding: a regex, the anchors that gate it, and an optional post-check.

    The span reported and redacted is the named group ``secret`` when the regex has one and it
    took part in the match, else the whole match. ``generic`` rules (keyword + entropy) yield to
    a specific rule that flags an overlapping span; ``priority`` breaks ties when redacting.

    A rule with ``locate`` is positional: its anchors are common (``@``, ``token``, ``~``), so
    instead of searching the whole text its regex is tried only where ``locate`` says a match
    around each anchor occurrence would start.
    """

    kind: str
    regex: str
    anchors: tuple[str, ...]  # exact case; case-insensitive rules list common casings
    category: str = CREDENTIAL
    check: Check | None = None
    generic: bool = False
    priority: int = 1
    locate: Locate | None = None
    flags: int = 0

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """Compiled on first use: a scan runs only the rules whose anchors occur, and
        compiling all ~100 costs a fresh process tens of milliseconds."""
        return re.compile(self.regex, self.flags)

    def spans(self, text: str, anchors: Iterable[int] = ()) -> Iterator[tuple[int, int]]:
        """Yield the (start, end) of every match in `text`; `anchors` are the start offsets of
        this rule's anchors in `text` (only positional rules use them)."""
        has_secret = "secret" in self.pattern.groupindex
        for match in self._matches(text, anchors):
            if self.check is not None and not self.check(match):
                continue
            span = (
                match.span("secret") if has_secret and match.start("secret") >= 0 else match.span()
            )
            if self.generic or not stand_in(text[span[0] : span[1]]):
                yield span

    def _matches(self, text: str, anchors: Iterable[int]) -> Iterator[re.Match[str]]:
        if self.locate is None:
            yield from self.pattern.finditer(text)
            return
        starts = {self.locate(text, anchor) for anchor in anchors}
        for start in sorted(s for s in starts if s is not None):
            match = self.pattern.match(text, start)
            if match is not None:
                yield match


_RUN = re.compile(r"([A-Za-z])\1{7}")  # one letter eight times in a row (ids hold 10000000)


def stand_in(value: str) -> bool:
    """A token-shaped stand-in, not a secret: ``ghp_xxxx…``, ``sntryu_aaaa…``, ``glc_1111…=``
    (one character is half of it, or a letter repeats eight times in a row; random tokens never
    do, though the numeric ids inside some, as Slack's, may hold runs of one digit).
    Text with whitespace (a PEM block, whose base64 may hold runs of ``A``) is never one."""
    if len(value) < 16 or any(c.isspace() for c in value):
        return False
    return Counter(value).most_common(1)[0][1] * 2 >= len(value) or _RUN.search(value) is not None


def words(text: str) -> frozenset[str]:
    """The whitespace-separated words of `text`, for readable word lists."""
    return frozenset(text.split())


# --- positional rules -----------------------------------------------------------------------

_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_LOCAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")


def _back(text: str, pos: int, chars: frozenset[str], limit: int) -> int:
    """Where a run of `chars` that ends at `pos` starts (looking back at most `limit`)."""
    start = pos
    while start > 0 and pos - start < limit and text[start - 1] in chars:
        start -= 1
    return start


def _at_anchor(text: str, anchor: int) -> int:
    return anchor


def _key_start(text: str, anchor: int) -> int:
    """The start of the key (or ``--flag``) whose keyword begins at `anchor`."""
    return _back(text, anchor, _KEY_CHARS, 36)


def _email_start(text: str, at: int) -> int:
    return _back(text, at, _LOCAL_CHARS, 64)


def _url_start(text: str, at: int) -> int | None:
    """The scheme's start of the URL whose userinfo ends at the ``@`` at `at`."""
    colons = text.rfind("://", max(0, at - 300), at)
    return None if colons < 0 else _back(text, colons, _SCHEME_CHARS, 21)


# --- value tests --------------------------------------------------------------------------------


def shannon_entropy(value: str) -> float:
    """Bits per character of `value`'s character distribution."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def char_classes(value: str) -> int:
    """How many of lower, upper, digit and symbol (not ``-_.``) occur in `value`."""
    lower = upper = digit = symbol = 0
    for ch in value:
        if ch.islower():
            lower = 1
        elif ch.isupper():
            upper = 1
        elif ch.isdigit():
            digit = 1
        elif ch not in "-_.":
            symbol = 1
    return lower + upper + digit + symbol


def _mixed(value: str) -> bool:
    """Random tokens mix upper, lower and digits; words and identifiers rarely do."""
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
    )


_BENIGN_VALUE = re.compile(
    r"""(?x)
    sha256:[0-9a-f]{64}                                   # loopx content references
    | evt-[0-9a-f]{16}                                    # loopx event ids
    | v?\d+(?:\.\d+){1,3}(?:[-+][0-9A-Za-z.-]+)?          # versions
    | \d{4}-\d{2}-\d{2}(?:[T ][0-9:.]+(?:Z|[+-]\d{2}:?\d{2})?)?   # ISO dates and times
    | [a-z][a-z0-9+.-]*://\S*                             # URLs (passwords in URLs: own rule)
    | [./~]\S*                                            # paths
    | \d+                                                 # numbers
    """
)
# Placeholders name where a value comes from: `$TOKEN`, `${db_pass}`, `${{ secrets.X }}`,
# `<token>`, `{token}`, `%(pw)s`, `%PASSWORD%`, `#{pw}`, `@PASSWORD@`, `[redacted:…]`, `****`.
# A leading `$ # % @` is otherwise just a character of the value: `#0kN3SqVXxkwE9htvwAj`.
_PLACEHOLDER = re.compile(
    r"""(?x)
    \$\{?(?:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*)\}?
    | \$\{\{.*\}\}? | \$\(.*\)?
    | <.*>? | \{.*\}? | \[.*\]?
    | %\(?[A-Za-z_]*\)?[sdr] | %[A-Za-z_][A-Za-z0-9_]*%
    | \#\{.*\}? | @[A-Za-z_][A-Za-z0-9_]*@
    | [*•]+ | &[A-Za-z_][A-Za-z0-9_]*
    """
)
_PLACEHOLDER_WORDS = ("redacted", "example", "placeholder", "xxxx", "****", "your")


def placeholder(value: str) -> bool:
    """True for a value that names where the secret comes from rather than holding it."""
    return _PLACEHOLDER.fullmatch(value) is not None


def random_case(value: str) -> bool:
    """Letters that switch case as often as random text does (a third of the time or more);
    identifiers in CamelCase switch once per word (``PasswordHashAlgorithm``)."""
    letters = [c for c in value if c.isalpha()]
    if len(letters) < 12:
        return False
    switches = sum(a.isupper() != b.isupper() for a, b in zip(letters, letters[1:], strict=False))
    return switches * 3 >= len(letters)


def looks_secret(value: str) -> bool:
    """True when an assigned value looks like a real credential, not a word or placeholder."""
    if len(value) < 8 or placeholder(value):
        return False
    if _BENIGN_VALUE.fullmatch(value) or "=" in value.rstrip("="):
        return False  # `a=b` inside a value is code or a query, not a credential
    lowered = value.lower()
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return False
    classes = char_classes(value)
    entropy = shannon_entropy(value)
    if classes >= 3 and entropy >= 2.5:
        return True
    if classes == 2 and len(value) >= 16 and entropy >= 3.2:
        return any(c.isdigit() for c in value) or random_case(value)
    return False


_KEY_SPLIT = re.compile(r"[_.\-]+|(?<=[a-z0-9])(?=[A-Z])")
_SAFE_LAST = words(
    """id ids hash hashes sha digest rev revision count counts ttl type types url uri urls path
    paths file files name names limit limits len length budget budgets size env expiry expires
    expiration at kind format header field mode policy scope scopes used usage estimate estimates
    spent rate total version endpoint host hint hints label prompt ref refs store storage
    rotation rotated length min max enabled required"""
)
_SAFE_FIRST = words(
    """max min num n total no has is use next page continuation pagination cursor public csrf
    xsrf"""
)


_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_PASSWORD_WORDS = ("password", "passwd", "passphrase", "pwd")
_SECRET_WORDS = words("secret secrets token auth credential credentials apikey")
_SECRET_ENDINGS = ("token", "secret", "apikey", "accesskey", "privatekey", "secretkey")
_KEY_PREFIXES = words(
    "api access private secret signing encryption master app client account service"
)


def _key_words(key: str) -> list[str]:
    return [w.lower() for w in _KEY_SPLIT.split(key) if w]


def _names_password(words: list[str]) -> bool:
    return any(w.startswith(_PASSWORD_WORDS) or w.endswith(_PASSWORD_WORDS) for w in words)


def _names_secret(words: list[str]) -> bool:
    for i, word in enumerate(words):
        if word in _SECRET_WORDS or word.endswith(_SECRET_ENDINGS):
            return True
        if word == "key" and i > 0 and words[i - 1] in _KEY_PREFIXES:
            return True
    return False


def _assignment_check(names: Callable[[list[str]], bool]) -> Check:
    """A key that names a secret as a whole word, a value that is not a placeholder."""

    def check(match: re.Match[str]) -> bool:
        words = _key_words(match.group("key"))
        if not words or words[-1] in _SAFE_LAST or words[0] in _SAFE_FIRST:
            return False
        value = match.group("secret")
        if match.string.startswith("(", match.end()) or _DOTTED_NAME.fullmatch(value):
            return False  # code: `token = make_token(...)`, `key = self.settings.api_key`
        return names(words) and looks_secret(value)

    return check


def _value_check(match: re.Match[str]) -> bool:
    return looks_secret(match.group("secret"))


def _mixed_check(match: re.Match[str]) -> bool:
    return _mixed(match.group("secret") if "secret" in match.re.groupindex else match.group())


def _token_body_check(match: re.Match[str]) -> bool:
    """After a distinctive prefix, a body with two of upper, lower and digit and no long runs
    of one character: ``glpat-BwNWujhYhjUs__RY_zrJ`` is a token, ``glpat-xxxxxxxxxxxxxxxxxxxx``
    is not."""
    body = match.group().split("-", 1)[-1]
    kinds = sum(
        (
            any(c.isupper() for c in body),
            any(c.islower() for c in body),
            any(c.isdigit() for c in body),
        )
    )
    return kinds >= 2 and len(set(body)) >= 8


def _mixed_case_check(match: re.Match[str]) -> bool:
    value = match.group()
    return any(c.isupper() for c in value) and any(c.islower() for c in value[4:])


def _aws_secret_check(match: re.Match[str]) -> bool:
    value = match.group("secret")
    return _mixed(value) and not re.fullmatch(r"[0-9a-fA-F]+", value)


def _aws_key_id_check(match: re.Match[str]) -> bool:
    return "EXAMPLE" not in match.group()  # the documented sample key ids


def _basic_auth_check(match: re.Match[str]) -> bool:
    value = match.group("secret")
    if len(value) % 4:
        return False
    try:
        decoded = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


#: Passwords that are documented defaults or stand-ins, not secrets (``amqp://guest:guest@…``).
DEFAULT_PASSWORDS = words(
    """password pass passwd secret pwd token guest admin changeme root postgres mysql redis
    rabbitmq test user example default letmein"""
)
_PORT = re.compile(r"\d{1,5}(?:[/?#]|\Z)")


def _url_password_check(match: re.Match[str]) -> bool:
    user, password = match.group("secret").split(":", 1)
    lowered = password.lower()
    return not (
        len(password) < 3
        or _PORT.match(password) is not None  # scheme://host:8080/path@… is a port, then a path
        or placeholder(password)
        or lowered in DEFAULT_PASSWORDS
        or lowered == user.lower()
        or set(password) <= {"*", "x", "X"}
    )


def _token_user_check(match: re.Match[str]) -> bool:
    user = match.group("secret")
    return bool(re.fullmatch(r"[0-9a-fA-F]{32,}", user)) or (
        not placeholder(user) and looks_secret(user)
    )


def _sas_check(match: re.Match[str]) -> bool:
    before = match.string[max(0, match.start() - 600) : match.start()]
    return any(f"{p}=" in before for p in ("sv", "se", "sp", "sr", "skoid", "spr"))


_URL_USERINFO = re.compile(r"://(?:[^\s/?#@:\"'<>]*:[^\s@\"'<>]*)?\Z")


#: Domains reserved for documentation (RFC 2606, RFC 6761): an address there names nobody.
#: Only the second-level names themselves and the TLDs that can never resolve: a subdomain
#: such as ``corp.example.org`` or a ``corp.example`` name reads as a stand-in for a real
#: company in docs and tests, so it is treated as one.
RESERVED_DOMAINS = frozenset({"example.com", "example.org", "example.net"})
RESERVED_TLDS = (".test", ".invalid", ".localhost")
#: Local parts of addresses that receive nothing (``noreply@github.com``).
NO_REPLY = frozenset({"noreply", "no-reply", "donotreply", "do-not-reply", "notifications"})


def public_address(local: str, domain: str) -> bool:
    """True for documentation and no-reply addresses, which identify no person."""
    domain = domain.lower()
    return (
        domain in RESERVED_DOMAINS
        or domain.endswith(RESERVED_TLDS)
        or local.lower() in NO_REPLY
        or domain == "users.noreply.github.com"
    )


def _email_check(match: re.Match[str]) -> bool:
    text = match.string
    local, _, domain = match.group().partition("@")
    if public_address(local, domain):
        return False
    if local == "git" and text[match.end() : match.end() + 1] == ":":
        return False  # git@github.com:org/repo.git
    if _URL_USERINFO.search(text, max(0, match.start() - 256), match.start()):
        return False  # scheme://user@host or scheme://user:password@host (url-password's)
    return re.match(r"\d+(?:\.\d+)?x\.", domain) is None  # icon@2x.png


_SPELLED_DOT = re.compile(r"\s*[\[({<]\s*dot\s*[\])}>]\s*", re.IGNORECASE)


def _spelled_email_check(match: re.Match[str]) -> bool:
    """``dana [at] corp [dot] com``: an address spelled out against harvesters is an address."""
    domain = _SPELLED_DOT.sub(".", match.group("domain"))
    return not public_address(match.group("local"), domain)


def _windows_home_check(match: re.Match[str]) -> bool:
    return match.group("name").lower() not in {"public", "default", "all users", "default user"}


_RANGE_NAMES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16")


#: Words after which a dotted number is a version: "Upgrade to 10.2.0.1", "Firmware 10.12.4.2".
VERSION_WORDS = words(
    """version versions ver release released releases firmware build builds upgrade upgraded
    upgrading update updated updating bump bumped bumps downgrade downgraded pin pinned
    requires require v tag tagged changelog sdk api python node java kernel ios android macos
    windows chrome"""
)
_VERSION_LEAD = re.compile(r"([A-Za-z]+)(?:\s+(?:to|from|of|is|=|==|>=|<=|~=))?[\s:=]*\Z")


def _ipv4_check(match: re.Match[str]) -> bool:
    """The private ranges themselves (``10.0.0.0/8``) name no host: not findings; nor do dotted
    numbers read as versions: glued into a slug (``build-192.168.1.20-fix``,
    ``172.17.0.2-final``) or after a version word."""
    text, start, end = match.string, match.start(), match.end()
    if text.startswith(_RANGE_NAMES, start):
        return False
    before = text[start - 1 : start] if start else ""
    after = text[end : end + 2]
    if before in ("-", "_", "v", "V") or (after[:1] in ("-", "_") and after[1:].isalpha()):
        return False
    lead = _VERSION_LEAD.search(text, max(0, start - 40), start)
    return lead is None or lead.group(1).lower() not in VERSION_WORDS


def _ipv6_check(match: re.Match[str]) -> bool:
    return match.group().count(":") >= 2


# --- building blocks --------------------------------------------------------------------------

_TOKEN_START = r"(?<![A-Za-z0-9_-])"  # not inside a longer token
_TOKEN_END = r"(?![A-Za-z0-9_-])"
_ALNUM_START = r"(?<![A-Za-z0-9])"
_ALNUM_END = r"(?![A-Za-z0-9])"
_ASSIGN = r"""["']?\s*(?:=|:=|=>|:)\s*["']?"""
_VALUE = r"""(?P<secret>[^\s"'`,;()\[\]{}<>\\]{8,200})"""
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_HEX = "0123456789abcdef"


def _discord_anchors() -> tuple[str, ...]:
    """Bot tokens start with base64 of a decimal user id, which pins their first four chars."""
    return tuple(
        sorted(
            {
                a + b + c + d
                for a in "MNO"
                for b in "DTjz"
                for c in "AEIMQUYcgk"
                for d in "wxyz012345"
            }
        )
    )


def _rule(
    kind: str,
    regex: str,
    anchors: tuple[str, ...] | list[str],
    *,
    flags: int = 0,
    category: str = CREDENTIAL,
    check: Check | None = None,
    generic: bool = False,
    priority: int = 1,
    fold: bool | None = None,
    locate: Locate | None = None,
) -> Rule:
    if fold if fold is not None else flags & re.IGNORECASE:
        anchors = [v for a in anchors for v in (a, a.lower(), a.upper(), a.capitalize())]
    return Rule(
        kind=kind,
        regex=regex,
        flags=flags,
        anchors=tuple(sorted(set(anchors))),
        category=category,
        check=check,
        generic=generic,
        priority=priority,
        locate=locate,
    )


# A header is only a key when key material follows (maybe after "Proc-Type:"-style lines),
# raw or JSON-escaped: a constant holding the header alone is not a secret.
_PEM_BODY = r"(?=(?:\s|\\[nr]|[A-Za-z-]+:[^\n\\]*)*[A-Za-z0-9+/=]{16})"


def _pem(label: str) -> str:
    """A PEM block of `label`: header, key material, and the footer when it is there."""
    return rf"-----BEGIN {label}-----{_PEM_BODY}(?:[\s\S]{{0,12000}}?-----END {label}-----)?"


_PRIVATE_LABEL = r"(?:(?:RSA|DSA|EC|DH|ENCRYPTED) )?PRIVATE KEY"

_PASSWORD_KEYS = r"(?:password|passwd|passphrase|pwd)"
_SECRET_KEYS = (
    r"(?:secret|token|api[_.-]?key|apikey|credentials?|auth"
    r"|(?:access|private|signing|encryption|master|app|client|account|service)[_.-]?key)"
)


def _assignment(
    kind: str, keys: str, anchors: tuple[str, ...], names: Callable[[list[str]], bool]
) -> Rule:
    key = rf"(?P<key>[A-Za-z0-9_.-]{{0,32}}?{keys}[A-Za-z0-9_.-]{{0,32}})"
    separator = rf"(?(flag)(?:=|\s+)[\"']?|{_ASSIGN})"
    regex = rf"(?<![A-Za-z0-9_.-])(?P<flag>--)?{key}{separator}{_VALUE}"
    return _rule(
        kind, regex, anchors, flags=re.IGNORECASE, check=_assignment_check(names), generic=True,
        priority=0, locate=_key_start,
    )  # fmt: skip


def _provider(kind: str, keywords: tuple[str, ...], value: str, check: Check | None = None) -> Rule:
    """A value whose format alone says little (18 digits, 15 letters and digits), assigned to a
    name that starts with the provider's: ``discord_client_secret = "…"``, ``dropboxToken=…``.
    The name must not end in a word that names something public (``discord_url``, ``…_id``)."""
    key = rf"(?P<key>(?i:{'|'.join(keywords)})[A-Za-z0-9_.-]{{0,24}}?)"
    regex = rf"(?<![A-Za-z0-9]){key}{_ASSIGN}(?P<secret>{value})(?![A-Za-z0-9_=+/.-])"

    def named(match: re.Match[str]) -> bool:
        words = _key_words(match.group("key"))
        if not words or words[-1] in _SAFE_LAST or len(set(match.group("secret"))) < 4:
            return False  # `discord_url = …`; `discord=000000000000000000`
        return check is None or check(match)

    return _rule(kind, regex, keywords, check=named, fold=True, locate=_at_anchor)


def _letters_and_digits(match: re.Match[str]) -> bool:
    value = match.group("secret") if "secret" in match.re.groupindex else match.group()
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _varied(match: re.Match[str]) -> bool:
    """Not a stand-in of few characters: ``AKIAXXXXXXXXXXXXXXXX``, ``AIzaaaaa…``."""
    return len(set(match.group())) >= 10


def _curl_user_check(match: re.Match[str]) -> bool:
    user, _, password = match.group("secret").replace("'", "").replace('"', "").partition(":")
    return len(set(password)) >= 4 and not (
        placeholder(password)
        or password.lower() in DEFAULT_PASSWORDS
        or password.lower() == user.lower()
        or password.startswith(("$", "%"))
    )


def _header_value_check(match: re.Match[str]) -> bool:
    value = match.group("secret")
    return not placeholder(value) and char_classes(value) >= 2 and shannon_entropy(value) >= 3.0


_CURL = r"\bcurl\b(?:[^\n]|\\\r?\n){0,400}?\s"  # up to the option, line continuations kept


RULES: tuple[Rule, ...] = (
    # --- cloud providers
    _rule(
        "aws-access-key",
        _ALNUM_START + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}" + _ALNUM_END,
        ["AKIA", "ASIA", "ABIA", "ACCA", "A3T"],
        check=lambda m: _aws_key_id_check(m) and _varied(m),
    ),
    _rule(
        "aws-secret-key",
        r"(?<![A-Za-z0-9])aws[A-Za-z0-9_.-]{0,20}?(?:secret|sk)[A-Za-z0-9_.-]{0,20}"
        + _ASSIGN
        + r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        ["aws"],
        flags=re.IGNORECASE,
        check=_aws_secret_check,
    ),
    _rule(
        "gcp-api-key",
        _TOKEN_START + r"AIza[0-9A-Za-z_-]{35}" + _TOKEN_END,
        ["AIza"],
        check=_varied,
    ),
    _rule(
        "gcp-service-account-key",
        r'"private_key"\s*:\s*"(?P<secret>-----BEGIN '
        + _PRIVATE_LABEL
        + "-----"
        + _PEM_BODY
        + r'[^"]{0,12000})"',
        ['"private_key"'],
        priority=3,
    ),
    _rule("google-oauth-client-secret", r"GOCSPX-[A-Za-z0-9_-]{28}" + _TOKEN_END, ["GOCSPX-"]),
    _rule("google-oauth-token", _TOKEN_START + r"ya29\.[A-Za-z0-9_-]{30,}", ["ya29."]),
    _rule(
        "azure-storage-key",
        r"(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{40,100}={0,2})",
        ["AccountKey=", "SharedAccessKey="],
        flags=re.IGNORECASE,
    ),
    _rule(
        "azure-sas-token",
        r"[?&;]sig=(?P<secret>[A-Za-z0-9%+/]{40,}(?:%3[dD]|=){0,2})",
        ["sig="],
        check=_sas_check,
    ),
    _rule(
        "azure-ad-client-secret",
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
        ["Q~"],
        check=_mixed_check,
    ),
    _rule(
        "alibaba-access-key",
        _ALNUM_START + r"LTAI[A-Za-z0-9]{12,20}" + _ALNUM_END,
        ["LTAI"],
        check=_mixed_check,
    ),
    _rule(
        "digitalocean-token",
        r"do[opr]_v1_[a-f0-9]{64}" + _ALNUM_END,
        ["dop_v1_", "doo_v1_", "dor_v1_"],
    ),
    # --- source hosting and CI
    _rule(
        "github-token",
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{70,240})"
        r"(?![A-Za-z0-9_])",
        ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
    ),
    _rule(
        "gitlab-token",
        _TOKEN_START
        + r"(?:(?:glpat|gldt|glrt|glptt|glft|glsoat|glcbt|glimt|glagent|gloas|glwt|glffct)-"
        r"[A-Za-z0-9_.-]{20,}|GR1348941[A-Za-z0-9_-]{20,})",
        [
            "glpat-",
            "gldt-",
            "glrt-",
            "glptt-",
            "glft-",
            "glsoat-",
            "glcbt-",
            "glimt-",
            "glagent-",
            "gloas-",
            "glwt-",
            "glffct-",
            "GR1348941",
        ],
        check=_token_body_check,
    ),  # fmt: skip
    _rule("docker-hub-token", r"dckr_pat_[A-Za-z0-9_-]{27}" + _TOKEN_END, ["dckr_pat_"]),
    _rule("npm-token", _ALNUM_START + r"npm_[A-Za-z0-9]{36}" + _ALNUM_END, ["npm_"]),
    _rule(
        "pypi-token",
        r"pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,}",
        ["pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"],
    ),
    _rule(
        "vault-token",
        r"(?<![A-Za-z0-9_.-])hv[sb]\.[A-Za-z0-9_-]{24,}",
        ["hvs.", "hvb."],
        check=_varied,
    ),
    _rule(  # the service tokens of Vault before 1.10: `s.` and 24 characters of all three kinds
        "vault-token",
        r"(?<![A-Za-z0-9_.-])s\.[A-Za-z0-9]{24}(?![A-Za-z0-9_.-])",
        ["s."],
        check=lambda m: _mixed(m.group()) and _varied(m),
        locate=_at_anchor,
    ),
    _rule(
        "terraform-token",
        r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}",
        [".atlasv1."],
    ),
    _rule("pulumi-token", _ALNUM_START + r"pul-[a-f0-9]{40}" + _ALNUM_END, ["pul-"]),
    _rule(
        "doppler-token",
        r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}" + _ALNUM_END,
        ["dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."],
    ),
    _rule(
        "databricks-token",
        _ALNUM_START + r"dapi[a-f0-9]{32}(?:-\d)?" + _ALNUM_END,
        ["dapi"],
    ),
    _rule("supabase-token", _ALNUM_START + r"sbp_[a-f0-9]{40}" + _ALNUM_END, ["sbp_"]),
    _rule(
        "heroku-api-key",
        r"(?<![A-Za-z0-9])heroku[A-Za-z0-9_.-]{0,20}?(?:key|token|secret|auth)[A-Za-z0-9_.-]{0,20}"
        + _ASSIGN
        + r"(?P<secret>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
        r"|HRKU-AA[0-9A-Za-z_-]{58}",
        ["heroku", "HRKU-AA"],
        flags=re.IGNORECASE,
    ),
    # --- chat, collaboration, payments, mail
    _rule(
        "slack-token",
        _ALNUM_START + r"(?:xox[abposre](?:\.xox[bp])?-[0-9A-Za-z-]{10,250}"
        r"|xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+)",
        ["xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe", "xapp-"],
        check=lambda m: any(c.isdigit() for c in m.group()),
    ),
    _rule(
        "slack-webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}",
        ["hooks.slack.com/"],
    ),
    _rule(
        "discord-bot-token",
        _TOKEN_START + r"[MNO][DTjz][AEIMQUYcgk][w-z0-5][A-Za-z0-9_-]{19,23}\.[A-Za-z0-9_-]{6}"
        r"\.[A-Za-z0-9_-]{27,38}" + _TOKEN_END,
        _discord_anchors(),
    ),
    _rule(
        "discord-webhook",
        r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{60,}",
        ["discord.com/api/webhooks/", "discordapp.com/api/webhooks/"],
    ),
    _rule(
        "telegram-bot-token",
        r"(?<![A-Za-z0-9_:-])\d{8,10}:AA[A-Za-z0-9_-]{33}" + _TOKEN_END,
        [":AA"],
    ),
    _rule(
        "atlassian-api-token",
        r"ATATT3[A-Za-z0-9_=-]{150,}",
        ["ATATT3"],
    ),
    _rule(
        "linear-api-key",
        r"lin_(?:api|oauth)_[A-Za-z0-9]{40,64}" + _ALNUM_END,
        ["lin_api_", "lin_oauth_"],
    ),
    _rule(
        "notion-token",
        r"(?<![A-Za-z0-9_])(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{46})(?![A-Za-z0-9_])",
        ["secret_", "ntn_"],
        check=_mixed_check,
    ),
    _rule(
        "stripe-key",
        _ALNUM_START + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,247}" + _ALNUM_END,
        ["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
    ),
    _rule("stripe-webhook-secret", r"whsec_[A-Za-z0-9+/=]{32,}", ["whsec_"]),
    _rule(
        "square-token",
        r"(?<![A-Za-z0-9_+/=-])(?:sq0atp-[A-Za-z0-9_-]{22}|sq0csp-[A-Za-z0-9_-]{43}"
        r"|EAAA[A-Za-z0-9_+=-]{60})" + _TOKEN_END,
        ["sq0atp-", "sq0csp-", "EAAA"],
    ),
    _rule(
        "shopify-token",
        r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _ALNUM_END,
        ["shpat_", "shpca_", "shppa_", "shpss_"],
    ),
    _rule(
        "twilio-api-key",
        _ALNUM_START + r"SK[0-9a-f]{32}" + _ALNUM_END,
        ["SK" + h for h in _HEX],
    ),
    _rule(
        "sendgrid-api-key",
        _TOKEN_START + r"SG\.[A-Za-z0-9=_.-]{66}" + _TOKEN_END,  # 22 . 43, or as gitleaks reads it
        ["SG."],
        check=lambda m: _letters_and_digits(m) and _varied(m),
    ),
    _rule("mailgun-api-key", _TOKEN_START + r"key-[0-9a-f]{32}" + _ALNUM_END, ["key-"]),
    _rule("mailchimp-api-key", _ALNUM_START + r"[0-9a-f]{32}-us\d{1,2}" + _ALNUM_END, ["-us"]),
    _rule("postman-api-key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _ALNUM_END, ["PMAK-"]),
    _rule("newrelic-api-key", r"NRAK-[A-Z0-9]{27}" + _ALNUM_END, ["NRAK-"]),
    _rule(
        "sentry-token",
        r"(?:sntrys_[A-Za-z0-9+/=_]{40,}|sntryu_[a-f0-9]{64})",
        ["sntrys_", "sntryu_"],
    ),
    _rule(
        "grafana-token",
        r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,2})",
        ["glsa_", "glc_"],
    ),
    # --- more providers, from gitleaks' published rule set
    _provider("discord-client-secret", ("discord",), r"\d{17,20}|[A-Za-z0-9=_-]{32}|[a-f0-9]{64}"),
    _provider("asana-client-id", ("asana",), r"\d{16}"),
    _provider("linkedin-client-id", ("linkedin", "LinkedIn"), r"[a-z0-9]{14}", _letters_and_digits),
    _provider(
        "dropbox-token",
        ("dropbox",),
        r"[a-z0-9]{15}|sl\.[A-Za-z0-9=_-]{135}|[a-z0-9]{11}AAAAAAAAAA[A-Za-z0-9=_-]{43}",
        _letters_and_digits,
    ),
    _provider(
        "launchdarkly-token",
        ("launchdarkly", "LaunchDarkly"),
        r"[A-Za-z0-9=_-]{40}",
        _letters_and_digits,
    ),
    _provider("beamer-api-token", ("beamer",), r"b_[A-Za-z0-9=_-]{44}", _letters_and_digits),
    _provider("gocardless-api-token", ("gocardless", "GoCardless"), r"live_[A-Za-z0-9=_-]{40}"),
    _provider(
        "mapbox-token", ("mapbox",), r"pk\.[A-Za-z0-9]{60}\.[A-Za-z0-9]{22}", _letters_and_digits
    ),
    _provider("sourcegraph-token", ("sourcegraph",), r"[a-fA-F0-9]{40}", _letters_and_digits),
    _rule(
        "sourcegraph-token",
        _ALNUM_START + r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}" + _ALNUM_END,
        ["sgp_"],
        check=_varied,
    ),
    _rule(
        "planetscale-token",
        _TOKEN_START + r"pscale_(?:pw|tkn|oauth)_[A-Za-z0-9_=.-]{32,64}" + _TOKEN_END,
        ["pscale_pw_", "pscale_tkn_", "pscale_oauth_"],
        check=_letters_and_digits,
    ),
    _rule(
        "duffel-api-token",
        r"duffel_(?:test|live)_[A-Za-z0-9_=-]{43}" + _TOKEN_END,
        ["duffel_test_", "duffel_live_"],
        check=_letters_and_digits,
    ),
    _rule(
        "defined-networking-api-token",
        r"dnkey-[A-Za-z0-9=_-]{26}-[A-Za-z0-9=_-]{52}" + _TOKEN_END,
        ["dnkey-"],
        check=_letters_and_digits,
    ),
    _rule(
        "harness-api-key",
        _TOKEN_START
        + r"(?:pat|sat)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"
        + _ALNUM_END,
        ["pat.", "sat."],
        check=_letters_and_digits,
    ),  # fmt: skip
    _rule(
        "cloudflare-origin-ca-key",
        _ALNUM_START + r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}" + _ALNUM_END,
        ["v1.0-"],
    ),
    _rule(
        "gitlab-session-cookie", r"_gitlab_session=[0-9a-z]{32}" + _ALNUM_END, ["_gitlab_session="]
    ),
    _rule(
        "sidekiq-secret",
        r"BUNDLE_(?:ENTERPRISE|GEMS)__CONTRIBSYS__COM[A-Za-z0-9_]{0,16}"
        + _ASSIGN
        + r"(?P<secret>[a-f0-9]{8}:[a-f0-9]{8})"
        + _ALNUM_END,
        ["BUNDLE_ENTERPRISE__CONTRIBSYS__COM", "BUNDLE_GEMS__CONTRIBSYS__COM"],
    ),  # fmt: skip
    _rule(
        "facebook-access-token",
        # ASCII digits, as its lookbehind and `locate` read them (`\d` took any Unicode
        # digit, which the walk back from the anchor did not: found by a search of the whole
        # text, missed where the rule is tried)
        r"(?<![0-9])[0-9]{15,16}(?:\||%7[Cc])(?P<secret>[0-9A-Za-z_-]{27,40})" + _TOKEN_END,
        ["|", "%7C", "%7c"],
        check=_letters_and_digits,
        locate=lambda text, anchor: _back(text, anchor, frozenset("0123456789"), 16),
    ),
    _rule(
        "facebook-page-access-token",
        _ALNUM_START + r"EAA[MC][A-Za-z0-9]{100,}" + _ALNUM_END,
        ["EAAM", "EAAC"],
        check=_mixed_check,
    ),
    _rule(
        "intra42-client-secret",
        r"s-s4t2(?:ud|af)-[a-f0-9]{64}" + _ALNUM_END,
        ["s-s4t2ud-", "s-s4t2af-"],
    ),
    _rule(
        "easypost-api-key",
        _ALNUM_START + r"EZ[AT]K[A-Za-z0-9]{54}" + _ALNUM_END,
        ["EZAK", "EZTK"],
        check=_mixed_check,
    ),
    _rule(
        "teams-webhook",
        r"https://[a-z0-9-]+\.webhook\.office\.com/webhookb2/[a-z0-9-]{36}@[a-z0-9-]{36}"
        r"/IncomingWebhook/[a-z0-9]{32}/[a-z0-9-]{36}",
        [".webhook.office.com/webhookb2/"],
    ),
    _rule(
        "octopus-deploy-api-key",
        _ALNUM_START + r"API-[A-Z0-9]{26}" + _ALNUM_END,
        ["API-"],
        check=_letters_and_digits,
    ),
    _rule("onepassword-service-token", r"ops_eyJ[A-Za-z0-9+/]{250,}={0,3}", ["ops_eyJ"]),
    _rule(
        "aws-bedrock-api-key",
        _ALNUM_START + r"ABSK[A-Za-z0-9+/]{109,269}={0,2}",
        ["ABSK"],
        check=lambda m: "EXAMPLE" not in m.group() and _varied(m),
    ),
    _rule(
        "adobe-client-secret",
        _ALNUM_START + r"p8e-[A-Za-z0-9]{32}" + _ALNUM_END,
        ["p8e-"],
        check=_letters_and_digits,
    ),
    _rule(
        "curl-auth-user",
        _CURL + r"(?:-u|--user)(?:=|[ \t]{1,5})(?P<secret>'[^':\s]{1,64}:[^'\s]{3,128}'"
        r"|\"[^\":\s]{1,64}:[^\"\s]{3,128}\""
        r"|[\w@.-]{1,64}:(?:'[^'\s]{3,128}'|\"[^\"\s]{3,128}\"|[^\s'\"]{3,128}))",
        ["curl"],
        check=_curl_user_check,
        locate=_at_anchor,
    ),
    _rule(
        "curl-auth-header",
        _CURL + r"(?:-H|--header)(?:=|[ \t]{1,5})[\"']Authorization:[ \t]{0,5}"
        r"(?:(?:Bearer|Token|Api-Token)[ \t]+)?(?P<secret>[\w=~@.+/-]{8,200})",
        ["curl"],
        check=_header_value_check,
        locate=_at_anchor,
    ),
    # --- AI providers
    _rule(
        "openai-api-key",
        _TOKEN_START + r"sk-(?!ant-)(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}"
        r"|[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{48})" + _TOKEN_END,
        ["sk-"],
        check=_mixed_check,
    ),
    _rule(
        "anthropic-api-key",
        _TOKEN_START + r"sk-ant-[A-Za-z0-9_-]{32,}" + _TOKEN_END,
        ["sk-ant-"],
    ),
    _rule(
        "huggingface-token",
        r"(?<![A-Za-z0-9_])(?:hf|api_org)_[A-Za-z0-9]{34,40}(?![A-Za-z0-9_])",
        ["hf_", "api_org_"],
        check=_mixed_case_check,
    ),
    _rule("groq-api-key", _ALNUM_START + r"gsk_[A-Za-z0-9]{52}" + _ALNUM_END, ["gsk_"]),
    _rule("replicate-token", _ALNUM_START + r"r8_[A-Za-z0-9]{37}" + _ALNUM_END, ["r8_"]),
    _rule("perplexity-api-key", _ALNUM_START + r"pplx-[A-Za-z0-9]{48}" + _ALNUM_END, ["pplx-"]),
    # --- structured secrets
    _rule(
        "jwt",
        _TOKEN_START
        + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}"
        + _TOKEN_END,
        [".eyJ"],
    ),
    _rule(
        "mapbox-secret-token",
        _TOKEN_START + r"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}",
        ["sk.eyJ"],
    ),
    _rule(
        "private-key",
        _pem(_PRIVATE_LABEL),
        ["-----BEGIN"],
        priority=2,
    ),
    _rule(
        "ssh-private-key",
        _pem("OPENSSH PRIVATE KEY"),
        ["-----BEGIN OPENSSH"],
        priority=2,
    ),
    _rule(
        "pgp-private-key",
        _pem("PGP PRIVATE KEY BLOCK"),
        ["-----BEGIN PGP"],
        priority=2,
    ),
    _rule("age-secret-key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}", ["AGE-SECRET-KEY-1"]),
    # A password may hold `/ ? #` (not valid unescaped, but typed that way): the userinfo runs to
    # the last `@` before the host.
    _rule(
        "url-password",
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,20}://"
        r"(?P<secret>[^\s:/?#@\"'<>\[\]]*:[^\s@\"'<>]{1,256})@[A-Za-z0-9.\[\]-]+",
        ["@"],
        check=_url_password_check,
        priority=2,
        locate=_url_start,
    ),
    _rule(
        "url-token-user",
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,20}://"
        r"(?P<secret>[^\s:/?#@\"'<>\[\]]{20,256})@[A-Za-z0-9.\[\]-]+",
        ["@"],
        check=_token_user_check,
        priority=2,
        locate=_url_start,
    ),
    # --- generic, context-based
    _assignment("password-assignment", _PASSWORD_KEYS, _PASSWORD_WORDS, _names_password),
    _assignment(
        "secret-assignment",
        _SECRET_KEYS,
        ("secret", "token", "key", "credential", "auth"),
        _names_secret,
    ),
    _rule(
        "bearer-token",
        r"(?<![A-Za-z0-9_])bearer\s+(?P<secret>[A-Za-z0-9._~+/-]{20,}=*)",
        ["bearer"],
        flags=re.IGNORECASE,
        check=_value_check,
        generic=True,
        priority=0,
        locate=_at_anchor,
    ),
    _rule(
        "basic-auth",
        r"(?<![A-Za-z0-9_])basic\s+(?P<secret>[A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])",
        ["basic"],
        flags=re.IGNORECASE,
        check=_basic_auth_check,
        generic=True,
        priority=0,
        locate=_at_anchor,
    ),
    # --- personal and machine data
    _rule(
        "email",
        r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@"
        r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
        r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.[A-Za-z]{2,24}(?![A-Za-z0-9-])",
        ["@"],
        category=PERSONAL,
        check=_email_check,
        locate=_email_start,
    ),
    _rule(
        "email",
        r"(?<![A-Za-z0-9._%+-])(?P<local>[A-Za-z0-9][A-Za-z0-9._%+-]{0,63})\s*[\[({<]\s*at\s*[\])}>]\s*"
        r"(?P<domain>[A-Za-z0-9-]{1,63}(?:(?:\s*[\[({<]\s*dot\s*[\])}>]\s*|\.)[A-Za-z0-9-]{1,63})*"
        r"(?:\s*[\[({<]\s*dot\s*[\])}>]\s*|\.)[A-Za-z]{2,24})(?![A-Za-z0-9-])",
        ["[at]", "(at)", "{at}", "<at>", "[ at ]", "( at )"],
        flags=re.IGNORECASE,
        category=PERSONAL,
        check=_spelled_email_check,
    ),
    _rule(
        "home-path",
        r"(?<![A-Za-z0-9._~%+-])(?:/home|/Users)/[A-Za-z0-9._-]*[A-Za-z0-9_-]"
        r"|(?<![A-Za-z0-9._~%+/:-])/root(?=[/\s\"'),;:\]}.]|$)",  # not scheme://root:pw@
        ["/home/", "/Users/", "/root"],
        category=PERSONAL,
    ),
    _rule(
        "home-path",
        r"(?<![A-Za-z0-9])[A-Za-z]:(?:\\{1,2}|/)(?i:users)(?:\\{1,2}|/)"
        r"(?P<name>[A-Za-z0-9._-]*[A-Za-z0-9_-])",
        [":\\Users", ":\\\\Users", ":/Users"],
        category=PERSONAL,
        fold=True,
        check=_windows_home_check,
    ),
    _rule(
        "home-path",
        r"(?:^|(?<=[\s\"'(=,\[{:]))~[a-z_][a-z0-9._-]{0,31}(?=/)",
        ["~"],
        category=PERSONAL,
        locate=_at_anchor,
    ),
    _rule(
        "private-ip",
        r"(?<![A-Za-z0-9.])(?:10(?:\." + _OCTET + r"){3}"
        r"|172\.(?:1[6-9]|2\d|3[01])(?:\." + _OCTET + r"){2}"
        r"|192\.168(?:\." + _OCTET + r"){2}"
        r"|169\.254(?:\." + _OCTET + r"){2})(?![0-9]|\.[0-9])",
        # `172.2` for `172.2\d`: `\d` is any Unicode digit (`172.2٣.1.1` matches as well).
        ["10.", "192.168.", "169.254.", "172.2", "172.30.", "172.31."]
        + [f"172.1{n}." for n in range(6, 10)],
        category=PERSONAL,
        check=_ipv4_check,
        # Every match starts with one of its anchors, and `10.` is on every other page (a
        # todo `t0110.html`): tried only where one occurs, not over the whole text (a
        # quarter of a build's scan of its public pages).
        locate=_at_anchor,
    ),
    _rule(
        "private-ip",
        r"(?<![0-9A-Fa-f:])(?:[fF][cdCD][0-9a-fA-F]{2}|[fF][eE][89abAB][0-9a-fA-F]):"
        r"(?:[0-9a-fA-F]{0,4}:){0,6}[0-9a-fA-F]{1,4}(?![0-9A-Fa-f:])",
        [f"f{c}{x}{y}:" for c in "cd" for x in _HEX for y in _HEX]
        + [f"fe{x}{y}:" for x in "89ab" for y in _HEX],
        category=PERSONAL,
        fold=True,
        check=_ipv6_check,
    ),
)

#: Kinds reported for exact strings rather than rules.
NON_PUBLIC_TEXT = "non-public-text"
NON_PUBLIC_ID = "non-public-id"
USERNAME = "username"
HOSTNAME = "hostname"

CREDENTIAL_KINDS: tuple[str, ...] = tuple(
    sorted({r.kind for r in RULES if r.category == CREDENTIAL})
)
PERSONAL_KINDS: tuple[str, ...] = tuple(
    sorted({r.kind for r in RULES if r.category == PERSONAL} | {USERNAME, HOSTNAME})
)
ALL_KINDS: tuple[str, ...] = tuple(
    sorted(set(CREDENTIAL_KINDS) | set(PERSONAL_KINDS) | {NON_PUBLIC_TEXT, NON_PUBLIC_ID})
)
