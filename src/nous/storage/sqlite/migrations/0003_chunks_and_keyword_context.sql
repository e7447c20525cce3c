-- Keyword context as its own, lower-weighted FTS column; chunk vectors of long memories.
-- Applied in one transaction with its schema_migrations row, so it runs exactly once.
ALTER TABLE memories ADD COLUMN search_context TEXT;

-- The keyword index: own text and context as two columns (bm25 weights them at query time).
DROP TRIGGER IF EXISTS memories_fts_insert;
DROP TRIGGER IF EXISTS memories_fts_delete;
DROP TRIGGER IF EXISTS memories_fts_update;
DROP TABLE IF EXISTS memories_fts;

-- Turns kept their neighbouring turns in search_text ("context\ncontent"); move them out.
UPDATE memories SET search_context = json_extract(data, '$.context'), search_text = content
WHERE kind = 'turn' AND json_extract(data, '$.context') IS NOT NULL;

CREATE VIRTUAL TABLE memories_fts USING fts5(
    search_text, search_context, content='memories', content_rowid='seq',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, search_text, search_context)
    VALUES (new.seq, new.search_text, new.search_context);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, search_text, search_context)
    VALUES ('delete', old.seq, old.search_text, old.search_context);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF search_text, search_context ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, search_text, search_context)
    VALUES ('delete', old.seq, old.search_text, old.search_context);
    INSERT INTO memories_fts (rowid, search_text, search_context)
    VALUES (new.seq, new.search_text, new.search_context);
END;
INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');

-- Vectors of a long memory's chunks after the first (the first chunk's vector is the memory's
-- embedding). Written and deleted together with the memory row, whose rev tells the in-process
-- vector index to reload them.
CREATE TABLE IF NOT EXISTS memory_chunks (
    memory_id TEXT NOT NULL,
    chunk_no  INTEGER NOT NULL,
    embedding BLOB NOT NULL,
    PRIMARY KEY (memory_id, chunk_no)
) WITHOUT ROWID;
