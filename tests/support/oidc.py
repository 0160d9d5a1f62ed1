"""A small OpenID Connect provider on 127.0.0.1 for the sign-in tests.

It serves a discovery document, a JWKS of the keys it publishes, and a token endpoint
that checks what a real provider checks: the client's HTTP Basic credentials, a code
it issued (once), the same ``redirect_uri``, and the PKCE verifier against the S256
challenge of the authorization request. The authorization step itself (a person at
the provider's login page) is ``authorize``: the test hands it the URL the service
redirected to, and gets the code the provider would have sent back, with the claims
and the signing key of the ID token that code will buy. A browser sent to
``/authorize`` is sent straight back with a code for ``login_as``.

Its keys are its own RSA keys, made per test; ``rotate`` publishes a new one and
withdraws the old, as providers do.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

CLIENT_ID = "helpdesk-client"
CLIENT_SECRET = "provider-issued-secret"


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class Pending:
    """What a code issued by ``authorize`` buys at the token endpoint."""

    redirect_uri: str
    challenge: str
    claims: dict[str, Any]
    kid: str


@dataclass
class Provider:
    issuer: str = ""
    keys: dict[str, rsa.RSAPrivateKey] = field(default_factory=dict)
    published: list[str] = field(default_factory=list)
    codes: dict[str, Pending] = field(default_factory=dict)
    login_as: str | None = None
    """Who signs in at ``/authorize`` (a browser's visit): it redirects straight back
    with a code for this e-mail, as a provider does for a person already signed in."""
    jwks_fetches: int = 0
    token_requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_key(self, kid: str, *, publish: bool) -> None:
        self.keys[kid] = new_key()
        if publish:
            self.published.append(kid)

    def rotate(self, kid: str) -> None:
        """Publish ``kid`` (made now unless it exists) and withdraw every other key."""
        if kid not in self.keys:
            self.keys[kid] = new_key()
        self.published = [kid]

    def authorize(self, url: str, *, email: str, kid: str | None = None,
                  **claims: Any) -> tuple[str, dict[str, Any]]:
        """The code the provider sends back for the authorization request ``url``,
        signing in ``email``; ``claims`` override the ID token's (None drops one).
        Returns the code and the request's query."""
        query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
        assert query["response_type"] == "code" and query["client_id"] == CLIENT_ID
        assert query["code_challenge_method"] == "S256"
        assert "openid" in query["scope"].split()
        now = int(time.time())
        base: dict[str, Any] = {"iss": self.issuer, "aud": CLIENT_ID, "sub": f"sub-{email}",
                                "email": email, "email_verified": True, "iat": now,
                                "exp": now + 300, "nonce": query["nonce"], "name": "Sam"}
        base.update(claims)
        code = secrets.token_urlsafe(16)
        with self.lock:
            self.codes[code] = Pending(query["redirect_uri"], query["code_challenge"],
                                       {k: v for k, v in base.items() if v is not None},
                                       kid or self.published[0])
        return code, query

    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid in self.published:
            jwk = RSAAlgorithm.to_jwk(self.keys[kid].public_key(), as_dict=True)
            keys.append({**jwk, "kid": kid, "use": "sig", "alg": "RS256"})
        return {"keys": keys}

    def token(self, form: dict[str, str], authorization: str | None
              ) -> tuple[int, dict[str, Any]]:
        expected = "Basic " + base64.b64encode(
            f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if authorization != expected:
            return 401, {"error": "invalid_client"}
        with self.lock:
            self.token_requests += 1
            pending = self.codes.pop(form.get("code", ""), None)
        if pending is None or form.get("grant_type") != "authorization_code":
            return 400, {"error": "invalid_grant"}
        verifier = form.get("code_verifier", "")
        challenge = base64.urlsafe_b64encode(
            hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if challenge != pending.challenge or form.get("redirect_uri") != pending.redirect_uri:
            return 400, {"error": "invalid_grant"}
        token = jwt.encode(pending.claims, self.keys[pending.kid], algorithm="RS256",
                           headers={"kid": pending.kid})
        return 200, {"access_token": "opaque", "token_type": "Bearer", "id_token": token}

    def discovery(self) -> dict[str, Any]:
        return {"issuer": self.issuer,
                "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token",
                "jwks_uri": f"{self.issuer}/jwks",
                "response_types_supported": ["code"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                "code_challenge_methods_supported": ["S256"]}


def _handler(provider: Provider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.startswith("/authorize?") and provider.login_as is not None:
                url = f"{provider.issuer}{self.path}"
                code, query = provider.authorize(url, email=provider.login_as)
                back = query["redirect_uri"] + "?" + urlencode({"code": code,
                                                                "state": query["state"]})
                self.send_response(303)
                self.send_header("Location", back)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path == "/.well-known/openid-configuration":
                self._answer(200, provider.discovery())
            elif self.path == "/jwks":
                with provider.lock:
                    provider.jwks_fetches += 1
                self._answer(200, provider.jwks())
            else:
                self._answer(404, {"error": "not_found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            if self.path != "/token":
                self._answer(404, {"error": "not_found"})
                return
            self._answer(*provider.token(form, self.headers.get("Authorization")))

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet in test output

    return Handler


@contextmanager
def running_provider() -> Iterator[Provider]:
    """A provider with one published key (``k1``), serving on a free loopback port."""
    provider = Provider()
    provider.add_key("k1", publish=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(provider))
    provider.issuer = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
