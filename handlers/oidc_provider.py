"""Talking to an OpenID Connect provider: its discovery document, its keys, its token
endpoint, and the verification of the ID tokens it signs.

``Providers`` is one per process (built by the composition root): it caches each
issuer's discovery document and JWKS for ``ttl`` and fetches the JWKS again when a
token names a key id (``kid``) it does not hold, which is how a provider's key
rotation reaches us without waiting for the cache to expire. A refetch for an unknown
``kid`` happens at most once per ``refetch_after`` per issuer, so tokens naming made-up
keys cannot make us hammer the provider.

The signature and the registered claims (``iss``, ``aud``, ``exp``, ``iat``) are
checked by PyJWT (``jwt.decode``) with the provider's key; what is ours is the choice
of key and algorithm, the ``azp`` of a token for several audiences, and the claims
that are the flow's (``nonce``, in handlers/oidc.py) and the tenant's (a verified
e-mail, an allowed domain).

Nothing here touches the database. A provider that cannot be reached, or answers
something that is not what the specification says, is ``ProviderUnavailable``.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote_plus, urlencode, urlsplit

import httpx
import jwt

from handlers.errors import HandlerError, NotAuthenticated

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
              "ES512", "EdDSA")
"""The asymmetric algorithms an ID token may be signed with (never ``none``, never an
HMAC keyed by the client secret)."""
LEEWAY_SECONDS = 60
"""Clock skew allowed between the provider and us for ``exp`` and ``iat``."""


class ProviderUnavailable(HandlerError):
    """The provider could not be reached, or its answer was not usable."""

    def __init__(self, message: str) -> None:
        super().__init__("oidc_provider_unavailable", message)


def refused(reason: str) -> NotAuthenticated:
    """The one refusal of a sign-in the provider's answer does not prove."""
    return NotAuthenticated("oidc_sign_in_failed", f"the sign-in was refused: {reason}",
                            reason=reason)


def issuer_allowed(issuer: str) -> bool:
    """An issuer is an https URL without query or fragment; plain http only on a
    loopback address (a provider on this machine)."""
    parts = urlsplit(issuer)
    try:
        parts.port  # noqa: B018 (raises on a port out of range)
    except ValueError:
        return False
    if parts.query or parts.fragment or not parts.hostname:
        return False
    if parts.scheme == "https":
        return True
    if parts.scheme != "http":
        return False
    if parts.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        return False


def pkce_challenge(verifier: str) -> str:
    """The S256 code challenge of a PKCE verifier (RFC 7636, section 4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def authorization_url(endpoint: str, *, client_id: str, redirect_uri: str, state: str,
                      nonce: str, verifier: str) -> str:
    """Where the browser is sent to sign in: the code flow with PKCE (S256)."""
    query = urlencode({"response_type": "code", "client_id": client_id,
                       "redirect_uri": redirect_uri, "scope": "openid email profile",
                       "state": state, "nonce": nonce,
                       "code_challenge": pkce_challenge(verifier),
                       "code_challenge_method": "S256"})
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"


def checked_email(claims: Mapping[str, Any], allowed_domain: str | None) -> str:
    """The ID token's e-mail, if the provider says it verified it (``email_verified``
    true) and it is in the allowed domain (when the tenant names one)."""
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email:
        raise refused("the ID token carries no e-mail")
    verified = claims.get("email_verified")
    # Some providers send the boolean as a string.
    if verified is not True and verified != "true":
        raise refused("the provider has not verified the e-mail")
    if allowed_domain is not None and email.rsplit("@", 1)[1].lower() != allowed_domain:
        raise refused("the e-mail is not in the tenant's allowed domain")
    return email


@dataclass(frozen=True, slots=True)
class Discovery:
    """The parts of a provider's discovery document the code flow uses."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    algorithms: tuple[str, ...]
    basic_auth: bool
    """Whether the client authenticates at the token endpoint with HTTP Basic (the
    default, ``client_secret_basic``) rather than in the form (``client_secret_post``)."""

    @classmethod
    def parse(cls, issuer: str, doc: Any) -> Discovery:
        if not isinstance(doc, dict) or doc.get("issuer") != issuer:
            raise ProviderUnavailable("the discovery document is not the issuer's")
        try:
            authorize, token, jwks = (str(doc[k]) for k in
                                      ("authorization_endpoint", "token_endpoint", "jwks_uri"))
        except KeyError as exc:
            raise ProviderUnavailable(f"the discovery document lacks {exc}") from exc
        offered = doc.get("id_token_signing_alg_values_supported") or ["RS256"]
        methods = doc.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        return cls(issuer, authorize, token, jwks,
                   algorithms=tuple(a for a in ALGORITHMS if a in offered),
                   basic_auth="client_secret_basic" in methods
                   or "client_secret_post" not in methods)


@dataclass(slots=True)
class _Issuer:
    discovery: Discovery | None = None
    discovered_at: float = 0.0
    keys: dict[str, jwt.PyJWK] = field(default_factory=dict)
    keys_at: float | None = None
    """When the JWKS was fetched last (None: never)."""


class Providers:
    """Discovery documents and JWKS by issuer, cached for this process."""

    def __init__(self, client: httpx.AsyncClient, *, ttl: float = 3600.0,
                 refetch_after: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._ttl = ttl
        self._refetch_after = refetch_after
        self._clock = clock
        self._issuers: dict[str, _Issuer] = {}

    async def _get(self, url: str) -> Any:
        try:
            answer = await self._client.get(url, headers={"Accept": "application/json"})
            answer.raise_for_status()
            return answer.json()
        except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
            raise ProviderUnavailable(f"{url} did not answer usably ({exc})") from exc

    async def discovery(self, issuer: str) -> Discovery:
        """The issuer's discovery document (``/.well-known/openid-configuration``)."""
        entry = self._issuers.setdefault(issuer, _Issuer())
        now = self._clock()
        if entry.discovery is None or now - entry.discovered_at > self._ttl:
            doc = await self._get(issuer.rstrip("/") + "/.well-known/openid-configuration")
            entry.discovery, entry.discovered_at = Discovery.parse(issuer, doc), now
        return entry.discovery

    async def _fetch_keys(self, entry: _Issuer, jwks_uri: str) -> None:
        doc = await self._get(jwks_uri)
        try:
            found = jwt.PyJWKSet.from_dict(doc).keys
        except jwt.PyJWTError as exc:
            raise ProviderUnavailable(f"the JWKS at {jwks_uri} is not usable ({exc})") from exc
        entry.keys = {k.key_id: k for k in found if k.key_id and k.public_key_use != "enc"}
        entry.keys_at = self._clock()

    async def key(self, issuer: str, kid: str) -> jwt.PyJWK | None:
        """The issuer's signing key ``kid``; an unknown one fetches the JWKS again (at
        most once per ``refetch_after``); None if the provider does not publish it."""
        found = await self.discovery(issuer)
        entry = self._issuers[issuer]
        now = self._clock()
        age = None if entry.keys_at is None else now - entry.keys_at
        if age is None or age > self._ttl or (kid not in entry.keys
                                              and age >= self._refetch_after):
            await self._fetch_keys(entry, found.jwks_uri)
        return entry.keys.get(kid)

    async def exchange(self, issuer: str, *, code: str, redirect_uri: str, verifier: str,
                       client_id: str, client_secret: str) -> str:
        """Spend the authorization code at the token endpoint; the ID token it answers."""
        found = await self.discovery(issuer)
        form = {"grant_type": "authorization_code", "code": code,
                "redirect_uri": redirect_uri, "code_verifier": verifier}
        headers = {"Accept": "application/json"}
        try:
            if found.basic_auth:
                answer = await self._client.post(found.token_endpoint, data=form,
                                                 # RFC 6749 2.3.1: form-encoded first.
                                                 auth=(quote_plus(client_id),
                                                       quote_plus(client_secret)),
                                                 headers=headers)
            else:
                form |= {"client_id": client_id, "client_secret": client_secret}
                answer = await self._client.post(found.token_endpoint, data=form,
                                                 headers=headers)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise ProviderUnavailable(f"the token endpoint did not answer ({exc})") from exc
        if answer.status_code in (400, 401):
            # invalid_grant and the like: a spent, wrong or foreign code.
            raise refused("the provider did not accept the authorization code")
        try:
            answer.raise_for_status()
            token = answer.json().get("id_token")
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            raise ProviderUnavailable(f"the token endpoint answered {answer.status_code}"
                                      ) from exc
        if not isinstance(token, str):
            raise refused("the provider answered no ID token")
        return token

    async def verify(self, issuer: str, client_id: str, id_token: str) -> dict[str, Any]:
        """The claims of an ID token signed by one of the issuer's keys, for this
        client, unexpired; else ``oidc_sign_in_failed``."""
        found = await self.discovery(issuer)
        try:
            header = jwt.get_unverified_header(id_token)
        except jwt.PyJWTError as exc:
            raise refused("the ID token is malformed") from exc
        kid, alg = header.get("kid"), header.get("alg")
        if alg not in found.algorithms:
            raise refused("the ID token's algorithm is not allowed")
        key = await self.key(issuer, kid) if isinstance(kid, str) else None
        if key is None:
            raise refused("the ID token is signed by a key the provider does not publish")
        try:
            claims: dict[str, Any] = jwt.decode(
                id_token, key, algorithms=[alg], audience=client_id, issuer=issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["iss", "aud", "exp", "iat", "sub", "nonce"]})
        except jwt.ExpiredSignatureError as exc:
            raise refused("the ID token has expired") from exc
        except jwt.InvalidAudienceError as exc:
            raise refused("the ID token is for another client") from exc
        except jwt.InvalidIssuerError as exc:
            raise refused("the ID token is from another issuer") from exc
        except jwt.PyJWTError as exc:
            raise refused(f"the ID token does not verify ({exc})") from exc
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != client_id:
            raise refused("the ID token is for another client")
        return claims


__all__ = [
    "ALGORITHMS",
    "Discovery",
    "ProviderUnavailable",
    "Providers",
    "authorization_url",
    "checked_email",
    "issuer_allowed",
    "pkce_challenge",
    "refused",
]
