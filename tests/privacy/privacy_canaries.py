"""A canary corpus: fake but realistic-looking secrets and personal data, one or more per kind.

Values are assembled at run time from a seeded generator, so no live-looking secret is committed
verbatim. Each canary is planted in a small context (an assignment, a URL, a header) because some
kinds are only recognisable in context; `secret` is the part that must never be published.
"""

from __future__ import annotations

import base64
import html
import json
import random
import string
from dataclasses import dataclass
from urllib.parse import quote, quote_plus

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"


@dataclass(frozen=True)
class Canary:
    kind: str
    text: str  # what is planted
    secret: str  # what must not survive


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def chars(self, n: int, alphabet: str = ALNUM) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def mixed(self, n: int, alphabet: str = ALNUM) -> str:
        """Random, but with at least one upper, lower and digit (real tokens are)."""
        body = list(self.chars(n - 3, alphabet))
        for needed in (string.ascii_uppercase, string.ascii_lowercase, string.digits):
            body.insert(self.rng.randrange(len(body) + 1), self.rng.choice(needed))
        return "".join(body)

    def digits(self, n: int) -> str:
        return str(self.rng.randint(1, 9)) + self.chars(n - 1, string.digits)

    def uuid(self) -> str:
        h = self.chars(32, HEX)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _pem(g: _Gen, label: str) -> tuple[str, str]:
    body = [g.mixed(64, B64) for _ in range(3)]
    text = f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----\n"
    return text, body[1]


def credential_canaries() -> list[Canary]:
    """At least one canary for every credential kind the rules know."""
    g = _Gen(20240601)
    out: list[Canary] = []

    def add(kind: str, secret: str, template: str = "{}") -> None:
        out.append(Canary(kind, template.format(secret), secret))

    add("aws-access-key", "AKIA" + g.chars(16, UPPER), "key id {} in use")
    add("aws-access-key", "AS" + "IA" + g.chars(16, UPPER))
    add("aws-secret-key", g.mixed(40, B64), "aws_secret_access_key = {}")
    add("aws-secret-key", g.mixed(40, B64), 'AWS_SECRET_ACCESS_KEY="{}"')
    add("gcp-api-key", "AI" + "za" + g.chars(35, URLSAFE))
    sa_body = g.mixed(64, B64)
    out.append(
        Canary(
            "gcp-service-account-key",
            json.dumps(
                {
                    "type": "service_account",
                    "project_id": "demo-project",
                    "private_key": "-----BEGIN PRIVATE KEY-----\n"
                    + sa_body
                    + "\n-----END PRIVATE KEY-----\n",
                }
            ),
            sa_body,
        )
    )
    add("google-oauth-client-secret", "GOCSPX-" + g.mixed(28, URLSAFE))
    add("google-oauth-token", "ya29." + g.mixed(80, URLSAFE), "access_token_value {}")
    add(
        "azure-storage-key",
        g.mixed(86, B64) + "==",
        "DefaultEndpointsProtocol=https;AccountName=demostore;AccountKey={};"
        "EndpointSuffix=core.windows.net",
    )
    add(
        "azure-sas-token",
        quote(g.mixed(43, B64) + "=", safe=""),
        "https://demostore.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&srt=o&sp=r"
        "&se=2030-01-01T00:00:00Z&sig={}",
    )
    add("azure-ad-client-secret", g.chars(3) + "8Q~" + g.mixed(34, ALNUM + "_~.-"))
    add("alibaba-access-key", "LTAI" + g.mixed(20))
    add("digitalocean-token", "dop_v1_" + g.chars(64, HEX))
    add("github-token", "gh" + "p_" + g.mixed(36), "GITHUB_TOKEN {} set")
    add("github-token", "gh" + "o_" + g.mixed(36))
    add("github-token", "gh" + "s_" + g.mixed(36))
    add("github-token", "github" + "_pat_" + g.mixed(22) + "_" + g.mixed(59))
    add("gitlab-token", "gl" + "pat-" + g.mixed(20))
    add("gitlab-token", "gl" + "rt-" + g.mixed(24, URLSAFE))
    add("docker-hub-token", "dckr" + "_pat_" + g.mixed(27, URLSAFE))
    add("npm-token", "np" + "m_" + g.mixed(36))
    add("pypi-token", "pypi-AgEIcHlwaS5vcmc" + g.mixed(70, URLSAFE))
    add("vault-token", "hv" + "s." + g.mixed(90, URLSAFE))
    add("terraform-token", g.mixed(14) + ".atlasv1." + g.mixed(67, URLSAFE))
    add("pulumi-token", "pu" + "l-" + g.chars(40, HEX))
    add("doppler-token", "dp.pt." + g.mixed(43))
    add("databricks-token", "da" + "pi" + g.chars(32, HEX))
    add("supabase-token", "sb" + "p_" + g.chars(40, HEX))
    add("heroku-api-key", g.uuid(), "HEROKU_API_KEY={}")
    add("slack-token", "xo" + "xb-" + g.digits(12) + "-" + g.digits(13) + "-" + g.mixed(24))
    add("slack-token", "xo" + "xp-" + g.digits(12) + "-" + g.digits(12) + "-" + g.chars(32, HEX))
    add(
        "slack-webhook",
        "T" + g.chars(8, UPPER) + "/B" + g.chars(10, UPPER) + "/" + g.mixed(24),
        "https://hooks.slack.com/services/{}",
    )
    bot_id = g.digits(18)
    add(
        "discord-bot-token",
        _b64url(bot_id.encode()) + "." + g.mixed(6, URLSAFE) + "." + g.mixed(38, URLSAFE),
    )
    add(
        "discord-webhook",
        g.digits(18) + "/" + g.mixed(68, URLSAFE),
        "https://discord.com/api/webhooks/{}",
    )
    add("telegram-bot-token", g.digits(10) + ":AA" + g.mixed(33, URLSAFE))
    add("atlassian-api-token", "ATATT3" + g.mixed(186, URLSAFE))
    add("linear-api-key", "lin" + "_api_" + g.mixed(40))
    add("notion-token", "secret" + "_" + g.mixed(43))
    add("notion-token", "nt" + "n_" + g.mixed(46))
    add("stripe-key", "sk" + "_live_" + g.mixed(24))
    add("stripe-key", "rk" + "_test_" + g.mixed(24))
    add("stripe-webhook-secret", "wh" + "sec_" + g.mixed(32))
    add("square-token", "sq0" + "atp-" + g.mixed(22, URLSAFE))
    add("square-token", "sq0" + "csp-" + g.mixed(43, URLSAFE))
    add("shopify-token", "shp" + "at_" + g.chars(32, HEX))
    add("twilio-api-key", "S" + "K" + g.chars(32, HEX))
    add("sendgrid-api-key", "S" + "G." + g.mixed(22, URLSAFE) + "." + g.mixed(43, URLSAFE))
    add("mailgun-api-key", "ke" + "y-" + g.chars(32, HEX))
    add("mailchimp-api-key", g.chars(32, HEX) + "-us14")
    add("postman-api-key", "PM" + "AK-" + g.chars(24, HEX) + "-" + g.chars(34, HEX))
    add("newrelic-api-key", "NR" + "AK-" + g.chars(27, UPPER))
    add("sentry-token", "sntr" + "ys_" + g.mixed(80, B64))
    add("grafana-token", "gl" + "sa_" + g.mixed(32) + "_" + g.chars(8, HEX))
    add("openai-api-key", "sk" + "-proj-" + g.mixed(64, URLSAFE))
    add("openai-api-key", "sk" + "-" + g.mixed(20) + "T3Blbk" + "FJ" + g.mixed(20))
    add("anthropic-api-key", "sk" + "-ant-api03-" + g.mixed(93, URLSAFE) + "AA")
    add("huggingface-token", "h" + "f_" + g.mixed(34, string.ascii_letters + "0"))
    add("groq-api-key", "gs" + "k_" + g.mixed(52))
    add("replicate-token", "r" + "8_" + g.mixed(37))
    add("perplexity-api-key", "pp" + "lx-" + g.mixed(48))
    header = _b64url(b'{"alg":"HS256","typ":"JWT"}')
    payload = _b64url(b'{"sub":"' + g.digits(10).encode() + b'","name":"Dana W"}')
    add("jwt", f"{header}.{payload}.{g.mixed(43, URLSAFE)}", "Authorization: Bearer {}")
    add(
        "mapbox-secret-token",
        "sk." + _b64url(b'{"u":"dana","a":"' + g.mixed(20).encode() + b'"}')
        + "." + g.mixed(22, URLSAFE),
    )  # fmt: skip
    for kind, label in (
        ("private-key", "RSA PRIVATE KEY"),
        ("private-key", "PRIVATE KEY"),
        ("ssh-private-key", "OPENSSH PRIVATE KEY"),
        ("pgp-private-key", "PGP PRIVATE KEY BLOCK"),
    ):
        text, secret = _pem(g, label)
        out.append(Canary(kind, text, secret))
    add("age-secret-key", "AGE-SECRET-KEY-1" + g.chars(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"))
    add("url-password", g.mixed(16), "postgres://deploy:{}@db.internal.example:5432/app")
    add("url-password", g.mixed(12), "see https://ci-bot:{}@git.corp.example/org/repo.git")
    add("password-assignment", g.mixed(16), 'DB_PASSWORD="{}"')
    add("password-assignment", g.mixed(12) + "!#", "password: {}")
    add("password-assignment", g.mixed(14), "run --password {} now")
    add("secret-assignment", g.mixed(24), "client_secret: {}")
    add("secret-assignment", g.mixed(30), '{{"apiKey": "{}"}}')
    add("bearer-token", g.mixed(40), "Authorization: Bearer {}")
    add(
        "basic-auth",
        base64.b64encode(b"deploy:" + g.mixed(13).encode()).decode(),
        "Authorization: Basic {}",
    )
    # Providers added from gitleaks' rule set (issue 13): formats whose value alone says
    # little are planted where the provider names them.
    lower = string.ascii_lowercase + string.digits
    extended = ALNUM + "=_-"
    add("discord-client-secret", g.digits(18), 'discord_client_secret = "{}"')
    add("discord-client-secret", g.digits(32), "DISCORD_SECRET={}")
    add("asana-client-id", g.digits(16), 'asanaClientToken: "{}"')
    add("linkedin-client-id", g.mixed(14, lower).lower() + "", "linkedin_client: {}")
    add("dropbox-token", g.chars(13, lower) + "7q", "DROPBOX_TOKEN={}")
    add("dropbox-token", "sl." + g.mixed(135, extended), 'dropbox_access = "{}"')
    add("launchdarkly-token", g.mixed(40, extended), "LAUNCHDARKLY_ACCESS_TOKEN={}")
    add("beamer-api-token", "b_" + g.mixed(44, extended), "beamer_key = {}")
    add("gocardless-api-token", "live_" + g.mixed(40, extended), "GOCARDLESS_TOKEN={}")
    add("mapbox-token", "pk." + g.mixed(60) + "." + g.mixed(22), "mapbox_key: {}")
    add("sourcegraph-token", "sg" + "p_" + g.chars(16, HEX) + "_" + g.chars(40, HEX))
    add("sourcegraph-token", g.chars(40, HEX), "SOURCEGRAPH_TOKEN={}")
    add("planetscale-token", "pscale" + "_pw_" + g.mixed(43, extended))
    add("duffel-api-token", "duffel" + "_live_" + g.mixed(43, extended))
    add("defined-networking-api-token", "dn" + "key-" + g.mixed(26) + "-" + g.mixed(52))
    add("harness-api-key", "pa" + "t." + g.mixed(22) + "." + g.mixed(24) + "." + g.mixed(20))
    add("cloudflare-origin-ca-key", "v1" + ".0-" + g.chars(24, HEX) + "-" + g.chars(146, HEX))
    add("gitlab-session-cookie", g.chars(32, lower), "Cookie: _gitlab_session={}")
    add(
        "sidekiq-secret",
        g.chars(8, HEX) + ":" + g.chars(8, HEX),
        "export BUNDLE_ENTERPRISE__CONTRIBSYS__COM={}",
    )
    add("facebook-access-token", g.mixed(27, URLSAFE), "fb " + g.digits(16) + "|{}")
    add("facebook-page-access-token", "EA" + "AM" + g.mixed(120))
    add("intra42-client-secret", "s-s4t2" + "ud-" + g.chars(64, HEX))
    add("easypost-api-key", "EZ" + "AK" + g.mixed(54))
    add(
        "teams-webhook",
        g.uuid() + "@" + g.uuid() + "/IncomingWebhook/" + g.chars(32, HEX) + "/" + g.uuid(),
        "https://corp.webhook.office.com/webhookb2/{}",
    )
    add("octopus-deploy-api-key", "AP" + "I-" + g.mixed(26, UPPER).upper())
    add("onepassword-service-token", "ops" + "_eyJ" + g.mixed(260, B64))
    add("aws-bedrock-api-key", "AB" + "SK" + g.mixed(132, B64))
    add("adobe-client-secret", "p8" + "e-" + g.mixed(32))
    add("vault-token", "s" + "." + g.mixed(24), "VAULT_TOKEN={}")
    add("curl-auth-user", "deploy:" + g.mixed(16), "curl -u {} https://api.corp.example/v1")
    add(
        "curl-auth-header",
        g.mixed(32),
        "curl -s --header 'Authorization: Token {}' https://api.corp.example/v1",
    )
    add("url-token-user", g.chars(40, HEX), "git clone https://{}@github.com/org/repo.git")
    add("url-token-user", g.mixed(32), "remote https://{}@gitlab.corp.example/org/app.git")
    add(
        "url-password",
        g.mixed(10) + "/" + g.mixed(6),
        "postgresql://deploy:{}@db.corp.example/prod",
    )
    add("password-assignment", "#" + g.mixed(19), 'password = "{}"')
    add("password-assignment", "ZmAHGBDtcGcwTSvOQOsB", 'password = "{}"')
    add("gitlab-token", "gl" + "pat-" + "BwNWujhYhjUs__RY_zrJ")
    return out


def personal_canaries() -> list[Canary]:
    """E-mail addresses, home paths in all their forms, and private IP addresses."""
    user = "dwhit" + "field"
    items = [
        ("email", "dana.whitfield" + "@" + "contoso-mail.net", "mail {} today"),
        ("email", "ops+alerts" + "@" + "corp.example.org", "<{}>"),
        ("home-path", "/home/" + user, "cd {}/src/app"),
        ("home-path", "/Users/" + user, "open {}/Library/Logs"),
        ("home-path", "C:\\Users\\" + user, "at {}\\AppData\\Local"),
        ("home-path", "C:/Users/" + user, "file {}/Desktop/notes.txt"),
        ("home-path", "~" + user, "see {}/notes"),
        ("home-path", "/root", "key in {}/.ssh/id_ed25519"),
        ("private-ip", "10.12.4.7", "host {} answered"),
        ("private-ip", "172.20.3.9", "db at {}:5432"),
        ("private-ip", "192.168.1.23", "router {}"),
        ("private-ip", "169.254.10.20", "metadata {}"),
        ("private-ip", "fd12:3456:789a::1", "ula {} up"),
        ("private-ip", "fe80::1ff:fe23:4567:890a", "link {} down"),
    ]
    return [Canary(kind, template.format(secret), secret) for kind, secret, template in items]


def all_canaries() -> list[Canary]:
    return credential_canaries() + personal_canaries()


# --- encodings --------------------------------------------------------------------------------


def json_all(text: str) -> str:
    """Every character but letters and digits as a JSON \\u escape."""
    return "".join(c if c.isascii() and c.isalnum() else f"\\u{ord(c):04x}" for c in text)


def html_all(text: str) -> str:
    """Every character but letters and digits as an HTML character reference."""
    return "".join(
        c if c.isascii() and c.isalnum() else (f"&#{ord(c)};" if i % 2 else f"&#x{ord(c):X};")
        for i, c in enumerate(text)
    )


#: encoding name -> (what the scanner should report, encoder)
ENCODERS = {
    "plain": ("plain", lambda s: s),
    "json": ("json", lambda s: json.dumps({"note": s})),
    "json-all": ("json", json_all),
    "html": ("html", html.escape),
    "html-all": ("html", html_all),
    "url": ("url", lambda s: quote(s, safe="")),
    "url-plus": ("url", quote_plus),
}


def plant(encoded: str) -> str:
    """A small document around an encoded canary."""
    return f"Status update for the demo goal.\n  Evidence: {encoded} (see log)\nDone.\n"
