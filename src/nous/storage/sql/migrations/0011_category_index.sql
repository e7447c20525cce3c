-- Shared by every backend. The memories of a category, found without reading the agent's others:
-- recall reads a scope's standing instructions (category 'instruction', nous.language.instructions)
-- on every question.
CREATE INDEX IF NOT EXISTS idx_memories_category ON memories (agent_id, category) WHERE category IS NOT NULL;
