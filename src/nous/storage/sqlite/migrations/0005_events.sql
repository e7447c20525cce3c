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
    payload      TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending',
    attempts     INTEGER NOT NULL DEFAULT 0,
    available_at TEXT NOT NULL,
    lease_owner  TEXT,
    lease_until  TEXT,
    last_error   TEXT,
    created_at   TEXT NOT NULL,
    done_at      TEXT
);
-- Claims look for pending events that are due and running ones whose lease ran out.
CREATE INDEX IF NOT EXISTS idx_events_due ON events (status, available_at);
CREATE INDEX IF NOT EXISTS idx_events_agent ON events (agent_id, status, created_at);
