"""Fitting communication models to ping-pong data (paper 000 §2.1, §4.1).

The paper obtains postal parameters per protocol "by fitting a (piece-wise)
linear function to the results of a ping-pong benchmark" and max-rate
parameters from a multi-process ping-pong (k = 1..k' pairs at once), with
``scipy.optimize.curve_fit``, falling back to the two-parameter form (Eq. 3)
when a fitted parameter of the three-parameter form (Eq. 2) is negative.
Here:

- :func:`fit_postal` (Eq. 1), :func:`fit_maxrate2` (Eq. 3, the short
  protocol) and :func:`fit_maxrate` (Eq. 2 with the Eq. 3 fallback) return a
  :class:`Fit` with parameters, standard errors and diagnostics, and
  predictions with delta-method confidence and prediction intervals (the
  result protocol of :mod:`perfmod.core.results`);
- :func:`find_breakpoints` finds the protocol thresholds as the breakpoints
  of a piecewise-linear fit of time against size (each segment its own
  alpha and beta; exhaustive search over splits between measured sizes;
  the number of breakpoints, 0 to ``max_breaks``, chosen by BIC);
- :func:`fit_protocols` fits the postal model to each segment.

Weights: from 8 B to 4 MiB the times span four orders of magnitude, so by
default every fit weighs points by their relative error (``sigma = t`` in
``curve_fit``): a 10 % miss on a 2 us latency counts as much as a 10 % miss
on a 300 us transfer, and an unweighted fit would ignore the latency.  Pass
``relative=False`` for ordinary least squares.  Standard errors are
curve_fit's, scaled by the residual variance (``absolute_sigma=False``), so
they assume independent errors of constant relative size.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy.optimize import curve_fit, lsq_linear

from perfmod.core.results import FitResult, Table, check_interval, interval_bounds, param_series, prediction_dataset
from perfmod.models.comm.models import maxrate, maxrate2, postal

__all__ = [
    "Fit",
    "fit_postal",
    "fit_maxrate2",
    "fit_maxrate",
    "segment_bic",
    "find_breakpoints",
    "fit_protocols",
    "PROTOCOL_NAMES",
]

UNITS = {"alpha": "s", "beta": "s/B", "r_cb": "B/s", "r_ci": "B/s"}


@dataclass(frozen=True, eq=False)
class Fit(FitResult):
    """A fitted communication model (the result protocol of :mod:`perfmod.core.results`).

    Attributes
    ----------
    model : {"postal", "maxrate2", "maxrate"}
        The equation fitted: Eq. 1, Eq. 3 or Eq. 2 of paper 000.
    form : str
        Human-readable form, e.g. ``"3-parameter (Eq. 2)"``.
    names : tuple of str
        Parameter names (``alpha``, ``beta``; ``alpha``, ``r_cb``, ``r_ci``).
    coef : numpy.ndarray
        Their estimates (SI units: alpha s, beta s/B, r_cb and r_ci B/s); see :attr:`params`.
    cov : numpy.ndarray
        Their covariance (curve_fit's, scaled by the residual variance).
    n : int
        Points fitted.
    rss : float
        Sum of squared weighted residuals (relative residuals by default).
    r2 : float
        Coefficient of determination of the times (unweighted).
    rel_rms : float
        Root mean square relative error ``(t - fit) / t``.
    max_rel_err : float
        Largest absolute relative error.
    fallback : str
        Why a simpler form than asked for was fitted ("" when none was).
    weights : {"relative", "absolute"}
        ``sigma = t`` or ordinary least squares.
    residuals : numpy.ndarray
        Relative residuals ``(t - fit) / t`` in input order.
    """

    model: str
    form: str
    names: tuple[str, ...]
    coef: np.ndarray = field(repr=False)
    cov: np.ndarray = field(repr=False)
    n: int
    rss: float
    r2: float
    rel_rms: float
    max_rel_err: float
    fallback: str = ""
    weights: str = "relative"
    residuals: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)

    @property
    def params(self) -> pd.Series:
        """Fitted parameters (alpha s, beta s/B, r_cb and r_ci B/s)."""
        return param_series(self.coef, self.names, UNITS, "estimate")

    @property
    def stderr(self) -> pd.Series:
        """Standard errors of :attr:`params`."""
        return param_series(np.sqrt(np.clip(np.diag(self.cov), 0, None)), self.names, UNITS, "stderr")

    @property
    def dof(self) -> int:
        """Residual degrees of freedom, points minus parameters."""
        return self.n - len(self.names)

    @property
    def sigma2(self) -> float:
        """Residual variance of one point: of the relative error (relative weights) or of the time (s^2)."""
        return self.rss / self.dof

    def _time_and_gradient(self, n: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        p = dict(zip(self.names, self.coef, strict=True))
        if self.model == "postal":
            return postal(n, p["alpha"], p["beta"]), [np.ones_like(n), n]
        if self.model == "maxrate2":
            return maxrate2(n, k, p["alpha"], p["beta"]), [np.ones_like(n), k * n]
        d = p["r_cb"] + (k - 1) * p["r_ci"]
        return (maxrate(n, k, p["alpha"], p["r_cb"], p["r_ci"]),
                [np.ones_like(n), -k * n / d**2, -k * n * (k - 1) / d**2])

    def predict(self, x: Any, interval: str | None = None, level: float = 0.95, k: Any = 1) -> xr.Dataset:
        """Model time at message sizes ``x`` (B), with ``k`` pairs at once for the max-rate forms.

        Parameters
        ----------
        x : array_like or xarray.DataArray
            Message sizes in bytes; a DataArray keeps its dimensions (a sweep
            broadcasts against ``k``), a 1-d array gives dimension ``point``.
        interval : {None, "confidence", "prediction"}
            Delta method: the model's gradient g in its parameters at each
            point, ``var_mean = g' cov g``; a new observation adds the residual
            variance (``sigma2 * t^2`` for relative weights, ``sigma2``
            otherwise); t quantile with ``n - p`` degrees of freedom.  For
            the postal and 2-parameter forms (linear in the parameters) this is
            the closed-form interval of (weighted) least squares.
        level : float
            Coverage of the interval.
        k : int or array_like
            Pairs communicating at once (ignored by the postal form).

        Returns
        -------
        xarray.Dataset
            ``predicted`` one-way time (s), and ``lower`` / ``upper`` with an interval.
        """
        check_interval(interval, level)
        n = x if isinstance(x, xr.DataArray) else xr.DataArray(
            np.atleast_1d(np.asarray(x, dtype=float)), dims=None if np.ndim(x) > 1 else ("point",))
        kk = k if isinstance(k, xr.DataArray) else (
            xr.DataArray(np.asarray(k, dtype=float), dims=n.dims) if np.ndim(k) else xr.DataArray(float(k)))
        n, kk = xr.broadcast(n.astype(float), kk.astype(float))
        if np.any(~(n.values > 0)):
            raise ValueError(f"message sizes must be positive (bytes); got {n.values[~(n.values > 0)][:5].tolist()}")
        t, grad = self._time_and_gradient(n.values, kk.values)
        table = Table(pd.DataFrame(), n.dims, n.shape, {c: v.variable for c, v in n.coords.items()})
        lower = upper = None
        if interval is not None:
            g = np.stack([np.asarray(gi, dtype=float) for gi in grad], axis=-1)
            var_mean = np.einsum("...i,ij,...j->...", g, self.cov, g)
            new = self.sigma2 * (t**2 if self.weights == "relative" else 1.0)
            lower, upper = interval_bounds(t, var_mean, new, self.dof, interval, level)
        return prediction_dataset(table, t, units="s", long_name=f"one-way time ({self.model}, {self.form})",
                                  lower=lower, upper=upper, interval=interval, level=level,
                                  attrs={"model": self.model})

    def _diagnostics(self) -> dict[str, tuple[float, str, str]]:
        rss_unit = "1" if self.weights == "relative" else "s2"
        return {"n": (self.n, "1", "points fitted"),
                "rss": (self.rss, rss_unit, f"residual sum of squares ({self.weights} residuals)"),
                "r2": (self.r2, "1", "coefficient of determination of the times"),
                "rel_rms": (self.rel_rms, "1", "root mean square relative error"),
                "max_rel_err": (self.max_rel_err, "1", "largest absolute relative error")}

    def to_dataset(self) -> xr.Dataset:
        """The protocol's dataset; attrs name the model, form, fallback and weights."""
        ds = super().to_dataset()
        ds.attrs.update(model=self.model, form=self.form, fallback=self.fallback, weights=self.weights)
        return ds

    def summary(self) -> str:
        """Model and form, then the parameter table and diagnostics."""
        head = f"{self.model}: {self.form}, {self.weights} weights" + (
            f" (fallback: {self.fallback})" if self.fallback else "")
        return head + "\n" + super().summary().split("\n", 1)[1]

    def to_series(self) -> pd.Series:
        """Parameters, standard errors (``<name>_se``) and diagnostics as one Series."""
        d: dict[str, Any] = dict(self.params)
        d |= {f"{k}_se": v for k, v in self.stderr.items()}
        d |= {"n": self.n, "rss": self.rss, "r2": self.r2, "rel_rms": self.rel_rms,
              "max_rel_err": self.max_rel_err, "form": self.form, "fallback": self.fallback}
        return pd.Series(d, name=self.model)

    def to_frame(self) -> pd.DataFrame:
        """One row per parameter: estimate, standard error, relative SE, units."""
        p, se = self.params, self.stderr
        df = pd.DataFrame({"estimate": p, "stderr": se, "rel_stderr": se / p.abs().where(p != 0),
                           "units": pd.Series(p.attrs["units"])})
        df.index.name = "parameter"
        df.attrs.update(model=self.model, form=self.form, fallback=self.fallback, n=self.n, r2=self.r2,
                        rel_rms=self.rel_rms)
        return df


def _arrays(nbytes: Any, t: Any, k: Any = None, nparams: int = 2) -> tuple[np.ndarray, ...]:
    n = np.asarray(nbytes, dtype=float).ravel()
    tt = np.asarray(t, dtype=float).ravel()
    if n.shape != tt.shape:
        raise ValueError(f"nbytes and t differ in length: {n.size} vs {tt.size}")
    bad = ~np.isfinite(n) | (n <= 0)
    if bad.any():
        raise ValueError(f"nbytes must be positive and finite (bytes); got {n[bad][:5].tolist()}")
    bad = ~np.isfinite(tt) | (tt <= 0)
    if bad.any():
        raise ValueError(f"t must be positive and finite times (s); got {tt[bad][:5].tolist()}")
    if n.size <= nparams:
        raise ValueError(f"need more points than parameters: {n.size} points (nbytes, t) "
                         f"for {nparams} parameters")
    if k is None:
        return n, tt
    kk = np.asarray(k, dtype=float)
    kk = np.broadcast_to(kk, n.shape).ravel() if kk.ndim == 0 else kk.ravel()
    if kk.shape != n.shape:
        raise ValueError(f"k and nbytes differ in length: {kk.size} vs {n.size}")
    if np.any(~np.isfinite(kk)) or np.any(kk < 1):
        raise ValueError(f"k must be >= 1 (pairs communicating at once); got {kk[~(kk >= 1)][:5].tolist()}")
    return n, tt, kk


def _finish(model: str, form: str, names: tuple[str, ...], popt: np.ndarray, pcov: np.ndarray,
            t: np.ndarray, fitted: np.ndarray, relative: bool, fallback: str = "") -> Fit:
    res = (t - fitted) / t
    rss = float(np.sum(res**2)) if relative else float(np.sum((t - fitted) ** 2))
    ss_tot = float(np.sum((t - t.mean()) ** 2))
    r2 = 1.0 - float(np.sum((t - fitted) ** 2)) / ss_tot if ss_tot > 0 else float("nan")
    return Fit(model, form, tuple(names), np.asarray(popt, dtype=float), np.asarray(pcov, dtype=float), t.size,
               rss, r2, float(np.sqrt(np.mean(res**2))), float(np.max(np.abs(res))), fallback,
               "relative" if relative else "absolute", res)


def _linear_start(n: np.ndarray, t: np.ndarray, relative: bool = True) -> tuple[float, float]:
    w = 1.0 / t if relative else np.ones_like(t)
    a = np.stack([np.ones_like(n), n], axis=1) * w[:, None]
    (alpha, beta), *_ = np.linalg.lstsq(a, t * w, rcond=None)
    return float(alpha), float(beta)


def fit_postal(nbytes: Any, t: Any, relative: bool = True, nonnegative: bool = False) -> Fit:
    """Fit the postal model, paper 000 Eq. 1: ``t = alpha + beta n``.

    Parameters
    ----------
    nbytes : array_like
        Message sizes n in bytes (positive).
    t : array_like
        One-way times in seconds (positive), same length.
    relative : bool
        Weigh by relative error (``sigma = t``, default) or not.
    nonnegative : bool
        Bounded least squares: alpha >= 0 s and beta >= 0 s/B (a parameter
        may end on its bound; :attr:`Fit.form` then says so).

    Returns
    -------
    Fit
        ``params`` alpha (s) and beta (s/B) with standard errors.
    """
    n, tt = _arrays(nbytes, t)
    form = "2-parameter (Eq. 1)"
    if nonnegative:  # linear in (alpha, beta): the exact bounded optimum, curve_fit's covariance formula
        w = 1.0 / tt if relative else np.ones_like(tt)
        a = np.stack([np.ones_like(n), n], axis=1) * w[:, None]
        sol = lsq_linear(a, tt * w, bounds=(0.0, np.inf), method="bvls")
        popt = sol.x
        dof = max(n.size - 2, 1)
        pcov = np.linalg.pinv(a.T @ a) * float(np.sum((a @ popt - tt * w) ** 2)) / dof
        at = [nm for nm, m in zip(("alpha", "beta"), sol.active_mask, strict=True) if m != 0]
        form += ", bounded >= 0" + (f" ({', '.join(at)} on the bound)" if at else "")
    else:
        popt, pcov = curve_fit(postal, n, tt, p0=_linear_start(n, tt, relative), sigma=tt if relative else None,
                               absolute_sigma=False)
    return _finish("postal", form, ("alpha", "beta"), popt, pcov, tt, postal(n, *popt), relative)


def fit_maxrate2(nbytes: Any, k: Any, t: Any, relative: bool = True, fallback: str = "") -> Fit:
    """Fit the two-parameter max-rate model, paper 000 Eq. 3: ``t = alpha + k n beta``.

    Used for the short protocol, and as the fallback of :func:`fit_maxrate`
    (``fallback`` then says why).  Units as in :func:`fit_postal`; ``k`` is
    the number of pairs communicating at once (scalar or one per point).
    """
    n, tt, kk = _arrays(nbytes, t, k)
    x = np.stack([n, kk])
    popt, pcov = curve_fit(lambda x, a, b: maxrate2(x[0], x[1], a, b), x, tt,
                           p0=_linear_start(n * kk, tt, relative), sigma=tt if relative else None,
                           absolute_sigma=False)
    form = "2-parameter (Eq. 3)" + (f", fallback: {fallback}" if fallback else "")
    return _finish("maxrate2", form, ("alpha", "beta"), popt, pcov, tt, maxrate2(n, kk, *popt), relative,
                   fallback)


def fit_maxrate(nbytes: Any, k: Any, t: Any, relative: bool = True) -> Fit:
    """Fit the max-rate model, paper 000 Eq. 2, from multi-pair ping-pong data.

    ``t = alpha + k n / (R_Cb + (k - 1) R_Ci)`` with alpha (s), R_Cb (B/s,
    one process) and R_Ci (B/s added per extra process).  Falls back to
    Eq. 3 (:func:`fit_maxrate2`) when a fitted parameter is negative (paper
    000 §2.1), when the fit does not converge, or when only one k was
    measured (R_Cb and R_Ci are then not separable); :attr:`Fit.fallback`
    says which.

    Parameters
    ----------
    nbytes, k, t : array_like
        Size (B), pairs at once, one-way time (s), one value per point.
    relative : bool
        Relative weights (default), see the module docstring.
    """
    n, tt, kk = _arrays(nbytes, t, k, nparams=3)
    if np.unique(kk).size < 2:
        return fit_maxrate2(n, kk, tt, relative, fallback="one k only, R_Ci not identifiable")
    one = kk == kk.min()
    a0, b0 = _linear_start(n[one] * kk[one], tt[one], relative) if one.sum() >= 2 else _linear_start(
        n * kk, tt, relative)
    rcb0 = 1.0 / max(b0, 1e-15)
    x = np.stack([n, kk])
    names = ("alpha", "r_cb", "r_ci")
    try:
        popt, pcov = curve_fit(lambda x, a, rb, ri: maxrate(x[0], x[1], a, rb, ri), x, tt,
                               p0=(max(a0, 1e-9), rcb0, 0.5 * rcb0), sigma=tt if relative else None,
                               absolute_sigma=False, maxfev=20000)
    except RuntimeError as exc:
        return fit_maxrate2(n, kk, tt, relative, fallback=f"3-parameter fit did not converge ({exc})")
    negative = [f"{nm} = {v:.3g}" for nm, v in zip(names, popt, strict=True) if v < 0]
    if negative:
        return fit_maxrate2(n, kk, tt, relative,
                            fallback=f"negative {', '.join(negative)} in the 3-parameter fit (000 §2.1)")
    return _finish("maxrate", "3-parameter (Eq. 2)", names, popt, pcov, tt, maxrate(n, kk, *popt), relative)


def _seg_rss(n: np.ndarray, t: np.ndarray) -> float:
    w = 1.0 / t
    a = np.stack([np.ones_like(n), n], axis=1) * w[:, None]
    coef, *_ = np.linalg.lstsq(a, t * w, rcond=None)
    return float(np.sum((a @ coef - t * w) ** 2))


def segment_bic(nbytes: Any, t: Any, max_breaks: int = 2, min_points: int = 3) -> dict[int, tuple[float, list[int]]]:
    """Best split and its BIC for each number of breakpoints 0..``max_breaks``.

    Each segment is fitted by its own ``alpha + beta n`` (relative weights);
    for each number of breaks every split between measured sizes leaving at
    least ``min_points`` points per segment is tried and the one with the
    lowest relative RSS kept.  BIC = ``m ln(RSS/m) + p ln(m)`` with
    ``p = 3 b + 2`` (two per segment plus each break's position).

    Returns
    -------
    dict
        ``{breaks: (bic, thresholds in bytes)}``; a threshold is the largest
        size of the lower segment.  Numbers of breaks that do not fit
        ``min_points`` are absent.
    """
    n, tt = _arrays(nbytes, t)
    if max_breaks < 0 or min_points < 2:
        raise ValueError(f"need max_breaks >= 0 and min_points >= 2, got {max_breaks}, {min_points}")
    order = np.argsort(n)
    n, tt = n[order], tt[order]
    m = n.size
    # RSS of every contiguous run [a, b) once, so the search is table look-ups
    seg = {(a, b): _seg_rss(n[a:b], tt[a:b]) for a in range(m) for b in range(a + min_points, m + 1)}
    out: dict[int, tuple[float, list[int]]] = {}
    for nb in range(max_breaks + 1):
        best_rss, best_cut = np.inf, None
        for cuts in itertools.combinations(range(min_points, m - min_points + 1), nb):
            edges = (0, *cuts, m)
            if any(b - a < min_points for a, b in itertools.pairwise(edges)):
                continue
            rss = sum(seg[a, b] for a, b in itertools.pairwise(edges))
            if rss < best_rss:
                best_rss, best_cut = rss, cuts
        if best_cut is None:
            continue
        p = 2 * (nb + 1) + nb
        # floor: relative residuals below 1e-6 are rounding, not structure
        bic = m * np.log(max(best_rss, m * 1e-12) / m) + p * np.log(m)
        out[nb] = (float(bic), [int(n[c - 1]) for c in best_cut])
    return out


def find_breakpoints(nbytes: Any, t: Any, max_breaks: int = 2, min_points: int = 3) -> list[int]:
    """Protocol thresholds from a time-vs-size curve (segmented regression, BIC).

    Parameters
    ----------
    nbytes, t : array_like
        Sizes (B) and one-way times (s), e.g. medians over repetitions.
    max_breaks : int
        Most breakpoints considered (2: short / eager / rendezvous).
    min_points : int
        Fewest measured sizes per segment.

    Returns
    -------
    list of int
        Thresholds in bytes (the largest size of each lower segment), for the
        number of breakpoints with the lowest BIC (see :func:`segment_bic`).
    """
    scan = segment_bic(nbytes, t, max_breaks, min_points)
    return min(scan.values(), key=lambda v: v[0])[1]


PROTOCOL_NAMES = {0: ("eager",), 1: ("eager", "rendezvous"), 2: ("short", "eager", "rendezvous")}


def _median_k1(ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    if "pairs" in ds.dims:
        if 1 not in ds.pairs.values:
            raise ValueError("the dataset has no pairs = 1 (single pair) measurement")
        ds = ds.sel(pairs=1)
    return ds.msg_bytes.values.astype(float), ds.t_oneway.median("rep").values


def fit_protocols(data: xr.Dataset | Any, t: Any = None, breakpoints: list[int] | None = None,
                  max_breaks: int = 2, relative: bool = True) -> dict[str, Fit]:
    """Postal fit (Eq. 1) per protocol segment.

    Parameters
    ----------
    data : xarray.Dataset or array_like
        A ping-pong dataset (``t_oneway`` over ``msg_bytes`` and ``rep``,
        the single-pair curve is used, medians over ``rep``), or sizes in
        bytes with ``t`` the times in seconds.
    breakpoints : list of int, optional
        Thresholds in bytes (a segment is ``lo < n <= hi``); default
        :func:`find_breakpoints` with ``max_breaks``.

    Returns
    -------
    dict
        Protocol name -> :class:`Fit`, named from the bottom by
        :data:`PROTOCOL_NAMES` (two breaks: short/eager/rendezvous; one:
        eager/rendezvous, as MPICH's shared-memory path copies through cells
        up to its eager limit and switches to a rendezvous single copy above
        it; none: eager).
    """
    if isinstance(data, xr.Dataset):
        n, tt = _median_k1(data)
    else:
        if t is None:
            raise ValueError("fit_protocols: pass t (times in s) with the sizes, or a ping-pong dataset")
        n, tt = _arrays(data, t)
    if breakpoints is None:
        breakpoints = find_breakpoints(n, tt, max_breaks=max_breaks)
    if len(breakpoints) not in PROTOCOL_NAMES:
        raise ValueError(f"at most 2 breakpoints, got {breakpoints}")
    edges = [0.0, *sorted(breakpoints), np.inf]
    out = {}
    for name, (lo, hi) in zip(PROTOCOL_NAMES[len(breakpoints)], itertools.pairwise(edges), strict=True):
        sel = (n > lo) & (n <= hi)
        if sel.sum() <= 2:
            raise ValueError(f"protocol {name!r} ({lo:g} < n <= {hi:g} B) has {sel.sum()} sizes; need 3 or more")
        out[name] = fit_postal(n[sel], tt[sel], relative)
    return out
