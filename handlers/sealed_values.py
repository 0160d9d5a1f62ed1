"""Values sealed by the key-encryption key itself, and their re-wrapping when that key
is rotated.

Beside data keys (eventstore/keys.py), some values are wrapped by the key-encryption key
directly (``Keyring.wrap``, bound to the tenant and the row's ``id``) and name it by its
fingerprint in a column of their own: a mailbox's passwords and DKIM key, quarantined
mail and its sender and subject, the values of a notification waiting to be mailed (an
invitation's token among them), a Slack integration's secrets, a file's key where no
contact's data key wraps it. ``REWRAPPED`` lists them; a tenant move re-seals them for
the other side (handlers/tenant_move.py) and ``helpdesk keys rotate`` re-wraps them under
the current key (``rewrap_tenant``), so that they still open once the old key is gone.
"""

from __future__ import annotations

from uuid import UUID

from eventstore.keys import Keyring
from eventstore.store import UnitOfWork

REWRAPPED: tuple[tuple[str, str, str], ...] = (
    ("file_blobs", "wrapped_key", "kek"),
    ("mailboxes", "smtp_password", "kek"),
    ("mailboxes", "imap_password", "imap_kek"),
    ("mailboxes", "dkim_key", "dkim_kek"),
    ("mail_quarantine", "raw", "kek"),
    ("mail_quarantine", "headline", "headline_kek"),
    ("mail_notifications", "data", "kek"),
    ("slack_integrations", "bot_token", "bot_token_kek"),
    ("slack_integrations", "signing_secret", "signing_secret_kek"),
)
"""(table, value, kek column) of values wrapped by the key-encryption key itself, bound
to the row's ``id`` (``Keyring.wrap``); a value whose kek column is NULL is wrapped by
something else (a file's key by its contact's data key) and is left as it is."""


async def rewrap_values(uow: UnitOfWork, keyring: Keyring,
                        table: str, value: str, kek: str, batch: int) -> int:
    """Re-wrap up to ``batch`` of the tenant's ``table.value`` not yet wrapped by the
    current key-encryption key, in the caller's transaction; how many. Rows are locked
    (a sender reading one waits), and a re-wrapped row is never picked again: call
    again, a transaction each, until it says 0."""
    conn, tenant_id = uow.conn, uow.tenant_id
    # Identifiers from REWRAPPED only, never values.
    rows = await conn.fetch(
        f'SELECT id, "{value}" AS value, "{kek}" AS kek FROM "{table}" '
        f'WHERE tenant_id = $1 AND "{value}" IS NOT NULL AND "{kek}" IS NOT NULL '
        f'AND "{kek}" <> $2 ORDER BY id LIMIT $3 FOR UPDATE', tenant_id,
        keyring.fingerprint, batch)
    if not rows:
        return 0
    ids: list[UUID] = [r["id"] for r in rows]
    wrapped = [keyring.wrap(tenant_id, r["id"],
                            keyring.unwrap(tenant_id, r["id"], bytes(r["value"]), r["kek"]))
               for r in rows]
    await conn.execute(
        f'UPDATE "{table}" t SET "{value}" = u.value, "{kek}" = $4 '
        f'FROM unnest($2::uuid[], $3::bytea[]) AS u (id, value) '
        f'WHERE t.tenant_id = $1 AND t.id = u.id', tenant_id, ids, wrapped,
        keyring.fingerprint)
    return len(rows)


__all__ = ["REWRAPPED", "rewrap_values"]
