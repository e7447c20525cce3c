-- Keyword context as its own, lower-weighted tsvector weight; chunk vectors of long memories.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS search_context TEXT;

-- The keyword index: own text weighted A, context weighted D (ts_rank_cd weights them at query
-- time). Dropped first so that moving the turns' context below does not recompute it twice.
DROP INDEX IF EXISTS idx_memories_tsv;
ALTER TABLE memories DROP COLUMN IF EXISTS tsv;

-- Turns kept their neighbouring turns in search_text ("context\ncontent"); move them out.
UPDATE memories SET search_context = data->>'context', search_text = content
WHERE kind = 'turn' AND data->>'context' IS NOT NULL;

ALTER TABLE memories ADD COLUMN tsv tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', search_text), 'A')
    || setweight(to_tsvector('english', coalesce(search_context, '')), 'D')
) STORED;
CREATE INDEX IF NOT EXISTS idx_memories_tsv ON memories USING gin (tsv);

-- Vectors of a long memory's chunks after the first (the first chunk's vector is the memory's
-- embedding); they go with the memory row.
CREATE TABLE IF NOT EXISTS memory_chunks (
    memory_id TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    chunk_no  INTEGER NOT NULL,
    agent_id  TEXT NOT NULL,
    embedding vector({dimensions}) NOT NULL,
    PRIMARY KEY (memory_id, chunk_no)
);
CREATE INDEX IF NOT EXISTS idx_memory_chunks_embedding ON memory_chunks USING hnsw (embedding vector_cosine_ops);
