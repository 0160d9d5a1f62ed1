"""``helpdesk keys rotate``: re-wrap every data key with the current key-encryption key.

Run with ``DATA_KEY`` set to the new key and ``DATA_KEY_PREVIOUS`` to the old one (or
unset, when the old one is the secret the migrations stored). Each tenant's live data
keys not yet wrapped by ``DATA_KEY`` are re-wrapped in batches, one transaction per
batch; no event is rewritten. Then the values sealed by the key-encryption key itself
(mailbox and Slack secrets, quarantined mail, the values of notifications still to be
mailed: handlers/sealed_values.py) are re-wrapped the same way. A rotation stopped half
way is run again and goes on where it was: rows already re-wrapped are not picked
again. docs/erasure.md has the whole procedure.

Run with the key-encryption key unchanged, it names the key of the data keys made
before rows named it (re-wrapping them under the same key), so the start-up check
covers them too.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from uuid import UUID

from api.cli.database import using_database
from api.cli.parsing import Subcommands, action, command
from api.config import ProcessSettings
from api.root import ProcessRole, running
from domain.ids import TenantId
from eventstore.keys import kek_census
from eventstore.store import EventStore
from handlers import sealed_values
from projections import admin

DEFAULT_BATCH = 500

Progress = Callable[[TenantId, int], None]
"""Called after each committed batch with its tenant and how many keys it re-wrapped."""


async def rotate_tenant(store: EventStore, tenant_id: TenantId, *, batch: int = DEFAULT_BATCH,
                        progress: Progress | None = None) -> int:
    """Re-wrap one tenant's data keys, a committed batch at a time; how many."""
    assert store.keyring is not None
    done = 0
    last = None
    while True:
        async with store.unit_of_work(tenant_id) as uow:
            subjects = await store.keyring.rewrap(uow.conn, tenant_id, batch, last)
        if not subjects:
            return done
        done += len(subjects)
        last = subjects[-1]
        if progress is not None:
            progress(tenant_id, len(subjects))


async def rotate_sealed(store: EventStore, tenant_id: TenantId, *,
                        batch: int = DEFAULT_BATCH) -> int:
    """Re-wrap one tenant's values sealed by the key-encryption key itself (mailbox and
    Slack secrets, quarantined mail, notifications waiting to be mailed:
    handlers/sealed_values.py), a committed batch at a time; how many."""
    assert store.keyring is not None
    done = 0
    for table, value, kek in sealed_values.REWRAPPED:
        while True:
            async with store.unit_of_work(tenant_id) as uow:
                n = await sealed_values.rewrap_values(uow, store.keyring, table, value, kek, batch)
            if not n:
                break
            done += n
    return done


async def rotate(settings: ProcessSettings, tenant: TenantId | None, batch: int) -> int:
    """Re-wrap every tenant's data keys (or one tenant's); prints what was done."""
    async with running(settings, ProcessRole.CLI) as services:
        store = services.store
        assert store.keyring is not None
        tenants = [tenant] if tenant is not None else await admin.tenant_ids(services.pool)
        total = 0
        for tenant_id in tenants:
            n = await rotate_tenant(store, tenant_id, batch=batch)
            total += n
            if n:
                print(f"helpdesk: tenant {tenant_id}: {n} data key(s) re-wrapped",
                      file=sys.stderr)
            sealed = await rotate_sealed(store, tenant_id, batch=batch)
            if sealed:
                print(f"helpdesk: tenant {tenant_id}: {sealed} sealed secret(s) re-wrapped",
                      file=sys.stderr)
        async with services.pool.acquire() as conn:
            census = await kek_census(conn)
        left = sum(n for kek, n in census.items() if kek != store.keyring.fingerprint)
        print(f"helpdesk: {total} data key(s) re-wrapped; every live data key is wrapped by "
              f"DATA_KEY ({store.keyring.fingerprint})" if not left else
              f"helpdesk: {total} data key(s) re-wrapped; {left} are not wrapped by "
              f"DATA_KEY yet (another tenant, or run again)", file=sys.stderr)
    return 0 if not left else 1


def cmd_rotate(args: argparse.Namespace, settings: ProcessSettings) -> int:
    if args.batch_size < 1:
        print("helpdesk: --batch-size must be 1 or more", file=sys.stderr)
        return 2
    with using_database(settings, announce=False) as resolved:
        tenant = TenantId(args.tenant) if args.tenant is not None else None
        return asyncio.run(rotate(resolved, tenant, args.batch_size))


def add_parser(sub: Subcommands) -> None:
    """Register ``helpdesk keys rotate``."""
    ksub = command(sub, "keys", "manage the key-encryption key of personal data")
    p = action(ksub, "rotate", cmd_rotate,
               help="re-wrap every data key from DATA_KEY_PREVIOUS (or the stored secret) to "
                    "DATA_KEY, in batches; safe to run again")
    p.add_argument("--tenant", type=UUID, help="only this tenant id (default: every tenant)")
    p.add_argument("--batch-size", type=int, default=DEFAULT_BATCH,
                   help=f"data keys per transaction (default {DEFAULT_BATCH})")
