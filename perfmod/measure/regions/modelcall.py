"""Evaluating a region's model for one call of a skeleton (paper 004 §V, Figure 4c).

A skeleton asks for one prediction at a time.  A model's ``predict`` takes a
table and returns an xarray Dataset, which costs about a millisecond per
call; where the model has ``predict_one(**params) -> float`` (the compute
models of :mod:`perfmod.models.compute`), the skeleton calls that instead.
Intervals go through ``predict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["SkeletonError", "evaluate_model"]


class SkeletonError(RuntimeError):
    """A skeleton cannot model a call: no model for the region, or a parameter it needs is unknown."""


def evaluate_model(model: Any, name: str, params: Mapping[str, Any], interval: str | None,
              level: float) -> tuple[float, float, float]:
    """Predicted seconds (and interval bounds) of ``model`` at ``params``."""
    if isinstance(model, int | float | np.floating | np.integer):
        v = float(model)
        return v, v, v
    if hasattr(model, "predict") and hasattr(model, "parameters"):
        import pandas as pd

        values = {}
        for p in model.parameters:
            v = params.get(p)
            if v is None or not np.isfinite(float(v)):
                raise SkeletonError(f"region {name!r}: the model needs parameter {p!r}, the call gives "
                                    f"{v!r} (parameters of the call: {sorted(params)})")
            values[p] = float(v)
        if interval is None:
            one = getattr(model, "predict_one", None)
            v = float(one(**values)) if one is not None else float(
                model.predict(pd.DataFrame({k: [x] for k, x in values.items()})).predicted.values[0])
            return v, v, v
        frame = pd.DataFrame({k: [x] for k, x in values.items()})
        try:
            ds = model.predict(frame, interval=interval, level=level)
        except ValueError:  # no residual variance (e.g. a model read from an Eiger file)
            v = float(model.predict(frame).predicted.values[0])
            return v, v, v
        return float(ds.predicted.values[0]), float(ds.lower.values[0]), float(ds.upper.values[0])
    if callable(model):
        v = float(model(dict(params)))
        return v, v, v
    raise SkeletonError(f"region {name!r}: cannot evaluate a model of type {type(model).__name__}")
