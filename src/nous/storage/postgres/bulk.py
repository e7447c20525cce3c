"""Bulk loads into an empty PostgreSQL store: the HNSW vector indexes are built once, at the end.

Inserting a row into an HNSW index searches the graph for its neighbours, so a load of n rows
costs n searches that grow with the graph (at 100k rows about two thirds of ``create_many``'s
time); building the index over the loaded rows costs far less. Dropping an index that clients
search would send their searches to a scan of every row, so a load defers the indexes only
while ``memories`` is empty, checked under a lock that keeps writers out until the drop commits.

The definition of each dropped index is kept in ``meta`` (committed with the drop), and building
an index deletes its row in the same transaction: a load that dies half-way leaves the definition,
and the next process to open the store builds the index (``build_deferred``), unless a load still
holds the bulk-load lock.
"""

from __future__ import annotations

from typing import Any

import psycopg

VECTOR_INDEXES = ("idx_memories_embedding", "idx_memory_chunks_embedding")
DEFERRED = "deferred_index:"  # meta key prefix; the value is the index's CREATE INDEX statement
LOCK_KEY = "bulk-load"  # the advisory lock a load holds (``PostgresStore.exclusive``)


async def defer_vector_indexes(conn: psycopg.AsyncConnection[Any], schema: str) -> bool:
    """Drop the vector indexes if no memory is stored, keeping their definitions; whether it did."""
    async with conn.transaction():
        # Writers wait until the drop commits, so no row lands between the check and the drop.
        await conn.execute("LOCK TABLE memories, memory_chunks IN SHARE ROW EXCLUSIVE MODE")
        cur = await conn.execute("SELECT EXISTS (SELECT 1 FROM memories)")
        row = await cur.fetchone()
        if row is None or row[0]:
            return False
        await conn.execute(
            "INSERT INTO meta (key, value) SELECT %s || indexname, indexdef FROM pg_indexes "
            "WHERE schemaname = %s AND indexname = ANY(%s) ON CONFLICT (key) DO NOTHING",
            (DEFERRED, schema, list(VECTOR_INDEXES)),
        )
        for name in VECTOR_INDEXES:
            await conn.execute(f"DROP INDEX IF EXISTS {name}")
    return True


async def build_deferred(conn: psycopg.AsyncConnection[Any], memory_mb: int) -> int:
    """Build every index a load deferred, each in one transaction with the deletion of its
    definition (another process building it meanwhile: skipped); how many it built."""
    cur = await conn.execute("SELECT key FROM meta WHERE key LIKE %s", (f"{DEFERRED}%",))
    built = 0
    for (key,) in await cur.fetchall():
        async with conn.transaction():
            cur = await conn.execute("SELECT value FROM meta WHERE key = %s FOR UPDATE", (key,))
            row = await cur.fetchone()
            if row is None:
                continue
            # The graph is built in memory; past maintenance_work_mem the build slows many times.
            await conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (f"{memory_mb}MB",))
            await conn.execute(row[0].replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS", 1).encode())
            await conn.execute("DELETE FROM meta WHERE key = %s", (key,))
            built += 1
    return built
