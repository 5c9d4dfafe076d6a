"""Responses of distributed and multi-device runs, and their energy (paper 001 Eq. 4-11).

Paper 001 measures times per device and per iteration and turns them into the
responses it models (Sasidharan, thesis 2021/22, paper 001):

* Eq. 4, computation: T_comp = max over hosts i of sum over iterations j of
  max over the host's devices d of T_comp[i, j, d] (devices of a host wait for
  each other every iteration; hosts run independently until the end);
* Eq. 5, communication: T_comm = max_i sum_j T_comm[i, j];
* Eq. 6, total: T_tot = max_i T_i (the slowest host's wall time);
* Eq. 7, Monte Carlo: T_tot = sum over iterations of max over GPUs of the sum of
  its m tracking steps, plus sum over population-control steps of max over GPUs;
* Eq. 8-11, energy: T_s = max_i T_s_i, E_idle_i = T_s_i P_idle_i,
  E_dynamic_i = T_s_i P_dynamic_i, E_s = sum_i (E_idle_i + E_dynamic_i).

Every function takes NumPy arrays (the named axes last, in the order the
docstring gives, any leading axes broadcast: runs, configurations) or xarray
DataArrays (reduced over the named dimensions, others kept).  Times in
seconds, power in watts, energy in joules.  Negative or non-finite entries
raise :class:`~perfmod.models.regression.formula.DataError` naming their position.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from perfmod.models.regression.formula import DataError

__all__ = ["t_comp", "t_comm", "t_tot", "t_tot_montecarlo", "distributed_responses", "energy"]


def _check(a: Any, what: str, dims: Sequence[str], allow_negative: bool = False) -> Any:
    if isinstance(a, xr.DataArray):
        missing = [d for d in dims if d not in a.dims]
        if missing:
            raise DataError(f"{what} lacks dimension(s) {', '.join(missing)}; it has {', '.join(map(str, a.dims))}")
        v = a.values
    else:
        a = np.asarray(a, dtype=float)
        if a.ndim < len(dims):
            raise DataError(f"{what} needs at least {len(dims)} axes ({', '.join(dims)}, last), got shape {a.shape}")
        v = a
    bad = ~np.isfinite(v) if allow_negative else ~np.isfinite(v) | (v < 0)
    if bad.any():
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        kind = "non-finite" if not np.isfinite(v[pos]) else "negative"
        axes = ", ".join(map(str, a.dims if isinstance(a, xr.DataArray) else dims))
        raise DataError(f"{what} has {int(bad.sum())} {kind if bad.sum() == 1 else 'negative or non-finite'} "
                        f"value(s), first at index {pos} (axes {axes})")
    return a


def _red(a: Any, op: str, dim: str, axis: int) -> Any:
    return getattr(a, op)(dim=dim) if isinstance(a, xr.DataArray) else getattr(np, op)(a, axis=axis)


def t_comp(t: Any, host: str = "host", iteration: str = "iteration", device: str = "device") -> Any:
    """Eq. 4: max over hosts of the sum over iterations of the max over devices.

    ``t`` holds T_comp[i, j, d] (s): NumPy with axes (..., host, iteration, device),
    or an xarray DataArray with those dimension names.
    """
    t = _check(t, "computation times", (host, iteration, device))
    return _red(_red(_red(t, "max", device, -1), "sum", iteration, -1), "max", host, -1)


def t_comm(t: Any, host: str = "host", iteration: str = "iteration") -> Any:
    """Eq. 5: max over hosts of the sum over iterations of T_comm[i, j] (axes (..., host, iteration))."""
    t = _check(t, "communication times", (host, iteration))
    return _red(_red(t, "sum", iteration, -1), "max", host, -1)


def t_tot(t: Any, host: str = "host") -> Any:
    """Eq. 6: the slowest host's total time, max over hosts of T_i (axis (..., host))."""
    t = _check(t, "host times", (host,))
    return _red(t, "max", host, -1)


def t_tot_montecarlo(tracking: Any, population: Any, iteration: str = "iteration", step: str = "step",
                     device: str = "device", control: str = "control") -> Any:
    """Eq. 7: sum_i max_k sum_j T[i, j, k] + sum over population-control steps of max_k L[., k].

    ``tracking`` has axes (..., iteration, step, device) (K iterations of m tracking
    steps on d GPUs); ``population`` has axes (..., control, device) (the K/f
    population-control steps).
    """
    tracking = _check(tracking, "tracking times", (iteration, step, device))
    population = _check(population, "population-control times", (control, device))
    a = _red(_red(_red(tracking, "sum", step, -2), "max", device, -1), "sum", iteration, -1)
    b = _red(_red(population, "max", device, -1), "sum", control, -1)
    return a + b


def distributed_responses(comp: Any, comm: Any, total: Any, per_iteration: bool = True) -> dict[str, Any]:
    """The three responses of paper 001 §5.2 (Eq. 4-6), per iteration by default (the paper's time/iteration).

    Parameters
    ----------
    comp : array (..., host, iteration, device) or DataArray
        Computation time per host, iteration and device (s).
    comm : array (..., host, iteration) or DataArray
        Communication time per host and iteration (s).
    total : array (..., host) or DataArray
        Total time per host (s).
    per_iteration : bool
        Divide by the number of iterations.
    """
    c = _check(comp, "computation times", ("host", "iteration", "device"))
    n_iter = c.sizes["iteration"] if isinstance(c, xr.DataArray) else c.shape[-2]
    out = {"t_comp": t_comp(c), "t_comm": t_comm(comm), "t_tot": t_tot(total)}
    m = _check(comm, "communication times", ("host", "iteration"))
    m_iter = m.sizes["iteration"] if isinstance(m, xr.DataArray) else m.shape[-1]
    if m_iter != n_iter:
        raise DataError(f"computation has {n_iter} iterations, communication {m_iter}")
    if per_iteration:
        out = {k: v / n_iter for k, v in out.items()}
    return out


def energy(t_s: Any, p_idle: Any, p_dynamic: Any, device: str = "device") -> dict[str, Any]:
    """Eq. 8-11: time and energy of a run on several devices.

    Parameters
    ----------
    t_s : array (..., device) or DataArray
        T_s_i, time each device is used (s).
    p_idle, p_dynamic : array or DataArray
        Idle and dynamic power per device (W), broadcast against ``t_s``.
    device : str
        Device dimension name (xarray).

    Returns
    -------
    dict
        ``t_s`` (Eq. 8, max over devices, s), ``e_idle`` and ``e_dynamic`` per device
        (Eq. 10-11, J), ``e_s`` (Eq. 9, sum over devices, J).
    """
    t_s = _check(t_s, "device times", (device,))
    p_idle = _check(p_idle, "idle power", ())
    p_dynamic = _check(p_dynamic, "dynamic power", ())
    e_idle = t_s * p_idle
    e_dyn = t_s * p_dynamic
    return {"t_s": _red(t_s, "max", device, -1), "e_idle": e_idle, "e_dynamic": e_dyn,
            "e_s": _red(e_idle + e_dyn, "sum", device, -1)}
