"""Fitting communication models to ping-pong data (paper 000 §2.1, §4.1).

The paper obtains postal parameters per protocol "by fitting a (piece-wise)
linear function to the results of a ping-pong benchmark" and max-rate
parameters from a multi-process ping-pong, with ``scipy.optimize.curve_fit``,
falling back to the two-parameter form (Eq. 3) when a fitted parameter of
the three-parameter form (Eq. 2) is negative.  Here:

- :func:`fit_postal`, :func:`fit_maxrate2`, :func:`fit_maxrate` return a
  :class:`Fit` with parameters, standard errors and diagnostics;
- :func:`find_breakpoints` finds the protocol thresholds as the breakpoints
  of a piecewise-linear fit of time against size (exhaustive search, the
  number of breakpoints chosen by BIC);
- :func:`fit_protocols` fits the postal model to each segment.

Times span four orders of magnitude from 8 B to 4 MiB, so every fit weighs
points by their relative error (``sigma = t``): a 10 % miss on a 2 us
latency counts as much as a 10 % miss on a 300 us transfer.  Standard errors
are curve_fit's, scaled by the residual variance (``absolute_sigma=False``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import curve_fit

from .models import maxrate, maxrate2, postal

__all__ = ["Fit", "fit_postal", "fit_maxrate2", "fit_maxrate", "find_breakpoints", "fit_protocols", "PROTOCOL_NAMES"]


@dataclass(frozen=True)
class Fit:
    """A fitted communication model.

    Attributes
    ----------
    model : {"postal", "maxrate2", "maxrate"}
    form : str
        Which form was fitted, and why for a fallback.
    params, stderr : dict
        Parameters (SI units: s, s/B, B/s) and their standard errors.
    n : int
        Points fitted.
    rss : float
        Sum of squared relative residuals.
    r2 : float
        Coefficient of determination of the times.
    rel_rms : float
        Root mean square relative error.
    residuals : numpy.ndarray
        Relative residuals ``(t - fit) / t``.
    """

    model: str
    form: str
    params: dict[str, float]
    stderr: dict[str, float]
    n: int
    rss: float
    r2: float
    rel_rms: float
    residuals: np.ndarray = field(repr=False, compare=False)

    def predict(self, nbytes: Any, k: Any = 1) -> Any:
        """Model time (s) at ``nbytes`` (and k for the max-rate forms)."""
        p = self.params
        if self.model == "postal":
            return postal(nbytes, p["alpha"], p["beta"])
        if self.model == "maxrate2":
            return maxrate2(nbytes, k, p["alpha"], p["beta"])
        return maxrate(nbytes, k, p["alpha"], p["r_cb"], p["r_ci"])

    def to_series(self) -> pd.Series:
        """Parameters, standard errors (``<name>_se``) and diagnostics as one Series."""
        d: dict[str, Any] = dict(self.params)
        d |= {f"{k}_se": v for k, v in self.stderr.items()}
        d |= {"n": self.n, "rss": self.rss, "r2": self.r2, "rel_rms": self.rel_rms}
        return pd.Series(d, name=f"{self.model} ({self.form})")


def _arrays(nbytes: Any, t: Any, k: Any = None, nparams: int = 2) -> tuple[np.ndarray, ...]:
    n = np.asarray(nbytes, dtype=float).ravel()
    tt = np.asarray(t, dtype=float).ravel()
    if n.shape != tt.shape:
        raise ValueError(f"nbytes and t differ in length: {n.size} vs {tt.size}")
    if np.any(~np.isfinite(n)) or np.any(n <= 0):
        raise ValueError("nbytes must be positive (bytes)")
    if np.any(~np.isfinite(tt)) or np.any(tt <= 0):
        raise ValueError("t must be positive times (s)")
    if n.size <= nparams:
        raise ValueError(f"need more points than parameters: {n.size} points for {nparams} parameters")
    if k is None:
        return n, tt
    kk = np.broadcast_to(np.asarray(k, dtype=float), n.shape).ravel() if np.ndim(k) == 0 else np.asarray(
        k, dtype=float).ravel()
    if kk.shape != n.shape:
        raise ValueError(f"k and nbytes differ in length: {kk.size} vs {n.size}")
    if np.any(kk < 1):
        raise ValueError("k must be >= 1")
    return n, tt, kk


def _finish(model: str, form: str, names: tuple[str, ...], popt: np.ndarray, pcov: np.ndarray,
            t: np.ndarray, fitted: np.ndarray) -> Fit:
    res = (t - fitted) / t
    rss = float(np.sum(res**2))
    ss_tot = float(np.sum((t - t.mean()) ** 2))
    r2 = 1.0 - float(np.sum((t - fitted) ** 2)) / ss_tot if ss_tot > 0 else float("nan")
    se = np.sqrt(np.clip(np.diag(pcov), 0, None))
    return Fit(model, form, dict(zip(names, map(float, popt), strict=True)),
               dict(zip(names, map(float, se), strict=True)), t.size, rss, r2,
               float(np.sqrt(np.mean(res**2))), res)


def _linear_start(n: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    w = 1.0 / t
    a = np.stack([np.ones_like(n), n], axis=1) * w[:, None]
    (alpha, beta), *_ = np.linalg.lstsq(a, t * w, rcond=None)
    return float(alpha), float(beta)


def fit_postal(nbytes: Any, t: Any) -> Fit:
    """Fit Eq. 1, ``t = alpha + beta n``, with relative weights."""
    n, tt = _arrays(nbytes, t)
    p0 = _linear_start(n, tt)
    popt, pcov = curve_fit(postal, n, tt, p0=p0, sigma=tt, absolute_sigma=False)
    return _finish("postal", "2-parameter (Eq. 1)", ("alpha", "beta"), popt, pcov, tt, postal(n, *popt))


def fit_maxrate2(nbytes: Any, k: Any, t: Any, why: str = "") -> Fit:
    """Fit Eq. 3, ``t = alpha + k n beta``, with relative weights."""
    n, tt, kk = _arrays(nbytes, t, k)
    x = np.stack([n, kk])
    p0 = _linear_start(n * kk, tt)
    popt, pcov = curve_fit(lambda x, a, b: maxrate2(x[0], x[1], a, b), x, tt, p0=p0, sigma=tt, absolute_sigma=False)
    form = "2-parameter (Eq. 3)" + (f" fallback: {why}" if why else "")
    return _finish("maxrate2", form, ("alpha", "beta"), popt, pcov, tt, maxrate2(n, kk, *popt))


def fit_maxrate(nbytes: Any, k: Any, t: Any) -> Fit:
    """Fit Eq. 2, ``t = alpha + k n / (R_Cb + (k - 1) R_Ci)``, from multi-pair data.

    Falls back to Eq. 3 (:func:`fit_maxrate2`) when a fitted parameter is
    negative (paper 000 §2.1) or when only one k was measured (R_Ci is then
    not identifiable); :attr:`Fit.form` says which and why.
    """
    n, tt, kk = _arrays(nbytes, t, k, nparams=3)
    if np.unique(kk).size < 2:
        return fit_maxrate2(n, kk, tt, why="one k only, R_Ci not identifiable")
    one = kk == kk.min()
    a0, b0 = _linear_start(n[one], tt[one])
    rcb0 = 1.0 / max(b0, 1e-15)
    x = np.stack([n, kk])
    try:
        popt, pcov = curve_fit(lambda x, a, rb, ri: maxrate(x[0], x[1], a, rb, ri), x, tt,
                               p0=(max(a0, 1e-9), rcb0, 0.5 * rcb0), sigma=tt, absolute_sigma=False, maxfev=20000)
    except RuntimeError as exc:
        return fit_maxrate2(n, kk, tt, why=f"3-parameter fit did not converge ({exc})")
    names = ("alpha", "r_cb", "r_ci")
    negative = [nm for nm, v in zip(names, popt, strict=True) if v < 0]
    if negative:
        return fit_maxrate2(n, kk, tt, why=f"negative {', '.join(negative)} in the 3-parameter fit")
    return _finish("maxrate", "3-parameter (Eq. 2)", names, popt, pcov, tt, maxrate(n, kk, *popt))


def _seg_rss(n: np.ndarray, t: np.ndarray) -> float:
    w = 1.0 / t
    a = np.stack([np.ones_like(n), n], axis=1) * w[:, None]
    coef, *_ = np.linalg.lstsq(a, t * w, rcond=None)
    return float(np.sum((a @ coef - t * w) ** 2))


def find_breakpoints(nbytes: Any, t: Any, max_breaks: int = 2, min_points: int = 3) -> list[int]:
    """Protocol thresholds from a time-vs-size curve.

    Fits piecewise-linear models with 0..``max_breaks`` breakpoints (each
    segment its own alpha and beta, relative weights), searching every split
    between measured sizes that leaves ``min_points`` points per segment,
    and keeps the number of breakpoints with the lowest BIC.

    Returns
    -------
    list of int
        Thresholds in bytes: the largest size of each lower segment.
    """
    n, tt = _arrays(nbytes, t)
    order = np.argsort(n)
    n, tt = n[order], tt[order]
    m = n.size
    best_bic: float = np.inf
    best: list[int] = []
    for nb in range(max_breaks + 1):
        best_rss, best_cut = np.inf, None
        for cuts in itertools.combinations(range(min_points, m - min_points + 1), nb):
            edges = (0, *cuts, m)
            if any(b - a < min_points for a, b in itertools.pairwise(edges)):
                continue
            rss = sum(_seg_rss(n[a:b], tt[a:b]) for a, b in itertools.pairwise(edges))
            if rss < best_rss:
                best_rss, best_cut = rss, cuts
        if best_cut is None:
            continue
        k = 2 * (nb + 1) + nb
        # floor: relative residuals below 1e-6 are numerical noise, not structure
        bic = m * np.log(max(best_rss, m * 1e-12) / m) + k * np.log(m)
        if bic < best_bic:
            best_bic, best = bic, [int(n[c - 1]) for c in best_cut]
    return best


PROTOCOL_NAMES = {0: ("eager",), 1: ("eager", "rendezvous"), 2: ("short", "eager", "rendezvous")}


def fit_protocols(nbytes: Any, t: Any, breakpoints: list[int]) -> dict[str, Fit]:
    """Postal fit per segment, named by :data:`PROTOCOL_NAMES` (the lowest segment of
    one break is "eager": MPICH's shared-memory path copies through cells up to its
    eager limit and switches to a rendezvous single copy above it)."""
    n, tt = _arrays(nbytes, t)
    if len(breakpoints) not in PROTOCOL_NAMES:
        raise ValueError(f"at most 2 breakpoints, got {breakpoints}")
    edges = [0.0, *sorted(breakpoints), np.inf]
    out = {}
    for name, (lo, hi) in zip(PROTOCOL_NAMES[len(breakpoints)], itertools.pairwise(edges), strict=True):
        sel = (n > lo) & (n <= hi)
        out[name] = fit_postal(n[sel], tt[sel])
    return out
