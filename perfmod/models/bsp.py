"""BSP-style model of structured-grid codes (paper 003 §II-III, Eq. 1-6, Table I).

Problem parameters: C cells in the global grid, P processes, I iterations,
H halo cells per process.  Unknowns (Table I): K_w cells computed per second,
K_b halo cells communicated per second, O_h packing time per halo cell,
O_w per-iteration compute overhead, O_l communication latency, O_i other
per-iteration time, O_c initialization time per cell, O_s start-up time,
and for TRITON K_r, the cost of one step of a tree reduction (Eq. 6).

    T_w = I (C / (P K_w) + H O_h + O_w)                    (Eq. 1)
    T_c = I (H / K_b + O_l + lg(P) K_r)                    (Eq. 2, 6)
    T_o = I O_i + C O_c + O_s                              (Eq. 3)
    T_t = T_w + T_c + T_o

Fitting (§II-B): each of T_w, T_c and T_o is linear in the unknowns (with
1/K_w and 1/K_b), so each is fitted separately by least squares: T_w in
the per-iteration form of Eq. 5, ``P T_w / I = C / K_w + P H O_h + P O_w``;
T_c per iteration, ``T_c / I = H / K_b + O_l + lg(P) K_r``; T_o as Eq. 3.
Non-negative least squares is an option, and so is relative weighting: each
run's residual divided by its measured value (weighted least squares for
timing noise that grows with the run, as a constant coefficient of variation
does).  Predictions come with intervals (the paper's future work: "from a
point prediction to an interval").

New scenarios (§III-B): K_w from a coarse run of the scenario
(:func:`kw_from_coarse_run`), and its iteration count scaled to a finer cell
size, by the paper's ``1 / cell size`` or by an exponent fitted on the
scenarios measured at several cell sizes (:func:`step_exponent`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import optimize

from perfmod.core.results import (
    FitResult,
    Table,
    as_table,
    check_interval,
    interval_bounds,
    param_series,
    prediction_dataset,
)

__all__ = [
    "BSPParams",
    "BlockFit",
    "BSPFit",
    "bsp_times",
    "fit_bsp",
    "coarse_run_work",
    "kw_from_coarse_run",
    "scaled_iterations",
    "step_exponent",
    "WEIGHTS",
    "IdentifiabilityError",
    "UNITS",
    "COMPONENTS",
]


class IdentifiabilityError(ValueError):
    """Too few runs, or runs that cannot separate some parameters (the message names them)."""


@dataclass(frozen=True)
class BSPParams:
    """Table I unknowns (SI units: cells/s, s/cell, s), plus K_r (s) for TRITON."""

    k_w: float
    k_b: float
    o_h: float
    o_w: float
    o_l: float
    o_i: float
    o_c: float
    o_s: float
    k_r: float = 0.0


def bsp_times(C: Any, P: Any, I: Any, H: Any, p: BSPParams) -> dict[str, Any]:  # noqa: E741
    """T_w, T_c, T_o and T_t (seconds) of Eq. 1-3 and 6; broadcasts over arrays."""
    tw = I * (C / (P * p.k_w) + H * p.o_h + p.o_w)
    tc = I * (H / p.k_b + p.o_l + np.log2(P) * p.k_r)
    to = I * p.o_i + C * p.o_c + p.o_s
    return {"t_w": tw, "t_c": tc, "t_o": to, "t_t": tw + tc + to}


@dataclass(frozen=True)
class BlockFit:
    """Least-squares fit of one block (compute, communication or other)."""

    names: tuple[str, ...]
    coef: np.ndarray
    cov: np.ndarray
    sigma2: float
    df: int
    nonneg: bool
    relative: bool = False

    def noise_variance(self, y: Any) -> Any:
        """Variance of one new observation about the mean ``y``: ``sigma2``, times ``y**2`` for a relative fit."""
        return self.sigma2 * np.asarray(y, dtype=float) ** 2 if self.relative else self.sigma2

    @property
    def stderr(self) -> np.ndarray:
        """Standard errors of the coefficients."""
        return np.sqrt(np.clip(np.diag(self.cov), 0, None))

    def mean_and_variance(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Point prediction for design rows ``x`` and the variance of the mean response there."""
        return x @ self.coef, np.einsum("ij,jk,ik->i", x, self.cov, x)


def _fit_block(x: np.ndarray, y: np.ndarray, names: tuple[str, ...], nonneg: bool, what: str,
               fixed: dict[str, float] | None = None, relative: bool = False) -> BlockFit:
    if relative:  # weighted least squares, weights 1 / y**2: rows divided by the measured value
        if np.any(y <= 0):
            raise ValueError(f"{what}: relative weighting needs a positive measured time in every run; "
                             f"runs {np.flatnonzero(y <= 0).tolist()} have {y[y <= 0].tolist()}")
        x, y = x / y[:, None], np.ones_like(y)
    fixed = {k: v for k, v in (fixed or {}).items() if k in names}
    free = np.array([nm not in fixed for nm in names])
    coef = np.array([fixed.get(nm, 0.0) for nm in names])
    cov = np.zeros((len(names), len(names)))
    y = y - x[:, ~free] @ coef[~free]
    x = x[:, free]
    n, k = x.shape
    fnames = [nm for nm, f in zip(names, free, strict=True) if f]
    if n < k:
        raise IdentifiabilityError(f"{what}: {n} runs for {k} unknowns ({', '.join(fnames)}); need at least {k}")
    scale = np.linalg.norm(x, axis=0)
    scale[scale == 0] = 1.0
    xs = x / scale
    s = np.linalg.svd(xs, compute_uv=False)
    if s[-1] < 1e-10 * s[0]:
        _, _, vt = np.linalg.svd(xs)
        null = np.abs(vt[-1])
        bad = [fnames[i] for i in np.flatnonzero(null > 1e-6)]
        raise IdentifiabilityError(f"{what}: the runs cannot separate {', '.join(bad)} (vary C, P, H or I more,"
                                   " or fix one of them)")
    if nonneg:
        beta, _ = optimize.nnls(xs, y)
    else:
        beta, *_ = np.linalg.lstsq(xs, y, rcond=None)
    resid = y - xs @ beta
    df = n - k
    sigma2 = float(resid @ resid / df) if df > 0 else 0.0
    coef[free] = beta / scale
    cov[np.ix_(free, free)] = sigma2 * np.linalg.inv(xs.T @ xs) / np.outer(scale, scale)
    return BlockFit(names, coef, cov, sigma2, df, nonneg, relative)


def _design(C: np.ndarray, P: np.ndarray, I: np.ndarray, H: np.ndarray, reduction: bool,  # noqa: E741
            scenario: np.ndarray | None = None, scenarios: tuple[str, ...] = ()):
    if scenarios:  # one 1/K_w column per scenario: C where the run is of that scenario, 0 elsewhere
        work = [C * (scenario == s) for s in scenarios]
    else:
        work = [C]
    xw = np.stack([*work, P * H, P], axis=1)
    xc = np.stack([H, np.ones_like(H)] + ([np.log2(P)] if reduction else []), axis=1)
    xo = np.stack([I, C, np.ones_like(C)], axis=1)
    return xw, xc, xo


WEIGHTS = ("absolute", "relative")
"""Least-squares weighting of :func:`fit_bsp`: plain (``"absolute"``) or each run's residual over its
measured value (``"relative"``)."""

#: units of the linear coefficients (the names :func:`fit_bsp` gives them)
UNITS = {"1/K_w": "s/cell", "O_h": "s/cell", "O_w": "s", "1/K_b": "s/cell", "O_l": "s", "K_r": "s",
         "O_i": "s", "O_c": "s/cell", "O_s": "s"}

#: the components :meth:`BSPFit.predict` returns, in order
COMPONENTS = ("t_w", "t_c", "t_o", "t_t")


@dataclass(frozen=True)
class BSPFit(FitResult):
    """The three block fits and the parameters they give (the result protocol of :mod:`perfmod.core.results`).

    ``params`` and ``stderr`` are the linear coefficients the blocks fit
    (``1/K_w`` or ``1/K_w[<scenario>]``, ``O_h``, ``O_w``, ``1/K_b``, ``O_l``,
    [``K_r``], ``O_i``, ``O_c``, ``O_s``); :meth:`params_for` turns them into
    Table I's :class:`BSPParams`.
    """

    compute: BlockFit
    comm: BlockFit
    other: BlockFit
    reduction: bool
    scenarios: tuple[str, ...] = ()

    @property
    def k_w_by_scenario(self) -> dict[str, float]:
        """K_w (cells/s) of each scenario of a per-scenario fit (empty otherwise)."""
        return {s: 1 / self.compute.coef[i] for i, s in enumerate(self.scenarios)}

    def params_for(self, scenario: str | None = None, k_w: float | None = None) -> BSPParams:
        """Table I's parameters, with the K_w of ``scenario`` (a per-scenario fit) or ``k_w`` given (a new one)."""
        w, c, o = self.compute.coef, self.comm.coef, self.other.coef
        nw = max(len(self.scenarios), 1)
        if k_w is None:
            if self.scenarios:
                if scenario not in self.scenarios:
                    raise KeyError(f"scenario {scenario!r} not in the fit; fitted: {', '.join(self.scenarios)}")
                k_w = 1 / w[self.scenarios.index(scenario)]
            else:
                k_w = 1 / w[0]
        return BSPParams(
            k_w=float(k_w), k_b=1 / c[0], o_h=w[nw], o_w=w[nw + 1], o_l=c[1],
            o_i=o[0], o_c=o[1], o_s=o[2], k_r=c[2] if self.reduction else 0.0,
        )

    def _names(self) -> list[str]:
        return [n for b in (self.compute, self.comm, self.other) for n in b.names]

    def _units(self) -> dict[str, str]:
        return {n: UNITS[n.split("[")[0]] for n in self._names()}

    @property
    def params(self) -> pd.Series:
        """The linear coefficients (1/K_w, O_h, O_w, 1/K_b, O_l, [K_r], O_i, O_c, O_s), SI units."""
        vals = np.concatenate([b.coef for b in (self.compute, self.comm, self.other)])
        return param_series(vals, self._names(), self._units(), "estimate")

    @property
    def stderr(self) -> pd.Series:
        """Standard errors of :attr:`params` (0 for a parameter held fixed)."""
        vals = np.concatenate([b.stderr for b in (self.compute, self.comm, self.other)])
        return param_series(vals, self._names(), self._units(), "stderr")

    def predict(self, x: Any, interval: str | None = None, level: float = 0.95) -> xr.Dataset:
        """Predicted T_w, T_c, T_o and T_t (s) of the runs in ``x``.

        Parameters
        ----------
        x : DataFrame, mapping or xarray Dataset
            Columns ``C``, ``P``, ``I``, ``H`` (cells, processes, iterations, halo
            cells per process), and ``scenario`` for a per-scenario fit.
        interval : {None, "confidence", "prediction"}
            A block's interval comes from its own least-squares fit (closed form:
            the design row's ``x' Cov x``, plus the residual variance for a
            prediction, t quantile with the block's residual df), scaled back from
            the per-iteration forms; T_t's from the sum of the three variances
            (the blocks are fitted independently), with the smallest of the three
            residual df.
        level : float
            Coverage of the interval.

        Returns
        -------
        xarray.Dataset
            ``predicted`` (and ``lower`` / ``upper``) over dimension ``point`` (or a
            Dataset input's dimensions) and ``component`` (``t_w``, ``t_c``, ``t_o``, ``t_t``).
        """
        check_interval(interval, level)
        table = as_table(x)
        f = table.frame
        missing = [c for c in ("C", "P", "I", "H") if c not in f.columns]
        if missing:
            raise KeyError(f"BSP prediction needs columns C, P, I, H; missing {missing} (have {list(f.columns)})")
        C, P, I, H = (f[c].to_numpy(dtype=float) for c in ("C", "P", "I", "H"))  # noqa: E741
        labels = None
        if self.scenarios:
            if "scenario" not in f.columns:
                raise ValueError(f"K_w was fitted per scenario ({', '.join(self.scenarios)}): give a scenario column")
            labels = f["scenario"].to_numpy().astype(str)
            unknown = sorted(set(labels) - set(self.scenarios))
            if unknown:
                raise KeyError(f"scenarios {unknown} not in the fit; fitted: {', '.join(self.scenarios)}")
        xw, xc, xo = _design(C, P, I, H, self.reduction, labels, self.scenarios)
        blocks = ((self.compute, xw, I / P), (self.comm, xc, I), (self.other, xo, np.ones_like(I)))
        pred = np.zeros((len(f), 4))
        lower, upper = np.zeros_like(pred), np.zeros_like(pred)
        var_t, new_t = np.zeros(len(f)), np.zeros(len(f))
        for j, (block, xb, factor) in enumerate(blocks):
            y, var = block.mean_and_variance(xb)
            pred[:, j] = y * factor
            var_t += var * factor**2
            noise = block.noise_variance(y)
            new_t += noise * factor**2
            if interval is not None:
                lo, hi = interval_bounds(y, var, noise, block.df, interval, level)
                lower[:, j], upper[:, j] = lo * factor, hi * factor
        pred[:, 3] = pred[:, :3].sum(axis=1)
        if interval is not None:
            df = min(b.df for b in (self.compute, self.comm, self.other))
            lower[:, 3], upper[:, 3] = interval_bounds(pred[:, 3], var_t, new_t, df, interval, level)
        layout = Table(f, (*table.dims, "component"), (*table.shape, 4),
                       {**table.coords, "component": list(COMPONENTS)})
        return prediction_dataset(layout, pred, units="s", long_name="time (BSP model, paper 003 Eq. 1-3)",
                                  lower=lower, upper=upper, interval=interval, level=level)

    def _diagnostics(self) -> dict[str, tuple[float, str, str]]:
        out: dict[str, tuple[float, str, str]] = {}
        for key, b in (("compute", self.compute), ("comm", self.comm), ("other", self.other)):
            unit, what = ("1", "relative ") if b.relative else ("s2", "")
            out[f"sigma2_{key}"] = (b.sigma2, unit, f"{what}residual variance of the {key} block (per-iteration form)")
            out[f"df_{key}"] = (b.df, "1", f"residual degrees of freedom of the {key} block")
        return out

    def to_dataset(self) -> xr.Dataset:
        """The protocol's dataset; attrs say whether K_r and per-scenario K_w were fitted."""
        ds = super().to_dataset()
        ds.attrs.update(reduction=int(self.reduction), scenarios=",".join(self.scenarios))
        return ds


def fit_bsp(
    C: Any, P: Any, I: Any, H: Any, t_w: Any, t_c: Any, t_o: Any,  # noqa: E741
    reduction: bool = False, nonneg: bool = False, scenario: Any = None, fixed: dict[str, float] | None = None,
    weights: str = "absolute",
) -> BSPFit:
    """Fit Table I's unknowns from measured runs (paper 003 §II-B, Eq. 5; Eq. 6 with ``reduction``).

    Parameters
    ----------
    C, P, I, H : array_like
        Cells, processes, iterations and halo cells per process of each run.
    t_w, t_c, t_o : array_like
        Measured compute, communication and other time of each run (s).
    reduction : bool
        Add the TRITON global reduction term ``lg(P) K_r`` (Eq. 6).
    nonneg : bool
        Non-negative least squares.
    scenario : array_like of str, optional
        The scenario (e.g. flood event) of each run: K_w is then fitted per
        scenario, O_h and O_w shared.  TRITON skips most of the work of dry
        cells, so "there is no single Kw for the application but a different
        one for each scenario" (paper 003 §III-B).
    fixed : dict, optional
        Parameters held at a value instead of fitted, by their linear names
        (``"1/K_w"``, ``"O_h"``, ``"O_w"``, ``"1/K_b"``, ``"O_l"``, ``"K_r"``,
        ``"O_i"``, ``"O_c"``, ``"O_s"``), e.g. ``{"O_i": 0.0}`` for a code
        whose every per-iteration second is timed as compute or communication.
    weights : {"absolute", "relative"}
        Ordinary least squares on each block's form (``"absolute"``, the paper's), or
        weighted by ``1 / y**2`` (``"relative"``): for timing noise with a constant
        coefficient of variation, which ordinary least squares would let the longest
        runs dominate.  Every measured time must then be positive.

    Raises
    ------
    IdentifiabilityError
        Fewer runs than unknowns in a block, or runs that cannot separate
        parameters (named in the message).
    """
    C, P, I, H, tw, tc, to = (np.asarray(v, dtype=float).ravel() for v in (C, P, I, H, t_w, t_c, t_o))  # noqa: E741
    if len({a.size for a in (C, P, I, H, tw, tc, to)}) != 1:
        raise ValueError("C, P, I, H, t_w, t_c, t_o must have one entry per run")
    if np.any(P < 1) or np.any(I < 1) or np.any(C <= 0) or np.any(H < 0):
        raise ValueError("need P >= 1, I >= 1, C > 0 and H >= 0 for every run")
    scenarios: tuple[str, ...] = ()
    labels = None
    if scenario is not None:
        labels = np.asarray(scenario, dtype=object).ravel()
        if labels.size != C.size:
            raise ValueError(f"scenario has {labels.size} entries for {C.size} runs")
        scenarios = tuple(dict.fromkeys(str(v) for v in labels))
        labels = labels.astype(str)
    known = {"1/K_w", "O_h", "O_w", "1/K_b", "O_l", "K_r", "O_i", "O_c", "O_s"}
    if fixed and set(fixed) - known:
        raise ValueError(f"cannot fix {sorted(set(fixed) - known)}; parameters: {', '.join(sorted(known))}")
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, not {weights!r}")
    rel = weights == "relative"
    xw, xc, xo = _design(C, P, I, H, reduction, labels, scenarios)
    names_w = tuple(f"1/K_w[{s}]" for s in scenarios) if scenarios else ("1/K_w",)
    names_c = ("1/K_b", "O_l") + (("K_r",) if reduction else ())
    return BSPFit(
        _fit_block(xw, P * tw / I, (*names_w, "O_h", "O_w"), nonneg, "compute time (Eq. 5)", fixed, rel),
        _fit_block(xc, tc / I, names_c, nonneg, "communication time (Eq. 2" + (", 6)" if reduction else ")"), fixed,
                   rel),
        _fit_block(xo, to, ("O_i", "O_c", "O_s"), nonneg, "other time (Eq. 3)", fixed, rel),
        reduction,
        scenarios,
    )


def coarse_run_work(P: Any, I: Any, H: Any, t_w: Any, o_h: float, o_w: float) -> np.ndarray:  # noqa: E741
    """The compute part of coarse runs, ``P t_w / I - P H O_h - P O_w`` (paper 003 Eq. 5), one value per run.

    :func:`kw_from_coarse_run` divides the cells by its sum.  A run whose value
    is at or below 0 spent its whole step in the fitted overheads: it says
    nothing of K_w (a short run on a noisy machine, or overheads fitted too
    large), and a caller pooling several runs may leave it out.
    """
    P, I, H, t_w = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (P, I, H, t_w))  # noqa: E741
    return P * t_w / I - P * H * o_h - P * o_w


def kw_from_coarse_run(C: Any, P: Any, I: Any, H: Any, t_w: Any, o_h: float, o_w: float) -> float:  # noqa: E741
    """K_w of a new scenario from a coarse run of it (paper 003 §III-B), Eq. 5 solved for K_w.

    One run: ``K_w = C / (P t_w / I - P H O_h - P O_w)``.  Array arguments are
    several runs of the scenario (e.g. the coarse resolution at 1 and 2
    ranks), pooled: ``K_w = sum(C) / sum(P t_w / I - P H O_h - P O_w)``, the
    ratio estimate that weighs each run by its cells.
    """
    C = np.atleast_1d(np.asarray(C, dtype=float))
    t_w = np.atleast_1d(np.asarray(t_w, dtype=float))
    work = coarse_run_work(P, I, H, t_w, o_h, o_w)
    if np.any(work <= 0):
        raise ValueError(f"the coarse run's compute time {t_w[work <= 0].tolist()} s is all overhead under "
                         f"O_h={o_h}, O_w={o_w}")
    return float(C.sum() / work.sum())


def scaled_iterations(i_coarse: Any, cell_coarse: Any, cell_fine: Any, exponent: float = 1.0) -> Any:
    """Iterations at a finer cell size, ``i_coarse (cell_coarse / cell_fine) ** exponent``.

    ``exponent`` 1 is §III-B's scaling (the CFL step is proportional to the cell
    size); :func:`step_exponent` fits it on scenarios measured at several cell sizes.
    """
    if np.any(np.asarray(cell_coarse) <= 0) or np.any(np.asarray(cell_fine) <= 0):
        raise ValueError("cell sizes must be positive")
    if not np.isfinite(exponent):
        raise ValueError(f"the step exponent must be finite, not {exponent}")
    return i_coarse * (np.asarray(cell_coarse) / cell_fine) ** exponent


def step_exponent(I: Any, cell_size: Any, scenario: Any) -> float:  # noqa: E741
    """The exponent b of ``I ~ cell_size ** -b``, fitted on runs of scenarios at several cell sizes.

    Least squares of ``log I`` on ``-log cell_size`` with one intercept per
    scenario: each scenario's own step count sets its level, and only how the
    count grows as the cells shrink is shared.  With an explicit scheme under
    a CFL condition b is 1 when the fastest wave speed does not depend on the
    resolution; a finer grid that resolves steeper fronts (higher speeds) takes
    more steps, b > 1.  Runs of one scenario at one cell size may repeat (e.g.
    several rank counts).

    Raises
    ------
    ValueError
        Non-positive counts or cell sizes, or no scenario measured at two cell sizes.
    """
    I, dx = (np.asarray(v, dtype=float).ravel() for v in (I, cell_size))  # noqa: E741
    labels = np.asarray(scenario, dtype=object).ravel().astype(str)
    if not I.size == dx.size == labels.size:
        raise ValueError(f"I, cell_size and scenario need one entry per run ({I.size}, {dx.size}, {labels.size})")
    if np.any(I <= 0) or np.any(dx <= 0):
        raise ValueError("step counts and cell sizes must be positive")
    x, y = -np.log(dx), np.log(I)
    for s in np.unique(labels):  # within-scenario slope: centre each scenario's x and y
        m = labels == s
        x[m] -= x[m].mean()
        y[m] -= y[m].mean()
    if not np.any(np.abs(x) > 1e-12):
        raise ValueError("step_exponent needs a scenario measured at two cell sizes or more")
    return float(x @ y / (x @ x))
