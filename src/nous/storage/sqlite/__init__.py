"""The embedded SQLite backend."""

# Column types in the shared migrations (storage/sql/migrations): times as fixed-width UTC text.
COLUMN_TYPES = {
    "time": "TEXT",
    "bool": "INTEGER",
    "false": "0",
    "json": "TEXT",
    "serial": "INTEGER PRIMARY KEY AUTOINCREMENT",
    "bytes": "BLOB",
}
