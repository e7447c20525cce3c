-- Shared by every backend; each braced name is a column type of the backend (its COLUMN_TYPES).
-- Topic threads (nous.memory.threads): the memories of one topic of one user scope (user_id NULL:
-- the agent's shared memories) across sessions. A thread keeps the state that incremental
-- assignment needs: the sum of its members' embeddings (float32 bytes) and the counts of their
-- most frequent words; ``version`` goes up with each write (a compare-and-swap guard).
CREATE TABLE IF NOT EXISTS threads (
    id           TEXT PRIMARY KEY,
    agent_id     TEXT NOT NULL,
    user_id      TEXT,
    label        TEXT NOT NULL,
    size         INTEGER NOT NULL,
    vector_sum   {bytes} NOT NULL,
    keywords     {json} NOT NULL,
    first_at     {time},
    last_at      {time},
    last_session TEXT,
    created_at   {time} NOT NULL,
    updated_at   {time} NOT NULL,
    version      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS threads_activity ON threads (agent_id, user_id, last_at);
-- One row per threaded memory: a memory is in one thread at most. Rows of forgotten memories are
-- left out when members are read (a join on the active memory) and dropped by a rebuild.
CREATE TABLE IF NOT EXISTS thread_members (
    agent_id    TEXT NOT NULL,
    memory_id   TEXT NOT NULL,
    thread_id   TEXT NOT NULL,
    occurred_at {time} NOT NULL,
    added_at    {time} NOT NULL,
    PRIMARY KEY (agent_id, memory_id)
);
CREATE INDEX IF NOT EXISTS thread_members_thread ON thread_members (thread_id, occurred_at);
