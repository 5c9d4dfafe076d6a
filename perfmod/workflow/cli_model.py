"""``perfmod model``: a compute model of an Extra-P experiment and its predictions beyond the measured points.

The experiment is read with :func:`~perfmod.models.compute.read_extrap` (Extra-P's text, JSON or JSON
Lines files); each callpath and metric is fitted with
:func:`~perfmod.models.compute.fit_compute_model` and predicted, with its 95 % interval, at the points
``--at`` names (default: 2, 4 and 8 times the largest measured value of every parameter the data vary,
where the ``modeling_benchmark`` study judges extrapolation; a parameter they hold fixed keeps its value).
``--extrap`` fits Extra-P itself on the same data, over the parameters they vary
(:class:`~perfmod.models.compute.extrap_runner.ExtrapModeler`, in its own Python), and prints its model
and predictions beside perfmod's.
"""

from __future__ import annotations

import argparse
import contextlib
import warnings
from typing import Any

__all__ = ["add_model", "parse_points"]

#: multiples of the largest measured value of every parameter predicted at when no ``--at`` is given
SCALES = (2, 4, 8)


def parse_points(items: list[str], names: list[str]) -> list[dict[str, float]]:
    """``--at`` values (``NAME=VALUE[,NAME=VALUE...]``, every parameter named) as points."""
    points = []
    for item in items:
        point: dict[str, float] = {}
        for part in item.split(","):
            name, sep, value = part.partition("=")
            name = name.strip()
            try:
                v = float(value)
            except ValueError:
                sep = ""
            if not sep or not name:
                raise ValueError(f"--at {item!r}: give NAME=VALUE pairs separated by commas, e.g. --at p=512,n=64")
            if name not in names:
                raise ValueError(f"--at {item!r}: no parameter {name!r} in the experiment; its parameters: "
                                 + ", ".join(names))
            point[name] = v
        missing = [n for n in names if n not in point]
        if missing:
            raise ValueError(f"--at {item!r}: give every parameter a value; missing: {', '.join(missing)}")
        points.append(point)
    return points


def _cmd_model(args: argparse.Namespace) -> int:
    import numpy as np
    import pandas as pd

    from perfmod.core.extrapolation import ExtrapolationWarning
    from perfmod.models.compute import fit_compute_model, model_expression, read_extrap
    from perfmod.models.compute.extrap_runner import ExtrapModeler

    frame = read_extrap(args.experiment)
    names = [c for c in frame.columns if c not in ("callpath", "metric", "value", "repetition")]
    for col, wanted in (("callpath", args.callpath), ("metric", args.metric)):
        if wanted is not None:
            if wanted not in set(frame[col]):
                raise ValueError(f"{args.experiment}: no {col} {wanted!r}; it has: "
                                 + ", ".join(sorted(map(str, set(frame[col])))))
            frame = frame[frame[col] == wanted]
    # default: the parameters the data vary scaled, those they hold fixed kept
    points = parse_points(args.at, names) if args.at else \
        [{n: float(frame[n].max()) * (s if frame[n].nunique() > 1 else 1) for n in names} for s in SCALES]
    query = pd.DataFrame(points, columns=names)
    rows = []
    with ExtrapModeler() if args.extrap else contextlib.nullcontext() as extrap:
        for (cp, mt), grp in frame.groupby(["callpath", "metric"], sort=False):
            sub = grp[[*names, "value"]]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ExtrapolationWarning)  # --at beyond the data is the point here
                model = fit_compute_model(sub, "value", names, method=args.method)
                pred = model.predict(query, interval="confidence", level=0.95)
            lower = pred["lower"].to_numpy() if "lower" in pred else np.full(len(query), np.nan)
            upper = pred["upper"].to_numpy() if "upper" in pred else np.full(len(query), np.nan)
            print(f"{cp} / {mt}: {len(sub)} values at {len(sub[names].drop_duplicates())} points")
            print(f"  perfmod ({args.method}): {model_expression(model)}")
            fit = None
            varying = [n for n in names if sub[n].nunique() > 1]  # Extra-P finds no term in a fixed parameter
            if extrap is not None and varying:
                fit = extrap.fit(sub[[*varying, "value"]], varying, query[varying].to_numpy(), value="value")
                print(f"  Extra-P {extrap.version}: {fit.function}")
            for j, point in enumerate(points):
                row = {"callpath": cp, "metric": mt, **point, "predicted": float(pred["predicted"][j]),
                       "lower": float(lower[j]), "upper": float(upper[j]),
                       "extrapolated": bool(pred["extrapolated"][j])}
                at = ", ".join(f"{k}={v:g}" for k, v in point.items())
                line = f"  at {at}: perfmod {row['predicted']:.6g} [{row['lower']:.6g}, {row['upper']:.6g}]"
                if fit is not None:
                    row["extrap"] = float(fit.predicted[j])
                    line += f", Extra-P {row['extrap']:.6g}"
                print(line + (" (beyond the measured range)" if row["extrapolated"] else ""))
                rows.append(row)
    if args.output:
        pd.DataFrame(rows).to_csv(args.output, index=False)
        print(f"wrote {args.output}")
    return 0


def add_model(sub: Any) -> None:
    """Register ``perfmod model`` on the command's subparsers."""
    m = sub.add_parser("model", help="fit compute models to an Extra-P experiment and predict beyond it",
                       description="Fit a compute model to each callpath and metric of an Extra-P experiment "
                                   "(text, JSON or JSON Lines) and predict, with its 95 % interval, at larger "
                                   "points; --extrap puts Extra-P's own model beside it.")
    m.add_argument("experiment", help="Extra-P experiment file (.txt, .json, .jsonl)")
    m.add_argument("--at", action="append", default=[], metavar="NAME=VALUE[,NAME=VALUE...]",
                   help="a point to predict at, every parameter named (repeat the option for more; default: 2, 4 "
                        "and 8 times the largest measured value of every parameter the data vary)")
    m.add_argument("--method", default="perfmod", choices=("perfmod", "eiger"),
                   help="perfmod mode (Extra-P's normal form, cross-validated; default) or Eiger mode")
    m.add_argument("--extrap", action="store_true",
                   help="also fit Extra-P itself, in its own Python (make extrap-env, or $PERFMOD_EXTRAP_PYTHON)")
    m.add_argument("--callpath", help="only this callpath")
    m.add_argument("--metric", help="only this metric")
    m.add_argument("-o", "--output", help="write the predictions as CSV")
    m.set_defaults(func=_cmd_model)
