"""An in-process nearest-neighbour index over the embeddings in the SQLite file.

Rows carry a ``rev`` stamped by every write transaction; the index catches up
incrementally by reading rows with a newer rev, so writes from this process and
from other processes sharing the file are both picked up before each search.
Vectors are L2-normalised, so cosine is a dot product.

Memory rows are held as int8 codes (one scale per row: a quarter of float32's memory, 1M x 384
in ~0.4 GB), never as float32. A search ranks the rows passing the filter by their codes, then
re-scores the best few (``RESCORE_MIN``, at least 4x the limit) with their float32 vectors read
from the file, so the scores returned are always exact cosines and the order among them exact;
int8 rounding (at most half a step of a row's largest component / 127) moves a cosine by ~5e-4,
far less than the gap between the best ``limit`` and the ``4 x limit``-th.

On large stores a first pass ranks every row in a PCA-reduced space (64 float32 dims, fitted on a
sample and refitted as the store doubles), then the best ``RERANK_MIN`` go on to the int8 pass:
a sixth of the float32 matrix's memory traffic, recall@10 of 0.99+ against the exact scan on 1M
vectors (``nous bench scale``).

A long memory also has chunk vectors (``memory_chunks``, see ``nous.embeddings.chunking``), kept
in a second (float32) matrix whose rows point at their memory's row. They are written with the
memory row, so its rev brings them along: a refreshed row's chunks are reloaded. A search ranks the
memory rows as above and, when there are chunks, the chunk rows under the same filter, then scores
each memory by its best vector: the union of the best ``limit`` memories by their own vector and
the best ``limit`` by their best chunk holds the best ``limit`` by either. A store without chunks
pays nothing for them.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from nous._blas import single_blas_thread
from nous.storage.sqlite.index_file import IndexFile, IndexState

APPROX_MIN_ROWS = 20_000  # below this the int8 pass over every row is already a few milliseconds
REDUCED_DIMS = 64
RERANK_MIN = 1_000  # rows passed from the reduced pass to the int8 pass (at least 3x the limit)
RESCORE_MIN = 50  # rows re-scored with their float32 vectors from the file (at least 4x the limit)
OWN_ROWS_SHARE = 4  # a filter holding under 1/4 of the rows scores only them in the reduced pass
PCA_SAMPLE = 10_000
LOAD_BATCH = 8_192  # rows read per step when catching up: a full load never holds every blob at once
SAVE_EVERY = 20_000  # rows taken in before the index is saved again (or a twentieth of the rows)
PROJECT_BATCH = 65_536  # rows dequantised at a time when projecting the whole store
KEPT_FILTERS = 8  # row masks of the last metadata filters kept, each brought up to date on use
# The per-memory-row arrays (each grows with the rows; ``_reduced`` too once there is a basis).
ROW_ARRAYS = ("_codes8", "_scale", "_kind", "_agent", "_present", "_active", "_current")


@dataclass(slots=True)
class IndexFilter:
    """The cheap filters the index applies itself; the rest are given as allowed ids, or as a mask
    over the index's rows (``rows_where``)."""

    agent_id: str
    kinds: tuple[str, ...] | None
    include_inactive: bool
    include_superseded: bool
    allowed_ids: set[str] | None = None
    allowed_rows: np.ndarray | None = None


def quantise(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and per-row scales with ``codes * scale ~ vectors``."""
    peak = np.abs(vectors).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(vectors / scale[:, None]).astype(np.int8)
    return codes, scale


class VectorIndex:
    """Nearest-neighbour search over normalised vectors, with exact cosines for the results."""

    def __init__(self, dimensions: int, file: IndexFile | None = None) -> None:
        self.dimensions = dimensions
        self.file = file  # where the index is kept between runs (None: rebuilt on every open)
        self.restored = False  # whether the state came from the file
        self._file_tried = False
        self.unsaved = 0  # rows taken in since the index was opened from or saved to the file
        self._lock = threading.Lock()
        self._rev = -1
        self._ids: list[str] = []
        self._pos_of: dict[str, int] | None = {}  # None until needed after opening from the file
        self._size = 0
        self._codes8 = np.zeros((0, dimensions), dtype=np.int8)
        self._scale = np.zeros(0, dtype=np.float32)
        self._codes: dict[str, int] = {}
        self._kind = np.zeros(0, dtype=np.int32)
        self._agent = np.zeros(0, dtype=np.int32)
        self._present = np.zeros(0, dtype=bool)
        self._active = np.zeros(0, dtype=bool)
        self._current = np.zeros(0, dtype=bool)
        self._masks: dict[tuple[object, ...], np.ndarray] = {}
        # The reduced-space scores of the last query vector (its bytes, the scores): recall searches
        # twice with one vector (every kind, then knowledge only), and on a large store this
        # full pass is most of a search's time. Cleared with the masks whenever rows change.
        self._last_reduced: tuple[bytes, np.ndarray] | None = None
        # Row masks of recent metadata filters ((where, params) -> the rev they are true at, the
        # mask): a filter used again reads only the rows written since, not every row's JSON.
        self._kept: OrderedDict[tuple[str, tuple[Any, ...]], tuple[int, np.ndarray]] = OrderedDict()
        self._basis: np.ndarray | None = None  # dimensions x REDUCED_DIMS, or None (no first pass)
        self._basis_rows = 0
        self._reduced = np.zeros((0, REDUCED_DIMS), dtype=np.float32)
        self._chunk_size = 0  # chunk rows in use, live or free
        self._chunk_matrix = np.zeros((0, dimensions), dtype=np.float32)
        self._chunk_owner = np.zeros(0, dtype=np.int64)  # row of the owning memory; -1: free
        self._chunk_reduced = np.zeros((0, REDUCED_DIMS), dtype=np.float32)
        self._chunks_of: dict[int, list[int]] = {}  # memory row -> its chunk rows
        self._free_chunks: list[int] = []

    @property
    def _pos(self) -> dict[str, int]:
        """Row number of each id (built on first use after opening from the file: on a million
        rows, building it is most of the time opening takes, and a plain search never needs it)."""
        if self._pos_of is None:
            self._pos_of = {id_: pos for pos, id_ in enumerate(self._ids)}
        return self._pos_of

    def _grow(self, needed: int) -> None:
        if needed > len(self._codes8):
            capacity = max(needed, len(self._codes8) * 2, 1024)
            for name in ROW_ARRAYS + (("_reduced",) if self._basis is not None else ()):
                setattr(self, name, _grown(getattr(self, name), capacity, self._size))

    def _grow_chunks(self, needed: int) -> None:
        if needed > len(self._chunk_matrix):
            capacity = max(needed, len(self._chunk_matrix) * 2, 1024)
            self._chunk_matrix = _grown(self._chunk_matrix, capacity, self._chunk_size)
            self._chunk_owner = _grown(self._chunk_owner, capacity, self._chunk_size, fill=-1)
            if self._basis is not None:
                self._chunk_reduced = _grown(self._chunk_reduced, capacity, self._chunk_size)

    def _live_chunks(self) -> int:
        return self._chunk_size - len(self._free_chunks)

    def _drop_chunks(self, pos: int) -> None:
        for row in self._chunks_of.pop(pos, ()):
            self._chunk_owner[row] = -1
            self._free_chunks.append(row)

    def _add_chunks(self, pos: int, blobs: list[bytes]) -> list[int]:
        """Store a memory's chunk vectors in free or new rows; their row numbers."""
        rows = []
        for blob in blobs:
            if self._free_chunks:
                row = self._free_chunks.pop()
            else:
                row = self._chunk_size
                self._grow_chunks(row + 1)
                self._chunk_size += 1
            self._chunk_matrix[row] = np.frombuffer(blob, dtype=np.float32)
            self._chunk_owner[row] = pos
            rows.append(row)
        self._chunks_of[pos] = rows
        return rows

    def _code(self, value: str) -> int:
        return self._codes.setdefault(value, len(self._codes))

    def refresh(self, conn: sqlite3.Connection) -> None:
        """Catch up with every write committed since the last refresh."""
        (rev,) = conn.execute("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'rev'").fetchone()
        if rev == self._rev:
            return
        with self._lock:
            if self._rev < 0 and self.file is not None and not self._file_tried:
                self._open_file(conn)
            if rev == self._rev:
                return
            changed: list[int] = []
            conn.execute("BEGIN")  # one snapshot: rows and their chunks agree
            try:
                (rev,) = conn.execute("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'rev'").fetchone()
                cursor = conn.execute(
                    "SELECT id, kind, agent_id, active, superseded_by IS NULL, embedding "
                    "FROM memories WHERE rev > ?",
                    (self._rev,),
                )
                while rows := cursor.fetchmany(LOAD_BATCH):
                    changed += self._load_rows(rows)
                chunks = conn.execute(  # the changed rows by the rev index, then their chunks by key
                    "SELECT c.memory_id, c.embedding FROM memory_chunks c WHERE c.memory_id IN "
                    "(SELECT id FROM memories WHERE rev > ?) ORDER BY c.memory_id, c.chunk_no",
                    (self._rev,),
                ).fetchall()
                purged = conn.execute("SELECT id FROM purged WHERE rev > ?", (self._rev,)).fetchall()
            finally:
                conn.execute("COMMIT")
            for (id_,) in purged:
                pos = self._pos.get(id_)
                if pos is not None:
                    self._present[pos] = False
                    self._drop_chunks(pos)
            for pos in changed:
                self._drop_chunks(pos)
            new_chunks: list[int] = []
            by_memory: dict[str, list[bytes]] = {}
            for id_, blob in chunks:
                by_memory.setdefault(id_, []).append(blob)
            for id_, blobs in by_memory.items():
                new_chunks += self._add_chunks(self._pos[id_], blobs)
            self._rev = rev
            self.unsaved += len(changed) + len(purged)
            self._masks.clear()
            self._last_reduced = None
            self._update_reduced(changed, new_chunks)

    def _open_file(self, conn: sqlite3.Connection) -> None:
        """Take the saved state when the file matches the store (the caller holds the lock)."""
        assert self.file is not None
        state = self.file.load(conn)
        self._file_tried = True  # a rejected file is not read again
        if state is not None:
            self._restore(state)
            self.restored = True

    def _restore(self, state: IndexState) -> None:
        a = state.arrays
        self._ids, self._pos_of, self._codes = state.ids, None, dict(state.codes)
        self._size = len(state.ids)
        for name in ROW_ARRAYS:
            setattr(self, name, a[name])
        if "_basis" in a:
            self._basis, self._basis_rows, self._reduced = a["_basis"], state.basis_rows, a["_reduced"]
            self._chunk_reduced = a["_chunk_reduced"]
        self._chunk_matrix, self._chunk_owner = a["_chunk_matrix"], a["_chunk_owner"]
        self._chunk_size = len(self._chunk_owner)
        owner = self._chunk_owner
        live = np.flatnonzero(owner >= 0)
        self._chunks_of = {}
        for row in live[np.argsort(owner[live], kind="stable")].tolist():
            self._chunks_of.setdefault(int(owner[row]), []).append(row)
        self._free_chunks = np.flatnonzero(owner < 0).tolist()
        self._kept.clear()  # row numbers changed
        self._rev = state.rev
        self.unsaved = 0

    def wants_save(self) -> bool:
        """Whether enough rows came in since the file was written that a restart would spend
        noticeable time catching them up (at most ~``SAVE_EVERY`` rows, or a twentieth, are read
        again after a crash)."""
        return self.file is not None and self.unsaved >= max(SAVE_EVERY, self._size // 20)

    def snapshot(self) -> IndexState | None:
        """A copy of the state to save (its used rows only), or None when nothing is new; resets
        ``unsaved`` (so a save that fails, in a read-only folder say, is tried again only after as
        many new rows: the index stays correct without its file, only slower to open)."""
        with self._lock:
            if self._rev < 0 or not self.unsaved:
                return None
            n, m = self._size, self._chunk_size
            arrays = {name: getattr(self, name)[:n].copy() for name in ROW_ARRAYS}
            arrays["_chunk_matrix"] = self._chunk_matrix[:m].copy()
            arrays["_chunk_owner"] = self._chunk_owner[:m].copy()
            if self._basis is not None:
                arrays["_basis"] = self._basis.copy()
                arrays["_reduced"] = self._reduced[:n].copy()
                arrays["_chunk_reduced"] = self._chunk_reduced[:m].copy()
            state = IndexState(
                rev=self._rev, ids=list(self._ids), codes=dict(self._codes), basis_rows=self._basis_rows
            )
            state.arrays = arrays
            self.unsaved = 0
            return state

    def _load_rows(self, rows: list[tuple[str, str, str, int, int, bytes | None]]) -> list[int]:
        """Take in one batch of changed rows; their row numbers."""
        self._grow(self._size + len(rows))
        positions, embedded, blobs = [], [], []
        pos_of = self._pos
        for id_, kind, agent, active, current, blob in rows:
            pos = pos_of.get(id_)
            if pos is None:
                pos = self._size
                self._size += 1
                self._ids.append(id_)
                pos_of[id_] = pos
            positions.append(pos)
            self._kind[pos] = self._code(kind)
            self._agent[pos] = self._code(agent)
            self._active[pos] = bool(active)
            self._current[pos] = bool(current)
            self._present[pos] = blob is not None
            if blob is not None:
                embedded.append(pos)
                blobs.append(blob)
        if embedded:
            vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), self.dimensions)
            self._codes8[embedded], self._scale[embedded] = quantise(vectors)
        return positions

    def _dequantised(self, rows: np.ndarray | slice) -> np.ndarray:
        return self._codes8[rows].astype(np.float32) * self._scale[rows][:, None]

    def _update_reduced(self, changed: list[int], new_chunks: list[int]) -> None:
        """Fit the PCA basis when the store is large (refit as it doubles); project changed rows."""
        n = self._size
        if n >= APPROX_MIN_ROWS and (self._basis is None or n >= 2 * self._basis_rows):
            rows = np.flatnonzero(self._present[:n])
            if rows.size >= APPROX_MIN_ROWS:
                rng = np.random.default_rng(n)
                sample = self._dequantised(
                    np.sort(rng.choice(rows, min(PCA_SAMPLE, rows.size), replace=False))
                )
                self._basis = principal_axes(sample, REDUCED_DIMS)
                self._basis_rows = n
                self._reduced = np.zeros((len(self._codes8), REDUCED_DIMS), dtype=np.float32)
                for start in range(0, n, PROJECT_BATCH):
                    block = slice(start, min(start + PROJECT_BATCH, n))
                    self._reduced[block] = self._dequantised(block) @ self._basis
                m = self._chunk_size
                self._chunk_reduced = np.zeros((len(self._chunk_matrix), REDUCED_DIMS), dtype=np.float32)
                self._chunk_reduced[:m] = self._chunk_matrix[:m] @ self._basis
                return
        if self._basis is not None and changed:
            for start in range(0, len(changed), PROJECT_BATCH):
                idx = np.asarray(changed[start : start + PROJECT_BATCH])
                self._reduced[idx] = self._dequantised(idx) @ self._basis
        if self._basis is not None and new_chunks:
            idx = np.asarray(new_chunks)
            self._chunk_reduced[idx] = self._chunk_matrix[idx] @ self._basis

    def _reduced_scores(self, vector: np.ndarray, n: int) -> np.ndarray:
        """Every row's score in the reduced space (the caller holds the lock)."""
        assert self._basis is not None
        key = vector.tobytes()
        if self._last_reduced is None or self._last_reduced[0] != key:
            self._last_reduced = (key, self._reduced[:n] @ (vector @ self._basis))
        return self._last_reduced[1]

    def _float_vectors(self, conn: sqlite3.Connection, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The stored float32 vectors of ``rows`` read from the file: the rows that still have one
        (a write since the last refresh may have dropped it) and their vectors."""
        ids = [self._ids[r] for r in rows]
        marks = ", ".join("?" * len(ids))
        found = dict(
            conn.execute(
                f"SELECT id, embedding FROM memories WHERE id IN ({marks}) AND embedding IS NOT NULL", ids
            )
        )
        kept = np.asarray([r for r, i in zip(rows, ids, strict=True) if i in found], dtype=np.int64)
        blobs = b"".join(found[self._ids[r]] for r in kept)
        return kept, np.frombuffer(blobs, dtype=np.float32).reshape(len(kept), self.dimensions)

    def rows_where(
        self, conn: sqlite3.Connection, where: str, params: list[Any], *, keep: bool
    ) -> np.ndarray:
        """A mask over the index's rows (as of the last ``refresh``): the memories matching the SQL
        condition ``where``. With ``keep``, the mask is kept for the next call with the same
        condition, which re-reads only the rows written since (every write of a memory's row sets
        its rev, and a purged row leaves the index's own mask): only for conditions on columns
        that change with the row's rev, as its metadata does."""
        key = (where, tuple(params))
        with self._lock:
            n, now = self._size, self._rev
            kept = self._kept.get(key) if keep else None
        # the SQL runs outside the lock (on a large store the full read takes tens of ms)
        if kept is None:
            found = [(id_, True) for (id_,) in conn.execute(f"SELECT id FROM memories WHERE {where}", params)]
            mask = np.zeros(n, dtype=bool)
        else:
            rev, old = kept
            found = (
                conn.execute(f"SELECT id, {where} FROM memories WHERE rev > ?", [*params, rev]).fetchall()
                if rev != now
                else []
            )
            mask = _grown(old, n, min(len(old), n))  # a copy: a search may still hold the old one
        with self._lock:
            pos = self._pos
            for id_, ok in found:
                p = pos.get(id_)
                if p is not None and p < n:  # a row taken in since is read again next time
                    mask[p] = bool(ok)
            if keep:
                self._kept[key] = (now, mask)
                self._kept.move_to_end(key)
                while len(self._kept) > KEPT_FILTERS:
                    self._kept.popitem(last=False)
        return mask

    def vectors(self, conn: sqlite3.Connection, ids: list[str], agent_id: str) -> dict[str, np.ndarray]:
        """The stored vectors of ``ids`` that belong to ``agent_id``."""
        agent = self._codes.get(agent_id)
        with self._lock:
            rows = [
                pos
                for pos in (self._pos.get(id_) for id_ in ids)
                if pos is not None and self._present[pos] and self._agent[pos] == agent
            ]
            kept, vectors = self._float_vectors(conn, np.asarray(rows, dtype=np.int64))
            return {self._ids[r]: v.copy() for r, v in zip(kept, vectors, strict=True)}

    def search(
        self,
        conn: sqlite3.Connection,
        vector: np.ndarray,
        flt: IndexFilter,
        limit: int,
        *,
        chunks: bool = True,
    ) -> list[tuple[str, float, float]]:
        """Top ``limit`` (id, cosine, main cosine) among rows passing the filter. The cosine is the
        best of a memory's own vector and (with ``chunks``) its chunks'; the main one its own alone."""
        with self._lock, single_blas_thread():
            n = self._size
            agent = self._codes.get(flt.agent_id)
            if agent is None:
                return []
            key = (agent, flt.kinds, flt.include_inactive, flt.include_superseded)
            mask = self._masks.get(key)
            if mask is None:
                mask = self._present[:n] & (self._agent[:n] == agent)
                if flt.kinds is not None:
                    kinds = [self._codes[k] for k in flt.kinds if k in self._codes]
                    mask &= np.isin(self._kind[:n], kinds)
                if not flt.include_inactive:
                    mask &= self._active[:n]
                if not flt.include_superseded:
                    mask &= self._current[:n]
                self._masks[key] = mask
            if flt.allowed_ids is not None:
                mask = mask.copy()
                allowed = np.zeros(n, dtype=bool)
                idx = [self._pos[i] for i in flt.allowed_ids if i in self._pos]
                allowed[idx] = True
                mask &= allowed
            if flt.allowed_rows is not None:  # shorter if rows came in since it was read: not allowed
                mask = mask.copy()
                mask[flt.allowed_rows.size :] = False
                mask[: flt.allowed_rows.size] &= flt.allowed_rows[:n]
            candidates = np.flatnonzero(mask)
            if candidates.size == 0:
                return []
            if self._basis is not None and candidates.size >= APPROX_MIN_ROWS:
                size = max(RERANK_MIN, 3 * limit)
                if candidates.size * OWN_ROWS_SHARE < n:  # other agents' rows are most of the store
                    approx = self._reduced[candidates] @ (vector @ self._basis)
                    candidates = np.sort(candidates[_top(approx, size)])
                else:  # every row's reduced score, kept for the next filter on this vector
                    candidates = _shortlist(self._reduced_scores(vector, n), mask, size)
            approx = self._dequantised(candidates) @ vector
            candidates = candidates[_top(approx, max(RESCORE_MIN, 4 * limit))]
            rows, vectors = self._float_vectors(conn, candidates)
            if rows.size == 0:
                return []
            scores = vectors @ vector
            top = _top(scores, limit)
            rows, scores, main = rows[top], scores[top], scores[top]
            if chunks and self._live_chunks():
                rows, scores, main = self._with_chunks(conn, vector, mask, rows, limit)
            return [(self._ids[r], float(s), float(o)) for r, s, o in zip(rows, scores, main, strict=True)]

    def _with_chunks(
        self, conn: sqlite3.Connection, vector: np.ndarray, mask: np.ndarray, rows: np.ndarray, limit: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The best ``limit`` memory rows by their best vector, given the best ``rows`` by their own:
        rows, best cosines, own cosines."""
        m = self._chunk_size
        owner = self._chunk_owner[:m]
        chunk_mask = owner >= 0
        chunk_mask[chunk_mask] = mask[owner[chunk_mask]]
        chunk_rows = np.flatnonzero(chunk_mask)
        if chunk_rows.size:
            if self._basis is not None and chunk_rows.size >= APPROX_MIN_ROWS:
                approx = self._chunk_reduced[:m] @ (vector @ self._basis)
                chunk_rows = _shortlist(approx, chunk_mask, max(RERANK_MIN, 3 * limit))
            scores = self._chunk_matrix[chunk_rows] @ vector
            order = np.argsort(-scores, kind="stable")
            owners, first = np.unique(owner[chunk_rows][order], return_index=True)  # owners sorted
            best = scores[order][first]  # each owner's best chunk score
            rows = np.union1d(rows, owners[_top(best, limit)])
        else:
            owners, best = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        rows, vectors = self._float_vectors(conn, rows)
        main = vectors @ vector
        scores = main.copy()
        at = np.minimum(np.searchsorted(owners, rows), max(owners.size - 1, 0))
        has_chunk = owners[at] == rows if owners.size else np.zeros(rows.size, dtype=bool)
        scores[has_chunk] = np.maximum(scores[has_chunk], best[at[has_chunk]])
        top = _top(scores, limit)
        return rows[top], scores[top], main[top]


def principal_axes(sample: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` principal axes of ``sample``'s rows (dimensions x k, float32): the top eigenvectors
    of its covariance. Their span is the SVD's; a d x d eigenproblem on one BLAS thread takes a
    fraction of a second, where the SVD of the sample took 5-15 s on a busy 2-core machine."""
    centred = np.asarray(sample - sample.mean(axis=0), dtype=np.float64)
    with single_blas_thread():
        _, vectors = np.linalg.eigh(centred.T @ centred)  # eigenvalues ascending
    return np.ascontiguousarray(vectors[:, ::-1][:, :k], dtype=np.float32)


def _grown(arr: np.ndarray, capacity: int, used: int, fill: int = 0) -> np.ndarray:
    """``arr`` with room for ``capacity`` rows: its first ``used`` rows, then ``fill``."""
    out = np.full((capacity, *arr.shape[1:]), fill, dtype=arr.dtype)
    out[:used] = arr[:used]
    return out


def _top(scores: np.ndarray, limit: int) -> np.ndarray:
    """Indices of the ``limit`` highest scores, best first."""
    k = min(limit, scores.size)
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top], kind="stable")]


def _shortlist(approx: np.ndarray, mask: np.ndarray, size: int) -> np.ndarray:
    """Row numbers of the ``size`` best rows under ``mask`` by their reduced-space scores, in order."""
    approx = np.where(mask, approx, -np.inf)
    size = min(size, int(mask.sum()))
    return np.sort(np.argpartition(-approx, size - 1)[:size])
