-- Memory lifecycle (FSRS-style): state, stability in days, reviews, last review time.
-- Applied in one transaction with its schema_migrations row, so it runs exactly once.
ALTER TABLE memories ADD COLUMN lifecycle TEXT NOT NULL DEFAULT 'active';
ALTER TABLE memories ADD COLUMN stability REAL NOT NULL DEFAULT 30.0;
ALTER TABLE memories ADD COLUMN review_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memories ADD COLUMN last_reviewed_at TEXT;
CREATE INDEX IF NOT EXISTS idx_memories_lifecycle ON memories (agent_id, lifecycle);
