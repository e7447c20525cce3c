-- Nous PostgreSQL schema, version 1. Every statement is idempotent.
-- {dimensions} is replaced by the embedding model's dimension count.
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS memories (
    seq             BIGSERIAL,
    id              TEXT PRIMARY KEY,
    kind            TEXT NOT NULL,
    agent_id        TEXT NOT NULL,
    user_id         TEXT,
    session_id      TEXT,
    content         TEXT NOT NULL,
    search_text     TEXT NOT NULL,
    subject         TEXT,
    category        TEXT,
    tags            JSONB NOT NULL DEFAULT '[]',
    provenance      JSONB NOT NULL DEFAULT '{}',
    data            JSONB NOT NULL DEFAULT '{}',
    encoded_frame   TEXT,
    encoded_censors JSONB,
    active          BOOLEAN NOT NULL DEFAULT TRUE,
    superseded_by   TEXT,
    valid_from      TIMESTAMPTZ,
    valid_to        TIMESTAMPTZ,
    occurred_at     TIMESTAMPTZ NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    content_hash    TEXT NOT NULL,
    embedding       vector({dimensions}),
    embedding_model TEXT,
    tsv             tsvector GENERATED ALWAYS AS (to_tsvector('english', search_text)) STORED
);
CREATE INDEX IF NOT EXISTS idx_memories_scope ON memories (agent_id, kind, active);
CREATE INDEX IF NOT EXISTS idx_memories_time ON memories (agent_id, occurred_at);
CREATE INDEX IF NOT EXISTS idx_memories_session ON memories (agent_id, session_id);
CREATE INDEX IF NOT EXISTS idx_memories_subject ON memories (agent_id, subject);
CREATE INDEX IF NOT EXISTS idx_memories_hash ON memories (content_hash, embedding_model);
CREATE INDEX IF NOT EXISTS idx_memories_frame ON memories (encoded_frame) WHERE encoded_frame IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_memories_seq ON memories (seq);
CREATE INDEX IF NOT EXISTS idx_memories_missing ON memories (agent_id) WHERE embedding IS NULL;
CREATE INDEX IF NOT EXISTS idx_memories_tsv ON memories USING gin (tsv);
CREATE INDEX IF NOT EXISTS idx_memories_embedding ON memories USING hnsw (embedding vector_cosine_ops);

CREATE TABLE IF NOT EXISTS edges (
    source_id  TEXT NOT NULL,
    target_id  TEXT NOT NULL,
    relation   TEXT NOT NULL,
    agent_id   TEXT NOT NULL,
    weight     DOUBLE PRECISION NOT NULL DEFAULT 1.0,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (source_id, target_id, relation)
);
CREATE INDEX IF NOT EXISTS idx_edges_target ON edges (target_id);

CREATE TABLE IF NOT EXISTS history (
    id        BIGSERIAL PRIMARY KEY,
    memory_id TEXT NOT NULL,
    agent_id  TEXT NOT NULL,
    action    TEXT NOT NULL,
    old_value JSONB,
    new_value JSONB,
    actor     TEXT NOT NULL,
    at        TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_history_memory ON history (memory_id, id);

CREATE TABLE IF NOT EXISTS working_memory (
    agent_id   TEXT NOT NULL,
    session_id TEXT NOT NULL,
    data       JSONB NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (agent_id, session_id)
);
