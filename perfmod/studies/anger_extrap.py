"""Extra-P beside the ``anger_skeletons`` study's region models, on the regions this machine measured.

The study fits each region's compute model on the training sizes and predicts the held-out ones, some of
them beyond the training range.  Here Extra-P's default modeler (PyPI ``extrap``, in its own Python:
:mod:`perfmod.models.compute.extrap_runner`) is fitted on the same region's 1-rank training calls, with the
parameters that vary among them, and predicts the same 1-rank points, so that Extra-P and the study's
methods extrapolate measured data side by side (:func:`region_errors`).  The study's own models are also
fitted on the 2-rank calls (their contention parameter); Extra-P sees the 1-rank calls only, which are
what the comparison predicts.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from perfmod.models.compute.extrap_runner import ExtrapError, ExtrapModeler

__all__ = ["extrap_region_predictions", "region_errors", "region_error_variables"]


def extrap_region_predictions(extrap: ExtrapModeler, frame: pd.DataFrame, params: Sequence[str], contention: str,
                              points: Mapping[int, pd.Series]) -> tuple[dict[int, float], str]:
    """Extra-P's predictions of one region at ``points`` (size index -> the 1-rank point's parameters) and its
    model's text, fitted on ``frame``'s 1-rank calls (``contention`` 1) over the ``params`` that vary among
    them; ``({}, why)`` where it cannot fit."""
    one = frame[frame[contention] == 1] if contention in frame else frame
    varying = [p for p in params if one[p].nunique() > 1]
    if one.empty or not varying or not points:
        return {}, "not fitted: too few 1-rank training points"
    keys = sorted(points)
    query = np.array([[float(points[k][p]) for p in varying] for k in keys])
    try:
        fit = extrap.fit(one[[*varying, "time"]], varying, query)
    except ExtrapError as err:
        warnings.warn(f"Extra-P did not fit a region: {err}", stacklevel=2)
        return {}, f"not fitted: {err}"
    return dict(zip(keys, fit.predicted.tolist(), strict=True)), fit.function


def region_errors(ds: xr.Dataset, inside: xr.DataArray, beyond: xr.DataArray) -> pd.DataFrame:
    """Mean |predicted / measured - 1| of the regions' 1-rank call times on the held-out sizes, per method and
    Extra-P, inside and beyond each app's training range (``inside``, ``beyond``: masks over (app, size), the
    study's ``training_range_masks``; rows ``(points, app)``; ``n``: the region-size pairs with a measurement
    and every column's prediction).  No Extra-P column where it did not run."""
    meas = ds.region_time_measured
    preds = {str(m): ds.region_time_predicted.sel({"method": m}, drop=True) for m in ds.method.values}
    if "region_time_extrap" in ds and np.isfinite(ds.region_time_extrap.values).any():
        preds["extrap"] = ds.region_time_extrap
    rows = {}
    for label, mask in (("held out, inside the training range", inside),
                        ("held out, beyond the training range", beyond)):
        for app in [*map(str, ds.app.values), "all"]:
            regions = ds.region_app.values == app if app != "all" else np.ones(ds.sizes["region"], bool)
            m = mask.sel(app=ds.region_app).drop_vars("app", errors="ignore").values & regions[:, None]
            m &= np.isfinite(meas.values)
            for v in preds.values():  # every column over the same region-size pairs
                m &= np.isfinite(v.values)
            row = {k: float(np.mean(np.abs(v.values[m] / meas.values[m] - 1))) if m.any() else np.nan
                   for k, v in preds.items()}
            rows[(label, app)] = {**row, "n": int(m.sum())}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.names = ["points", "app"]
    return table


def region_error_variables(ds: xr.Dataset, inside: xr.DataArray, beyond: xr.DataArray) -> dict[str, tuple]:
    """The ``"all"`` rows of :func:`region_errors` as dataset variables: ``region_heldout_error`` over
    (``range``: inside, beyond; ``region_model``: each method, and ``extrap``, NaN where it did not run) and
    ``region_heldout_pairs`` (``range``)."""
    table = region_errors(ds, inside, beyond)
    if "extrap" not in table:  # the column is there (NaN) where Extra-P did not run, so readers can name it
        table.insert(len(table.columns) - 1, "extrap", np.nan)
    cols = [c for c in table.columns if c != "n"]
    rows = [table.loc[(f"held out, {r} the training range", "all")] for r in ("inside", "beyond")]
    return {"region_heldout_error": (("range", "region_model"), np.array([[row[c] for c in cols] for row in rows]),
                                     {"units": "1", "long_name": "mean |predicted / measured - 1| of the regions' "
                                      "1-rank call times on the held-out sizes (the same region-size pairs for "
                                      "every model)"}),
            "region_heldout_pairs": ("range", np.array([int(row["n"]) for row in rows]),
                                     {"units": "1", "long_name": "region-size pairs scored"}),
            "range": ("range", ["inside", "beyond"], {"units": "1", "long_name": "held-out sizes inside or beyond "
                                                                                "the training range"}),
            "region_model": ("region_model", cols, {"units": "1", "long_name": "a method's models, or Extra-P's"})}
