"""Extra-P's experiment files in, Extra-P-style model expressions out.

Formats read (as Extra-P 4.2 defines them; its test inputs are the examples):

* **text** (``.txt``): ``PARAMETER name`` lines (several names may share a line), ``POINTS``
  lines (``( 20 1 ) ( 30 1 )`` or, with one parameter, ``20 30 40``), then per ``REGION`` and
  ``METRIC`` one ``DATA v1 v2 ...`` line (the repetitions) per point, in ``POINTS`` order;
  ``#`` starts a comment;
* **JSON Lines** (``.jsonl``): one ``{"params": {...}, "value": v, "callpath": ..., "metric": ...}``
  per measurement (callpath and metric optional);
* **JSON** (``.json``): ``{"parameters": [...], "measurements": {callpath: {metric: [{"point": [...],
  "values": [...]}]}}}``, or Extra-P 3's legacy layout with ``callpaths``, ``coordinates`` and
  ``measurements`` lists keyed by ids.

Score-P Cube profile directories are not read: the PyPI reader ``pycubexr`` (which Extra-P uses)
reads ``.cubex`` files, and Extra-P's directory layout (one ``<params>.r<rep>`` folder per run) is
a naming convention on top; a user can read each ``.cubex`` with pycubexr and build the tidy frame.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .errors import ComputeModelError
from .pool import Term

__all__ = ["ExtrapFormatError", "read_extrap", "write_extrap_text", "model_expression", "prediction_table"]

_DEFAULT_CALLPATH = "<root>"
_DEFAULT_METRIC = "<default>"


class ExtrapFormatError(ComputeModelError, ValueError):
    """An Extra-P experiment file that cannot be read (names the file and line)."""


def _tidy(rows: list[tuple], parameters: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=[*parameters, "callpath", "metric", "value", "repetition"])
    for p in parameters:
        frame[p] = frame[p].astype(float)
    frame["value"] = frame["value"].astype(float)
    frame["repetition"] = frame["repetition"].astype(int)
    return frame


def _read_text(path: Path) -> pd.DataFrame:
    parameters: list[str] = []
    points: list[tuple[float, ...]] = []
    callpath, metric, k = _DEFAULT_CALLPATH, _DEFAULT_METRIC, 0
    rows: list[tuple] = []
    for ln, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        field, _, value = line.partition(" ")
        value = re.sub(r"\s+", " ", value.strip())
        where = f"{path}:{ln}"
        try:
            if field == "PARAMETER":
                parameters += value.split(" ")
            elif field == "POINTS":
                if not parameters:
                    raise ExtrapFormatError(f"{where}: POINTS before any PARAMETER")
                if "(" in value:
                    groups = re.findall(r"\(([^)]*)\)", value)
                    pts = [tuple(float(v) for v in g.split()) for g in groups]
                else:
                    pts = [(float(v),) for v in value.split(" ")] if len(parameters) == 1 else \
                        [tuple(float(v) for v in value.split(" "))]
                for p in pts:
                    if len(p) != len(parameters):
                        raise ExtrapFormatError(f"{where}: point {p} has {len(p)} value(s) for "
                                                f"{len(parameters)} parameter(s) {parameters}")
                points += pts
            elif field == "REGION":
                callpath, k = value, 0
            elif field == "METRIC":
                metric, k = value, 0
            elif field == "DATA":
                if k >= len(points):
                    raise ExtrapFormatError(f"{where}: DATA line {k + 1} of {callpath!r}/{metric!r} but only "
                                            f"{len(points)} POINTS")
                for r, v in enumerate(value.split(" ")):
                    rows.append((*points[k], callpath, metric, float(v), r))
                k += 1
            else:
                raise ExtrapFormatError(f"{where}: unknown field {field!r} (expected PARAMETER, POINTS, REGION, "
                                        "METRIC or DATA)")
        except ValueError as exc:
            if isinstance(exc, ExtrapFormatError):
                raise
            raise ExtrapFormatError(f"{where}: not a number in {line!r} ({exc})") from None
    if not parameters:
        raise ExtrapFormatError(f"{path}: no PARAMETER line")
    if not rows:
        raise ExtrapFormatError(f"{path}: no DATA line")
    return _tidy(rows, parameters)


def _read_jsonl(path: Path) -> pd.DataFrame:
    parameters: list[str] | None = None
    rows: list[tuple] = []
    count: dict[tuple, int] = {}
    for ln, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ExtrapFormatError(f"{path}:{ln}: not JSON ({exc.msg})") from None
        try:
            params = obj["params"]
            if parameters is None:
                parameters = list(params)
            point = tuple(float(params[p]) for p in parameters)
            value = float(obj["value"])
        except KeyError as exc:
            raise ExtrapFormatError(f"{path}:{ln}: missing field {exc.args[0]!r}") from None
        except (TypeError, ValueError):
            raise ExtrapFormatError(f"{path}:{ln}: a parameter value or the value is not a number") from None
        key = (point, str(obj.get("callpath", _DEFAULT_CALLPATH)), str(obj.get("metric", _DEFAULT_METRIC)))
        rep = count.get(key, 0)
        count[key] = rep + 1
        rows.append((*point, key[1], key[2], value, rep))
    if parameters is None:
        raise ExtrapFormatError(f"{path}: no measurement")
    return _tidy(rows, parameters)


def _read_json(path: Path, data: Any) -> pd.DataFrame:
    rows: list[tuple] = []
    try:
        if "callpaths" not in data:  # Extra-P 4's layout
            parameters = [str(p) for p in data["parameters"]]
            for callpath, metrics in data["measurements"].items():
                for metric, ms in metrics.items():
                    for m in ms:
                        point = tuple(float(v) for v in m["point"])
                        if len(point) != len(parameters):
                            raise ExtrapFormatError(f"{path}: point {list(point)} of {callpath!r} has "
                                                    f"{len(point)} value(s) for parameters {parameters}")
                        values = m["values"] if isinstance(m["values"], list) else [m["values"]]
                        rows += [(*point, callpath, metric, float(v), r) for r, v in enumerate(values)]
            return _tidy(rows, parameters)
        # Extra-P 3's legacy layout: lists with 1-based ids
        params = sorted(data["parameters"], key=lambda p: p["id"])
        parameters = [p["name"] for p in params]
        pid = {p["id"]: k for k, p in enumerate(params)}
        callpaths = {c["id"]: c["name"] for c in data["callpaths"]}
        metrics = {m["id"]: m["name"] for m in data["metrics"]}
        coords = {}
        for c in data["coordinates"]:
            point = [np.nan] * len(parameters)
            for pv in c["parameter_value_pairs"]:
                point[pid[pv["parameter_id"]]] = float(pv["parameter_value"])
            coords[c["id"]] = tuple(point)
        count: dict[tuple, int] = {}
        for m in data["measurements"]:
            key = (m["coordinate_id"], m["callpath_id"], m["metric_id"])
            rep = count.get(key, 0)
            count[key] = rep + 1
            rows.append((*coords[key[0]], callpaths[key[1]], metrics[key[2]], float(m["value"]), rep))
        return _tidy(rows, parameters)
    except KeyError as exc:
        raise ExtrapFormatError(f"{path}: missing key or id {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ExtrapFormatError):
            raise
        raise ExtrapFormatError(f"{path}: malformed value ({exc})") from None


def read_extrap(path: str | Path, format: str | None = None) -> pd.DataFrame:
    """Read an Extra-P experiment file into a tidy frame that ``fit_compute_model`` takes.

    Parameters
    ----------
    path : str or Path
        Text (``.txt``), JSON (``.json``) or JSON Lines (``.jsonl``) experiment.
    format : {"text", "json", "jsonl"}, optional
        Overrides the guess from the suffix (and, for JSON, from the content).

    Returns
    -------
    DataFrame
        One column per parameter (float), ``callpath``, ``metric``, ``value`` (float) and
        ``repetition`` (0, 1, ... within a point, callpath and metric); one row per measured value.
        Select one callpath and metric and fit, e.g.
        ``fit_compute_model(frame.query("callpath == 'sweep'"), "value", ["p", "n"])``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no Extra-P experiment file {path}")
    fmt = format or {".txt": "text", ".jsonl": "jsonl", ".json": "json"}.get(path.suffix.lower())
    if fmt == "text":
        return _read_text(path)
    if fmt == "jsonl":
        return _read_jsonl(path)
    if fmt == "json":
        text = path.read_text()
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            lines = [ln for ln in text.splitlines() if ln.strip()]
            if lines and all(ln.lstrip().startswith("{") for ln in lines):
                return _read_jsonl(path)  # Extra-P accepts JSON Lines under .json too
            raise ExtrapFormatError(f"{path}: neither JSON nor JSON Lines") from None
        return _read_json(path, data)
    raise ExtrapFormatError(f"{path}: unknown format {fmt or path.suffix!r}; pass format='text', 'json' or 'jsonl'")


def write_extrap_text(frame: pd.DataFrame, path: str | Path, parameters: Sequence[str], value: str = "value",
                      callpath: str = "callpath", metric: str = "metric") -> Path:
    """Write a tidy frame as an Extra-P text experiment (every callpath/metric must have every point).

    Rows of one point, callpath and metric are its repetitions, in frame order.  Missing
    ``callpath``/``metric`` columns give one region ``<root>`` and metric ``<default>``.
    """
    frame = frame.copy()
    if callpath not in frame:
        frame[callpath] = _DEFAULT_CALLPATH
    if metric not in frame:
        frame[metric] = _DEFAULT_METRIC
    params = list(parameters)
    points = sorted({tuple(float(v) for v in r) for r in frame[params].to_numpy(dtype=float)})
    lines = [f"PARAMETER {p}" for p in params] + [""]
    lines += ["POINTS " + " ".join("( " + " ".join(repr(v) for v in p) + " )" for p in points), ""]
    for (cp, mt), grp in frame.groupby([callpath, metric], sort=False):
        lines += [f"REGION {cp}", f"METRIC {mt}"]
        by_point = {tuple(float(v) for v in (k if isinstance(k, tuple) else (k,))): g[value].to_numpy(dtype=float)
                    for k, g in grp.groupby(params, sort=False)}
        for p in points:
            if p not in by_point:
                raise ValueError(f"{cp!r}/{mt!r} has no value at point {dict(zip(params, p, strict=True))}")
            lines.append("DATA " + " ".join(repr(float(v)) for v in by_point[p]))
        lines.append("")
    out = Path(path)
    out.write_text("\n".join(lines))
    return out


# --------------------------------------------------------------------------- expressions
def _exp_str(e: float, latex: bool) -> str:
    frac = Fraction(e).limit_denominator(12)
    if frac.denominator == 1:
        return (f"{{{frac.numerator}}}" if latex and frac < 0 else str(frac.numerator))
    return f"{{{frac}}}" if latex else f"({frac})"


def _term_factors(term: Term, names: Sequence[str]) -> list[tuple[str, float, int]]:
    return [(names[i], *term.order(i)) for i in range(len(names)) if term.order(i) != (0.0, 0)]


def model_expression(model: Any, style: str = "python", precision: int = 6, cluster: int = 0) -> str:
    """Extra-P-style expression of a fitted compute model (one cluster).

    ``style="python"`` gives e.g. ``3.1 + 2.0 * p**(7/4) * log2(p) * n**(11/4)``
    (Extra-P's ``to_string`` with ``**`` for powers); ``style="latex"`` gives
    ``3.1 + 2.0 \\cdot p^{7/4} \\log_2^{1}(p) \\cdot n^{11/4}``.  Terms read the
    absolute value of their inputs; the expression is written for positive inputs.
    """
    if style not in ("python", "latex"):
        raise ValueError(f"style must be 'python' or 'latex', not {style!r}")
    latex = style == "latex"
    c = model.clusters[cluster]
    names = model.input_names()
    parts = []
    for term, coef in zip(c.terms, np.asarray(c.coef, dtype=float), strict=True):
        if term.kind in ("product", "quotient"):
            factors = [names[term.i], names[term.j]]
            body = (" \\cdot " if latex else " * ").join(factors) if term.kind == "product" else \
                (f"\\frac{{{names[term.i]}}}{{{names[term.j]}}}" if latex else f"{names[term.i]} / {names[term.j]}")
            items = [body]
        else:
            items = []
            for nm, e, lp in _term_factors(term, names):
                if e != 0:
                    items.append(f"{nm}^{_exp_str(e, True)}" if latex else f"{nm}**{_exp_str(e, False)}")
                if lp:
                    items.append((f"\\log_2^{{{lp}}}({nm})" if lp != 1 else f"\\log_2({nm})") if latex else
                                 (f"log2({nm})**{lp}" if lp != 1 else f"log2({nm})"))
        coef_s = f"{coef:.{precision}g}"
        parts.append(coef_s if not items else coef_s + (" \\cdot " if latex else " * ") +
                     (" \\cdot " if latex else " * ").join(items))
    text = " + ".join(parts) if parts else "0"
    return text.replace("+ -", "- ")


def prediction_table(model: Any, points: Any, quantity: str | None = None, level: float = 0.95,
                     interval: str = "confidence") -> xr.Dataset:
    """Predictions as a dataset with ``<q>_predicted``, ``<q>_lower``, ``<q>_upper`` and ``<q>_extrapolated``.

    ``q`` is ``quantity`` (default: the model's target).  The interval is the model's own
    (``predict(interval=..., level=...)``).
    """
    q = quantity or model.target
    ds = model.predict(points, interval=interval, level=level)
    out = xr.Dataset(coords=ds.coords)
    for src, dst in (("predicted", "predicted"), ("lower", "lower"), ("upper", "upper"),
                     ("extrapolated", "extrapolated")):
        if src in ds:
            out[f"{q}_{dst}"] = ds[src]
    out.attrs.update(ds.attrs)
    out.attrs["expression"] = model_expression(model) if len(model.clusters) == 1 else ""
    return out
