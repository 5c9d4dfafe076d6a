"""Evaluating a region's model for one call of a skeleton (paper 004 §V, Figure 4c).

A skeleton asks for one prediction at a time.  The compute models'
``predict`` returns an xarray Dataset, which costs milliseconds per call;
:func:`fast_value` evaluates the same expression without it where the model
has the structure of :mod:`perfmod.models.compute` (term inputs and a cluster
per row, ``_inputs``; clusters that evaluate, ``clusters``).  Intervals go
through ``predict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["SkeletonError", "evaluate_model", "fast_value"]


class SkeletonError(RuntimeError):
    """A skeleton cannot model a call: no model for the region, or a parameter it needs is unknown."""


def evaluate_model(model: Any, name: str, params: Mapping[str, Any], interval: str | None,
              level: float) -> tuple[float, float, float]:
    """Predicted seconds (and interval bounds) of ``model`` at ``params``."""
    if isinstance(model, int | float | np.floating | np.integer):
        v = float(model)
        return v, v, v
    if hasattr(model, "predict") and hasattr(model, "parameters"):
        values = {}
        for p in model.parameters:
            v = params.get(p)
            if v is None or not np.isfinite(float(v)):
                raise SkeletonError(f"region {name!r}: the model needs parameter {p!r}, the call gives "
                                    f"{v!r} (parameters of the call: {sorted(params)})")
            values[p] = [float(v)]
        frame = pd.DataFrame(values)
        if interval is None:
            v = fast_value(model, frame)
            return v, v, v
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


def fast_value(model: Any, frame: pd.DataFrame) -> float:
    """One prediction without building the result dataset.

    The compute models of :mod:`perfmod.models.compute` map a frame to term inputs and a
    cluster (``_inputs``) and evaluate the cluster's expression; their ``predict`` then wraps
    the value in an xarray Dataset, which costs milliseconds per call.  Models without
    that structure go through ``predict``.
    """
    inputs = getattr(model, "_inputs", None)
    clusters = getattr(model, "clusters", None)
    if inputs is None or clusters is None:
        return float(model.predict(frame).predicted.values[0])
    X, cl, _ = inputs(frame, strict=False)
    value = clusters[int(cl[0])].evaluate(X[:1])
    post = getattr(model, "_postprocess", None)
    return float((post(value) if post is not None else value)[0])
