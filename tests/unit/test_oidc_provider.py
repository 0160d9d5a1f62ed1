"""The pure parts of OpenID Connect sign-in (handlers/oidc_provider.py): PKCE, the
authorization URL, which issuers are taken, the e-mail claims, the discovery document,
and the ID token checks that the end-to-end test's provider never gets wrong (an
unsigned or HMAC token, several audiences without ``azp``), against a JWKS served by
httpx's in-memory transport."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from handlers.errors import NotAuthenticated
from handlers.oidc_provider import (
    Discovery,
    Providers,
    ProviderUnavailable,
    authorization_url,
    checked_email,
    issuer_allowed,
    pkce_challenge,
)

ISSUER = "https://id.example.com"


def test_pkce_challenge_is_rfc_7636s_example() -> None:
    # RFC 7636, appendix B.
    assert (pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
            == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")


def test_the_authorization_url_asks_for_the_code_flow_with_pkce() -> None:
    url = authorization_url(f"{ISSUER}/authorize?prompt=login", client_id="c",
                            redirect_uri="https://desk.example.com/cb", state="s", nonce="n",
                            verifier="v" * 43)
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert query == {"prompt": "login", "response_type": "code", "client_id": "c",
                     "redirect_uri": "https://desk.example.com/cb",
                     "scope": "openid email profile", "state": "s", "nonce": "n",
                     "code_challenge": pkce_challenge("v" * 43),
                     "code_challenge_method": "S256"}


@pytest.mark.parametrize(("issuer", "taken"), [
    ("https://accounts.google.com", True),
    ("https://login.microsoftonline.com/tenant/v2.0", True),
    ("http://127.0.0.1:8080", True),
    ("http://localhost:9000/realms/x", True),
    ("http://idp.example.com", False),
    ("http://10.0.0.1", False),
    ("https://id.example.com?x=1", False),
    ("https://id.example.com#f", False),
    ("ftp://id.example.com", False),
    ("https://", False),
    ("http://127.0.0.1:99999", False),
])
def test_issuers_are_https_or_loopback(issuer: str, taken: bool) -> None:
    assert issuer_allowed(issuer) is taken


def test_the_email_must_be_verified_and_in_the_allowed_domain() -> None:
    good = {"email": "Pat@Example.com", "email_verified": True}
    assert checked_email(good, None) == "Pat@Example.com"
    assert checked_email(good, "example.com") == "Pat@Example.com"
    assert checked_email({**good, "email_verified": "true"}, None) == "Pat@Example.com"
    for claims, domain in (({**good, "email_verified": False}, None),
                           ({**good, "email_verified": "false"}, None),
                           ({"email": "pat@example.com"}, None),
                           ({"email_verified": True}, None),
                           (good, "example.org"),
                           ({**good, "email": "pat@sub.example.com"}, "example.com")):
        with pytest.raises(NotAuthenticated) as refused:
            checked_email(claims, domain)
        assert refused.value.code == "oidc_sign_in_failed"


def _doc(**extra: Any) -> dict[str, Any]:
    return {"issuer": ISSUER, "authorization_endpoint": f"{ISSUER}/a",
            "token_endpoint": f"{ISSUER}/t", "jwks_uri": f"{ISSUER}/k", **extra}


def test_the_discovery_document_is_the_issuers_and_offers_no_weak_algorithm() -> None:
    found = Discovery.parse(ISSUER, _doc(
        id_token_signing_alg_values_supported=["none", "HS256", "RS256", "ES256"],
        token_endpoint_auth_methods_supported=["client_secret_post"]))
    assert found.algorithms == ("RS256", "ES256") and not found.basic_auth
    assert Discovery.parse(ISSUER, _doc()).algorithms == ("RS256",)
    assert Discovery.parse(ISSUER, _doc()).basic_auth
    for doc in (_doc(issuer="https://evil.example.com"), {"issuer": ISSUER}, ["x"]):
        with pytest.raises(ProviderUnavailable):
            Discovery.parse(ISSUER, doc)


@pytest.fixture
def key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _providers(key: rsa.RSAPrivateKey) -> Providers:
    jwk = {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "k1", "use": "sig"}

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/.well-known/openid-configuration":
            return httpx.Response(200, json=_doc(jwks_uri=f"{ISSUER}/k"))
        return httpx.Response(200, json={"keys": [jwk]})

    return Providers(httpx.AsyncClient(transport=httpx.MockTransport(answer)))


def _claims(**extra: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": ISSUER, "aud": "c", "sub": "s", "iat": now, "exp": now + 60,
            "nonce": "n", **extra}


async def test_only_a_token_signed_by_a_published_key_for_this_client_verifies(
        key: rsa.RSAPrivateKey) -> None:
    providers = _providers(key)
    signed = jwt.encode(_claims(), key, algorithm="RS256", headers={"kid": "k1"})
    assert (await providers.verify(ISSUER, "c", signed))["sub"] == "s"
    refusals = {
        "unsigned": jwt.encode(_claims(), None, algorithm="none", headers={"kid": "k1"}),
        "hmac": jwt.encode(_claims(), "c" * 32, algorithm="HS256", headers={"kid": "k1"}),
        "several audiences, no azp": jwt.encode(_claims(aud=["c", "d"]), key,
                                                algorithm="RS256", headers={"kid": "k1"}),
        "another issuer": jwt.encode(_claims(iss="https://evil.example.com"), key,
                                     algorithm="RS256", headers={"kid": "k1"}),
        "no kid": jwt.encode(_claims(), key, algorithm="RS256"),
        "garbage": "not.a.token",
    }
    for why, token in refusals.items():
        with pytest.raises(NotAuthenticated):
            await providers.verify(ISSUER, "c", token)
            pytest.fail(why)
    several = jwt.encode(_claims(aud=["c", "d"], azp="c"), key, algorithm="RS256",
                         headers={"kid": "k1"})
    assert (await providers.verify(ISSUER, "c", several))["azp"] == "c"
