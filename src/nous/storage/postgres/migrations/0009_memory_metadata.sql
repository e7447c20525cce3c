-- Every memory's metadata: the caller's own JSON object (see nous.models.metadata), filtered on by
-- `where`. The GIN index (jsonb_path_ops: containment only, smaller than the default) serves
-- equality and `in` filters, written as `metadata @> '{"key": value}'` (docs/rest.md).
ALTER TABLE memories ADD COLUMN IF NOT EXISTS metadata JSONB NOT NULL DEFAULT '{}';
CREATE INDEX IF NOT EXISTS idx_memories_metadata ON memories USING gin (metadata jsonb_path_ops);
