"""Sealed idempotency answers open only with the same server secret and record."""

from __future__ import annotations

from api.http.sealed import seal, unseal

IDENT = ("tenant", "key", "POST /v1/api-keys", "k1")


def test_a_seal_opens_with_its_secret_and_record_only():
    sealed = seal("server secret", IDENT, b'{"secret":"hd_x"}')
    assert b"hd_x" not in sealed
    assert unseal("server secret", IDENT, sealed) == b'{"secret":"hd_x"}'
    assert unseal("another secret", IDENT, sealed) is None
    assert unseal("server secret", (*IDENT[:3], "k2"), sealed) is None
    assert unseal(None, IDENT, sealed) is None
    assert unseal("server secret", IDENT, None) is None
    tampered = sealed[:-1] + bytes([sealed[-1] ^ 1])
    assert unseal("server secret", IDENT, tampered) is None
    # A fresh nonce each time: the same answer never seals to the same bytes.
    assert seal("server secret", IDENT, b"x") != seal("server secret", IDENT, b"x")
