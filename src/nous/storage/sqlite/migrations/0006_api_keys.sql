-- API keys of `nous serve`. Only a hash of each key's secret is kept (the key is shown once, at
-- creation); a key is bound to one agent (and optionally one user), or is an admin key.
CREATE TABLE IF NOT EXISTS api_keys (
    id          TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    agent_id    TEXT,
    user_id     TEXT,
    name        TEXT NOT NULL DEFAULT '',
    admin       INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);
