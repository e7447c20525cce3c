-- A decision's reasons (and its outcome note) are its keyword context: "why did we ...?" is
-- answered in their words. Decisions stored before get theirs here (tsv is a generated column).
UPDATE memories
SET search_context = (
    SELECT string_agg(t, E'\n') FROM (
        SELECT r->>'text' AS t FROM jsonb_array_elements(
            CASE WHEN jsonb_typeof(data->'reasons') = 'array' THEN data->'reasons' ELSE '[]'::jsonb END
        ) AS r
        UNION ALL
        SELECT data->>'outcome_note'
    ) AS parts WHERE t IS NOT NULL AND t != ''
)
WHERE kind = 'decision' AND search_context IS NULL;
