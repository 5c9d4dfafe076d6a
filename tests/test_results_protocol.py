"""One conformance test of the result protocol (perfmod.core.results) over every fit class.

Each case fits exact straight-line data (or a line through the origin, or a
constant) plus a known alternating noise pattern, so the estimates, their
standard errors and the confidence and prediction intervals have textbook
closed forms: for y = b0 + b1 x on n points, s^2 = RSS / (n - 2),
se(b1) = s / sqrt(Sxx), se(b0) = s sqrt(1/n + xbar^2 / Sxx), and at x0 the
half-width is t(0.5 + level/2, n - 2) s sqrt(h [+ 1]) with
h = 1/n + (x0 - xbar)^2 / Sxx (prediction adds the 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

from perfmod.core.results import FitResult, read_params
from perfmod.models.bsp import fit_bsp
from perfmod.models.comm.fitting import fit_maxrate2, fit_postal
from perfmod.models.compute import fit_constant_mean, fit_eiger, fit_loop_model, fit_perfmod
from perfmod.models.regression import gam, lm

N = 12
X = np.linspace(100.0, 2000.0, N)
NOISE = np.tile([1.0, -1.0, 2.0, -2.0], N // 4)
X0 = np.array([50.0, 1000.0, 3000.0])


@dataclass
class Case:
    """A fitted object, how to predict at X0 as 1-d arrays, and its closed form."""

    fit: FitResult
    predict: Callable[[str | None, float], xr.Dataset]
    kind: str  # "line", "origin" or "mean"
    y: np.ndarray
    names: tuple[str, ...] = ()  # parameter names of (intercept, slope) / (slope,) / (mean,)
    rtol: float = 1e-8
    x0: np.ndarray = field(default_factory=lambda: X0)  # where ``predict`` predicts


def _line(b0: float, b1: float, scale: float) -> np.ndarray:
    return b0 + b1 * X + scale * NOISE


def _lm() -> Case:
    y = _line(3.0, 0.5, 4.0)
    f = lm("y ~ x", pd.DataFrame({"x": X, "y": y}))
    return Case(f, lambda i, lv: f.predict({"x": X0}, interval=i, level=lv), "line", y, ("(Intercept)", "x"))


def _gam() -> Case:
    # a penalty far above the data's curvature shrinks the smooth to the least-squares line
    y = _line(3.0, 0.5, 4.0)
    f = gam("y", pd.DataFrame({"x": X, "y": y}), ["x"], df=6, penalty=1e10)
    x0 = np.array([150.0, 1000.0, 1900.0])  # B-splines do not extrapolate
    return Case(f, lambda i, lv: f.predict({"x": x0}, interval=i, level=lv), "line", y, rtol=1e-3, x0=x0)


def _postal() -> Case:
    y = _line(2e-6, 1e-9, 1e-7)
    f = fit_postal(X, y, relative=False)
    return Case(f, lambda i, lv: f.predict(X0, interval=i, level=lv), "line", y, ("alpha", "beta"), rtol=1e-6)


def _maxrate2() -> Case:
    y = _line(2e-6, 1e-9, 1e-7)  # k = 1: t = alpha + n beta
    f = fit_maxrate2(X, 1, y, relative=False)
    return Case(f, lambda i, lv: f.predict(X0, interval=i, level=lv, k=1), "line", y, ("alpha", "beta"),
                rtol=1e-6)


def _bsp() -> Case:
    # the communication block per iteration, T_c / I = H / K_b + O_l, is a line in H
    y = _line(2e-5, 1e-8, 1e-6)
    C = np.linspace(1e6, 4e6, N) * np.tile([1.0, 1.3, 0.8], N // 3)
    P = np.tile([1.0, 2.0, 4.0, 8.0], N // 4)
    I = np.repeat([100.0, 150.0, 200.0], N // 3)  # noqa: E741
    rng = np.random.default_rng(0)
    f = fit_bsp(C, P, I, X, I / P * (C * 1e-8 + P * 1e-3 + rng.normal(0, 1e-4, N)), I * y,
                I * 1e-4 + C * 1e-9 + 0.1 + rng.normal(0, 1e-3, N))
    x0 = {"C": np.full(3, 2e6), "P": np.full(3, 4.0), "I": np.ones(3), "H": X0}
    return Case(f, lambda i, lv: f.predict(x0, interval=i, level=lv).sel(component="t_c"), "line", y,
                ("O_l", "1/K_b"))


def _perfmod() -> Case:
    y = _line(2e-6, 1e-9, 1e-7)
    f = fit_perfmod({"n": X, "time": y}, exponents=(1,), functions=("linear",), log_powers=(0,), relative=False,
                    segments="none", bootstrap=0)  # the textbook t intervals (bootstrap: test_normal_form)
    return Case(f, lambda i, lv: f.predict({"n": X0}, interval=i, level=lv), "line", y, ("1", "|n|^1"))


def _eiger() -> Case:
    y = _line(2e-6, 1e-9, 1e-7)
    f = fit_eiger({"n": X, "time": y}, functions=("linear",))
    return Case(f, lambda i, lv: f.predict({"n": X0}, interval=i, level=lv), "line", y, ("1", "|n|^1"))


def _loop() -> Case:
    y = 1e-9 * X + 1e-7 * NOISE
    f = fit_loop_model({"n": X, "time": y}, extents=["n"], relative=False)
    return Case(f, lambda i, lv: f.predict({"n": X0}, interval=i, level=lv), "origin", y, ("|n*1|^1",))


def _mean() -> Case:
    y = 2e-6 + 1e-7 * NOISE
    f = fit_constant_mean({"n": X, "time": y})
    return Case(f, lambda i, lv: f.predict({"n": X0}, interval=i, level=lv), "mean", y, ("1",))


CASES = {"LinearModel": _lm, "GAMFit": _gam, "comm Fit (postal)": _postal, "comm Fit (maxrate2)": _maxrate2,
         "BSPFit": _bsp, "PerfmodModel": _perfmod, "EigerModel": _eiger, "LoopModel": _loop,
         "ConstantMeanModel": _mean}


def _closed_form(kind: str, y: np.ndarray, x0: np.ndarray) -> dict[str, Any]:
    """Estimates, standard errors, leverage at x0 and residual df of the textbook fits."""
    n = len(y)
    if kind == "line":
        xbar, sxx = X.mean(), np.sum((X - X.mean()) ** 2)
        b1 = np.sum((X - xbar) * (y - y.mean())) / sxx
        b0 = y.mean() - b1 * xbar
        dof = n - 2
        s = np.sqrt(np.sum((y - b0 - b1 * X) ** 2) / dof)
        return {"est": [b0, b1], "se": [s * np.sqrt(1 / n + xbar**2 / sxx), s / np.sqrt(sxx)], "s": s, "dof": dof,
                "fit": b0 + b1 * x0, "h": 1 / n + (x0 - xbar) ** 2 / sxx}
    if kind == "origin":
        b = np.sum(X * y) / np.sum(X**2)
        dof = n - 1
        s = np.sqrt(np.sum((y - b * X) ** 2) / dof)
        return {"est": [b], "se": [s / np.sqrt(np.sum(X**2))], "s": s, "dof": dof, "fit": b * x0,
                "h": x0**2 / np.sum(X**2)}
    s = np.std(y, ddof=1)
    return {"est": [y.mean()], "se": [s / np.sqrt(n)], "s": s, "dof": n - 1, "fit": np.full(len(x0), y.mean()),
            "h": np.full(len(x0), 1 / n)}


@pytest.fixture(params=list(CASES), scope="module")
def case(request: pytest.FixtureRequest) -> Case:
    return CASES[request.param]()


def test_params_and_stderr_are_series_with_units(case: Case):
    p, se = case.fit.params, case.fit.stderr
    assert isinstance(case.fit, FitResult)
    assert isinstance(p, pd.Series) and isinstance(se, pd.Series)
    assert list(p.index) == list(se.index) and len(p) > 0
    for s in (p, se):
        units = s.attrs["units"]
        assert isinstance(units, dict) and list(units) == list(p.index)
        assert all(isinstance(u, str) and u for u in units.values())
    cf = _closed_form(case.kind, case.y, X0)
    if case.names:
        np.testing.assert_allclose(p[list(case.names)].to_numpy(), cf["est"], rtol=case.rtol)
        np.testing.assert_allclose(se[list(case.names)].to_numpy(), cf["se"], rtol=max(case.rtol, 1e-6))


@pytest.mark.parametrize("level", [0.95, 0.8])
def test_predict_intervals_match_the_t_formula(case: Case, level: float):
    plain = case.predict(None, level)
    assert isinstance(plain, xr.Dataset) and "predicted" in plain and "lower" not in plain
    cf = _closed_form(case.kind, case.y, case.x0)
    np.testing.assert_allclose(plain["predicted"].values, cf["fit"], rtol=case.rtol)
    q = stats.t.ppf(0.5 + level / 2, cf["dof"])
    widths = {}
    for interval, extra in (("confidence", 0.0), ("prediction", 1.0)):
        ds = case.predict(interval, level)
        assert ds.attrs["interval"] == interval and ds.attrs["level"] == level
        for b in ("lower", "upper"):
            assert ds[b].attrs["interval"] == interval and ds[b].attrs["level"] == level
            assert ds[b].attrs["units"] == ds["predicted"].attrs["units"]
        half = q * cf["s"] * np.sqrt(cf["h"] + extra)
        np.testing.assert_allclose(ds["upper"].values - ds["predicted"].values, half, rtol=max(case.rtol, 1e-6))
        np.testing.assert_allclose(ds["predicted"].values - ds["lower"].values, half, rtol=max(case.rtol, 1e-6))
        widths[interval] = ds["upper"].values - ds["lower"].values
    assert np.all(widths["prediction"] > widths["confidence"])
    with pytest.raises(ValueError, match="interval must be"):
        case.predict("tolerance", level)


def test_to_dataset_round_trips_through_netcdf(case: Case, tmp_path):
    ds = case.fit.to_dataset()
    assert list(ds["parameter"].values) == list(case.fit.params.index)
    for v in ds.data_vars:
        assert "units" in ds[v].attrs, v
    path = tmp_path / "fit.nc"
    ds.to_netcdf(path)
    with xr.open_dataset(path) as back:
        p, se = read_params(back)
    pd.testing.assert_series_equal(p, case.fit.params)
    pd.testing.assert_series_equal(se, case.fit.stderr)
    assert p.attrs["units"] == case.fit.params.attrs["units"]


def test_summary_names_every_parameter(case: Case):
    text = case.fit.summary()
    assert isinstance(text, str)
    for name in case.fit.params.index:
        assert name in text, name
