-- A decision's reasons (and its outcome note) are its keyword context: "why did we ...?" is
-- answered in their words. Decisions stored before get theirs here; the FTS trigger reindexes.
UPDATE memories
SET search_context = (
    SELECT group_concat(t, char(10)) FROM (
        SELECT json_extract(r.value, '$.text') AS t FROM json_each(memories.data, '$.reasons') AS r
        UNION ALL
        SELECT json_extract(memories.data, '$.outcome_note')
    ) WHERE t IS NOT NULL AND t != ''
)
WHERE kind = 'decision' AND search_context IS NULL;
