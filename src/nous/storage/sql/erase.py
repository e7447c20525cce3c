"""Erasing one user of an agent: every row that holds their data, deleted in one transaction.

Rows are found through subqueries on the user's memories and sessions, so no id list crosses
the driver however much the user has. Deleting a memory row drops it from the keyword index
(SQLite's FTS5 triggers; PostgreSQL's ``tsv`` column and HNSW index are on the row itself); on
SQLite the ``purged`` rows tell the in-process vector index to drop them, as for one purge.
"""

from __future__ import annotations

from nous.models import HistoryAction, HistoryEntry
from nous.models.events import EventKind
from nous.storage.base import EraseUser
from nous.storage.sql.memories import history_rows
from nous.storage.sql.plan import Dialect, Plan, Stmt
from nous.storage.sql.threads import erase_user_threads

_MEMORIES = "SELECT id FROM memories WHERE agent_id = ? AND user_id = ?"
_SESSIONS = "SELECT session_id FROM sessions WHERE agent_id = ? AND user_id = ?"
# The audit actions whose new value records a memory's user (a full dump, or a changed user_id).
_RECORDS_USER = (HistoryAction.CREATE, HistoryAction.IMPORT, HistoryAction.UPDATE)


def erase_user(d: Dialect, op: EraseUser, rev: int | None) -> Plan[bool]:
    """Delete the user's rows, count them into ``op.receipt`` and audit the receipt; True if
    anything was removed."""
    r = op.receipt
    user = (r.agent_id, r.user_id)
    by_kind = yield Stmt(
        "SELECT kind, count(*) FROM memories WHERE agent_id = ? AND user_id = ? GROUP BY kind ORDER BY kind",
        user,
    )
    r.memories_by_kind = {str(kind): int(n) for kind, n in by_kind.rows}

    # Events about the user's sessions and memories, and the ingest jobs made for the user.
    events = (
        f"agent_id = ? AND ((kind = ? AND subject_id IN ({_SESSIONS})) "
        f"OR (kind = ? AND {d.json_text('payload', 'user_id')} = ?) "
        f"OR (kind NOT IN (?, ?) AND subject_id IN ({_MEMORIES})))"
    )
    job, ended = EventKind.INGEST_REQUESTED.value, EventKind.SESSION_ENDED.value
    event_params = (r.agent_id, ended, *user, job, r.user_id, ended, job, *user)
    yield Stmt(
        f"DELETE FROM event_steps WHERE event_id IN (SELECT id FROM events WHERE {events})", event_params
    )
    r.events = (yield Stmt(f"DELETE FROM events WHERE {events}", event_params)).rowcount

    # Audit rows of the user's memories, of those purged before (whose rows outlive them) and of
    # their sessions' working memory (``working:<session id>``).
    marks = ", ".join("?" * len(_RECORDS_USER))
    purged = (
        f"SELECT memory_id FROM history WHERE agent_id = ? AND action IN ({marks}) "
        f"AND {d.json_text('new_value', 'user_id')} = ? AND memory_id NOT IN (SELECT id FROM memories)"
    )
    working = "SELECT 'working:' || session_id FROM sessions WHERE agent_id = ? AND user_id = ?"
    r.history = (
        yield Stmt(
            f"DELETE FROM history WHERE agent_id = ? AND (memory_id IN ({_MEMORIES}) "
            f"OR memory_id IN ({purged}) OR memory_id IN ({working}))",
            (r.agent_id, *user, r.agent_id, *(a.value for a in _RECORDS_USER), r.user_id, *user),
        )
    ).rowcount
    r.edges = (
        yield Stmt(
            f"DELETE FROM edges WHERE agent_id = ? AND (source_id IN ({_MEMORIES}) OR target_id IN ({_MEMORIES}))",
            (r.agent_id, *user, *user),
        )
    ).rowcount

    sessions = f"agent_id = ? AND session_id IN ({_SESSIONS})"
    r.working_memory = (
        yield Stmt(f"DELETE FROM working_memory WHERE {sessions}", (r.agent_id, *user))
    ).rowcount
    yield Stmt(f"DELETE FROM session_tools WHERE {sessions}", (r.agent_id, *user))
    r.sessions = (yield Stmt("DELETE FROM sessions WHERE agent_id = ? AND user_id = ?", user)).rowcount

    # Kept answers of Idempotency-Keys: those of the user's own keys, and those an agent's key got
    # that name one of the user's memories (a memory written for them).
    r.idempotency_keys = (
        yield Stmt(
            "DELETE FROM idempotency_keys WHERE agent_id = ? AND (user_id = ? OR EXISTS (SELECT 1 FROM "
            "memories m WHERE m.agent_id = ? AND m.user_id = ? AND idempotency_keys.body LIKE '%' || m.id || '%'))",
            (*user, *user),
        )
    ).rowcount
    yield Stmt(f"DELETE FROM memory_chunks WHERE memory_id IN ({_MEMORIES})", user)
    yield from erase_user_threads(*user)
    if rev is not None:  # tells the in-process vector index to drop them
        yield Stmt(f"INSERT INTO purged (id, rev) SELECT id, ? FROM ({_MEMORIES}) mine", (rev, *user))
    r.memories = (yield Stmt("DELETE FROM memories WHERE agent_id = ? AND user_id = ?", user)).rowcount

    receipt = HistoryEntry(
        memory_id=f"user:{r.user_id}",
        agent_id=r.agent_id,
        action=HistoryAction.ERASE,
        new_value=r.model_dump(mode="json", exclude={"agent_id", "at"}),
        actor=op.actor,
        at=r.at,
    )
    audit = history_rows(d, [receipt])
    yield Stmt(audit.insert(), audit.rows[0])
    return any((r.memories, r.sessions, r.events, r.history, r.edges, r.working_memory, r.idempotency_keys))
