"""The write path's statements plan their own table only, as the runtime role.

A scoped policy that asks its question as an inline ``EXISTS`` brings the table it
reads (and that table's policies) into the plan of every statement on its table, to be
planned again wherever the statement is (behind PgBouncer, at every call). The policies
ask through functions instead (migrations 0870 and 0880): the plans below name no
relation but the statement's own, whatever the policies behind it hold.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from eventstore.store import EventStore
from tests.support.desk import ACTOR

T = "$1::uuid"
STATEMENTS = {
    "messages": (
        "INSERT INTO messages (tenant_id, id, ticket_id, version, visibility, author_kind,"
        " author_id, body, created_at) VALUES"
        f" ({T}, gen_random_uuid(), gen_random_uuid(), 2, 'public', 'agent', 'a', 'x', now())"),
    "tickets": f"UPDATE tickets SET version = version + 1 WHERE tenant_id = {T} AND id = $2",
    "search_documents": (
        f"UPDATE search_documents SET document = document WHERE tenant_id = {T}"
        " AND kind = 'ticket' AND id = $2"),
    "ticket_versions": (
        f"UPDATE ticket_versions SET valid_to_seq = 1 WHERE tenant_id = {T} AND id = $2"
        " AND version = 1"),
    "jobs": f"DELETE FROM jobs WHERE tenant_id = {T} AND dedupe_key = $2::text",
    "uploads": (
        f"UPDATE uploads SET ticket_id = $2, visibility = 'public' WHERE tenant_id = {T}"
        " AND id = $2"),
    "file_blobs": f"UPDATE file_blobs SET state = state WHERE tenant_id = {T} AND id = $2",
}


def _relations(node: dict[str, Any]) -> set[str]:
    names = {node["Relation Name"]} if "Relation Name" in node else set()
    for child in node.get("Plans", []):
        names |= _relations(child)
    return names


@pytest.mark.parametrize("table", sorted(STATEMENTS))
async def test_plan_reads_no_other_table(store: EventStore, make_tenant, table: str) -> None:
    tenant = await make_tenant()
    async with store.unit_of_work(tenant.tenant_id, ACTOR) as s:
        # A generic plan: what a prepared statement keeps and re-plans.
        await s.conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        await s.conn.execute(f"PREPARE probe (uuid, uuid) AS {STATEMENTS[table]}")
        try:
            raw = await s.conn.fetchval(
                "EXPLAIN (FORMAT JSON) EXECUTE probe("
                "current_setting('app.tenant_id')::uuid, gen_random_uuid())")
        finally:
            await s.conn.execute("DEALLOCATE probe")
    plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    assert _relations(plan) == {table}
