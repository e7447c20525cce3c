-- Shared by every backend; each braced name is a column type of the backend (its COLUMN_TYPES).
-- The durable outbox: a change that needs follow-up work (a session ended, an episode closed, a
-- decision recorded, a fact written) writes an event row in the same transaction. Workers claim
-- events with a lease; a handler's effect and the event's 'done' mark commit together, so a
-- worker that dies mid-handler leaves nothing behind and the event is claimed again once its
-- lease runs out.
CREATE TABLE IF NOT EXISTS events (
    id           TEXT PRIMARY KEY,
    agent_id     TEXT NOT NULL,
    kind         TEXT NOT NULL,
    subject_id   TEXT,
    payload      {json} NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending',
    attempts     INTEGER NOT NULL DEFAULT 0,
    available_at {time} NOT NULL,
    lease_owner  TEXT,
    lease_until  {time},
    last_error   TEXT,
    created_at   {time} NOT NULL,
    done_at      {time}
);
-- Claims look for pending events that are due and running ones whose lease ran out.
CREATE INDEX IF NOT EXISTS idx_events_due ON events (status, available_at);
CREATE INDEX IF NOT EXISTS idx_events_agent ON events (agent_id, status, created_at);

-- One row per language-model call (a retried event's calls are counted again: they happened).
CREATE TABLE IF NOT EXISTS llm_usage (
    id            {serial},
    agent_id      TEXT NOT NULL,
    provider      TEXT NOT NULL,
    model         TEXT NOT NULL,
    purpose       TEXT NOT NULL,
    input_tokens  INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    latency_ms    REAL NOT NULL,
    ok            {bool} NOT NULL,
    at            {time} NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_llm_usage_agent ON llm_usage (agent_id, at);

-- Steps of a handler that writes in several transactions (one extracted fact each): a step's
-- row commits with its effect, so a retried event skips the steps already applied.
CREATE TABLE IF NOT EXISTS event_steps (
    event_id TEXT NOT NULL,
    step     TEXT NOT NULL,
    PRIMARY KEY (event_id, step)
);
