"""Eiger's model files, text ("bespoke") and JSON (paper 004 §IV, §V step 6).

Text layout, one item per line, as ``Eiger.py`` writes it (``writeToFile``)::

    <number of metrics p>
    <metric name>            (p lines, in the order of the rotation's rows)
    [q](m_0,m_1,...)         means of the rotated metrics
    [q](s_0,s_1,...)         their standard deviations
    [p,q]((r_00,r_01,...),(r_10,...),...)   rotation matrix, row by row
    Model 0                  then, for each cluster:
    [q](c_0,c_1,...)         k-means centre (standardized rotated space)
    [m](w_0, w_1, ...)       weights (Python list repr, ", "-separated)
    <encoded function>       (m lines, see :mod:`.pool`)

The JSON form has keys ``metric_names``, ``means``, ``std_devs``,
``rotation_matrix`` and ``clusters`` (each with ``center`` and
``regressors``: ``{"function": ..., <indices>, "weight": w}``).  A file whose
first character is ``{`` is JSON (Eiger's ``readFile`` rule).

Eiger's JSON reader refits a k-means object on the centres, which may reorder
them relative to the expressions; here each centre stays with its own expression.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np

from perfmod.core.io import write_text_atomic

from ._protocol import ClusterFit
from .eiger import EigerModel, EigerOptions
from .errors import EigerModelFileError
from .pool import Term

__all__ = ["read_eiger_model", "write_eiger_model", "format_eiger_text", "format_eiger_json"]

_ARRAY = re.compile(r"^\[\s*(\d+)\s*(?:,\s*(\d+)\s*)?\]\s*\((.*)\)\s*$")


def _num(x: float) -> str:
    return repr(float(x))


def _parse_array(text: str, path: str, line: int, what: str) -> np.ndarray:
    m = _ARRAY.match(text.strip())
    if not m:
        raise EigerModelFileError(path, line, f"expected {what} as '[n](v0,v1,...)', got {text.strip()[:60]!r}")
    shape = (int(m.group(1)),) if m.group(2) is None else (int(m.group(1)), int(m.group(2)))
    tokens = [t.strip() for t in m.group(3).replace("(", " ").replace(")", " ").split(",")]
    tokens = [t for t in tokens if t]
    try:
        vals = np.array([float(t) for t in tokens], dtype=float)
    except ValueError as exc:
        raise EigerModelFileError(path, line, f"{what}: {exc}") from None
    if vals.size != int(np.prod(shape)):
        raise EigerModelFileError(path, line, f"{what}: header says {list(shape)} but {vals.size} values follow")
    return vals.reshape(shape)


def _check_model(path: str, names: list[str], means, stdevs, rotation, centers, clusters, line_of) -> None:
    p = len(names)
    if rotation.ndim == 1:
        rotation.shape = (p, -1) if p else rotation.shape
    if rotation.shape[0] != p:
        raise EigerModelFileError(path, line_of("rotation"), f"rotation matrix has {rotation.shape[0]} rows, "
                                  f"the file names {p} metrics")
    q = rotation.shape[1]
    for what, arr in (("means", means), ("std_devs", stdevs)):
        if arr.size != q:
            raise EigerModelFileError(path, line_of(what), f"{what} has {arr.size} values, the rotation {q} columns")
    if not clusters:
        raise EigerModelFileError(path, line_of("end"), "no 'Model' section (cluster) in the file")
    for k, (c, terms) in enumerate(zip(centers, clusters, strict=True)):
        if np.asarray(c).size != q:
            raise EigerModelFileError(path, line_of(("center", k)), f"centre of cluster {k} has {np.asarray(c).size} "
                                      f"values, the rotation {q} columns")
        for t in terms:
            if t.max_index >= q:
                raise EigerModelFileError(path, line_of(("term", k)), f"function {t.encode()!r} of cluster {k} "
                                          f"reads component {t.max_index}, the model has {q}")


def _read_text(path: str, text: str) -> EigerModel:
    lines = text.splitlines()
    pos = 0

    def nxt(what: str) -> tuple[int, str]:
        nonlocal pos
        if pos >= len(lines):
            raise EigerModelFileError(path, pos + 1, f"file ends where {what} was expected")
        pos += 1
        return pos, lines[pos - 1]

    ln, first = nxt("the number of metrics")
    try:
        p = int(first.strip())
    except ValueError:
        raise EigerModelFileError(path, ln, f"expected the number of metrics, got {first.strip()[:60]!r}") from None
    names = [nxt(f"metric name {i + 1} of {p}")[1].strip() for i in range(p)]
    where = {}
    ln, s = nxt("the means")
    means, where["means"] = _parse_array(s, path, ln, "means"), ln
    ln, s = nxt("the standard deviations")
    stdevs, where["std_devs"] = _parse_array(s, path, ln, "standard deviations"), ln
    ln, s = nxt("the rotation matrix")
    rotation, where["rotation"] = _parse_array(s, path, ln, "rotation matrix"), ln
    centers, clusters, weights = [], [], []
    while pos < len(lines):
        if not lines[pos].strip():
            pos += 1
            continue
        ln, s = nxt("'Model <k>'")
        if not s.strip().startswith("Model"):
            raise EigerModelFileError(path, ln, f"expected 'Model {len(clusters)}', got {s.strip()[:60]!r}")
        k = len(clusters)
        ln, s = nxt(f"the centre of cluster {k}")
        centers.append(_parse_array(s, path, ln, f"centre of cluster {k}"))
        where[("center", k)] = ln
        ln, s = nxt(f"the weights of cluster {k}")
        w = np.atleast_1d(_parse_array(s, path, ln, f"weights of cluster {k}"))
        terms = []
        for i in range(w.size):
            ln, s = nxt(f"function {i + 1} of {w.size} of cluster {k}")
            try:
                terms.append(Term.decode(s))
            except ValueError as exc:
                raise EigerModelFileError(path, ln, f"cluster {k}: {exc}") from None
            where.setdefault(("term", k), ln)
        clusters.append(terms)
        weights.append(w)
    where["end"] = len(lines)
    _check_model(path, names, means, stdevs, rotation, centers, clusters, lambda key: where.get(key, 1))
    fits = [ClusterFit(t, w) for t, w in zip(clusters, weights, strict=True)]
    return EigerModel(names, means, stdevs, rotation.reshape(p, -1), np.vstack(centers), fits, options=EigerOptions())


def _line_of(text: str, token: str, occurrence: int = 0) -> int:
    idx = -1
    for _ in range(occurrence + 1):
        idx = text.find(token, idx + 1)
        if idx < 0:
            return 1
    return text.count("\n", 0, idx) + 1


def _read_json(path: str, text: str) -> EigerModel:
    try:
        root = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EigerModelFileError(path, exc.lineno, f"invalid JSON: {exc.msg}") from None
    try:
        names = [str(n) for n in root["metric_names"]]
        means = np.atleast_1d(np.asarray(root["means"], dtype=float))
        stdevs = np.atleast_1d(np.asarray(root["std_devs"], dtype=float))
        rotation = np.asarray(root["rotation_matrix"], dtype=float)
        raw = root["clusters"]
    except KeyError as exc:
        raise EigerModelFileError(path, 1, f"JSON model lacks key {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise EigerModelFileError(path, 1, f"JSON model has a malformed array: {exc}") from None
    centers, clusters, fits = [], [], []
    for k, cl in enumerate(raw):
        try:
            centers.append(np.atleast_1d(np.asarray(cl["center"], dtype=float)))
            regs = cl["regressors"]
            terms = [Term.from_json(r) for r in regs]
            w = np.array([float(r["weight"]) for r in regs])
        except (KeyError, ValueError, TypeError) as exc:
            line = _line_of(text, '"regressors"', k)
            raise EigerModelFileError(path, line, f"cluster {k}: {exc}") from None
        clusters.append(terms)
        fits.append(ClusterFit(terms, w))
    where = {"rotation": _line_of(text, '"rotation_matrix"'), "means": _line_of(text, '"means"'),
             "std_devs": _line_of(text, '"std_devs"'), "end": _line_of(text, '"clusters"')}
    for k in range(len(raw)):
        where[("center", k)] = _line_of(text, '"center"', k)
        where[("term", k)] = _line_of(text, '"regressors"', k)
    _check_model(path, names, means, stdevs, rotation, centers, clusters, lambda key: where.get(key, 1))
    return EigerModel(names, means, stdevs, rotation.reshape(len(names), -1), np.vstack(centers), fits,
                      options=EigerOptions())


def read_eiger_model(path: str | os.PathLike[str], target: str = "time", units: str = "s") -> EigerModel:
    """Read a model file written by Eiger (text or JSON) or by :func:`write_eiger_model`.

    Parameters
    ----------
    path : path-like
        The model file.
    target, units : str
        Name and units of the predicted metric (the file does not record them).

    Returns
    -------
    EigerModel
        ``predict(df)`` takes a DataFrame whose columns are the model's metric names.

    Raises
    ------
    EigerModelFileError
        When the file does not parse; the message starts with ``path:line:``.
    """
    path = str(path)
    text = Path(path).read_text()
    if not text.strip():
        raise EigerModelFileError(path, 1, "empty model file")
    model = _read_json(path, text) if text.lstrip()[0] == "{" else _read_text(path, text)
    model.target = target
    model.units = units
    return model


def format_eiger_text(model: EigerModel) -> str:
    """Eiger's text model file for ``model`` (numbers as Python's shortest round-trip repr)."""
    out = [str(len(model.parameters)), *model.parameters]
    out.append(f"[{model.means.size}]({','.join(_num(v) for v in model.means)})")
    out.append(f"[{model.stdevs.size}]({','.join(_num(v) for v in model.stdevs)})")
    rows = ",".join("(" + ",".join(_num(v) for v in row) + ")" for row in model.rotation)
    out.append(f"[{model.rotation.shape[0]},{model.rotation.shape[1]}]({rows})")
    for k, (c, fit) in enumerate(zip(model.centers, model.clusters, strict=True)):
        out.append(f"Model {k}")
        out.append(f"[{model.rotation.shape[1]}]({','.join(_num(v) for v in c)})")
        out.append(f"[{len(fit.terms)}]({', '.join(_num(v) for v in fit.coef)})")
        out.extend(t.encode() for t in fit.terms)
    return "\n".join(out) + "\n"


def format_eiger_json(model: EigerModel) -> str:
    """Eiger's JSON model file for ``model``."""
    root = {
        "metric_names": list(model.parameters),
        "means": [float(v) for v in model.means],
        "std_devs": [float(v) for v in model.stdevs],
        "rotation_matrix": [[float(v) for v in row] for row in model.rotation],
        "clusters": [
            {"center": [float(v) for v in c],
             "regressors": [{**t.to_json(), "weight": float(w)} for t, w in zip(fit.terms, fit.coef, strict=True)]}
            for c, fit in zip(model.centers, model.clusters, strict=True)
        ],
    }
    return json.dumps(root, indent=4)


def write_eiger_model(model: EigerModel, path: str | os.PathLike[str], format: str | None = None) -> Path:
    """Write ``model`` as an Eiger model file (atomically: temporary file, then rename).

    Parameters
    ----------
    model : EigerModel
        A model fitted by :func:`~.eiger.fit_eiger` or read by :func:`read_eiger_model`.
    path : path-like
        Destination.
    format : {"text", "json"}, optional
        Default: JSON when ``path`` ends in ``.json``, text otherwise.
    """
    if not isinstance(model, EigerModel):
        raise TypeError(f"only Eiger models have Eiger files, not {type(model).__name__}")
    path = Path(path)
    fmt = format or ("json" if path.suffix.lower() == ".json" else "text")
    if fmt not in ("text", "json"):
        raise ValueError(f"format must be 'text' or 'json', not {fmt!r}")
    body = format_eiger_json(model) if fmt == "json" else format_eiger_text(model)
    return write_text_atomic(path, body)
