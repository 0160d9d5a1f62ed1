"""Data keys under row-level security, as the runtime role: one tenant never reads,
makes or erases another's keys; an erased subject's key is gone and stays gone."""

from __future__ import annotations

import os
import uuid

import asyncpg
import pytest
from cryptography.exceptions import InvalidTag

from eventstore.keys import Keyring, SubjectErased
from eventstore.store import EventStore
from tests.support.desk import ACTOR

RING = Keyring(os.urandom(32))


async def test_keys_are_made_once_kept_wrapped_and_read_back(store: EventStore, make_tenant):
    a = (await make_tenant("A")).tenant_id
    subject = uuid.uuid4()
    async with store.session(a, ACTOR) as s:
        key = await RING.take(s.conn, a, subject)
    async with store.session(a, ACTOR) as s:
        assert await RING.take(s.conn, a, subject) == key
        assert await RING.read(s.conn, a, [subject]) == {subject: key}
        stored = bytes(await s.conn.fetchval("SELECT wrapped FROM data_keys"))
    assert key not in stored and len(stored) == 60
    # Under another key-encryption key the wrapped key does not open.
    with pytest.raises(InvalidTag):
        Keyring(os.urandom(32)).unwrap(a, subject, stored)
    # Nor for another subject: a wrapped key copied onto another row is useless.
    with pytest.raises(InvalidTag):
        RING.unwrap(a, uuid.uuid4(), stored)


async def test_one_tenant_never_sees_or_erases_anothers_keys(store: EventStore, make_tenant):
    a, b = (await make_tenant("A")).tenant_id, (await make_tenant("B")).tenant_id
    subject = uuid.uuid4()
    async with store.session(a, ACTOR) as s:
        key = await RING.take(s.conn, a, subject)
    async with store.session(b, ACTOR) as s:
        assert await s.conn.fetchval("SELECT count(*) FROM data_keys") == 0
        assert await RING.read(s.conn, a, [subject]) == {subject: None}
        assert await s.conn.execute("UPDATE data_keys SET wrapped = NULL, "
                                    "erased_at = now()") == "UPDATE 0"
        # The same subject id in tenant B is another subject with another key.
        assert await RING.take(s.conn, b, subject) != key
    async with store.session(b, ACTOR) as s:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):  # WITH CHECK
            await s.conn.execute("INSERT INTO data_keys (tenant_id, subject_id, wrapped) "
                                 "VALUES ($1, $2, $3)", a, uuid.uuid4(), bytes(60))
    async with store.session(b, ACTOR) as s:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):  # no DELETE grant
            await s.conn.execute("DELETE FROM data_keys")
    async with store.session(b, ACTOR) as s:
        await RING.erase(s.conn, b, subject)
    async with store.session(a, ACTOR) as s:
        assert await RING.read(s.conn, a, [subject]) == {subject: key}


async def test_an_erased_subject_gets_no_new_key(store: EventStore, make_tenant):
    a = (await make_tenant("A")).tenant_id
    subject, never = uuid.uuid4(), uuid.uuid4()
    async with store.session(a, ACTOR) as s:
        await RING.take(s.conn, a, subject)
    async with store.session(a, ACTOR) as s:
        await RING.erase(s.conn, a, subject)
        await RING.erase(s.conn, a, never)  # erasing before any key: a tombstone too
    async with store.session(a, ACTOR) as s:
        assert await RING.read(s.conn, a, [subject, never]) == {subject: None, never: None}
        for erased in (subject, never):
            with pytest.raises(SubjectErased):
                await RING.take(s.conn, a, erased)
        row = await s.conn.fetchrow("SELECT wrapped, erased_at FROM data_keys "
                                    "WHERE subject_id = $1", subject)
    assert row["wrapped"] is None and row["erased_at"] is not None
