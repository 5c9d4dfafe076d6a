"""Forward selection of regressors and weighted least squares (paper 004 §IV-C).

Eiger starts from an empty model and adds, one at a time, the pool term that
raises the adjusted coefficient of determination most, while the gain exceeds
a user threshold (paper 004 §IV-C).  With all data as both training and test
set (Eiger's default), the best term at a step is the one that lowers the
residual sum of squares most, so :func:`greedy_path` computes the whole
selection path at once by Gram-Schmidt updates (O(n m) per step for m pool
columns), and the stopping rules only decide where to cut it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["LSFit", "wls", "greedy_path", "adjusted_r2", "eiger_stop", "aicc_stop"]


@dataclass
class LSFit:
    """A (weighted) least-squares fit on selected columns.

    Attributes
    ----------
    coef : ndarray
        Coefficients, one per column (units of the target per unit of the term).
    cov : ndarray
        Covariance of ``coef`` (``sigma2 * (X'WX)^-1``); NaN where there are no residual degrees of freedom.
    sigma2 : float
        Residual variance of unit weight (NaN when ``dof == 0``).
    sse : float
        Weighted residual sum of squares.
    sst : float
        Weighted total sum of squares about the weighted mean.
    n, dof : int
        Rows and residual degrees of freedom.
    unscaled_cov : ndarray
        ``(X'WX)^-1``.
    """

    coef: np.ndarray
    cov: np.ndarray
    sigma2: float
    sse: float
    sst: float
    n: int
    dof: int
    unscaled_cov: np.ndarray

    @property
    def r2(self) -> float:
        """Coefficient of determination ``1 - SSE/SST`` (NaN when SST is 0)."""
        return 1.0 - self.sse / self.sst if self.sst > 0 else float("nan")


def wls(F: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> LSFit:
    """Weighted least squares of ``y`` on the columns of ``F`` (columns rescaled for conditioning)."""
    F = np.asarray(F, dtype=float)
    y = np.asarray(y, dtype=float)
    n, k = F.shape
    w = np.ones(n) if w is None else np.asarray(w, dtype=float)
    sw = np.sqrt(w)
    A = F * sw[:, None]
    b = y * sw
    scale = np.sqrt(np.sum(A**2, axis=0))
    scale[scale == 0] = 1.0
    As = A / scale
    coef_s, *_ = np.linalg.lstsq(As, b, rcond=None)
    coef = coef_s / scale
    resid = b - As @ coef_s
    sse = float(resid @ resid)
    ybar = float(np.sum(w * y) / np.sum(w))
    sst = float(np.sum(w * (y - ybar) ** 2))
    unscaled = np.linalg.pinv(As.T @ As) / np.outer(scale, scale)
    dof = n - k
    sigma2 = sse / dof if dof > 0 else float("nan")
    return LSFit(coef, unscaled * sigma2, sigma2, sse, sst, n, dof, unscaled)


def greedy_path(F: np.ndarray, y: np.ndarray, w: np.ndarray | None = None, max_terms: int | None = None,
                rtol: float = 1e-10, start: Sequence[int] = ()) -> tuple[list[int], np.ndarray]:
    """Greedy forward path: at each step add the column that lowers the weighted SSE most.

    Parameters
    ----------
    F : ndarray, shape (n, m)
        Pool columns evaluated on the data; non-finite columns are never chosen.
    y : ndarray, shape (n,)
        Target (e.g. seconds).
    w : ndarray, optional
        Row weights (``1/y^2`` for relative errors).
    max_terms : int, optional
        Length of the path (default ``min(n, m)``).
    rtol : float
        A column whose part orthogonal to the chosen ones has relative squared norm below
        ``rtol`` counts as collinear and is skipped.
    start : sequence of int
        Columns in the model before the greedy steps (e.g. the intercept); they
        head ``order`` and count towards ``max_terms``.

    Returns
    -------
    order : list of int
        Chosen column indices, in the order chosen.
    sse : ndarray
        Weighted SSE after each step (``sse[k-1]`` for ``k`` terms).
    """
    F = np.asarray(F, dtype=float)
    y = np.asarray(y, dtype=float)
    n, m = F.shape
    w = np.ones(n) if w is None else np.asarray(w, dtype=float)
    sw = np.sqrt(w)
    ok = np.all(np.isfinite(F), axis=0)
    R = np.where(ok[None, :], F, 0.0) * sw[:, None]
    norms0 = np.sum(R**2, axis=0)
    ok &= norms0 > 0
    R = R / np.sqrt(np.where(norms0 > 0, norms0, 1.0))  # unit columns
    r = y * sw
    limit = min(n, m) if max_terms is None else min(max_terms, n, m)
    order: list[int] = []
    sse: list[float] = []
    avail = ok.copy()
    forced = list(start)
    for _ in range(limit):
        nr = np.sum(R**2, axis=0)
        cand = avail & (nr > rtol)
        if not cand.any():
            break
        if forced:
            best = int(forced.pop(0))
        else:
            proj = R.T @ r
            gain = np.where(cand, proj**2 / np.where(cand, nr, 1.0), -np.inf)
            best = int(np.argmax(gain))
        q = R[:, best] / np.sqrt(nr[best])
        r = r - q * (q @ r)
        R = R - np.outer(q, q @ R)
        # re-orthogonalize once (classical Gram-Schmidt twice is as stable as modified)
        R = R - np.outer(q, q @ R)
        avail[best] = False
        order.append(best)
        sse.append(float(r @ r))
    return order, np.asarray(sse)


def adjusted_r2(r2: float | np.ndarray, n: int, k: int | np.ndarray, original: bool = False) -> np.ndarray:
    """Adjusted R^2 ``1 - (1 - R^2) (n - 1) / (n - k - 1)`` (Kutner et al., paper 004 ref. [33]).

    With ``original=False`` it is NaN where ``n - k - 1 < 1`` (undefined); with
    ``original=True`` the raw formula is evaluated as Eiger does (inf/NaN at
    ``n - k - 1 = 0``, values above 1 when it is negative).
    """
    r2 = np.asarray(r2, dtype=float)
    k = np.asarray(k, dtype=float)
    den = n - k - 1.0
    with np.errstate(all="ignore"):
        val = 1.0 - (1.0 - r2) * (n - 1.0) / den
    if original:
        return val
    return np.where(den >= 1.0, val, np.nan)


def eiger_stop(sse: np.ndarray, sst: float, n: int, threshold: float, original: bool = False,
               max_terms: int | None = None) -> int:
    """Number of path terms Eiger keeps: add while the adjusted-R^2 gain exceeds ``threshold``.

    The first term is compared with an adjusted R^2 of minus infinity, so it is
    always added when its adjusted R^2 is defined (Eiger's ``model_r2_adj = -inf``).
    """
    k = np.arange(1, len(sse) + 1)
    with np.errstate(all="ignore"):
        r2 = 1.0 - np.asarray(sse) / sst if sst > 0 else np.where(np.asarray(sse) <= 0, 1.0, -np.inf)
    adj = adjusted_r2(r2, n, k, original=original)
    current = -np.inf
    kept = 0
    for step, a in enumerate(adj):
        if max_terms is not None and step >= max_terms:
            break
        if a - current > threshold:  # NaN (undefined adjusted R^2) compares False and stops
            current = a
            kept = step + 1
        else:
            break
    return kept


def aicc_stop(sse: np.ndarray, n: int) -> int:
    """Path length minimizing AICc = n ln(SSE/n) + 2p + 2p(p+1)/(n-p-1), p = k + 1 (sigma counted)."""
    best, best_k = np.inf, 0
    for k, s in enumerate(np.asarray(sse), start=1):
        p = k + 1
        if n - p - 1 < 1:
            break
        val = n * np.log(max(s, 1e-300) / n) + 2 * p + 2 * p * (p + 1) / (n - p - 1)
        if val < best:
            best, best_k = val, k
    return best_k
