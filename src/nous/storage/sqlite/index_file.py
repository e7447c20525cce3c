"""The SQLite vector index kept on disk beside the database (``<db>.vindex``), opened instead of rebuilt.

Layout: ``MAGIC``, the header's length (8 bytes, little-endian), the header (JSON), then each array
at a 64-byte aligned offset. The header names the store state the arrays were taken from: the
store's ``rev`` then, its embedding model and dimensions, its schema version, and a random ``token``
that the store records in its ``meta`` table once the file is in place. A file is used only when
all of these agree with the store (and the rev is not ahead of it) and every array's checksum
holds; otherwise the index is rebuilt from the rows, so a stale, foreign or damaged file costs time,
never results. Rows written after the file was saved have a newer rev and are caught up as usual.

A file is written whole to a temporary name, flushed to disk and renamed over the old one, then the
token is recorded, all under an exclusive lock (``<db>.vindex.lock``): a crash at any point leaves
either the old file with its token, or a new file whose token the store does not hold (rebuilt).

The arrays are memory-mapped copy-on-write: opening costs a read of the pages, not a parse, and the
catch-up after opening writes to private copies of the pages it changes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import mmap
import os
import secrets
import sqlite3
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)
MAGIC = b"NOUSVIX1"
VERSION = 1
ALIGN = 64
TOKEN_KEY = "vector_index_token"


@dataclass(slots=True)
class IndexState:
    """What an index holds at one rev: scalars, row ids, and arrays of their used rows only."""

    rev: int
    ids: list[str]
    codes: dict[str, int]
    basis_rows: int
    arrays: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StoreState:
    """What the store says the file must match."""

    rev: int
    token: str | None
    schema: int


def store_state(conn: sqlite3.Connection) -> StoreState:
    """The store's rev, recorded index token and schema version, as ``conn`` sees them now."""
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('rev', ?)", (TOKEN_KEY,)).fetchall())
    (schema,) = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
    return StoreState(rev=int(rows.get("rev", 0)), token=rows.get(TOKEN_KEY), schema=int(schema))


def _checksum(buffer: memoryview | bytes) -> int:
    """A fast checksum of a 64-byte aligned region: the wrapped sum of its 8-byte words. It catches
    flipped bits and zeroed, truncated or shifted pages (not deliberate tampering); crc32 on the
    whole file would add most of a second to opening a million-row index."""
    words = np.frombuffer(buffer, dtype=np.uint64)
    return int(words.sum(dtype=np.uint64))


def _padded(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


class IndexFile:
    """The persisted index of the SQLite store at ``db``, for one embedding model."""

    def __init__(self, db: Path, *, model: str, dimensions: int) -> None:
        self.path = Path(f"{db}.vindex")
        self.db = db
        self.model = model
        self.dimensions = dimensions
        self.rejected = False  # a file was there and not used: a save replaces it even at its rev

    # -- reading ---------------------------------------------------------------------------------
    def load(self, conn: sqlite3.Connection) -> IndexState | None:
        """The saved state if the file matches the store ``conn`` reads, else None (a missing file
        is silent; a stale or damaged one is logged and left to be replaced by the next save)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("vector index file %s not read (%s): rebuilding", self.path, exc)
            return None
        try:
            data = mmap.mmap(fd, 0, access=mmap.ACCESS_COPY) if os.fstat(fd).st_size else None
        except (OSError, ValueError) as exc:
            log.warning("vector index file %s not mapped (%s): rebuilding", self.path, exc)
            return None
        finally:
            os.close(fd)
        if data is None:
            self.rejected = True
            return None
        try:
            return self._parse(data, store_state(conn))
        except _Mismatch as why:
            log.info("vector index file %s not used (%s): rebuilding", self.path, why)
        except (ValueError, KeyError, TypeError, OverflowError) as exc:
            log.warning("vector index file %s is damaged (%s): rebuilding", self.path, exc)
        self.rejected = True
        return None

    def _parse(self, data: mmap.mmap, store: StoreState) -> IndexState:
        view = memoryview(data)
        if bytes(view[: len(MAGIC)]) != MAGIC:
            raise _Mismatch("not an index file of this version")
        length = int.from_bytes(view[8:16], "little")
        header_bytes = bytes(view[16 : 16 + length])
        header: dict[str, Any] = json.loads(header_bytes)
        if zlib.crc32(header_bytes[: header_bytes.rindex(b',"crc"')]) != header["crc"]:
            raise ValueError("header checksum")
        expected = {"version": VERSION, "model": self.model, "dimensions": self.dimensions}
        for key, value in expected.items():
            if header[key] != value:
                raise _Mismatch(f"{key} {header[key]!r}, store has {value!r}")
        if store.token is None or header["token"] != store.token:
            raise _Mismatch("saved for another state of the store")
        if header["schema"] != store.schema or header["rev"] > store.rev:
            raise _Mismatch(f"saved at schema {header['schema']} rev {header['rev']}, store at {store}")
        arrays: dict[str, np.ndarray] = {}
        for name, spec in header["arrays"].items():
            start, nbytes = int(spec["offset"]), int(spec["nbytes"])
            region = view[start : start + _padded(nbytes)]
            if len(region) != _padded(nbytes):
                raise ValueError(f"{name} truncated")
            if _checksum(region) != spec["sum"]:
                raise ValueError(f"{name} checksum")
            count = int(np.prod(spec["shape"], dtype=np.int64))
            arrays[name] = np.frombuffer(data, dtype=spec["dtype"], count=count, offset=start).reshape(
                spec["shape"]
            )
        ids_bytes = arrays.pop("ids").tobytes()
        ids = json.loads(ids_bytes)
        if not isinstance(ids, list) or len(ids) != len(arrays["_codes8"]):
            raise ValueError("ids do not match the rows")
        return IndexState(
            rev=int(header["rev"]),
            ids=ids,
            codes=dict(header["codes"]),
            basis_rows=int(header["basis_rows"]),
            arrays=arrays,
        )

    # -- writing ---------------------------------------------------------------------------------
    def save(self, state: IndexState, busy_timeout_s: float = 30.0) -> bool:
        """Write ``state`` and record its token in the store; False when the file there is as
        recent (another process saved it) and nothing was written. A file this process rejected
        (damaged) is replaced even at the same rev."""
        token = secrets.token_hex(16)
        with open(f"{self.path}.lock", "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                saved = self._saved_rev()
                if saved > state.rev or (saved == state.rev and not self.rejected):
                    return False
                tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
                try:
                    self._write(tmp, state, token)
                    os.replace(tmp, self.path)
                finally:
                    tmp.unlink(missing_ok=True)
                _fsync_dir(self.path.parent)
                self._record(token, busy_timeout_s)
                self.rejected = False
                return True
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _saved_rev(self) -> int:
        """The rev of the file there now whose token the store holds, or -1."""
        try:
            with open(self.path, "rb") as f:
                if f.read(len(MAGIC)) != MAGIC:
                    return -1
                length = int.from_bytes(f.read(8), "little")
                header = json.loads(f.read(length))
            conn = sqlite3.connect(self.db, timeout=30.0)
            try:
                token = conn.execute("SELECT value FROM meta WHERE key = ?", (TOKEN_KEY,)).fetchone()
            finally:
                conn.close()
        except (OSError, ValueError, sqlite3.Error):
            return -1
        return int(header.get("rev", -1)) if token and token[0] == header.get("token") else -1

    def _write(self, tmp: Path, state: IndexState, token: str) -> None:
        ids = json.dumps(state.ids, ensure_ascii=False).encode()
        arrays = {"ids": np.frombuffer(ids, dtype=np.uint8), **state.arrays}
        specs: dict[str, dict[str, Any]] = {}
        offset = 0
        for name, arr in arrays.items():
            specs[name] = {
                "dtype": arr.dtype.str,
                "shape": list(arr.shape),
                "offset": offset,
                "nbytes": arr.nbytes,
                "sum": 2**64 - 1,  # the widest a sum can be, until it is computed below
            }
            offset += _padded(arr.nbytes)
        header: dict[str, Any] = {
            "version": VERSION,
            "model": self.model,
            "dimensions": self.dimensions,
            "schema": 0,
            "rev": state.rev,
            "token": token,
            "codes": state.codes,
            "basis_rows": state.basis_rows,
            "arrays": specs,
        }
        header["schema"] = self._schema()
        # Array offsets are from the start of the file: the header's padded length comes first
        # (with room for the offsets' own digits, added below).
        base = _padded(16 + len(self._header_bytes(header)) + 20 * len(specs))
        for spec in specs.values():
            spec["offset"] += base
        with open(tmp, "wb") as f:
            for name, arr in arrays.items():
                raw = np.ascontiguousarray(arr).tobytes()
                padded = raw + b"\0" * (_padded(len(raw)) - len(raw))
                specs[name]["sum"] = _checksum(padded)
                f.seek(specs[name]["offset"])
                f.write(padded)
            head = self._header_bytes(header)
            if 16 + len(head) > base:
                raise ValueError("index header outgrew its room")
            f.seek(0)
            f.write(MAGIC + len(head).to_bytes(8, "little") + head)
            f.flush()
            os.fsync(f.fileno())

    @staticmethod
    def _header_bytes(header: dict[str, Any]) -> bytes:
        """The header as JSON ending in its own crc32 (of the bytes before ``,"crc"``)."""
        body = json.dumps({k: v for k, v in header.items() if k != "crc"}, separators=(",", ":"))[:-1]
        raw = body.encode()
        return raw + b',"crc":' + str(zlib.crc32(raw)).encode() + b"}"

    def _schema(self) -> int:
        conn = sqlite3.connect(self.db, timeout=30.0)
        try:
            (schema,) = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
        finally:
            conn.close()
        return int(schema)

    def _record(self, token: str, busy_timeout_s: float) -> None:
        conn = sqlite3.connect(self.db, timeout=busy_timeout_s, isolation_level=None)
        try:
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (TOKEN_KEY, token))
        finally:
            conn.close()


class _Mismatch(Exception):
    """The file is sound but saved for another store, model or state."""


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
