"""The rows of a tenant export open with the transport key that wrapped their state key,
and only in the place they were sealed for."""

from __future__ import annotations

import uuid

import pytest

from eventstore.keys import Keyring
from handlers.export_seal import SealBroken, StateSeal


def test_rows_open_where_they_were_sealed_and_nowhere_else():
    tenant = uuid.uuid4()
    transport = Keyring(b"transport")
    seal = StateSeal.new(tenant)
    rows = b'[{"email":"ann@example.com"}]'
    sealed = seal.seal("contacts", 3, rows)
    assert b"ann@example.com" not in sealed.encode()
    came = StateSeal.unwrapped(tenant, transport, seal.wrapped(transport))
    assert came.open("contacts", 3, sealed) == rows
    for table, line in (("tickets", 3), ("contacts", 4)):
        with pytest.raises(SealBroken, match="altered"):
            came.open(table, line, sealed)
    with pytest.raises(SealBroken, match="transport key"):
        StateSeal.unwrapped(tenant, Keyring(b"another"), seal.wrapped(transport))
    with pytest.raises(SealBroken, match="transport key"):
        StateSeal.unwrapped(uuid.uuid4(), transport, seal.wrapped(transport))


@pytest.mark.parametrize("sealed", ["not base64!", "", "AAAA", "QUJD" * 3])
def test_a_sealed_line_that_is_not_base64_or_too_short_is_said_altered(sealed):
    seal = StateSeal.new(uuid.uuid4())
    with pytest.raises(SealBroken, match="altered"):
        seal.open("contacts", 1, sealed)


@pytest.mark.parametrize("wrapped", ["zz", "abc", ""])
def test_a_wrapped_key_that_is_not_hex_or_not_a_key_is_said_so(wrapped):
    with pytest.raises(SealBroken, match="transport key"):
        StateSeal.unwrapped(uuid.uuid4(), Keyring(b"transport"), wrapped)
