"""The search index is read by tenant: as the runtime role, ``search_matches`` asks
every index it reads for the tenant (the tenant-leading GIN index of migration 0520,
or the primary key), so no index hands over another tenant's matches to be dropped
after, as the GIN index over the vector alone did.

The plan of the statement inside the function is read with auto_explain (contrib),
its notices sent to the client.
"""

from __future__ import annotations

import re

import asyncpg

from tests.support.pg import RUNTIME_USER


async def test_search_matches_reads_only_the_tenants_entries_of_the_index(db, make_tenant):
    small, big = await make_tenant("Small"), await make_tenant("Big")
    conn = await asyncpg.connect(db.admin_url)
    notes: list[str] = []
    try:
        # A tenant's 20 matching tickets among 500 that do not match, beside another
        # tenant's 200 matching (an index over the vector alone gives 220 matches).
        for tenant, words, n in ((small, "printer jam", 20), (small, "paper tray", 500),
                                 (big, "printer jam", 200), (big, "paper tray", 500)):
            await conn.execute(
                "INSERT INTO search_documents (tenant_id, kind, id, document, staff_document) "
                "SELECT $1, kind, gen_random_uuid(), to_tsvector('simple', $2), "
                "       to_tsvector('simple', $2) "
                "  FROM generate_series(1, $3), unnest(array['ticket', 'contact']) kind",
                tenant.tenant_id, words, n)
        await conn.execute("ANALYZE search_documents")
        await conn.execute("LOAD 'auto_explain'")
        for setting in ("log_min_duration = 0", "log_nested_statements = on",
                        "log_analyze = on", "log_level = notice"):
            await conn.execute(f"SET auto_explain.{setting}")
        conn.add_log_listener(lambda _c, message: notes.append(message.message))
        tx = conn.transaction()
        await tx.start()
        try:
            # At this size the planner would read the table, or the tenant's rows by
            # primary key (which leads with the tenant too); with both out of the way
            # (in a transaction rolled back), the plan is the one a big desk gets.
            await conn.execute("ALTER TABLE search_documents "
                               "DROP CONSTRAINT search_documents_pkey")
            await conn.execute("SET LOCAL enable_seqscan = off")
            await conn.execute(f"SET LOCAL ROLE {RUNTIME_USER}")
            await conn.execute("SELECT set_config('app.tenant_id', $1, true)",
                               str(small.tenant_id))
            found = await conn.fetchval(
                "SELECT count(*) FROM search_matches('ticket', "
                "websearch_to_tsquery('simple', 'printer jam'), true)")
        finally:
            await tx.rollback()
    finally:
        await conn.close()
    assert found == 20
    (plan,) = [n for n in notes if "FROM search_documents" in n]
    lines = [line.strip() for line in plan.splitlines()]
    scan = next(i for i, line in enumerate(lines)
                if line.startswith("->  Bitmap Index Scan on search_documents_tenant_staff")
                or line.startswith("Bitmap Index Scan on search_documents_tenant_staff"))
    condition = lines[scan + 1]
    assert condition.startswith("Index Cond: ((tenant_id = "), plan
    assert "(kind = " in condition and "(staff_document @@ " in condition, plan
    # The index gave the tenant's 20 matching tickets, not the 220 of both tenants.
    assert re.search(r"actual time=\S+ rows=20(\.00)? ", lines[scan]), plan
