"""DKIM signing of outbound mail (RFC 6376), with ``dkimpy``: the key check a mailbox's
DKIM settings pass when saved, and the signature a mail gets when sent.

A mailbox's DKIM is a selector, a domain and a private key (PEM, RSA of 1024 bits or
more; 2048 advised). The key is checked the way it will be used: it must load, and a
sample mail signed with it must verify against the DNS record it implies, which is
what the admin publishes at ``<selector>._domainkey.<domain>``. The domain is the
mailbox address's own or one it belongs to (``example.com`` for ``help.example.com``),
so the signature aligns with the From address for DMARC.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any

import dkim
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

SIGNED_HEADERS = (b"From", b"To", b"Cc", b"Subject", b"Date", b"Message-ID", b"Reply-To",
                  b"In-Reply-To", b"References", b"MIME-Version", b"Content-Type",
                  b"Auto-Submitted")
"""What a signature covers (those a mail has; ``From`` always)."""
MIN_RSA_BITS = 1024
"""What verifiers accept at least (dkimpy's own minimum); 2048 is the advice."""
_SELECTOR = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}"
                       r"[a-z0-9])?)*$")


class DkimInvalid(Exception):
    """DKIM settings that cannot sign: ``field`` is the one at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class DkimKey:
    """A checked DKIM key: what signs, and the public record that verifies it."""

    selector: str
    domain: str
    private_key: bytes
    algorithm: str
    dns_record: str

    def public(self) -> dict[str, Any]:
        """What the API shows of it (never the private key)."""
        return {"selector": self.selector, "domain": self.domain,
                "algorithm": self.algorithm,
                "dns_name": f"{self.selector}._domainkey.{self.domain}",
                "dns_record": self.dns_record}


def check_key(address: str, selector: str, domain: str, private_key: str) -> DkimKey:
    """The key of these settings for the mailbox ``address``, checked (module
    docstring); ``DkimInvalid`` naming the field at fault otherwise."""
    selector, domain = selector.strip().lower(), domain.strip().lower().rstrip(".")
    if not _SELECTOR.match(selector):
        raise DkimInvalid("selector", "a DKIM selector is DNS labels: letters, digits, "
                          "hyphens, dots")
    own = address.lower().partition("@")[2]
    if not _SELECTOR.match(domain) or "." not in domain or not (
            own == domain or own.endswith("." + domain)):
        raise DkimInvalid("domain", f"the DKIM domain must be {own} or a domain it "
                          "belongs to, so that the signature aligns with the From address")
    pem = private_key.strip().encode()
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise DkimInvalid("private_key", "the DKIM private key must be an unencrypted "
                          "PEM private key (RSA)") from exc
    if isinstance(key, rsa.RSAPrivateKey):
        if key.key_size < MIN_RSA_BITS:
            raise DkimInvalid("private_key", f"an RSA DKIM key has {MIN_RSA_BITS} bits or "
                              f"more (this one {key.key_size}); 2048 is advised")
        algorithm, kind = "rsa-sha256", "rsa"
        public = key.public_key().public_bytes(serialization.Encoding.DER,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
        # dkimpy signs with the traditional (PKCS#1) form.
        pem = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    else:
        # Ed25519 signing in dkimpy needs PyNaCl, which the service does not ship; RSA is
        # what every verifier takes.
        raise DkimInvalid("private_key", "a DKIM key here is RSA (Ed25519 is not supported)")
    checked = DkimKey(selector, domain, pem, algorithm,
                      f"v=DKIM1; k={kind}; p={base64.b64encode(public).decode()}")
    sample = (f"From: {address}\r\nTo: check@example.com\r\nSubject: check\r\n"
              "Message-ID: <dkim-check@example.com>\r\n\r\nA check.\r\n").encode()
    try:
        signed = sign(checked, sample) + sample
        verified = dkim.verify(signed, dnsfunc=lambda name, timeout=5: (
            checked.dns_record.encode()))
    except dkim.DKIMException as exc:
        raise DkimInvalid("private_key", f"the DKIM key does not sign: {exc}") from exc
    if not verified:
        raise DkimInvalid("private_key", "a mail signed with the DKIM key does not verify")
    return checked


def sign(key: DkimKey, message: bytes) -> bytes:
    """The ``DKIM-Signature`` header line (CRLF-ended) to put before ``message``."""
    present = {line.split(b":", 1)[0].strip().lower()
               for line in message.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
               if line and not line[:1].isspace()}
    headers = [h for h in SIGNED_HEADERS if h.lower() in present]
    signature: bytes = dkim.sign(message, key.selector.encode(), key.domain.encode(),
                                 key.private_key, canonicalize=(b"relaxed", b"relaxed"),
                                 signature_algorithm=key.algorithm.encode(),
                                 include_headers=headers)
    return signature


__all__ = ["MIN_RSA_BITS", "SIGNED_HEADERS", "DkimInvalid", "DkimKey", "check_key", "sign"]
