"""Cross-validation of linear models: hold-out and k-fold, scored on the held-out rows (paper 001 §3, §5).

Paper 001 chooses between candidate models by their error on validation
data: §5.1.2 divides 275 observations into 232 training and 43 validation
rows and keeps the model with the lowest validation error (Model C); §5.2.2
divides 500 into 400 and 100.  :func:`holdout` and :func:`kfold` fit a formula
on the training part and predict the held-out part; :func:`compare_models`
scores several formulas on the *same* split(s) and marks the one with the
lowest validation error.

The validation error is the root mean squared prediction error on the
held-out rows, ``rmse_validation`` = sqrt(mean((y - yhat)^2)); the training
error is the training fit's RSE, sqrt(RSS / (n - p)).  Repetitions of one
configuration can be kept on the same side of every split with ``groups``
(the issue's "training and validation sets on disjoint configurations").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from perfmod.models.regression.formula import DataError, as_frame
from perfmod.models.regression.linear import LinearModel, lm

__all__ = ["CVResult", "holdout_split", "kfold_splits", "holdout", "kfold", "compare_models"]


@dataclass(frozen=True)
class CVResult:
    """Outcome of :func:`holdout` or :func:`kfold` for one formula.

    Attributes
    ----------
    formula : str
    folds : pandas.DataFrame
        One row per fold: ``n_train``, ``n_test``, ``rse_train`` (RSE of the fit on
        the training part, model scale), ``rmse_train`` (its root mean squared error
        on the training rows, response units), ``rmse_test`` (its prediction error on
        the held-out part, response units).
    predictions : pandas.DataFrame
        One row per held-out observation (indexed by the data's row labels):
        ``fold``, ``measured``, ``fit``.
    rmse_validation : float
        sqrt(mean squared error) over all held-out predictions.
    rse_train : float
        Mean training RSE over the folds (the one training RSE for a hold-out split);
        on the log scale for a ``log_response`` model.
    rmse_train : float
        Mean training root mean squared error over the folds, response units.
    model : LinearModel or None
        The training fit of a hold-out split (None for k-fold).
    """

    formula: str
    folds: pd.DataFrame
    predictions: pd.DataFrame
    rmse_validation: float
    rse_train: float
    rmse_train: float
    model: LinearModel | None = None


def _units(df: pd.DataFrame, groups: str | None) -> tuple[np.ndarray, np.ndarray]:
    """(unit label per row, unique units): rows, or whole groups of rows."""
    if not df.index.is_unique:
        dup = df.index[df.index.duplicated()].unique()[:5]
        raise DataError(f"row labels must be unique to split the data (duplicated: {', '.join(map(str, dup))}); "
                        f"use data.reset_index()")
    if groups is None:
        lab = np.arange(len(df))
        return lab, lab
    if groups not in df.columns:
        raise DataError(f"groups column {groups!r} not in the data; columns: {', '.join(map(str, df.columns))}")
    codes, uniq = pd.factorize(df[groups])
    return codes, np.arange(len(uniq))


def holdout_split(data: Any, test_size: float | int, groups: str | None = None,
                  seed: int = 0) -> tuple[pd.Index, pd.Index]:
    """Random training/validation split: ``test_size`` rows (int) or that fraction of the rows (float).

    With ``groups``, whole groups go to the validation part in random order
    until it holds at least ``test_size`` rows.  Returns (train labels, test labels).
    """
    df = as_frame(data)
    n = len(df)
    n_test = int(round(test_size * n)) if isinstance(test_size, float) and 0 < test_size < 1 else test_size
    if not isinstance(n_test, int | np.integer) or not 0 < n_test < n:
        raise ValueError(f"test_size must be a row count in 1..{n - 1} or a fraction in (0, 1), got {test_size!r}")
    codes, units = _units(df, groups)
    order = np.random.default_rng(seed).permutation(units)
    counts = np.bincount(codes, minlength=len(units))
    taken = np.cumsum(counts[order])
    k = int(np.searchsorted(taken, n_test)) + 1
    test_units = order[:k]
    is_test = np.isin(codes, test_units)
    if is_test.all():
        raise ValueError(f"test_size {test_size!r} leaves no group for training")
    return df.index[~is_test], df.index[is_test]


def kfold_splits(data: Any, k: int = 10, groups: str | None = None, seed: int = 0) -> list[tuple[pd.Index, pd.Index]]:
    """k random folds (rows, or whole groups): list of (train labels, test labels)."""
    df = as_frame(data)
    codes, units = _units(df, groups)
    if not isinstance(k, int | np.integer) or not 2 <= k <= len(units):
        raise ValueError(f"k must be an integer in 2..{len(units)} ({'groups' if groups else 'rows'}), got {k!r}")
    order = np.random.default_rng(seed).permutation(units)
    fold_of_unit = np.empty(len(units), dtype=int)
    fold_of_unit[order] = np.arange(len(units)) % k
    fold = fold_of_unit[codes]
    return [(df.index[fold != i], df.index[fold == i]) for i in range(k)]


def _run(formula: str, df: pd.DataFrame, splits, log_response: bool) -> CVResult:
    rows, preds = [], []
    model = None
    for i, (tr, te) in enumerate(splits):
        try:
            m = lm(formula, df.loc[tr], log_response=log_response)
        except DataError as e:
            raise DataError(f"fold {i}: {e}") from None
        fit = m.predict(df.loc[te])["predicted"].to_numpy()
        y = df.loc[te, _raw_response(formula)].to_numpy(float)
        fit_tr = m.predict()["predicted"].to_numpy()
        y_tr = df.loc[tr, _raw_response(formula)].to_numpy(float)
        rows.append({"fold": i, "n_train": len(tr), "n_test": len(te), "rse_train": m.rse,
                     "rmse_train": float(np.sqrt(np.mean((y_tr - fit_tr) ** 2))),
                     "rmse_test": float(np.sqrt(np.mean((y - fit) ** 2)))})
        preds.append(pd.DataFrame({"fold": i, "measured": y, "fit": fit}, index=te))
        model = m
    folds = pd.DataFrame(rows).set_index("fold")
    p = pd.concat(preds)
    return CVResult(formula=formula, folds=folds, predictions=p,
                    rmse_validation=float(np.sqrt(np.mean((p.measured - p.fit) ** 2))),
                    rse_train=float(folds.rse_train.mean()), rmse_train=float(folds.rmse_train.mean()),
                    model=model if len(splits) == 1 else None)


def _raw_response(formula: str) -> str:
    return formula.split("~", 1)[0].strip()


def _check_response(formula: str, df: pd.DataFrame, log_response: bool) -> None:
    resp = _raw_response(formula)
    if resp not in df.columns:
        raise DataError(f"cross-validation needs the response {resp!r} as a column of the data (transform it with "
                        f"log_response=True, not in the formula); columns: {', '.join(map(str, df.columns))}")


def holdout(formula: str, data: Any, test_size: float | int, groups: str | None = None, seed: int = 0,
            log_response: bool = False) -> CVResult:
    """Fit on a random training part, score on the rest (paper 001: 232/43 in §5.1.2, 400/100 in §5.2.2).

    Predictions of a ``log_response`` model are back-transformed before scoring.
    """
    df = as_frame(data)
    _check_response(formula, df, log_response)
    return _run(formula, df, [holdout_split(df, test_size, groups, seed)], log_response)


def kfold(formula: str, data: Any, k: int = 10, groups: str | None = None, seed: int = 0,
          log_response: bool = False) -> CVResult:
    """k-fold cross-validation: every row (or group) is predicted once by a model fitted without it."""
    df = as_frame(data)
    _check_response(formula, df, log_response)
    return _run(formula, df, kfold_splits(df, k, groups, seed), log_response)


def compare_models(formulas: Mapping[str, str], data: Any, method: Literal["holdout", "kfold"] = "holdout",
                   test_size: float | int = 0.2, k: int = 10, groups: str | None = None, seed: int = 0,
                   log_response: bool = False) -> pd.DataFrame:
    """Score candidate formulas on the same split(s) and choose the lowest validation error.

    Returns
    -------
    pandas.DataFrame
        One row per model (index: its name): ``formula``, ``n_coef``, ``rse`` (fit on all
        data), ``adj_r2``, ``rse_train``, ``rmse_train`` and ``rmse_validation``
        (cross-validation), ``ratio`` = rmse_validation / rse_train (/ rmse_train for a
        ``log_response`` model, whose RSE is on the log scale), and ``chosen`` (True
        for the lowest ``rmse_validation``).
    """
    df = as_frame(data)
    if not formulas:
        raise ValueError("compare_models needs at least one formula")
    rows = {}
    for name, f in formulas.items():
        full = lm(f, df, log_response=log_response)
        cv = (holdout(f, df, test_size, groups, seed, log_response) if method == "holdout"
              else kfold(f, df, k, groups, seed, log_response))
        rows[name] = {"formula": f, "n_coef": len(full.coef), "rse": full.rse, "adj_r2": full.adj_r2,
                      "rse_train": cv.rse_train, "rmse_train": cv.rmse_train,
                      "rmse_validation": cv.rmse_validation}
    out = pd.DataFrame.from_dict(rows, orient="index")
    out["ratio"] = out.rmse_validation / (out.rmse_train if log_response else out.rse_train)
    out["chosen"] = out.index == out.rmse_validation.idxmin()
    out.attrs.update(method=method, test_size=test_size, k=k, seed=seed, groups=groups)
    return out
