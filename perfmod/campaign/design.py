"""Run orders of measuring studies: training and held-out runs interleaved, repetitions spread (issue 13 item 3).

A measuring study times many runs on a machine whose load drifts (other
users, a noisy neighbour, frequency changes).  If all training runs come
first and all held-out runs after, a burst of load lands on one side only
and biases the validation error; if a configuration's repetitions run back
to back, one burst spoils all of them.  :func:`interleaved_order` puts every
run of a design in one seeded random order with both properties:

- *stratified*: repetition ``r`` of a configuration with ``n`` repetitions
  falls at a uniformly random place in the ``r``-th of ``n`` equal slices of
  the whole run (key ``(r + U) / n``), so each configuration's repetitions are
  spread over the whole measurement and a one-repetition configuration
  (typically a held-out one) lands anywhere, among the training runs;
- *never back to back*: two repetitions of one configuration are never
  adjacent, when the design allows it (a later run is swapped in).

The order depends only on the repetition counts and the seed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["interleaved_order", "position_of"]


def _separate(order: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Swap runs so that no two runs of one configuration are adjacent, where a swap can do it."""
    out = list(order)
    n = len(out)

    def fits(item: tuple[int, int], pos: int, skip: int) -> bool:
        """``item`` placed at ``pos`` has no neighbour of its configuration (ignoring position ``skip``)."""
        return all(not (0 <= q < n and q != skip and out[q][0] == item[0]) for q in (pos - 1, pos + 1))

    for k in range(1, n):
        if out[k][0] != out[k - 1][0]:
            continue
        for j in range(k + 1, n):
            if fits(out[j], k, j) and fits(out[k], j, k) and out[j][0] != out[k][0]:
                out[k], out[j] = out[j], out[k]
                break
    return out


def interleaved_order(reps: Sequence[int], seed: int) -> list[tuple[int, int]]:
    """Every ``(configuration, repetition)`` of a design in one seeded, stratified random order.

    Parameters
    ----------
    reps : sequence of int
        Repetitions of each configuration (``reps[i]`` runs of configuration
        ``i``; 0 leaves it out).  Training and held-out configurations go in
        the same call, so that they are interleaved.
    seed : int
        Seed of the order (the same seed gives the same order).

    Returns
    -------
    list of (int, int)
        ``(configuration index, repetition)`` in the order to run them.

    Raises
    ------
    ValueError
        A negative repetition count.

    Examples
    --------
    >>> interleaved_order([2, 2, 1], seed=0)  # doctest: +SKIP
    [(1, 0), (2, 0), (0, 0), (1, 1), (0, 1)]
    """
    counts = [int(n) for n in reps]
    if any(n < 0 for n in counts):
        raise ValueError(f"repetition counts must be >= 0, got {counts}")
    rng = np.random.default_rng(seed)
    keys: list[tuple[float, int, int]] = []
    for i, n in enumerate(counts):
        u = rng.random(n)
        keys.extend(((r + float(u[r])) / n, i, r) for r in range(n))
    keys.sort()
    return _separate([(i, r) for _, i, r in keys])


def position_of(order: Sequence[tuple[int, int]], shape: tuple[int, ...]) -> np.ndarray:
    """Position of each run in ``order`` as an array over ``(*configuration shape, rep)``.

    ``shape`` is the configuration grid (C order, flattened to the
    configuration index) followed by the number of repetitions; runs not in
    ``order`` get -1.  Studies store it as ``run_index`` so that the order is
    part of the dataset.
    """
    out = np.full(int(np.prod(shape)), -1, dtype=np.int64)
    reps = shape[-1]
    for pos, (i, r) in enumerate(order):
        out[i * reps + r] = pos
    return out.reshape(shape)
