-- Shared by every backend; each braced name is a column type of the backend (its COLUMN_TYPES).
-- Conversation sessions: counters incremented in SQL by each turn, so a restart or a second
-- process continues the same session. ended_at marks a session the event pipeline picks up.
CREATE TABLE IF NOT EXISTS sessions (
    agent_id        TEXT NOT NULL,
    session_id      TEXT NOT NULL,
    user_id         TEXT,
    frame           TEXT,
    active_censors  TEXT NOT NULL DEFAULT '[]',
    topic           TEXT,
    last_user_text  TEXT,
    turn_count      INTEGER NOT NULL DEFAULT 0,
    user_chars      INTEGER NOT NULL DEFAULT 0,
    assistant_chars INTEGER NOT NULL DEFAULT 0,
    remember        {bool} NOT NULL DEFAULT {false},
    episode_id      TEXT,
    started_at      {time} NOT NULL,
    last_active_at  {time} NOT NULL,
    ended_at        {time},
    PRIMARY KEY (agent_id, session_id)
);
CREATE INDEX IF NOT EXISTS idx_sessions_active ON sessions (agent_id, last_active_at);

CREATE TABLE IF NOT EXISTS session_tools (
    agent_id   TEXT NOT NULL,
    session_id TEXT NOT NULL,
    tool       TEXT NOT NULL,
    PRIMARY KEY (agent_id, session_id, tool)
);

-- The agent's identity: versioned sections (character, values, protocols, preferences,
-- boundaries); every change also writes a history row (memory_id 'identity:<section>').
CREATE TABLE IF NOT EXISTS identity (
    agent_id   TEXT NOT NULL,
    section    TEXT NOT NULL,
    content    TEXT NOT NULL,
    version    INTEGER NOT NULL,
    updated_at {time} NOT NULL,
    PRIMARY KEY (agent_id, section)
);

-- The turn loop reads memories of one kind by time (the latest episodes, the censors in force,
-- episodes near a new one): without this index such a read walks the time index across every
-- memory of every other kind.
CREATE INDEX IF NOT EXISTS idx_memories_kind_time ON memories (agent_id, kind, occurred_at);
