"""How many candidates a filtered HNSW search visits (pgvector's ``hnsw.ef_search``), by store size.

Measured against an exact scan under the agent/kind/active filters (pgvector 0.8, the index as the
migrations build it: m=16, ef_construction=64; 384-dimension vectors; ``nous bench scale`` and a
sweep over one store): at 100k rows ef_search 100 finds 0.97-0.98 of the exact top 10 and 200 finds
0.99; at 1M rows 100 finds 0.70, 200 0.80, 400 0.86, 800 0.95 and 1000 (pgvector's maximum) 0.96.
A search costs more the more it visits (at 1M, ~19 ms p50 at 100 and ~37 ms at 1000, on a busy
two-core machine), so the setting grows with the row count: one candidate per thousand rows,
between 200 and 1000. The count is the planner's estimate (``reltuples``, kept fresh by the
store's ANALYZE after bulk writes), read in the same statement that sets the value.

``hnsw.iterative_scan = relaxed_order`` lets a search whose filter rejects most of the visited
candidates go on past ef_search instead of returning fewer rows (at 100k rows with a filter that
passes one row in ten and ef_search 40: recall 0.96 with it, 0.40 without); results are re-sorted
by exact distance after the scan.
"""

EF_SEARCH_MIN = 200
EF_SEARCH_MAX = 1000  # pgvector refuses more
ROWS_PER_CANDIDATE = 1000

SET_EF_SEARCH = (
    "SELECT set_config('hnsw.ef_search', least(%s, greatest(%s, "
    "(SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass) / %s))::int::text, true)"
)
SET_EF_SEARCH_ARGS = (EF_SEARCH_MAX, EF_SEARCH_MIN, ROWS_PER_CANDIDATE)
SET_ITERATIVE_SCAN = "SET LOCAL hnsw.iterative_scan = relaxed_order"
