"""perfmod.core.rows.unique_rows against numpy's own np.unique(axis=0)."""

import numpy as np
import pytest

from perfmod.core.rows import unique_rows


@pytest.mark.parametrize("low, high, cols", [(-3, 4, 3), (0, 2, 1), (-(2**40), 2**40, 3), (0, 100_000, 4)])
def test_unique_rows_equals_numpy(low, high, cols):
    rows = np.random.default_rng(cols).integers(low, high, size=(5_000, cols))
    keys, inv = unique_rows(rows)
    ref_keys, ref_inv = np.unique(rows, axis=0, return_inverse=True)
    assert np.array_equal(keys, ref_keys) and np.array_equal(inv, ref_inv.reshape(-1))
    assert np.array_equal(keys[inv], rows)  # (the wide case, 2**123 combinations, takes numpy's own path)


def test_unique_rows_edges():
    keys, inv = unique_rows(np.zeros((0, 3), dtype=np.int64))
    assert keys.shape == (0, 3) and inv.size == 0
    with pytest.raises(ValueError, match="2-D"):
        unique_rows(np.arange(4))
