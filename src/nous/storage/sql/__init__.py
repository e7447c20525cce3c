"""The storage SQL, written once for every SQL backend.

Each statement is built here as a ``Stmt`` (``?`` placeholders) by a *plan*: a generator that
yields statements and receives their ``Result``. A plan does no I/O, so one plan serves a
blocking driver (SQLite, on its own threads) and an async one (psycopg) alike; a ``Dialect``
holds the little that differs between them (how times, JSON, vectors and id lists are passed).
"""
