"""Access tokens (api/http/tokens.py) and reading ``Authorization`` (api/http/headers.py):
what a token carries, and everything that makes one count for nothing."""

from __future__ import annotations

import base64
import hashlib
import hmac
import uuid
from datetime import UTC, datetime, timedelta

import orjson
import pytest

from api.http.headers import bearer_token
from api.http.tokens import AccessTokens, Claims, looks_like_access_token
from domain.ids import TenantId

KEY = b"k" * 32
NOW = datetime(2026, 3, 1, 12, 0, 0, 500_000, tzinfo=UTC)
TENANT = TenantId(uuid.UUID("11111111-1111-4111-8111-111111111111"))
AGENT = uuid.UUID("22222222-2222-4222-8222-222222222222")
SESSION = uuid.UUID("33333333-3333-4333-8333-333333333333")


def tokens(key: bytes = KEY, purpose: str = "access token") -> AccessTokens:
    return AccessTokens(key, timedelta(minutes=15), purpose)


def issue(t: AccessTokens | None = None, role: str = "agent") -> tuple[str, datetime]:
    return (t or tokens()).issue(tenant_id=TENANT, agent_id=AGENT, session_id=SESSION,
                                 role=role, now=NOW)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def signed(payload: object, key: bytes = KEY, purpose: str = "access token",
           header: object = None) -> str:
    """A token made by hand, signed as the service signs (so only its claims differ)."""
    head = _b64(orjson.dumps(header or {"alg": "HS256", "typ": "JWT"}))
    signing_input = f"{head}.{_b64(orjson.dumps(payload))}"
    derived = hashlib.sha256(f"helpdesk {purpose} v1\n".encode() + key).digest()
    mac = hmac.new(derived, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(mac)}"


def payload(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "iss": "helpdesk", "tid": str(TENANT), "sub": str(AGENT), "sid": str(SESSION),
        "role": "agent", "iat": int(NOW.timestamp()), "exp": int(NOW.timestamp()) + 900}
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def test_a_token_is_a_compact_hs256_jwt_of_its_claims():
    token, expires = issue()
    head, body, _ = token.split(".")
    assert orjson.loads(_unb64(head)) == {"alg": "HS256", "typ": "JWT"}
    assert orjson.loads(_unb64(body)) == payload()
    assert "=" not in token
    # Whole seconds, as the token says, ttl after issue.
    assert expires == datetime(2026, 3, 1, 12, 15, tzinfo=UTC)
    # The signing key is derived from the secret and the purpose, so processes that
    # share the secret agree, and a change of derivation would show here.
    assert token == signed(payload())
    assert tokens().claims(token, NOW) == Claims(TENANT, AGENT, SESSION, "agent", expires)


def test_a_token_counts_until_its_expiry_and_not_at_it():
    token, expires = issue()
    t = tokens()
    assert t.claims(token, expires - timedelta(microseconds=1)) is not None
    assert t.claims(token, expires) is None
    # Where the session, not the token, decides (the live feed's re-checks).
    assert t.claims(token, expires + timedelta(days=1), expiry=False) is not None


def test_another_secret_or_purpose_does_not_accept_it():
    token, _ = issue()
    assert tokens(b"other" * 8).claims(token, NOW) is None
    portal = tokens().for_purpose("portal token", timedelta(hours=1))
    assert portal.claims(token, NOW) is None
    portal_token, _ = issue(portal, role="customer")
    assert tokens().claims(portal_token, NOW) is None
    assert portal.claims(portal_token, NOW) is not None
    assert portal.ttl == timedelta(hours=1)


def test_a_changed_claim_or_signature_counts_for_nothing():
    token, _ = issue()
    head, body, signature = token.split(".")
    promoted = _b64(orjson.dumps(payload(role="admin")))
    assert tokens().claims(f"{head}.{promoted}.{signature}", NOW) is None
    flipped = _b64(bytes([_unb64(signature)[0] ^ 1]) + _unb64(signature)[1:])
    assert tokens().claims(f"{head}.{body}.{flipped}", NOW) is None
    # An unsigned token ("alg": "none") is no token.
    none_head = _b64(orjson.dumps({"alg": "none", "typ": "JWT"}))
    assert tokens().claims(f"{none_head}.{body}.", NOW) is None


@pytest.mark.parametrize("claims", [
    payload(iss="someone-else"),
    payload(iss=None),
    payload(exp=None),
    payload(tid=None),
    payload(sub="not-a-uuid"),
    payload(sid=12),
    payload(exp="soon"),
    payload(exp=int(NOW.timestamp())),
    payload(exp=2**62),
    payload(exp=-(2**62)),
    payload(tid={"a": 1}),
    ["not", "an", "object"],
    "text",
])
def test_a_signed_token_with_claims_it_cannot_use_counts_for_nothing(claims: object):
    assert tokens().claims(signed(claims), NOW) is None


@pytest.mark.parametrize("token", [
    "", ".", "..", "a.b", "a.b.c.d", "a.b.c", "é.é.é", "hd_0123456789abcdef",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.!!!.???",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "A" * 2000 + ".x",
])
def test_malformed_tokens_count_for_nothing(token: str):
    assert tokens().claims(token, NOW) is None


def test_an_access_token_is_told_from_an_api_key_by_its_header():
    token, _ = issue()
    assert looks_like_access_token(token)
    assert not looks_like_access_token("hd_" + "0" * 40)
    assert not looks_like_access_token(token.split(".", 1)[1])
    assert not looks_like_access_token("")


@pytest.mark.parametrize(("header", "token"), [
    ("Bearer abc", "abc"),
    ("bearer abc", "abc"),
    ("BEARER abc", "abc"),
    ("Bearer   abc  ", "abc"),
    ("Bearer a b", "a b"),
    (None, None),
    ("", None),
    ("Bearer", None),
    ("Bearer ", None),
    ("Bearer    ", None),
    ("Basic YTpi", None),
    ("Token abc", None),
    ("Bearerabc", None),
    (" Bearer abc", None),
])
def test_the_bearer_credential_of_an_authorization_header(header: str | None,
                                                          token: str | None):
    assert bearer_token(header) == token
