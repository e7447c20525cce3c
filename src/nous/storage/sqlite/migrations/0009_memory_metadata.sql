-- Every memory's metadata: the caller's own JSON object (see nous.models.metadata), filtered on by
-- `where`. A filter names any key, and SQLite indexes only expressions fixed in advance, so no
-- index finds a key's value; the covering index below lets the vector search's filter read an
-- agent's ids and metadata without the wide rows (their embeddings), see docs/rest.md.
-- Applied in one transaction with its schema_migrations row, so it runs exactly once.
ALTER TABLE memories ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
CREATE INDEX IF NOT EXISTS idx_memories_metadata ON memories (agent_id, metadata, id);
