"""Paper 001's published regression results, as data and as models (Sasidharan, §5, §6, Tables 1-14).

What the paper prints, transcribed in ``data/paper/sasidharan_coefficients.csv``
(Tables 1, 3, 5, 6, 8, 10, 11), ``sasidharan_anova.csv`` (Tables 2, 9) and
``sasidharan_validation.csv`` (Tables 4, 7, 12, 13, 14), and what can be
recomputed from it:

* :func:`published_model`: a coefficient table as a
  :class:`~perfmod.models.regression.PublishedModel` that evaluates at given X
  (paper units);
* :func:`coefficient_checks`: t = Estimate / Std.Error and Pr(>|t|) from t
  with the residual degrees of freedom, per term, against the printed values;
  :func:`consistent_df` finds the degrees of freedom the printed p-values allow;
* :func:`anova_checks`: F and Pr(>F) of Tables 2 and 9 from their Res.Df and
  RSS (R's convention, :func:`~perfmod.models.regression.anova_table`);
* :func:`validation_statistics`: RMSE, sqrt(RSS/(n-p)), MAPE, bias and the
  coverage of the printed intervals on each validation table, set against the
  paper's stated test error; :func:`interval_evidence` tests whether the
  printed intervals are confidence or prediction intervals.

The model formulas are read off the tables: each table's rows are exactly
the R terms of the formula in :data:`MODELS`, in R's order (tests check it).
Model 2 of §6.4.1 has no coefficient table; its formula is inferred from
Table 9 (444 = 462 - 18 residual df: 18 coefficients, the quadratic crossing
of X1 and X2 with X3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from perfmod.core import paperdata
from perfmod.core.io import annotate
from perfmod.models.regression import LinearModel, PublishedModel, anova_table, prediction_errors

__all__ = [
    "MODELS",
    "VALIDATION",
    "PAPER",
    "ModelInfo",
    "published_model",
    "published_models",
    "coefficient_table",
    "coefficient_checks",
    "consistent_df",
    "anova_checks",
    "validation_table",
    "validation_statistics",
    "interval_evidence",
    "validation_dataset",
    "compare_coefficients",
]

PAPER = "Sasidharan, thesis 2021/22 (paper 001)"


@dataclass(frozen=True)
class ModelInfo:
    """What the paper says about one model: formula, units, fit statistics (None where not stated)."""

    table: int | None
    name: str
    formula: str
    units: dict[str, str]
    n_obs: int | None
    df_resid: int | None
    rse: float | None
    section: str


_SEDOV_UNITS = {"response": "ms", "X1": "GB", "X2": "threads", "X3": "peer memory accesses",
                "X4": "inter-process edges", "X5": "GPUs"}
_MC_UNITS = {"X1": "MB (mesh memory)", "X2": "MB (particle memory)", "X3": "threads", "X4": "mW (mean power)"}

#: the paper's models by name; ``table`` is the coefficient table (None: not published)
MODELS: dict[str, ModelInfo] = {
    "A": ModelInfo(None, "Model A (shared memory)", "time ~ X1 + I(X1^2) + X2 + X3", _SEDOV_UNITS, 275, 270, 181.4,
                   "§5.1.2, Table 2"),
    "B": ModelInfo(None, "Model B (shared memory)", "time ~ (X1 + I(X1^2)) * X2", _SEDOV_UNITS, 275, 269, 138.3,
                   "§5.1.2, Table 2"),
    "C_P100": ModelInfo(1, "Model C, Tesla P100", "time ~ (X1 + I(X1^2)) * X2 * X3", _SEDOV_UNITS, 275, 263, 136.5,
                        "§5.1.2, Tables 1, 2"),
    "C_K80": ModelInfo(3, "Model C, Tesla K80", "time ~ (X1 + I(X1^2)) * X2 * X3", _SEDOV_UNITS, 275, 263, None,
                       "§5.1.2, Table 3"),
    "comm": ModelInfo(5, "communication model", "time ~ X1 + I(X1^2) + X4 + X5", _SEDOV_UNITS, 500, 495, None,
                      "§5.2.2, Table 5"),
    "full": ModelInfo(6, "full model (distributed memory)",
                      "time ~ (X1 + I(X1^2)) * X2 * X3 + (X1 + I(X1^2)) * X4 + X5", _SEDOV_UNITS, 500, 484, 116.6,
                      "§5.2.2, Table 6"),
    "model1": ModelInfo(8, "Model 1 (tracking time)", "time ~ (X2 + I(X2^2)) * X3", {"response": "s", **_MC_UNITS},
                        462, 456, 0.035, "§6.4.1, Tables 8, 9"),
    "model2": ModelInfo(None, "Model 2 (tracking time, with X1)", "time ~ (X1 + I(X1^2)) * (X2 + I(X2^2)) * X3",
                        {"response": "s", **_MC_UNITS}, 462, 444, 0.035, "§6.4.1, Table 9"),
    "power": ModelInfo(10, "3-variable power model", "power ~ X1 * X2 * X3", {"response": "mW", **_MC_UNITS},
                       450, 442, 5788, "§6.4.2, Table 10"),
    "energy": ModelInfo(11, "3-variable energy model per iteration per GPU", "energy ~ (X2 + I(X2^2)) * X3 * X4",
                        {"response": "mJ", **_MC_UNITS}, 450, 438, 1316, "§6.4.2, Table 11"),
}

#: validation table -> (model, the paper's stated error for the test data, where it says so)
VALIDATION: dict[int, tuple[str, float, str]] = {
    4: ("C_P100", 136.4802, "§5.1.3: 'The scaled residual error for test data was 136.4802 which was close to the "
                            "RSE for training data (136.5)'"),
    7: ("full", 116.5921, "§5.2.3: 'The RSE for test data was 116.5921 which was close to the RSE for training "
                          "data (116.6)'"),
    12: ("model1", 0.035, "§6.5.1: 'The RSE for validation data was 0.035, close to the RSE for training data'"),
    13: ("power", 5788.197, "§6.5.2: 'The RSE for power model for validation data was 5788.197'"),
    14: ("energy", 1316.058, "§6.5.3: 'The RSE for power model for validation data was 1316.058'"),
}


def _model_by_table(table: int) -> str:
    for key, info in MODELS.items():
        if info.table == table:
            return key
    raise KeyError(f"no coefficient table {table} in paper 001; tables: "
                   f"{sorted(i.table for i in MODELS.values() if i.table)}")


def coefficient_table(table: int) -> pd.DataFrame:
    """A published coefficient table in :meth:`LinearModel.coef_table` form (index: R's term names).

    Columns ``Estimate``, ``Std.Error``, ``t-value``, ``Pr(>|t|)`` as printed, plus
    ``p_bound`` (True where the paper prints ``< 2e-16``) and ``paper_term``.
    """
    _model_by_table(table)
    c = paperdata.read_table("sasidharan_coefficients")
    g = c[c.table == table].set_index("term")
    return pd.DataFrame({"Estimate": g.estimate, "Std.Error": g.std_error, "t-value": g.t_value,
                         "Pr(>|t|)": g.p_value, "p_bound": g.p_bound == "<", "paper_term": g.paper_term})


def published_model(key: str | int) -> PublishedModel:
    """The paper's model ``key`` (a :data:`MODELS` key or a coefficient table number) as a PublishedModel."""
    key = _model_by_table(key) if isinstance(key, int) else key
    info = MODELS[key]
    if info.table is None:
        raise KeyError(f"{info.name}: the paper publishes no coefficients ({info.section})")
    tab = coefficient_table(info.table)
    return PublishedModel(name=info.name, formula=info.formula, coef=tab["Estimate"],
                          source=f"{PAPER} Table {info.table} ({info.section})", units=info.units, rse=info.rse,
                          df_resid=info.df_resid)


def published_models() -> dict[str, PublishedModel]:
    """Every model with a published coefficient table."""
    return {k: published_model(k) for k, i in MODELS.items() if i.table is not None}


def coefficient_checks(table: int, df_resid: int | None = None) -> pd.DataFrame:
    """Printed t and p against those recomputed from Estimate / Std.Error and ``df_resid`` (default: MODELS').

    Returns per term: ``t_printed``, ``t_recomputed`` (Estimate / Std.Error, each printed
    to 4 digits, so agreement is within about 0.1 %), ``t_rel_diff``, ``p_printed``,
    ``p_from_t`` (two-sided, from the printed t), ``p_rel_diff``, ``p_bound``.
    """
    tab = coefficient_table(table)
    df = df_resid if df_resid is not None else MODELS[_model_by_table(table)].df_resid
    t_re = tab["Estimate"] / tab["Std.Error"]
    p = 2 * stats.t.sf(np.abs(tab["t-value"]), df)
    out = pd.DataFrame({"t_printed": tab["t-value"], "t_recomputed": t_re,
                        "t_rel_diff": (t_re / tab["t-value"] - 1), "p_printed": tab["Pr(>|t|)"], "p_from_t": p,
                        "p_rel_diff": p / tab["Pr(>|t|)"] - 1, "p_bound": tab["p_bound"]})
    out.attrs["df_resid"] = df
    return out


def consistent_df(table: int, candidates: range = range(5, 2001), t_half_unit: float = 5e-4,
                  p_rel: float = 5e-3) -> list[int]:
    """Residual degrees of freedom under which every printed p-value follows from its printed t-value.

    A df is consistent when, for every term whose p is printed as a number
    (not ``< 2e-16``, not below 1e-12, below 0.99), the printed p lies within
    ``p_rel`` of the p-values of t +- ``t_half_unit`` (t is printed to 3 decimals).
    """
    tab = coefficient_table(table)
    g = tab[~tab.p_bound & (tab["Pr(>|t|)"] > 1e-12) & (tab["Pr(>|t|)"] < 0.99)]
    t = np.abs(g["t-value"].to_numpy())[None, :]
    p = g["Pr(>|t|)"].to_numpy()[None, :]
    df = np.asarray(list(candidates))[:, None]
    lo = 2 * stats.t.sf(t + t_half_unit, df) * (1 - p_rel)
    hi = 2 * stats.t.sf(np.maximum(t - t_half_unit, 0), df) * (1 + p_rel)
    return [int(d) for d in df[np.all((lo <= p) & (p <= hi), axis=1), 0]]


def anova_checks() -> pd.DataFrame:
    """Tables 2 and 9: printed F and Pr(>F) beside those recomputed from their Res.Df and RSS columns."""
    a = paperdata.read_table("sasidharan_anova")
    parts = []
    for table, g in a.groupby("table"):
        re = anova_table(g.res_df.to_numpy(), g.rss.to_numpy(), g.model.astype(str).tolist())
        parts.append(pd.DataFrame({"table": table, "model": g.model.astype(str).to_numpy(),
                                   "res_df": g.res_df.to_numpy(), "rss": g.rss.to_numpy(),
                                   "f_printed": g.f.to_numpy(), "f_recomputed": re["F"].to_numpy(),
                                   "p_printed": g.p_value.to_numpy(), "p_bound": (g.p_bound == "<").to_numpy(),
                                   "p_recomputed": re["Pr(>F)"].to_numpy(),
                                   "rse": np.sqrt(g.rss.to_numpy() / g.res_df.to_numpy())}))
    return pd.concat(parts, ignore_index=True)


def validation_table(table: int, level: float = 0.95) -> pd.DataFrame:
    """A validation table with the prediction interval reconstructed from the printed confidence interval.

    Columns as printed (``measured``, ``fit``, ``lower``, ``upper``, ``unit``), then
    ``se_fit`` = half-width / t(0.975, df) and ``pi_lower``, ``pi_upper`` =
    fit -+ t sqrt(RSE^2 + se_fit^2), with the model's training RSE and df
    (:data:`MODELS`; for Table 4, sqrt(RSS_C / 263) from Table 2).
    """
    if table not in VALIDATION:
        raise KeyError(f"no validation table {table} in paper 001; tables: {sorted(VALIDATION)}")
    v = paperdata.read_table("sasidharan_validation")
    g = v[v.table == table].set_index("case").drop(columns="table")
    info = MODELS[VALIDATION[table][0]]
    rse = _training_rse(VALIDATION[table][0])
    q = stats.t.ppf(0.5 + level / 2, info.df_resid)
    half = (g.upper - g.lower) / 2
    se = half / q
    pi = q * np.sqrt(rse**2 + se**2)
    return g.assign(se_fit=se, pi_lower=g.fit - pi, pi_upper=g.fit + pi)


def _training_rse(key: str) -> float:
    if key == "C_P100":  # more digits than the text's 136.5: from Table 2's RSS of Model C
        a = paperdata.read_table("sasidharan_anova")
        row = a[(a.table == 2) & (a.model == "C")].iloc[0]
        return float(np.sqrt(row.rss / row.res_df))
    if key == "model1":
        a = paperdata.read_table("sasidharan_anova")
        row = a[(a.table == 9) & (a.model.astype(str) == "1")].iloc[0]
        return float(np.sqrt(row.rss / row.res_df))
    return float(MODELS[key].rse)


def interval_evidence(table: int, level: float = 0.95) -> pd.Series:
    """Are the printed intervals confidence or prediction intervals?

    A prediction interval's half-width is t * sqrt(RSE^2 + se_fit^2) >= t * RSE;
    a confidence interval's is t * se_fit, below t * RSE wherever the leverage is
    below 1.  Returns the largest half-width / (t RSE) (``max_half_over_t_rse``;
    below 1 on every row rules out prediction intervals), whether intervals are
    symmetric about the fit (``max_asymmetry``, relative), and the verdict.
    """
    g = validation_table(table, level)
    info = MODELS[VALIDATION[table][0]]
    q = stats.t.ppf(0.5 + level / 2, info.df_resid)
    half = (g.upper - g.lower) / 2
    ratio = half / (q * _training_rse(VALIDATION[table][0]))
    asym = ((g.upper + g.lower) / 2 - g.fit).abs() / half
    kind = "confidence" if ratio.max() < 1 else ("prediction" if ratio.min() >= 1 else "mixed")
    return pd.Series({"max_half_over_t_rse": float(ratio.max()), "min_half_over_t_rse": float(ratio.min()),
                      "max_asymmetry": float(asym.max()), "kind": kind})


def validation_statistics(level: float = 0.95) -> pd.DataFrame:
    """Error statistics recomputed from Tables 4, 7, 12, 13, 14, beside the paper's stated test errors.

    One row per table: ``model``, ``unit``, ``n``, ``rmse``, ``rse_df`` (sqrt(RSS / (n - p))),
    ``mae``, ``mape`` [%], ``max_ape`` [%], ``bias`` (mean fit - measured), ``coverage_ci``
    (printed intervals), ``coverage_pi`` (reconstructed prediction intervals,
    :func:`validation_table`), ``stated`` (the paper's test error), ``training_rse``,
    ``rmse_over_stated``, ``stated_matches_training`` (the stated test error equals the
    training RSE to every digit the text gives for either: for Table 4, 136.4802 is
    sqrt(RSS_C / 263) of Table 2 to four decimals), ``interval`` (:func:`interval_evidence`).
    """
    rows = {}
    for table, (key, stated, _quote) in VALIDATION.items():
        g = validation_table(table, level)
        info = MODELS[key]
        n_coef = info.n_obs - info.df_resid if info.n_obs and info.df_resid else None
        e = prediction_errors(g.measured, g.fit, g.lower, g.upper, n_coef=n_coef)
        cov_pi = float(np.mean((g.pi_lower <= g.measured) & (g.measured <= g.pi_upper)))
        train = _training_rse(key)
        digits = _decimals(stated)
        rows[table] = {"model": key, "unit": g.unit.iloc[0], **e.drop("coverage").to_dict(),
                       "coverage_ci": e["coverage"], "coverage_pi": cov_pi, "stated": stated, "training_rse": train,
                       "rmse_over_stated": e["rmse"] / stated,
                       "stated_matches_training": bool(round(train, digits) == stated or
                                                      _same_printed(stated, info.rse)),
                       "interval": interval_evidence(table, level)["kind"]}
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "table"
    return out


def _decimals(x: float) -> int:
    s = repr(x)
    return len(s.split(".")[1]) if "." in s else 0


def _same_printed(stated: float, rse: float | None) -> bool:
    """The stated test error rounds to the training RSE as the text prints it (e.g. 116.5921 -> 116.6)."""
    if rse is None:
        return False
    return round(stated, _decimals(rse)) == rse


#: validation table -> (quantity name in datasets, long name, SI unit, factor from the paper's unit to SI)
QUANTITY: dict[int, tuple[str, str, str, float]] = {
    4: ("t_iter", "time per iteration (shared memory, Model C)", "s", 1e-3),
    7: ("t_iter", "time per iteration (distributed memory, full model)", "s", 1e-3),
    12: ("t_track", "mean time per tracking iteration (Model 1)", "s", 1.0),
    13: ("power_max", "maximum power per GPU (power model)", "W", 1e-3),
    14: ("energy", "mean energy per tracking iteration per GPU (energy model)", "J", 1e-3),
}


def validation_dataset(table: int, level: float = 0.95) -> xr.Dataset:
    """A validation table as a dataset in SI units (``<q>_measured``, ``<q>_predicted``, bounds), dim ``case``.

    Variables: ``<q>_measured``, ``<q>_predicted`` (the printed fit), and
    ``<q>_lower`` / ``<q>_upper`` over ``case`` and ``interval``: ``confidence``
    (the printed interval) and ``prediction`` (rebuilt by :func:`validation_table`),
    ``level`` in their attrs; ``q`` is ``t_iter``, ``t_track``, ``power_max`` or
    ``energy`` (s, s, W, J).
    """
    g = validation_table(table, level)
    q, long, unit, k = QUANTITY[table]
    kinds = ["confidence", "prediction"]
    bounds = {b: np.stack([g[b].to_numpy(), g[f"pi_{b}"].to_numpy()], axis=1) * k for b in ("lower", "upper")}
    ds = xr.Dataset({f"{q}_measured": ("case", g["measured"].to_numpy() * k),
                     f"{q}_predicted": ("case", g["fit"].to_numpy() * k),
                     **{f"{q}_{b}": (("case", "interval"), v) for b, v in bounds.items()}},
                    coords={"case": g.index.to_numpy(), "interval": kinds})
    meta = {f"{q}_measured": (unit, f"measured {long}"), f"{q}_predicted": (unit, f"predicted (fit) {long}"),
            "case": ("1", f"row of Table {table}"),
            "interval": ("1", "interval kind: confidence (printed), prediction (rebuilt from the printed one)")}
    for b in ("lower", "upper"):
        meta[f"{q}_{b}"] = (unit, f"{b} bound of the {level:.0%} interval of {long}")
    ds = annotate(ds, study="sasidharan_published", source=f"{PAPER} Table {table}",
                  parameters={"table": table, "level": level, "model": VALIDATION[table][0]}, meta=meta)
    for b in ("lower", "upper"):
        ds[f"{q}_{b}"].attrs.update(interval="confidence, prediction (dimension interval)", level=level)
    return ds


def compare_coefficients(model: LinearModel, table: int) -> pd.DataFrame:
    """A local fit's coefficient table beside the paper's (same R term names; NaN where one lacks a term).

    Columns ``Estimate``, ``Std.Error``, ``Pr(>|t|)`` of the local ``model`` and
    ``paper_Estimate``, ``paper_Std.Error``, ``paper_Pr(>|t|)``; rows in the
    paper's order, then any terms only the local model has.  Values are in each
    fit's own units: compare signs and significance, not magnitudes, unless
    the local variables are in the paper's units.
    """
    local = model.coef_table()[["Estimate", "Std.Error", "Pr(>|t|)"]]
    paper = coefficient_table(table)[["Estimate", "Std.Error", "Pr(>|t|)"]].add_prefix("paper_")
    order = list(paper.index) + [t for t in local.index if t not in paper.index]
    return local.join(paper, how="outer").loc[order]
