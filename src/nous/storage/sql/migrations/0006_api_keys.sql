-- Shared by every backend; each braced name is a column type of the backend (its COLUMN_TYPES).
-- API keys of `nous serve`. Only a hash of each key's secret is kept (the key is shown once, at
-- creation); a key is bound to one agent (and optionally one user), or is an admin key.
CREATE TABLE IF NOT EXISTS api_keys (
    id          TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    agent_id    TEXT,
    user_id     TEXT,
    name        TEXT NOT NULL DEFAULT '',
    admin       {bool} NOT NULL DEFAULT {false},
    created_at  {time} NOT NULL,
    revoked_at  {time}
);
