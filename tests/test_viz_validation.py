"""The one measured-vs-predicted plot (perfmod.viz.validation)."""

import numpy as np
import pytest
import xarray as xr
from matplotlib.collections import PolyCollection

from perfmod.viz.validation import plot_validation, validation_quantities


def _dataset() -> xr.Dataset:
    p = np.array([1, 2, 4, 8])
    meas = np.array([[[1.0, 1.2, 0.9], [0.6, 0.5, 0.7], [0.3, 0.35, 0.31], [0.2, 0.3, 0.25]]] * 2)
    pred = np.array([[1.0, 0.55, 0.3, 0.2]] * 2)
    attrs = {"units": "s", "interval": "prediction", "level": 0.9}
    return xr.Dataset(
        {"t_measured": (("case", "nprocs", "rep"), meas, {"units": "s"}),
         "t_predicted": (("case", "nprocs"), pred, {"units": "s"}),
         "t_lower": (("case", "nprocs"), pred - 0.1, attrs), "t_upper": (("case", "nprocs"), pred + 0.1, attrs),
         "other": ("nprocs", p * 2.0)},
        coords={"case": ["a", "b"], "nprocs": p, "rep": [0, 1, 2], "oversubscribed": ("nprocs", p > 4)})


def test_against_x_draws_median_bars_band_and_shading():
    ds = _dataset()
    assert validation_quantities(ds) == ["t"]
    fig = plot_validation(ds, x="nprocs", row="case", shade="oversubscribed")
    assert len(fig.axes) == 2 and fig.axes[1].get_title() == "case b"
    ax = fig.axes[0]
    median = ds.t_measured.sel(case="a").median("rep").values
    assert any(np.allclose(line.get_ydata(), median) for line in ax.get_lines())
    assert any(np.allclose(line.get_ydata(), ds.t_predicted.sel(case="a")) for line in ax.get_lines())
    band = [c for c in ax.collections if isinstance(c, PolyCollection) and c.get_label() == "90% prediction interval"]
    ys = band[0].get_paths()[0].vertices[:, 1]
    assert ys.min() == pytest.approx(0.1) and ys.max() == pytest.approx(1.1)
    shaded = [p for p in ax.patches if p.get_label() == "oversubscribed"]
    assert len(shaded) == 1 and shaded[0].get_x() == pytest.approx(8 - 0.3)
    assert ax.get_ylabel() == "t [s]"


def test_measured_against_predicted_counts_covering_intervals():
    ds = xr.Dataset({"y_measured": ("run", [1.0, 2.0, 3.0]), "y_predicted": ("run", [1.1, 2.5, 3.0]),
                     "y_lower": (("run", "interval"), [[1.0, 0.9], [2.4, 1.9], [2.9, 2.5]]),
                     "y_upper": (("run", "interval"), [[1.2, 1.3], [2.6, 3.1], [3.1, 3.5]])},
                    coords={"interval": ["confidence", "prediction"]})
    ds.y_lower.attrs["level"] = 0.95
    fig = plot_validation(ds)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "95% confidence interval (2/3 contain the measurement)" in legend
    assert "95% prediction interval (3/3 contain the measurement)" in legend


def test_clear_errors():
    with pytest.raises(ValueError, match="no <q>_measured"):
        plot_validation(xr.Dataset({"a": ("x", [1.0])}))
    with pytest.raises(KeyError, match="'zz' is not a dimension"):
        plot_validation(_dataset(), x="zz")
    with pytest.raises(KeyError, match=r"\['u'\]"):
        plot_validation(_dataset(), ["u"])


def test_log_axis_of_a_study_that_was_not_fitted_says_so_instead_of_failing():
    # a loaded machine: every run flagged, nothing fitted, all values NaN (matplotlib refuses a log axis then)
    ds = _dataset()
    nan = ds.copy(deep=True)
    for v in ("t_measured", "t_predicted", "t_lower", "t_upper"):
        nan[v] = nan[v] * np.nan
    fig = plot_validation(nan, x="nprocs", row="case", logy=True)
    assert [ax.get_yscale() for ax in fig.axes] == ["linear", "linear"]
    assert "no positive value to draw" in fig.axes[0].texts[0].get_text()
    assert [ax.get_yscale() for ax in plot_validation(ds, x="nprocs", row="case", logy=True).axes] == ["log", "log"]
