"""A published coefficient table as a model that evaluates at given X (paper 001 Tables 1, 3, 5, 6, 8, 10, 11).

The paper prints, per model, the estimate of each term; with the model's
formula (which terms, in R's names) that is enough to compute its fitted
value anywhere: sum over terms of estimate x term value.  Standard errors
alone do not give confidence intervals (the covariances are not published),
so :class:`PublishedModel` returns the fit only.  Values are in the paper's
units (its X in GB, MB, threads, edges; its response in ms, s, mW, mJ): the
units are attributes, converted only by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import patsy

from perfmod.models.regression.formula import (
    FUNCTIONS,
    FormulaError,
    _names_in,
    _sorted_terms,
    as_frame,
    check_finite,
    r_name,
    to_patsy,
)

__all__ = ["PublishedModel"]


@dataclass(frozen=True)
class PublishedModel:
    """Coefficients of a published linear model, evaluable at given X.

    Attributes
    ----------
    name : str
        E.g. ``"Model C (Tesla P100)"``.
    formula : str
        R formula whose terms the coefficients belong to (response on the left).
    coef : pandas.Series
        Estimates indexed by R's term names, in R's order.
    source : str
        Paper file and table.
    units : dict
        Unit of the response (key ``"response"``) and of each variable.
    rse, df_resid : float, int, optional
        Published residual standard error and degrees of freedom, where stated or implied.
    """

    name: str
    formula: str
    coef: pd.Series
    source: str
    units: Mapping[str, str] = field(default_factory=dict)
    rse: float | None = None
    df_resid: int | None = None

    def __post_init__(self) -> None:
        terms = self.terms()
        if list(self.coef.index) != terms:
            raise FormulaError(f"{self.name}: coefficients {list(self.coef.index)} do not match the terms of "
                               f"{self.formula!r} in R's order, {terms}")

    def _rhs(self) -> patsy.ModelDesc:
        desc = patsy.ModelDesc.from_formula(to_patsy(self.formula))
        return patsy.ModelDesc([], _sorted_terms(desc.rhs_termlist))

    def terms(self) -> list[str]:
        """R names of the formula's coefficients, in R's order."""
        return [r_name(t.name()) if t.factors else "(Intercept)" for t in self._rhs().rhs_termlist]

    @property
    def variables(self) -> list[str]:
        """Variables the formula reads (``X1``, ``X2``, ...)."""
        names: list[str] = []
        for t in self._rhs().rhs_termlist:
            for f in t.factors:
                for n in _names_in(f.code):
                    if n not in names:
                        names.append(n)
        return names

    def evaluate(self, data: Any) -> np.ndarray:
        """Fitted response at the rows of ``data`` (paper units), sum of estimate x term value."""
        df = as_frame(data)
        missing = [v for v in self.variables if v not in df.columns]
        if missing:
            raise FormulaError(f"{self.name} needs {', '.join(missing)}; "
                               f"the data has {', '.join(map(str, df.columns))}")
        check_finite(df, self.variables)
        X = patsy.dmatrix(self._rhs(), df, eval_env=patsy.EvalEnvironment([dict(FUNCTIONS)]),
                          return_type="dataframe")
        X = X.rename(columns=r_name)
        return X[self.coef.index].to_numpy(float) @ self.coef.to_numpy(float)

