"""Replay seals (idempotency answers) open only with the same server secret and record."""

from __future__ import annotations

from api.http.replay_seal import open_answer, seal_answer

IDENT = ("tenant", "key", "POST /v1/api-keys", "k1")


def test_a_seal_opens_with_its_secret_and_record_only():
    sealed = seal_answer("server secret", IDENT, b'{"secret":"hd_x"}')
    assert b"hd_x" not in sealed
    assert open_answer("server secret", IDENT, sealed) == b'{"secret":"hd_x"}'
    assert open_answer("another secret", IDENT, sealed) is None
    assert open_answer("server secret", (*IDENT[:3], "k2"), sealed) is None
    assert open_answer(None, IDENT, sealed) is None
    assert open_answer("server secret", IDENT, None) is None
    tampered = sealed[:-1] + bytes([sealed[-1] ^ 1])
    assert open_answer("server secret", IDENT, tampered) is None
    # A fresh nonce each time: the same answer never seals to the same bytes.
    assert seal_answer("server secret", IDENT, b"x") != seal_answer("server secret", IDENT, b"x")
