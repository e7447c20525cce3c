-- Nous embedded schema, version 1. Every statement is idempotent.
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT OR IGNORE INTO meta (key, value) VALUES ('rev', '0');

CREATE TABLE IF NOT EXISTS memories (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    kind            TEXT NOT NULL,
    agent_id        TEXT NOT NULL,
    user_id         TEXT,
    session_id      TEXT,
    content         TEXT NOT NULL,
    search_text     TEXT NOT NULL,
    subject         TEXT,
    category        TEXT,
    tags            TEXT NOT NULL DEFAULT '[]',
    provenance      TEXT NOT NULL DEFAULT '{}',
    data            TEXT NOT NULL DEFAULT '{}',
    encoded_frame   TEXT,
    encoded_censors TEXT,
    active          INTEGER NOT NULL DEFAULT 1,
    superseded_by   TEXT,
    valid_from      TEXT,
    valid_to        TEXT,
    occurred_at     TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    content_hash    TEXT NOT NULL,
    embedding       BLOB,
    embedding_model TEXT,
    rev             INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS idx_memories_scope ON memories (agent_id, kind, active);
CREATE INDEX IF NOT EXISTS idx_memories_time ON memories (agent_id, occurred_at);
CREATE INDEX IF NOT EXISTS idx_memories_session ON memories (agent_id, session_id);
CREATE INDEX IF NOT EXISTS idx_memories_subject ON memories (agent_id, subject);
CREATE INDEX IF NOT EXISTS idx_memories_hash ON memories (content_hash, embedding_model);
CREATE INDEX IF NOT EXISTS idx_memories_frame ON memories (encoded_frame) WHERE encoded_frame IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_memories_rev ON memories (rev);
CREATE INDEX IF NOT EXISTS idx_memories_missing ON memories (agent_id) WHERE embedding IS NULL;

CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    search_text, content='memories', content_rowid='seq',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, search_text) VALUES (new.seq, new.search_text);
END;
CREATE TRIGGER IF NOT EXISTS memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, search_text) VALUES ('delete', old.seq, old.search_text);
END;
CREATE TRIGGER IF NOT EXISTS memories_fts_update AFTER UPDATE OF search_text ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, search_text) VALUES ('delete', old.seq, old.search_text);
    INSERT INTO memories_fts (rowid, search_text) VALUES (new.seq, new.search_text);
END;

CREATE TABLE IF NOT EXISTS purged (
    id  TEXT NOT NULL,
    rev INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_purged_rev ON purged (rev);

CREATE TABLE IF NOT EXISTS edges (
    source_id  TEXT NOT NULL,
    target_id  TEXT NOT NULL,
    relation   TEXT NOT NULL,
    agent_id   TEXT NOT NULL,
    weight     REAL NOT NULL DEFAULT 1.0,
    created_at TEXT NOT NULL,
    PRIMARY KEY (source_id, target_id, relation)
);
CREATE INDEX IF NOT EXISTS idx_edges_target ON edges (target_id);

CREATE TABLE IF NOT EXISTS history (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT NOT NULL,
    agent_id  TEXT NOT NULL,
    action    TEXT NOT NULL,
    old_value TEXT,
    new_value TEXT,
    actor     TEXT NOT NULL,
    at        TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_history_memory ON history (memory_id, id);

CREATE TABLE IF NOT EXISTS working_memory (
    agent_id   TEXT NOT NULL,
    session_id TEXT NOT NULL,
    data       TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, session_id)
);
