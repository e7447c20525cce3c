-- Memory lifecycle (FSRS-style): state, stability in days, reviews, last review time.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS lifecycle TEXT NOT NULL DEFAULT 'active';
ALTER TABLE memories ADD COLUMN IF NOT EXISTS stability DOUBLE PRECISION NOT NULL DEFAULT 30.0;
ALTER TABLE memories ADD COLUMN IF NOT EXISTS review_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memories ADD COLUMN IF NOT EXISTS last_reviewed_at TIMESTAMPTZ;
CREATE INDEX IF NOT EXISTS idx_memories_lifecycle ON memories (agent_id, lifecycle);
