"""Distinct rows of an integer array, fast: one int64 key per row where the columns' ranges allow.

``np.unique(rows, axis=0)`` sorts the rows as structured records, tens of
times slower than a sort of one integer per row; the trace readers and the
trace extrapolation ask it of millions of (rank, offset, ...) rows.
"""

from __future__ import annotations

import numpy as np

__all__ = ["unique_rows"]


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` for a 2-D integer array: the distinct rows in the same
    (lexicographic) order and each row's index among them."""
    rows = np.asarray(rows)
    if rows.ndim != 2:
        raise ValueError(f"unique_rows: need a 2-D array, got shape {rows.shape}")
    if rows.shape[0] == 0 or rows.shape[1] == 0:
        keys, inv = np.unique(rows, axis=0, return_inverse=True)
        return keys, inv.reshape(-1)
    lo = rows.min(axis=0).astype(np.int64)
    span = rows.max(axis=0).astype(np.int64) - lo + 1
    if float(np.prod(span.astype(np.float64))) >= 2.0**62:
        keys, inv = np.unique(rows, axis=0, return_inverse=True)
        return keys, inv.reshape(-1)
    key = np.zeros(rows.shape[0], dtype=np.int64)
    for k in range(rows.shape[1]):
        key = key * span[k] + (rows[:, k].astype(np.int64) - lo[k])
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    return rows[first], inv.reshape(-1)
