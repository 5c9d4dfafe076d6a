"""VARIMAX rotation and Eiger's PCA step (paper 004 §IV-A).

Eiger compresses the metric matrix with PCA on standardized columns, rotates
the principal axes with VARIMAX and keeps the components of non-zero variance
(paper 004 §IV-A; gtcasl/eiger ``eiger/PCA.py``).  The rotation here is
Kaiser's pairwise (planar) algorithm: for each pair of columns (a, b) the angle
is ``phi = arg(mean(z^4) - mean(z^2)^2) / 4`` with ``z = a + i b``, which
maximizes the raw varimax criterion of that pair; sweeps repeat until the
criterion stops growing.

Eiger's own loop stops when the *total sum of squares* of the loadings stops
changing, a quantity a rotation never changes, so it always performs exactly
one sweep.  ``sweeps=1`` reproduces that.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["varimax", "varimax_criterion", "PCAResult", "eiger_pca"]


def varimax_criterion(A: np.ndarray) -> float:
    """Raw varimax criterion: sum over columns of the variance of the squared loadings."""
    A2 = np.asarray(A, dtype=float) ** 2
    return float(np.sum(np.mean(A2**2, axis=0) - np.mean(A2, axis=0) ** 2))


def _pair_angle(a: np.ndarray, b: np.ndarray) -> float:
    z = a + 1j * b
    p = np.mean(z**4) - np.mean(z**2) ** 2
    return float(np.angle(p) / 4.0)


def varimax(A: np.ndarray, *, normalize: bool = False, max_sweeps: int = 100, tol: float = 1e-10,
            sweeps: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Rotate the columns of a loading matrix to maximize the varimax criterion.

    Parameters
    ----------
    A : ndarray, shape (p, m)
        Loadings (rows: variables, columns: components).
    normalize : bool
        Kaiser normalization (rows scaled to unit length during the rotation).
        Eiger does not normalize.
    max_sweeps : int
        Upper bound on the number of sweeps over all column pairs.
    tol : float
        Stop when a sweep raises the criterion by less than ``tol`` (relative).
    sweeps : int, optional
        Exact number of sweeps (``1`` reproduces Eiger, see the module docstring).

    Returns
    -------
    rotated : ndarray, shape (p, m)
        ``A @ R``.
    R : ndarray, shape (m, m)
        The orthogonal rotation.
    """
    X = np.array(A, dtype=float, copy=True)
    if X.ndim != 2:
        raise ValueError(f"varimax needs a 2-D loading matrix, got shape {X.shape}")
    p, m = X.shape
    h = np.ones(p)
    if normalize:
        h = np.sqrt(np.sum(X**2, axis=1))
        h[h == 0] = 1.0
        X /= h[:, None]
    R = np.eye(m)
    n_sweeps = sweeps if sweeps is not None else max_sweeps
    crit = varimax_criterion(X)
    for _ in range(n_sweeps):
        for j in range(m - 1):
            for k in range(j + 1, m):
                phi = _pair_angle(X[:, j], X[:, k])
                c, s = np.cos(phi), np.sin(phi)
                for M in (X, R):
                    a, b = M[:, j].copy(), M[:, k].copy()
                    M[:, j] = c * a + s * b
                    M[:, k] = -s * a + c * b
        new = varimax_criterion(X)
        converged = abs(new - crit) <= tol * max(abs(new), 1e-300)
        crit = new
        if sweeps is None and converged:
            break
    if normalize:
        X *= h[:, None]
    return X, R


@dataclass
class PCAResult:
    """Principal axes of a metric matrix, as Eiger keeps them.

    Attributes
    ----------
    components : ndarray, shape (p, q)
        Kept (rotated) principal axes, one column per component; the
        ``rotation_matrix`` of an Eiger model file.
    variances : ndarray, shape (q,)
        Squared singular values of the standardized matrix for the kept components.
    kept : ndarray of int
        Indices of the kept components among all ``p``.
    """

    components: np.ndarray
    variances: np.ndarray
    kept: np.ndarray


def eiger_pca(X: np.ndarray, *, rotate: bool = True, original: bool = False, rtol: float = 1e-10) -> PCAResult:
    """Eiger's PCA step: standardize, SVD, VARIMAX, keep the non-zero-variance components.

    Parameters
    ----------
    X : ndarray, shape (n, p)
        One row per trial, one column per input metric (raw units).
    rotate : bool
        Apply VARIMAX (Eiger's default).
    original : bool
        Reproduce Eiger exactly: rotate *all* axes with one VARIMAX sweep, then
        keep the columns whose *unrotated* variance is exactly non-zero
        (``np.nonzero``), as ``eiger/PCA.py`` and ``Eiger.py`` do.  The default
        keeps components whose variance exceeds ``rtol`` times the largest,
        then rotates only those, to convergence.
    rtol : float
        Relative variance below which a component counts as zero.
    """
    X = np.asarray(X, dtype=float)
    n, p = X.shape
    if n == 0 or p == 0:
        return PCAResult(np.eye(p), np.zeros(p), np.arange(p))
    Z = X - X.mean(axis=0)
    sd = Z.std(axis=0, ddof=1) if n > 1 else np.zeros(p)
    sd[~(sd > 0)] = 1.0
    Z = Z / sd
    _, S, VT = np.linalg.svd(Z, full_matrices=False)
    V = VT.T
    var = S**2
    if original:
        comps = varimax(V, sweeps=1)[0] if rotate and V.shape[1] > 1 else V
        kept = np.nonzero(var)[0]
        return PCAResult(comps[:, kept], var[kept], kept)
    kept = np.nonzero(var > rtol * max(var.max(), 1e-300))[0]
    comps = V[:, kept]
    if rotate and comps.shape[1] > 1:
        comps = varimax(comps)[0]
    return PCAResult(comps, var[kept], kept)
