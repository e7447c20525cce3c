"""Storage backends behind one interface; ``open_store`` picks one from a URL."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

from nous.errors import StorageError
from nous.storage.base import MemoryQuery, ScoredId, Store, StoreInfo, WriteOp


def create_store(
    url: str,
    *,
    sqlite_readers: int = 4,
    postgres_pool_size: int = 4,
    lock_timeout_s: float = 30.0,
    connect_timeout_s: float = 5.0,
    postgres_index_build_mb: int = 1024,
) -> Store:
    """A store for ``sqlite:///path.db`` or ``postgresql://...`` (not yet opened).

    A PostgreSQL URL may carry ``?nous_schema=NAME`` to keep Nous's tables in
    another schema than ``nous``.
    """
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        raw = url[len("sqlite://") :]
        if raw.startswith("/"):  # sqlite:///rel.db is relative, sqlite:////abs.db absolute
            raw = raw[1:]
        if not raw:
            raise StorageError("sqlite URL needs a path: sqlite:///path/to/nous.db")
        from nous.storage.sqlite.store import SQLiteStore

        return SQLiteStore(Path(raw).expanduser(), readers=sqlite_readers, busy_timeout_s=lock_timeout_s)
    if parts.scheme in ("postgres", "postgresql", "postgresql+psycopg"):
        query = parse_qs(parts.query)
        schema = query.pop("nous_schema", ["nous"])[0]
        rest = "&".join(f"{k}={v}" for k, vs in query.items() for v in vs)
        clean = urlunsplit(("postgresql", parts.netloc, parts.path, rest, parts.fragment))
        from nous.storage.postgres.store import PostgresStore

        return PostgresStore(
            clean,
            schema=schema,
            pool_size=postgres_pool_size,
            connect_timeout_s=connect_timeout_s,
            index_build_mb=postgres_index_build_mb,
        )
    raise StorageError(
        f"unsupported database URL {url!r}: use sqlite:///path/to/nous.db or postgresql://user@host/db"
    )


__all__ = ["MemoryQuery", "ScoredId", "Store", "StoreInfo", "WriteOp", "create_store"]
