"""The PostgreSQL backend."""

# Column types in the shared migrations (storage/sql/migrations).
COLUMN_TYPES = {
    "time": "TIMESTAMPTZ",
    "bool": "BOOLEAN",
    "false": "FALSE",
    "json": "JSONB",
    "serial": "BIGSERIAL PRIMARY KEY",
    "bytes": "BYTEA",
}
