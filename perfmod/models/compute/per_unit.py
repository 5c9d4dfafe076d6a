"""A region's time as its work times a fitted cost per unit of work: ``t = w * g(x)``.

The loop model (paper 004 §VI, SST/macro's ``compute_loops``) says a region's time is its trip
count times a constant.  Fitting the *cost per trip* ``t / w`` instead of ``t`` with a searched
model (perfmod mode's normal form) keeps that as the simplest hypothesis (``g`` constant) and
lets the data add what the loop model lacks (a call overhead as ``c / w``, a per-trip cost that
grows when the working set leaves a cache, contention between ranks); a search of ``t`` itself
starts from a constant instead, so on noisy data its parsimony prefers shapes that bend away from
proportional outside the measured range.  Relative errors are the same in both forms
(``t / w`` and ``t`` differ by a known positive factor per point), so the search scores the same
residuals; only the hypotheses and what "fewer terms" means change.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ._protocol import as_frame
from .errors import MissingParameterError
from .synth import fit_compute_model

__all__ = ["PerUnitModel", "fit_per_unit"]


class PerUnitModel:
    """``unit`` times a fitted model of the cost per unit; everything but the predictions is the inner model's.

    Attributes
    ----------
    model : TermModel
        Fitted model of ``target / unit`` (e.g. seconds per atom).
    unit : str
        Parameter that counts the work (e.g. ``natoms``); must be one of ``model.parameters``.
    """

    def __init__(self, model: Any, unit: str) -> None:
        if unit not in model.parameters:
            raise MissingParameterError(f"the work parameter {unit!r} is not among the model's parameters "
                                        f"{model.parameters}")
        self.model = model
        self.unit = unit

    def __getattr__(self, name: str) -> Any:
        if name == "model":  # not yet set (copy): no recursion
            raise AttributeError(name)
        return getattr(self.model, name)

    def predict(self, x: Any, interval: str | None = None, level: float = 0.95, strict: bool = True) -> xr.Dataset:
        """The inner prediction (and interval bounds) per unit, times each row's ``unit``."""
        frame = as_frame(x)
        if self.unit not in frame:
            raise MissingParameterError(f"prediction table lacks the work parameter {self.unit!r}")
        ds = self.model.predict(frame, interval=interval, level=level, strict=strict)
        work = frame[self.unit].to_numpy(dtype=float).reshape(ds["predicted"].shape)
        for v in ("predicted", "lower", "upper"):
            if v in ds:
                ds[v] = (ds[v].dims, ds[v].values * work, ds[v].attrs)
        return ds

    def predict_one(self, /, **params: float) -> float:
        """The inner ``predict_one`` times ``params[unit]``."""
        return float(self.model.predict_one(**params)) * float(params[self.unit])

    def __repr__(self) -> str:
        return f"<PerUnitModel: {self.unit} x {self.model!r}>"


def fit_per_unit(data: Any, target: str, parameters: list[str], unit: str, method: str = "perfmod",
                 **options: Any) -> PerUnitModel:
    """Fit ``target / unit`` by :func:`~perfmod.models.compute.fit_compute_model` and wrap it (module docstring).

    Raises
    ------
    ValueError
        When ``unit`` has a value at or below 0 (a cost per unit needs positive work).
    """
    frame = as_frame(data)
    if unit not in parameters:
        raise MissingParameterError(f"the work parameter {unit!r} is not among the parameters {list(parameters)}")
    work = frame[unit].to_numpy(dtype=float)
    if not np.all(work > 0):
        raise ValueError(f"work parameter {unit!r} has {int(np.sum(~(work > 0)))} value(s) at or below 0")
    per = pd.DataFrame(frame[list(parameters)])
    per[target] = frame[target].to_numpy(dtype=float) / work
    return PerUnitModel(fit_compute_model(per, target, list(parameters), method=method, **options), unit)
