"""Error statistics of predictions against measurements (paper 001 §5.1.3, §5.2.3, §6.5).

Paper 001 reports the error of its models on validation data as an "RSE for
test data" (136.4802, 116.5921, 0.035, 5788.197, 1316.058) without saying how
it was computed.  :func:`prediction_errors` gives the candidates side by side,
so a reader can see which one (if any) reproduces a stated number:

* ``rmse``: sqrt(mean((measured - fit)^2)), the root mean squared prediction
  error (no degrees of freedom are used up on held-out data);
* ``rse_df``: sqrt(RSS / (n - p)), the training-style RSE formula applied to
  the held-out rows (needs the number of coefficients p);
* ``mae``, ``mape`` (per cent of the measured value), ``bias`` (mean of
  fit - measured: positive means the model over-predicts), ``max_ape``;
* ``coverage``: fraction of measured values inside [lower, upper].
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from perfmod.models.regression.formula import DataError

__all__ = ["prediction_errors"]


def prediction_errors(measured: Any, fit: Any, lower: Any = None, upper: Any = None,
                      n_coef: int | None = None) -> pd.Series:
    """Error statistics of ``fit`` against ``measured`` (same units), with interval coverage.

    Parameters
    ----------
    measured, fit : array_like
        Measured and predicted values, one per validation case.
    lower, upper : array_like, optional
        Interval bounds per case; gives ``coverage``.
    n_coef : int, optional
        Coefficients of the model; gives ``rse_df`` = sqrt(RSS / (n - n_coef)).

    Returns
    -------
    pandas.Series
        ``n``, ``rmse``, ``rse_df`` (NaN without ``n_coef`` or when n <= n_coef),
        ``mae``, ``mape`` [%], ``max_ape`` [%], ``bias``, ``coverage`` (NaN without bounds).
    """
    y = np.asarray(measured, dtype=float).ravel()
    f = np.asarray(fit, dtype=float).ravel()
    if y.shape != f.shape or y.size == 0:
        raise DataError(f"measured ({y.size}) and fit ({f.size}) need the same, non-zero length")
    bad = np.flatnonzero(~np.isfinite(y) | ~np.isfinite(f))
    if bad.size:
        raise DataError(f"non-finite measured or fitted values at positions {', '.join(map(str, bad[:10]))}")
    r = y - f
    n = y.size
    rss = float(r @ r)
    out = {
        "n": n,
        "rmse": float(np.sqrt(rss / n)),
        "rse_df": float(np.sqrt(rss / (n - n_coef))) if n_coef is not None and n > n_coef else float("nan"),
        "mae": float(np.mean(np.abs(r))),
        "mape": float(np.mean(np.abs(r / y)) * 100),
        "max_ape": float(np.max(np.abs(r / y)) * 100),
        "bias": float(np.mean(f - y)),
        "coverage": float("nan"),
    }
    if lower is not None and upper is not None:
        lo = np.asarray(lower, dtype=float).ravel()
        hi = np.asarray(upper, dtype=float).ravel()
        if lo.shape != y.shape or hi.shape != y.shape:
            raise DataError("lower and upper need one value per measured value")
        out["coverage"] = float(np.mean((lo <= y) & (y <= hi)))
    return pd.Series(out)
