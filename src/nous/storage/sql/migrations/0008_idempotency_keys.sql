-- Shared by every backend; each braced name is a column type of the backend (its COLUMN_TYPES).
-- Idempotency-Keys of `nous serve`'s creating POSTs, per caller (agent, and user of the key; ''
-- for an agent's key): the request's hash, the token of the request that holds the key (until
-- its lease runs out), when it first wrote, and its answer once given. Kept for
-- NOUS_IDEMPOTENCY_RETENTION_HOURS, then pruned by `nous maintain`.
CREATE TABLE IF NOT EXISTS idempotency_keys (
    agent_id     TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    owner        TEXT NOT NULL,
    created_at   {time} NOT NULL,
    lease_until  {time} NOT NULL,
    written_at   {time},
    status       INTEGER,
    headers      {json},
    body         TEXT,
    PRIMARY KEY (agent_id, user_id, key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (agent_id, created_at);
