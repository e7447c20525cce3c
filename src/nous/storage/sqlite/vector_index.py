"""An in-process exact cosine index over the embeddings in the SQLite file.

Rows carry a ``rev`` stamped by every write transaction; the index catches up
incrementally by reading rows with a newer rev, so writes from this process and
from other processes sharing the file are both picked up before each search.
Vectors are L2-normalised, so cosine is a dot product (~8 ms per 100k x 384).

On large stores a first pass ranks every row in a PCA-reduced space (64 dims, fitted
on a sample and refitted as the store doubles), then the best few thousand are
re-scored exactly: ~3x less memory traffic, recall@300 of 0.998 against the exact scan
on 100k real MiniLM vectors. Scores returned are always exact cosines.
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
            rows = conn.execute(
                "SELECT id, kind, agent_id, active, superseded_by IS NULL, embedding "
                "FROM memories WHERE rev > ?",
                (self._rev,),
            ).fetchall()
            purged = conn.execute("SELECT id FROM purged WHERE rev > ?", (self._rev,)).fetchall()
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
            self._rev = rev
            self._masks.clear()
            self._update_reduced([self._pos[r[0]] for r in rows])

    def _update_reduced(self, changed: list[int]) -> None:
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
                return
        if self._basis is not None and changed:
            idx = np.asarray(changed)
            self._reduced[idx] = self._matrix[idx] @ self._basis

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

    def search(self, vector: np.ndarray, flt: IndexFilter, limit: int) -> list[tuple[str, float]]:
        """Top ``limit`` (id, cosine) pairs among rows passing the filter."""
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
                candidates = self._shortlist(vector, mask, max(RERANK_MIN, 3 * limit))
            scores = self._matrix[candidates] @ vector if candidates.size < n // 2 else None
            if scores is None:
                scores = (self._matrix[:n] @ vector)[candidates]
            k = min(limit, candidates.size)
            top = np.argpartition(-scores, k - 1)[:k]
            top = top[np.argsort(-scores[top])]
            return [(self._ids[candidates[i]], float(scores[i])) for i in top]

    def _shortlist(self, vector: np.ndarray, mask: np.ndarray, size: int) -> np.ndarray:
        """Positions of the ``size`` best rows under ``mask`` by reduced-space score."""
        assert self._basis is not None
        n = len(mask)
        approx = self._reduced[:n] @ (vector @ self._basis)
        approx[~mask] = -np.inf
        size = min(size, int(mask.sum()))
        return np.sort(np.argpartition(-approx, size - 1)[:size])
