"""Analytical point-to-point communication models (paper 000 §2.1, §3.1).

All functions are pure arithmetic on their arguments, so NumPy arrays and
xarray objects broadcast: a sweep over message sizes, ``k`` or parameters is
one call.  Sizes are in bytes, times in seconds, rates in bytes per second.

- :func:`postal`: Eq. 1, ``T = alpha + beta * n``.
- :func:`maxrate`: Eq. 2, ``T = alpha + k n / (R_Cb + (k - 1) R_Ci)``.
- :func:`maxrate2`: Eq. 3, ``T = alpha + k n beta`` (short protocol).
- :func:`kmodel_k`: Eq. 4, ``k = K_inter / K_total * k'``; Eq. 5 is
  :func:`maxrate` or :func:`maxrate2` evaluated at that k.
- :func:`loggp`: LogGP (Alexandrov et al.), ``T = o_s + L + (n - 1) G + o_r``.

:func:`evaluate` calls one with a parameter mapping (the models by name are
the registry, :mod:`perfmod.models.comm.registry`): a
formula's arguments after ``nbytes`` (and ``k``, for those that take it)
are its parameter names, the names of the platform tables
(:data:`perfmod.machine.platforms.PARAM_NAMES`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = ["postal", "maxrate", "maxrate2", "kmodel_k", "loggp", "check_sizes", "check_k", "evaluate", "formula_params"]

ArrayLike = Any  # numbers, NumPy arrays or xarray objects


def check_sizes(nbytes: ArrayLike, name: str = "nbytes") -> None:
    """Raise ``ValueError`` if any message size is not a positive finite number."""
    arr = np.asarray(nbytes, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        bad = arr[~(np.isfinite(arr) & (arr > 0))]
        raise ValueError(f"{name} must be positive and finite (bytes); got {bad.ravel()[:5].tolist()}")


def check_k(k: ArrayLike, k_prime: ArrayLike | None = None) -> None:
    """Raise ``ValueError`` unless ``1 <= k`` (and ``k <= k'`` when ``k'`` is given)."""
    karr = np.asarray(k, dtype=float)
    if not np.all(np.isfinite(karr)) or np.any(karr < 1):
        raise ValueError(f"k must be >= 1 (processes communicating per node); got {karr.ravel()[:5].tolist()}")
    if k_prime is not None:
        kp = np.asarray(k_prime, dtype=float)
        if np.any(karr > kp + 1e-12):
            raise ValueError(f"k must be <= k' = {kp.ravel()[:5].tolist()}; got {karr.ravel()[:5].tolist()}")


def postal(nbytes: ArrayLike, alpha: ArrayLike, beta: ArrayLike) -> ArrayLike:
    """Postal (alpha-beta) model, paper 000 Eq. 1.

    Parameters
    ----------
    nbytes : array_like
        Message size n in bytes.
    alpha : array_like
        Start-up time in seconds.
    beta : array_like
        Time per byte in seconds per byte.

    Returns
    -------
    array_like
        Time in seconds, broadcast over the arguments.
    """
    return alpha + beta * nbytes


def maxrate(nbytes: ArrayLike, k: ArrayLike, alpha: ArrayLike, r_cb: ArrayLike, r_ci: ArrayLike) -> ArrayLike:
    """Max-rate model, three-parameter form (paper 000 Eq. 2).

    Parameters
    ----------
    nbytes : array_like
        Message size n in bytes.
    k : array_like
        Number of processes per node communicating at once (``k >= 1``).
    alpha : array_like
        Start-up time in seconds.
    r_cb : array_like
        Bandwidth of a single process, bytes per second.
    r_ci : array_like
        Bandwidth added by each additional process, bytes per second.

    Returns
    -------
    array_like
        ``alpha + k n / (r_cb + (k - 1) r_ci)`` in seconds.
    """
    return alpha + k * nbytes / (r_cb + (k - 1) * r_ci)


def maxrate2(nbytes: ArrayLike, k: ArrayLike, alpha: ArrayLike, beta: ArrayLike) -> ArrayLike:
    """Max-rate model, two-parameter form for the short protocol (paper 000 Eq. 3).

    Returns ``alpha + k n beta`` in seconds.
    """
    return alpha + k * nbytes * beta


def kmodel_k(k_inter: ArrayLike, k_total: ArrayLike, k_prime: ArrayLike) -> ArrayLike:
    """Effective k of the K-model (paper 000 Eq. 4): ``K_inter / K_total * k'``.

    Parameters
    ----------
    k_inter : array_like
        Maximum over nodes of the inter-node messages a node sends in a phase.
    k_total : array_like
        Maximum over nodes of all messages (intra- and inter-node) a node sends.
    k_prime : array_like
        Processes per node engaged in communication (the max-rate k).
    """
    ki = np.asarray(k_inter, dtype=float)
    kt = np.asarray(k_total, dtype=float)
    if np.any(kt <= 0) or np.any(ki < 0) or np.any(ki > kt):
        raise ValueError(f"need 0 <= K_inter <= K_total and K_total > 0; got K_inter={k_inter}, K_total={k_total}")
    return k_inter / k_total * k_prime


def loggp(nbytes: ArrayLike, L: ArrayLike, o: ArrayLike, g: ArrayLike, G: ArrayLike) -> ArrayLike:
    """LogGP time of one message of ``n`` bytes: ``o + L + (n - 1) G + o``.

    ``g`` (gap between consecutive messages) does not enter a single message's
    time; it bounds the injection rate of a sequence of messages and is kept
    in the signature so that parameter sets stay complete.  All times in
    seconds, ``G`` in seconds per byte.
    """
    del g
    return 2 * o + L + (nbytes - 1) * G


@functools.cache
def _signature(formula: Callable[..., Any]) -> tuple[bool, tuple[str, ...]]:
    names = tuple(inspect.signature(formula).parameters)
    if not names or names[0] != "nbytes":
        raise TypeError(f"a formula's first argument is nbytes; {formula.__qualname__} has {names}")
    takes_k = len(names) > 1 and names[1] == "k"
    return takes_k, names[2:] if takes_k else names[1:]


def formula_params(formula: Callable[..., Any]) -> tuple[bool, tuple[str, ...]]:
    """Whether ``formula`` takes ``k``, and its parameter names (the arguments after ``nbytes`` and ``k``)."""
    return _signature(formula)


def evaluate(formula: Callable[..., Any], nbytes: ArrayLike, k: ArrayLike, params: Mapping[str, float]) -> ArrayLike:
    """``formula(nbytes[, k], **params)``: time in seconds; ``k`` is passed only to formulas that take it.

    Parameters
    ----------
    formula : callable
        Any function ``f(nbytes[, k], <parameters>)`` (:func:`postal`, :func:`maxrate`, ...).
    nbytes : array_like
        Message sizes in bytes.
    k : array_like or None
        Processes communicating at once (ignored by formulas without ``k``).
    params : mapping of str to float
        The formula's parameters by name, SI units (extra keys, e.g. ``<name>_se``, are ignored).
    """
    takes_k, names = _signature(formula)
    args = [params[n] for n in names]
    return formula(nbytes, k, *args) if takes_k else formula(nbytes, *args)
