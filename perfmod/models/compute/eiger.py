"""Eiger's model synthesis, faithful to gtcasl/eiger with its known defects fixed by default (paper 004 §IV).

Pipeline (paper 004 §IV-A to §IV-C, Figure 3; ``Eiger.py train``):

1. the metric matrix ``X`` (one row per trial) is standardized and decomposed
   by PCA; the axes are VARIMAX-rotated and those of non-zero variance kept
   (``rotation``, p x q);
2. the *raw* metrics are projected, ``Xr = X @ rotation``; ``Xr`` is
   standardized with its mean and standard deviation (``ddof=1``, zeros
   replaced by 1), and k-means with the user's ``k`` clusters the standardized
   points;
3. in each cluster, forward selection over the pool of :func:`~.pool.eiger_pool`
   on the columns of ``Xr`` adds the best term while the adjusted R^2 gain
   exceeds ``threshold``;
4. a prediction projects the query, standardizes it with the *stored* mean
   and deviation, takes the nearest cluster centre and evaluates its expression.

Defects of Eiger fixed by default, each reproducible through :class:`EigerOptions`
(``EigerOptions.original()`` sets them all):

* ``restandardize_at_predict``: Eiger's test step recomputes mean and deviation
  from the query batch, so one query point always lands in the cluster nearest
  the origin;
* ``kfold="best"``: Eiger's "k-fold" keeps the single best fold's model; the fix
  scores each candidate by the pooled held-out R^2 over all folds and refits on all data;
* ``adjusted_r2="original"``: the raw formula divides by ``n - k - 1`` even at or
  below zero; the fix treats the adjusted R^2 as undefined there (and keeps at
  most ``distinct points - 1`` terms);
* ``abs_predictions``: Eiger returns ``abs()`` of every prediction;
* ``pca="original"``: one VARIMAX sweep over all axes, then exact-zero variance test
  (see :func:`~.varimax.eiger_pca`).

Missing metrics are an error here (Eiger leaves uninitialized memory in the profile).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans
from sklearn.model_selection import KFold

from ._protocol import ClusterFit, TermModel, as_frame, check_training_frame
from .errors import TooFewPointsError
from .pool import EIGER_FUNCTIONS, Term, _unique, eiger_pool, evaluate_terms
from .selection import adjusted_r2, eiger_stop, greedy_path, wls
from .varimax import eiger_pca

__all__ = ["EigerOptions", "EigerModel", "fit_eiger", "with_options"]


@dataclass(frozen=True)
class EigerOptions:
    """Switches between Eiger's original behaviour and the fixed one (defaults: fixed).

    Attributes
    ----------
    restandardize_at_predict : bool
        Recompute the standardization from each prediction batch (Eiger's test step).
    kfold : {"mean", "best"}
        With folds: pooled held-out score (fixed) or Eiger's best-fold model.
    adjusted_r2 : {"defined", "original"}
        Adjusted R^2 undefined when ``n - k - 1 < 1`` (fixed) or Eiger's raw formula.
    abs_predictions : bool
        Return ``abs()`` of predictions as Eiger does.
    pca : {"fixed", "original"}
        PCA variant (:func:`~.varimax.eiger_pca`).
    """

    restandardize_at_predict: bool = False
    kfold: Literal["mean", "best"] = "mean"
    adjusted_r2: Literal["defined", "original"] = "defined"
    abs_predictions: bool = False
    pca: Literal["fixed", "original"] = "fixed"

    @classmethod
    def original(cls) -> EigerOptions:
        """Every switch set to reproduce gtcasl/eiger."""
        return cls(True, "best", "original", True, "original")


def _component_names(parameters: Sequence[str], rotation: np.ndarray) -> list[str]:
    names = []
    for j in range(rotation.shape[1]):
        col = rotation[:, j]
        nz = np.nonzero(np.abs(col) > 1e-12)[0]
        if len(nz) == 1 and abs(abs(col[nz[0]]) - 1.0) < 1e-12:
            names.append(("-" if col[nz[0]] < 0 else "") + parameters[nz[0]])
        else:
            names.append(f"pc{j}")
    return names


class EigerModel(TermModel):
    """A fitted (or read) Eiger model: PCA rotation, standardization, k-means centres, one expression per cluster.

    Attributes
    ----------
    parameters : list of str
        Metric names, in the order of the rotation's rows.
    means, stdevs : ndarray, shape (q,)
        Standardization of the rotated metrics.
    rotation : ndarray, shape (p, q)
        PCA (VARIMAX) rotation.
    centers : ndarray, shape (k, q)
        k-means centres in the standardized rotated space.
    train_min, train_max : ndarray or None
        Training range of each parameter (``None`` for a model read from a file).
    """

    method = "eiger"

    def __init__(self, parameters: Sequence[str], means: np.ndarray, stdevs: np.ndarray, rotation: np.ndarray,
                 centers: np.ndarray, clusters: list[ClusterFit], target: str = "time",
                 options: EigerOptions | None = None, train_min: np.ndarray | None = None,
                 train_max: np.ndarray | None = None, units: str = "s") -> None:
        self.parameters = list(parameters)
        self.means = np.atleast_1d(np.asarray(means, dtype=float))
        self.stdevs = np.atleast_1d(np.asarray(stdevs, dtype=float))
        self.rotation = np.asarray(rotation, dtype=float).reshape(len(self.parameters), -1)
        self.centers = np.asarray(centers, dtype=float).reshape(len(clusters), -1)
        self.clusters = clusters
        self.target = target
        self.options = options or EigerOptions()
        self.train_min = train_min
        self.train_max = train_max
        self.units = units

    def input_names(self) -> list[str]:
        """Rotated components, named after a parameter when the column is that parameter (up to sign)."""
        return _component_names(self.parameters, self.rotation)

    def standardize(self, Xr: np.ndarray) -> np.ndarray:
        """Standardized rotated points (stored statistics, or the batch's with ``restandardize_at_predict``)."""
        if self.options.restandardize_at_predict:
            means = Xr.mean(axis=0)
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # one query point: ddof=1 leaves no freedom
                sd = np.nan_to_num(np.std(Xr - means, axis=0, ddof=1))
            sd[sd == 0.0] = 1.0
            return (Xr - means) / sd
        return (Xr - self.means) / self.stdevs

    def assign(self, Xr: np.ndarray) -> np.ndarray:
        """Nearest cluster centre of each rotated point."""
        Z = self.standardize(Xr)
        d = ((Z[:, None, :] - self.centers[None, :, :]) ** 2).sum(axis=2)
        return np.argmin(d, axis=1)

    def _inputs_array(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        Xr = X @ self.rotation
        cl = self.assign(Xr)
        if self.train_min is not None and self.train_max is not None:
            extra = np.any((X < self.train_min) | (X > self.train_max), axis=1)
        else:
            extra = np.zeros(len(X), dtype=bool)
        return Xr, cl, extra

    def _postprocess(self, pred: np.ndarray) -> np.ndarray:
        return np.abs(pred) if self.options.abs_predictions else pred

    def _cluster_label(self, k: int) -> str:
        return "centre " + np.array2string(self.centers[k], precision=3)


# --------------------------------------------------------------------------- selection variants
def _score_cv(F: np.ndarray, y: np.ndarray, cols: list[int], folds: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """Pooled held-out R^2 of the columns ``cols`` over ``folds``."""
    sse = sst = 0.0
    for tr, te in folds:
        b, *_ = np.linalg.lstsq(F[np.ix_(tr, cols)], y[tr], rcond=None)
        sse += float(np.sum((y[te] - F[np.ix_(te, cols)] @ b) ** 2))
        sst += float(np.sum((y[te] - y[te].mean()) ** 2))
    return 1.0 - sse / sst if sst > 0 else float("nan")


def _greedy_scored(F: np.ndarray, y: np.ndarray, score, n_adj: int, threshold: float, original: bool,
                   max_terms: int) -> list[int]:
    """Generic Eiger loop: add the candidate with the best adjusted score while its gain exceeds threshold."""
    chosen: list[int] = []
    current = -np.inf
    ok = np.all(np.isfinite(F), axis=0)
    while len(chosen) < max_terms:
        best, best_adj = None, -np.inf
        for c in np.nonzero(ok)[0]:
            if c in chosen:
                continue
            r2 = score([*chosen, int(c)])
            adj = float(adjusted_r2(r2, n_adj, len(chosen) + 1, original=original))
            if adj > best_adj:
                best, best_adj = int(c), adj
        if best is None or not (best_adj - current > threshold):
            break
        chosen.append(best)
        current = best_adj
    return chosen


def _fit_cluster(Xr: np.ndarray, y: np.ndarray, functions: Sequence[str], threshold: float, nfolds: int | None,
                 options: EigerOptions, rng: int, label: str) -> ClusterFit:
    n = len(y)
    distinct = len(np.unique(Xr, axis=0))
    if distinct < 3 or n < 3:
        raise TooFewPointsError(
            f"{label} has {distinct} distinct parameter point(s) in {n} row(s); Eiger's forward selection needs "
            "at least 3 (lower the number of clusters or measure more sizes)")
    pool = _unique(eiger_pool(Xr.shape[1], functions))
    F = evaluate_terms(pool, Xr)
    original = options.adjusted_r2 == "original"
    cap = n if original else max(1, distinct - 1)
    extra: dict[str, Any] = {"threshold": threshold}
    if nfolds is None:
        order, sse = greedy_path(F, y, max_terms=cap)
        sst = float(np.sum((y - y.mean()) ** 2))
        keep = eiger_stop(sse, sst, n, threshold, original=original)
        cols = order[:keep]
        fit_rows = np.arange(n)
    else:
        folds = list(KFold(n_splits=nfolds, shuffle=True, random_state=rng).split(F))
        if options.kfold == "mean":
            cols = _greedy_scored(F, y, lambda c: _score_cv(F, y, c, folds), n, threshold, original, cap)
            fit_rows = np.arange(n)
        else:  # Eiger: each fold selects on its own test R^2, the best fold's model wins
            best = (-np.inf, [], folds[0][0])
            for tr, te in folds:
                c = _greedy_scored(F, y, lambda cc, tr=tr, te=te: _score_cv(F, y, cc, [(tr, te)]), len(te),
                                   threshold, original, cap)
                r2 = _score_cv(F, y, c, [(tr, te)]) if c else -np.inf
                if r2 > best[0]:
                    best = (r2, c, tr)
            cols, fit_rows = best[1], best[2]
        extra["nfolds"] = nfolds
        extra["kfold"] = options.kfold
    terms: list[Term] = [pool[c] for c in cols]
    if not terms:
        return ClusterFit([], np.zeros(0), None, n=n, extra=extra)
    fit = wls(F[np.ix_(fit_rows, cols)], y[fit_rows])
    full = wls(F[:, cols], y)  # diagnostics on all rows of the cluster
    r2 = full.r2 if fit_rows.size == n else 1.0 - float(np.sum((y - F[:, cols] @ fit.coef) ** 2)) / full.sst
    r2a = float(adjusted_r2(r2, n, len(cols), original=original))
    return ClusterFit(terms, fit.coef, fit.cov if fit.dof > 0 else None, fit.sigma2, fit.dof, n, r2, r2a,
                      extra=extra)


def fit_eiger(data: Any, target: str = "time", parameters: Sequence[str] | None = None, *, k: int = 1,
              threshold: float = 0.0, nfolds: int | None = None, functions: Sequence[str] = EIGER_FUNCTIONS,
              options: EigerOptions | None = None, random_state: int = 0, n_init: int = 10,
              units: str = "s") -> EigerModel:
    """Train an Eiger model (paper 004 §IV) on one row per trial.

    Parameters
    ----------
    data : DataFrame or mapping
        Training trials: parameter columns and the ``target`` column.
    target : str
        Column to predict (seconds for time, joules for energy).
    parameters : sequence of str, optional
        Input metrics (default: every other numeric column), Eiger's ``--predictor-metrics``.
    k : int
        Number of k-means clusters (Eiger's ``--clusters``; paper 004 §IV-B leaves it to the user).
    threshold : float
        Minimum adjusted-R^2 gain for adding a term (Eiger's ``--threshold``, default 0).
    nfolds : int, optional
        Eiger's ``--nfolds`` (see :class:`EigerOptions` for the fold rule).
    functions : sequence of str
        Regressor families (Eiger's ``--regressor-functions``).
    options : EigerOptions, optional
        Fixed behaviour by default; ``EigerOptions.original()`` reproduces Eiger.
    random_state, n_init : int
        k-means and fold seeds and restarts.
    units : str
        Units of the target (for the result protocol).
    """
    options = options or EigerOptions()
    frame = as_frame(data)
    if parameters is None:
        parameters = [c for c in frame.columns if c != target and pd.api.types.is_numeric_dtype(frame[c])]
    parameters = list(parameters)
    X, y = check_training_frame(frame, target, parameters)
    pca = eiger_pca(X, original=options.pca == "original")
    R = pca.components
    Xr = X @ R
    means = Xr.mean(axis=0)
    with np.errstate(all="ignore"):
        sd = np.std(Xr - means, axis=0, ddof=1) if len(Xr) > 1 else np.zeros(Xr.shape[1])
    sd = np.where(np.isfinite(sd) & (sd != 0.0), sd, 1.0)
    Z = (Xr - means) / sd
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if k == 1:
        labels = np.zeros(len(Z), dtype=int)
        centers = Z.mean(axis=0, keepdims=True)
    else:
        if len(np.unique(Z, axis=0)) < k:
            raise TooFewPointsError(f"{len(np.unique(Z, axis=0))} distinct points cannot form k={k} clusters")
        km = KMeans(n_clusters=k, n_init=n_init, random_state=random_state).fit(Z)
        labels, centers = km.labels_, km.cluster_centers_
    clusters = []
    for i in range(k):
        rows = labels == i
        clusters.append(_fit_cluster(Xr[rows], y[rows], functions, threshold, nfolds, options, random_state,
                                     f"cluster {i} of {k}"))
    return EigerModel(parameters, means, sd, R, centers, clusters, target, options,
                      X.min(axis=0), X.max(axis=0), units)


def with_options(model: EigerModel, **changes: Any) -> EigerModel:
    """Copy of ``model`` whose prediction switches are changed (e.g. ``abs_predictions=True``)."""
    return EigerModel(model.parameters, model.means, model.stdevs, model.rotation, model.centers, model.clusters,
                      model.target, replace(model.options, **changes), model.train_min, model.train_max, model.units)
