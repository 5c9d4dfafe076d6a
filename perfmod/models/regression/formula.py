"""R model formulas on patsy (the formula engine of statsmodels' formula API).

paper 001 (Sasidharan, thesis 2021/22) built its models in R
(§5.1: "R [34] was the software used to build the statistical model"); its
tables name terms the way R's ``summary(lm)`` does, in R's order.  This module
takes an R formula as the paper would write it, e.g. Model C of §5.1.2::

    time ~ (X1 + I(X1^2)) * X2 * X3

and gives the design matrix with R's column names and R's term order:

* ``^`` is R's: inside ``I()`` it is a power (``I(X1^2)``), outside it is
  crossing to a degree (``(X1 + X2 + X3)^2``): both are patsy's ``**``.
* terms are sorted by order (main effects, then two-way, then three-way
  interactions), each order keeping the order in which the formula expands,
  as R's ``terms.formula`` does (``keep.order = FALSE``); the factors of an
  interaction are named in the order the variables first appear in the formula
  (``X1:X2``, never ``X2:X1`` when ``X1`` comes first).
* the intercept is ``(Intercept)``; ``I(X1 ** 2)`` is printed ``I(X1^2)`` and
  ``I(1 / x)`` ``I(1/x)`` as R deparses them; a treatment-coded level ``b`` of
  ``g`` is ``gb``.
* ``log``, ``exp``, ``sqrt``, ``log2``, ``log10`` and ``abs`` are available in
  formulas, as in R (and ``np``); ``y ~ .`` stands for every other column, as in R.

Bad input raises :class:`FormulaError` (a formula naming columns the data lacks;
the message lists them and the available columns) or :class:`DataError`
(non-finite values, naming the column and the rows).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import patsy

__all__ = [
    "RegressionError",
    "FormulaError",
    "DataError",
    "Design",
    "FUNCTIONS",
    "build_design",
    "design_matrix",
    "as_frame",
    "check_finite",
    "r_name",
    "to_patsy",
]


class RegressionError(ValueError):
    """Base class of the regression toolkit's input errors."""


class FormulaError(RegressionError):
    """A formula that cannot be used with the data (syntax, unknown columns)."""


class DataError(RegressionError):
    """Data that cannot be fitted (non-finite values, too few rows, aliased terms)."""


#: functions usable in formulas besides patsy's own (``I``, ``C``, ``np``), with R's names
FUNCTIONS: dict[str, Any] = {
    "log": np.log, "exp": np.exp, "sqrt": np.sqrt, "log2": np.log2, "log10": np.log10, "abs": np.abs, "np": np,
}
_DOT = re.compile(r"(?<![\w.])\.(?![\w.])")  # R's '.' (all other columns), not a decimal point or a name
_NO_NA = patsy.NAAction(NA_types=[])  # NaN/inf pass through patsy; check_finite and build_design name the rows
_KNOWN = set(FUNCTIONS) | {"I", "C", "np", "Q", "center", "standardize", "scale", "bs", "cr", "cc", "te"}


def to_patsy(formula: str) -> str:
    """R formula text to patsy's: ``^`` becomes ``**`` (power inside ``I()``, crossing outside)."""
    if not isinstance(formula, str) or "~" not in formula:
        raise FormulaError(f"a formula is a string 'response ~ terms', got {formula!r}")
    return formula.replace("^", "**")


def r_name(patsy_name: str) -> str:
    """A patsy column name as R prints it (``Intercept`` -> ``(Intercept)``, ``I(X1 ** 2)`` -> ``I(X1^2)``)."""
    if patsy_name == "Intercept":
        return "(Intercept)"
    name = re.sub(r"\s*\*\*\s*", "^", patsy_name)
    name = re.sub(r"\s+/\s+", "/", name)
    return re.sub(r"\[T\.([^\]]*)\]", r"\1", name)


def as_frame(data: Any) -> pd.DataFrame:
    """DataFrame from a DataFrame, an xarray Dataset (flattened) or a mapping of columns."""
    if isinstance(data, pd.DataFrame):
        return data
    if hasattr(data, "to_dataframe") and hasattr(data, "data_vars"):
        return data.to_dataframe().reset_index()
    if isinstance(data, Mapping):
        return pd.DataFrame(dict(data))
    raise TypeError(f"data must be a pandas DataFrame, an xarray Dataset or a mapping of columns, not {type(data)}")


def _names_in(code: str) -> list[str]:
    """Variable names a factor's code reads (function names and known helpers excluded)."""
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError as e:  # patsy would have failed already; keep the message clear
        raise FormulaError(f"cannot parse the term {code!r}: {e.msg}") from None
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    attr_bases = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and id(n) not in called and id(n) not in attr_bases and n.id not in _KNOWN:
            out.append(n.id)
    return out


def _sorted_terms(terms: list[patsy.Term]) -> list[patsy.Term]:
    """R's term order: intercept, then by order of interaction (stable), factors in first-appearance order."""
    first: dict[Any, int] = {}
    for t in terms:
        for f in t.factors:
            first.setdefault(f, len(first))
    out = [patsy.Term(sorted(t.factors, key=first.__getitem__)) for t in terms]
    return sorted(out, key=lambda t: len(t.factors))


@dataclass(frozen=True)
class Design:
    """A model frame: response, design matrix with R's names, and what built them.

    Attributes
    ----------
    formula : str
        The formula as given (R syntax).
    response : str
        The response as R names it (``time``, ``log(time)``).
    y : numpy.ndarray
        Response values, shape (n,).
    X : pandas.DataFrame
        Design matrix, columns named as R names coefficients, in R's order.
    terms : tuple of str
        Term labels in R's order (``(Intercept)`` first when present).
    term_columns : dict
        Term label -> the design columns it spans.
    variables : tuple of str
        Data columns the formula reads.
    rows : pandas.Index
        Labels of the data rows used.
    design_info : patsy.DesignInfo
        To build the same columns from new data (:func:`design_matrix`).
    """

    formula: str
    response: str
    y: np.ndarray
    X: pd.DataFrame
    terms: tuple[str, ...]
    term_columns: dict[str, tuple[str, ...]]
    variables: tuple[str, ...]
    rows: pd.Index
    design_info: Any


def _check_columns(codes: list[str], df: pd.DataFrame, formula: str, env_names: set[str]) -> list[str]:
    used: list[str] = []
    for c in codes:
        for name in _names_in(c):
            if name not in used:
                used.append(name)
    missing = [n for n in used if n not in df.columns and n not in env_names]
    if missing:
        raise FormulaError(
            f"formula {formula!r} names {', '.join(map(repr, missing))}, not a column of the data; "
            f"columns: {', '.join(map(str, df.columns))}")
    return [n for n in used if n in df.columns]


def check_finite(df: pd.DataFrame, columns: list[str], what: str = "data") -> None:
    """Raise :class:`DataError` naming every column holding NaN or +-inf and its rows (first 10 each)."""
    problems = []
    for col in columns:
        v = df[col]
        bad = ~np.isfinite(v.to_numpy(dtype=float)) if pd.api.types.is_numeric_dtype(v) else v.isna().to_numpy()
        if bad.any():
            rows = list(df.index[bad])
            shown = ", ".join(map(str, rows[:10])) + (f", ... ({len(rows)} rows)" if len(rows) > 10 else "")
            problems.append(f"column {col!r} at rows {shown}")
    if problems:
        raise DataError(f"non-finite values (NaN or inf) in the {what}: {'; '.join(problems)}")


def build_design(formula: str, data: Any, env: Mapping[str, Any] | None = None) -> Design:
    """Response and design matrix of an R formula on ``data`` (see the module docstring).

    Parameters
    ----------
    formula : str
        R formula, e.g. ``"time ~ (X1 + I(X1^2)) * X2 * X3"``.
    data : pandas.DataFrame, xarray.Dataset or mapping
        One row per observation; the formula's variables are its columns.
    env : mapping, optional
        Extra names (constants, functions) for the formula.

    Raises
    ------
    FormulaError
        Syntax errors, columns the data lacks, no response.
    DataError
        NaN or inf in a column the formula reads (column and rows named).
    """
    df = as_frame(data)
    formula_in = formula
    if isinstance(formula, str) and "~" in formula and _DOT.search(formula.split("~", 1)[1]):
        lhs, rhs = formula.split("~", 1)
        others = [str(c) for c in df.columns if str(c) not in _names_in(lhs.strip() or "0")]
        formula = f"{lhs}~" + _DOT.sub("(" + " + ".join(others) + ")", rhs)
    try:
        desc = patsy.ModelDesc.from_formula(to_patsy(formula))
    except patsy.PatsyError as e:
        raise FormulaError(f"cannot parse formula {formula!r}: {e}") from None
    if len(desc.lhs_termlist) != 1 or len(desc.lhs_termlist[0].factors) != 1:
        raise FormulaError(f"formula {formula!r} needs exactly one response left of '~'")
    names = dict(FUNCTIONS)
    names.update(env or {})
    codes = [f.code for t in desc.lhs_termlist + desc.rhs_termlist for f in t.factors]
    used = _check_columns(codes, df, formula, set(names))
    check_finite(df, used)
    desc = patsy.ModelDesc(desc.lhs_termlist, _sorted_terms(desc.rhs_termlist))
    eval_env = patsy.EvalEnvironment([names])
    try:
        with np.errstate(divide="ignore", invalid="ignore"):  # non-finite results are reported below, by row
            y, X = patsy.dmatrices(desc, df, eval_env=eval_env, NA_action=_NO_NA, return_type="dataframe")
    except patsy.PatsyError as e:
        raise FormulaError(f"formula {formula!r}: {e}") from None
    yv = y.to_numpy(dtype=float).ravel()
    if not np.isfinite(yv).all() or not np.isfinite(X.to_numpy(dtype=float)).all():
        # a transformation made values non-finite (log of 0, ...): name the rows
        bad = ~np.isfinite(yv) | ~np.isfinite(X.to_numpy(dtype=float)).all(axis=1)
        rows = list(X.index[bad])
        raise DataError(f"formula {formula!r} gives non-finite values at rows "
                        f"{', '.join(map(str, rows[:10]))}{' ...' if len(rows) > 10 else ''} "
                        f"(a log or division of zero or a negative number?)")
    info = X.design_info
    # patsy groups terms by their numeric factors (categorical-only terms first); R keeps the formula's order
    # within each interaction order, which desc.rhs_termlist holds: put the columns in that order
    term_columns = {r_name(t.name()) if t.factors else "(Intercept)":
                    tuple(r_name(c) for c in info.column_names[info.term_slices[t]]) for t in desc.rhs_termlist}
    X = X.rename(columns=r_name)[[c for cols in term_columns.values() for c in cols]]
    return Design(formula=formula_in, response=r_name(y.design_info.column_names[0]), y=yv, X=X,
                  terms=tuple(term_columns), term_columns=term_columns, variables=tuple(used),
                  rows=X.index, design_info=info)


def design_matrix(design: Design, newdata: Any, env: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """The columns of ``design`` built from ``newdata`` (prediction), R-named.

    Raises :class:`FormulaError` when ``newdata`` lacks a variable of the
    right-hand side and :class:`DataError` for non-finite values in them.
    """
    df = as_frame(newdata)
    rhs_vars = []
    for f in design.design_info.factor_infos:
        for n in _names_in(f.code):
            if n not in rhs_vars:
                rhs_vars.append(n)
    names = dict(FUNCTIONS)
    names.update(env or {})
    missing = [n for n in rhs_vars if n not in df.columns and n not in names]
    if missing:
        raise FormulaError(f"new data lacks {', '.join(map(repr, missing))} needed by {design.formula!r}; "
                           f"columns: {', '.join(map(str, df.columns))}")
    check_finite(df, [n for n in rhs_vars if n in df.columns], what="new data")
    with np.errstate(divide="ignore", invalid="ignore"):
        (X,) = patsy.build_design_matrices([design.design_info], df, NA_action=_NO_NA, return_type="dataframe")
    bad = ~np.isfinite(X.to_numpy(dtype=float)).all(axis=1)
    if bad.any():
        raise DataError(f"{design.formula!r} gives non-finite terms for the new data at rows "
                        f"{', '.join(map(str, list(X.index[bad])[:10]))}")
    return X.rename(columns=r_name)[list(design.X.columns)]
