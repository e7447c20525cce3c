"""An in-process exact cosine index over the embeddings in the SQLite file.

Rows carry a ``rev`` stamped by every write transaction; the index catches up
incrementally by reading rows with a newer rev, so writes from this process and
from other processes sharing the file are both picked up before each search.
Vectors are L2-normalised, so cosine is a dot product (~8 ms per 100k x 384).

On large stores a first pass ranks every row in a PCA-reduced space (64 dims, fitted
on a sample and refitted as the store doubles), then the best few thousand are
re-scored exactly: ~3x less memory traffic, recall@300 of 0.998 against the exact scan
on 100k real MiniLM vectors. Scores returned are always exact cosines.

A long memory also has chunk vectors (``memory_chunks``, see ``nous.embeddings.chunking``), kept
in a second matrix whose rows point at their memory's row. They are written with the memory row,
so its rev brings them along: a refreshed row's chunks are reloaded. A search ranks the memory
rows as above and, when there are chunks, the chunk rows under the same filter, then scores each
memory by its best vector: the union of the best ``limit`` memories by their own vector and the
best ``limit`` by their best chunk holds the best ``limit`` by either. A store without chunks pays
nothing for them.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass

import numpy as np

from nous._blas import single_blas_thread

APPROX_MIN_ROWS = 20_000  # below this an exact scan is already a few milliseconds
REDUCED_DIMS = 64
RERANK_MIN = 1_000  # rows re-scored exactly after the reduced pass (at least 3x the limit)
PCA_SAMPLE = 10_000


@dataclass(slots=True)
class IndexFilter:
    """The cheap filters the index applies itself; the rest are given as allowed ids."""

    agent_id: str
    kinds: tuple[str, ...] | None
    include_inactive: bool
    include_superseded: bool
    allowed_ids: set[str] | None = None


class VectorIndex:
    """Exact nearest-neighbour search over normalised float32 vectors."""

    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions
        self._lock = threading.Lock()
        self._rev = -1
        self._ids: list[str] = []
        self._pos: dict[str, int] = {}
        self._size = 0
        self._matrix = np.zeros((0, dimensions), dtype=np.float32)
        self._codes: dict[str, int] = {}
        self._kind = np.zeros(0, dtype=np.int32)
        self._agent = np.zeros(0, dtype=np.int32)
        self._present = np.zeros(0, dtype=bool)
        self._active = np.zeros(0, dtype=bool)
        self._current = np.zeros(0, dtype=bool)
        self._masks: dict[tuple[object, ...], np.ndarray] = {}
        self._basis: np.ndarray | None = None  # dimensions x REDUCED_DIMS, or None (exact only)
        self._basis_rows = 0
        self._reduced = np.zeros((0, REDUCED_DIMS), dtype=np.float32)
        self._chunk_size = 0  # chunk rows in use, live or free
        self._chunk_matrix = np.zeros((0, dimensions), dtype=np.float32)
        self._chunk_owner = np.zeros(0, dtype=np.int64)  # row of the owning memory; -1: free
        self._chunk_reduced = np.zeros((0, REDUCED_DIMS), dtype=np.float32)
        self._chunks_of: dict[int, list[int]] = {}  # memory row -> its chunk rows
        self._free_chunks: list[int] = []

    def __len__(self) -> int:
        return int(self._present[: self._size].sum())

    def _grow(self, needed: int) -> None:
        capacity = len(self._matrix)
        if needed <= capacity:
            return
        new_cap = max(needed, capacity * 2, 1024)

        def grow(arr: np.ndarray) -> np.ndarray:
            shape = (new_cap, *arr.shape[1:])
            out = np.zeros(shape, dtype=arr.dtype)
            out[: self._size] = arr[: self._size]
            return out

        self._matrix = grow(self._matrix)
        self._kind = grow(self._kind)
        self._agent = grow(self._agent)
        self._present = grow(self._present)
        self._active = grow(self._active)
        self._current = grow(self._current)
        if self._basis is not None:
            self._reduced = grow(self._reduced)

    def _grow_chunks(self, needed: int) -> None:
        capacity = len(self._chunk_matrix)
        if needed <= capacity:
            return
        new_cap = max(needed, capacity * 2, 1024)
        m = self._chunk_size
        matrix = np.zeros((new_cap, self.dimensions), dtype=np.float32)
        matrix[:m] = self._chunk_matrix[:m]
        owner = np.full(new_cap, -1, dtype=np.int64)
        owner[:m] = self._chunk_owner[:m]
        self._chunk_matrix, self._chunk_owner = matrix, owner
        if self._basis is not None:
            reduced = np.zeros((new_cap, REDUCED_DIMS), dtype=np.float32)
            reduced[:m] = self._chunk_reduced[:m]
            self._chunk_reduced = reduced

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
            if rev == self._rev:
                return
            conn.execute("BEGIN")  # one snapshot: rows and their chunks agree
            try:
                (rev,) = conn.execute("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'rev'").fetchone()
                rows = conn.execute(
                    "SELECT id, kind, agent_id, active, superseded_by IS NULL, embedding "
                    "FROM memories WHERE rev > ?",
                    (self._rev,),
                ).fetchall()
                chunks = conn.execute(  # the changed rows by the rev index, then their chunks by key
                    "SELECT c.memory_id, c.embedding FROM memory_chunks c WHERE c.memory_id IN "
                    "(SELECT id FROM memories WHERE rev > ?) ORDER BY c.memory_id, c.chunk_no",
                    (self._rev,),
                ).fetchall()
                purged = conn.execute("SELECT id FROM purged WHERE rev > ?", (self._rev,)).fetchall()
            finally:
                conn.execute("COMMIT")
            self._grow(self._size + len(rows))
            for id_, kind, agent, active, current, blob in rows:
                pos = self._pos.get(id_)
                if pos is None:
                    pos = self._size
                    self._size += 1
                    self._ids.append(id_)
                    self._pos[id_] = pos
                self._kind[pos] = self._code(kind)
                self._agent[pos] = self._code(agent)
                self._active[pos] = bool(active)
                self._current[pos] = bool(current)
                if blob is None:
                    self._present[pos] = False
                else:
                    self._matrix[pos] = np.frombuffer(blob, dtype=np.float32)
                    self._present[pos] = True
            for (id_,) in purged:
                pos = self._pos.get(id_)
                if pos is not None:
                    self._present[pos] = False
                    self._drop_chunks(pos)
            changed = [self._pos[r[0]] for r in rows]
            for pos in changed:
                self._drop_chunks(pos)
            new_chunks: list[int] = []
            by_memory: dict[str, list[bytes]] = {}
            for id_, blob in chunks:
                by_memory.setdefault(id_, []).append(blob)
            for id_, blobs in by_memory.items():
                new_chunks += self._add_chunks(self._pos[id_], blobs)
            self._rev = rev
            self._masks.clear()
            self._update_reduced(changed, new_chunks)

    def _update_reduced(self, changed: list[int], new_chunks: list[int]) -> None:
        """Fit the PCA basis when the store is large (refit as it doubles); project changed rows."""
        n = self._size
        if n >= APPROX_MIN_ROWS and (self._basis is None or n >= 2 * self._basis_rows):
            rows = np.flatnonzero(self._present[:n])
            if rows.size >= APPROX_MIN_ROWS:
                rng = np.random.default_rng(n)
                sample = self._matrix[rng.choice(rows, min(PCA_SAMPLE, rows.size), replace=False)]
                _, _, vt = np.linalg.svd(sample - sample.mean(axis=0), full_matrices=False)
                self._basis = np.ascontiguousarray(vt[:REDUCED_DIMS].T, dtype=np.float32)
                self._basis_rows = n
                self._reduced = np.zeros((len(self._matrix), REDUCED_DIMS), dtype=np.float32)
                self._reduced[:n] = self._matrix[:n] @ self._basis
                m = self._chunk_size
                self._chunk_reduced = np.zeros((len(self._chunk_matrix), REDUCED_DIMS), dtype=np.float32)
                self._chunk_reduced[:m] = self._chunk_matrix[:m] @ self._basis
                return
        if self._basis is not None and changed:
            idx = np.asarray(changed)
            self._reduced[idx] = self._matrix[idx] @ self._basis
        if self._basis is not None and new_chunks:
            idx = np.asarray(new_chunks)
            self._chunk_reduced[idx] = self._chunk_matrix[idx] @ self._basis

    def vectors(self, ids: list[str], agent_id: str) -> dict[str, np.ndarray]:
        """Copies of the stored vectors of ``ids`` that belong to ``agent_id``."""
        agent = self._codes.get(agent_id)
        with self._lock:
            out = {}
            for id_ in ids:
                pos = self._pos.get(id_)
                if pos is not None and self._present[pos] and self._agent[pos] == agent:
                    out[id_] = self._matrix[pos].copy()
            return out

    def search(
        self, vector: np.ndarray, flt: IndexFilter, limit: int, *, chunks: bool = True
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
            candidates = np.flatnonzero(mask)
            if candidates.size == 0:
                return []
            if self._basis is not None and candidates.size >= APPROX_MIN_ROWS:
                candidates = _shortlist(
                    self._reduced[:n], vector @ self._basis, mask, max(RERANK_MIN, 3 * limit)
                )
            scores = self._matrix[candidates] @ vector if candidates.size < n // 2 else None
            if scores is None:
                scores = (self._matrix[:n] @ vector)[candidates]
            top = _top(scores, limit)
            rows, scores, main = candidates[top], scores[top], scores[top]
            if chunks and self._live_chunks():
                rows, scores, main = self._with_chunks(vector, mask, rows, limit)
            return [(self._ids[r], float(s), float(o)) for r, s, o in zip(rows, scores, main, strict=True)]

    def _with_chunks(
        self, vector: np.ndarray, mask: np.ndarray, rows: np.ndarray, limit: int
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
                reduced, query = self._chunk_reduced[:m], vector @ self._basis
                chunk_rows = _shortlist(reduced, query, chunk_mask, max(RERANK_MIN, 3 * limit))
            scores = self._chunk_matrix[chunk_rows] @ vector
            order = np.argsort(-scores, kind="stable")
            owners, first = np.unique(owner[chunk_rows][order], return_index=True)  # owners sorted
            best = scores[order][first]  # each owner's best chunk score
            rows = np.union1d(rows, owners[_top(best, limit)])
        else:
            owners, best = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        main = self._matrix[rows] @ vector
        scores = main.copy()
        at = np.minimum(np.searchsorted(owners, rows), max(owners.size - 1, 0))
        has_chunk = owners[at] == rows if owners.size else np.zeros(rows.size, dtype=bool)
        scores[has_chunk] = np.maximum(scores[has_chunk], best[at[has_chunk]])
        top = _top(scores, limit)
        return rows[top], scores[top], main[top]


def _top(scores: np.ndarray, limit: int) -> np.ndarray:
    """Indices of the ``limit`` highest scores, best first."""
    k = min(limit, scores.size)
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top], kind="stable")]


def _shortlist(reduced: np.ndarray, query: np.ndarray, mask: np.ndarray, size: int) -> np.ndarray:
    """Row numbers of the ``size`` best rows under ``mask`` by reduced-space score, in order."""
    approx = reduced @ query
    approx[~mask] = -np.inf
    size = min(size, int(mask.sum()))
    return np.sort(np.argpartition(-approx, size - 1)[:size])
