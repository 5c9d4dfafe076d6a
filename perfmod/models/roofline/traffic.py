"""Bytes an element-wise pass moves through memory: the counting rule of the device benchmark and the proxies.

One home for the rule, below both users: the device microbenchmark
(:mod:`perfmod.measure.bench.devicebench`) and the Jacobi2D proxy's kernel
counts (:func:`perfmod.apps.jacobi2d.proxy_kernel_counts`).  No numpy, pandas
or xarray here.
"""

from __future__ import annotations

__all__ = ["traffic_bytes"]


def traffic_bytes(n: int, itemsize: int, reads: int, writes: int, allocating: int, write_allocate: bool) -> int:
    """Bytes one element-wise pass (or a sum of passes) moves through memory.

    Parameters
    ----------
    n : int
        Elements per array.
    itemsize : int
        Bytes per element.
    reads, writes : int
        Distinct arrays read and written (an array read through two
        overlapping views counts once: the second view hits the cache).
    allocating : int
        Written arrays the pass does not also read (fetched first under
        write-allocate).
    write_allocate : bool
        True on a CPU with ordinary stores; False on a GPU.

    Returns
    -------
    int
        Bytes (B).
    """
    if min(n, itemsize, reads, writes, allocating) < 0 or allocating > writes:
        raise ValueError(f"traffic_bytes: need non-negative counts and allocating <= writes, got n={n}, "
                         f"itemsize={itemsize}, reads={reads}, writes={writes}, allocating={allocating}")
    return int(n) * int(itemsize) * (reads + writes + (allocating if write_allocate else 0))
