"""The provider rules added from gitleaks' published rule set, and what they leave alone.

Formats whose value alone says little (18 digits, 15 letters and digits) are findings only
where a name that starts with the provider's holds them; token-shaped stand-ins
(``ghp_xxxx…``) are never findings.
"""

from __future__ import annotations

import pytest

from loopx.privacy.rules import stand_in
from loopx.privacy.scanner import Scanner

SCANNER = Scanner(machine=False)


def _kinds(text: str) -> set[str]:
    return {h.kind for h in SCANNER.hits(text)}


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('discord_client_secret = "027212086084778222"', "discord-client-secret"),
        ("DISCORD_TOKEN=90700072544496051893274324000728", "discord-client-secret"),
        ('{"asana_client": "1403899013940929"}', "asana-client-id"),
        ("dropboxToken=tlui5lomghf98xu", "dropbox-token"),
        ("GITLAB_COOKIE=_gitlab_session=pa428e2qbvzzhj7fa9di3l4d4ndhxat1", "gitlab-session-cookie"),
        ("token: s.ZC9Ecf4M5g9o34Q6RkzGsj0z", "vault-token"),
        ("fb 1308742762612587|rhoK1cbv0DOU_RTX_87O4MkX7AI", "facebook-access-token"),
        (
            "curl --user kevin:'pRf7vG2h1L8nQkW9' -iX PATCH https://api.example.com",
            "curl-auth-user",
        ),
        (
            "curl -L -H 'Authorization: Token 5eb4223e5008c46e5be67c7b8f2732305' https://x.test",
            "curl-auth-header",
        ),
        ("export BUNDLE_GEMS__CONTRIBSYS__COM=cd584080:d91914a4", "sidekiq-secret"),
        (
            "SG." + "kcnhnlf9b1vt=q78ru3j0x4o_n8n33l06jbu77_h9g_ar95fa7_t70esi_dsmdavnb",
            "sendgrid-api-key",
        ),
    ],
)
def test_provider_formats_are_found(text: str, kind: str) -> None:
    assert kind in _kinds(text)


@pytest.mark.parametrize(
    "text",
    [
        "discord_channel_id = 123456789012345678",  # an id, named as one
        "discord_url: https://discord.gg/abcdef",
        "discord=000000000000000000",  # a stand-in
        "Build 027212086084778222 passed",  # digits with no provider's name
        "dropbox_folder = shared",
        "curl --user $USER:$PASSWORD https://api.example.com",  # placeholders
        'curl --user "xxx:yyy" https://api.example.com',
        "curl -H 'Authorization: Bearer $TOKEN' https://api.example.com",
        "Use the s.Request object in the handler",  # prose around `s.`
        "ghp_" + "x" * 36,
        "sntryu_" + "a" * 64,
        "glsa_" + "X" * 32 + "_AAAAAAAA",
        "AKIA" + "X" * 16,
        "AIza" + "a" * 35,
        "hvs." + "x" * 90,
        "csrf-token=Mj2qykJO5rELyHgezQ69nzUX0i3OH67V7+V4eUrLfpuyOuxmiW9rhROG/Whikle15syaz==",
        'publicToken = "9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit"',
        "See the API-reference for TARGETS, API-FIRST design",
    ],
)
def test_stand_ins_and_public_values_are_left_alone(text: str) -> None:
    assert _kinds(text) == set(), text


def test_stand_in_never_drops_a_pem_block_or_a_random_token() -> None:
    assert stand_in("ghp_" + "x" * 36)
    assert not stand_in("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB AAAA")  # spaces
    assert not stand_in("xoxa-2-511111111-31111111111-3111111111111-e039d02840a0b9379c")
    assert not stand_in("hf_" + "Ab1" * 12)
