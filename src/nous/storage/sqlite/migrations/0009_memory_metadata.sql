-- Every memory's metadata: the caller's own JSON object (see nous.models.metadata), filtered on by
-- `where`. No index: a filter names any key, and SQLite indexes only expressions fixed in advance;
-- conditions are checked on the rows the other conditions (agent, kind, ...) narrow to (docs/rest.md).
-- Applied in one transaction with its schema_migrations row, so it runs exactly once.
ALTER TABLE memories ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
