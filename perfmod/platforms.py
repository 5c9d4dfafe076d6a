"""Platforms: node topology and communication parameters per mode and protocol.

A platform (``data/platforms/<name>.toml``) names its nodes, sockets per node,
GPUs per socket and MPI ranks per node, the protocol thresholds (with their
source) and, per model, mode and protocol, the communication parameters:

- ``postal``: ``alpha`` (s), ``beta`` (s/B) -- paper 000 Table 2;
- ``maxrate``: short ``alpha``, ``beta`` (Table 3); eager and rendezvous
  ``alpha`` (s), ``r_cb``, ``r_ci`` (B/s) (Table 4);
- ``loggp``: ``L``, ``o``, ``g`` (s), ``G`` (s/B), optional.

A table cell the paper marks "N/A" is kept as :class:`NotAvailable` with the
paper's reason, and ``fallback = "postal"`` where the paper says to apply the
postal model.  Modes are ``intra_socket``, ``inter_socket``, ``inter_node``;
protocols ``short`` (``n <= short_max_bytes``), ``eager``
(``<= eager_max_bytes``) and ``rendezvous``.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .paths import platforms_dir

__all__ = [
    "MODES",
    "PROTOCOLS",
    "MODELS",
    "PARAM_NAMES",
    "PlatformError",
    "ParameterNotAvailable",
    "NotAvailable",
    "Platform",
    "available",
    "load",
    "from_dict",
    "to_dict",
    "save",
]

MODES = ("intra_socket", "inter_socket", "inter_node")
PROTOCOLS = ("short", "eager", "rendezvous")
MODELS = ("postal", "maxrate", "loggp")
PARAM_NAMES: dict[tuple[str, str], tuple[str, ...]] = (
    {("postal", p): ("alpha", "beta") for p in PROTOCOLS}
    | {
        ("maxrate", "short"): ("alpha", "beta"),
        ("maxrate", "eager"): ("alpha", "r_cb", "r_ci"),
        ("maxrate", "rendezvous"): ("alpha", "r_cb", "r_ci"),
    }
    | {("loggp", p): ("L", "o", "g", "G") for p in PROTOCOLS}
)
_INT_FIELDS = ("sockets_per_node", "gpus_per_socket", "ranks_per_node")
_STR_FIELDS = ("cpu", "gpu", "network", "mpi", "source", "description")


class PlatformError(ValueError):
    """An unknown platform or a malformed platform file (the message names file and field)."""


class ParameterNotAvailable(LookupError):
    """The platform has no parameters for a model, mode and protocol."""


@dataclass(frozen=True)
class NotAvailable:
    """A table cell the paper marks N/A.

    Attributes
    ----------
    reason : str
        The paper's words, e.g. ``"N/A (Apply postal model)"``.
    fallback : str or None
        ``"postal"`` when the paper says to apply the postal model.
    source : str
        The table the cell belongs to.
    """

    reason: str
    fallback: str | None = None
    source: str = ""


def _check_name(kind: str, value: str, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise ValueError(f"unknown {kind} {value!r}; expected one of {valid}")


@dataclass(frozen=True)
class Platform:
    """A machine: node topology plus communication parameters (paper 000 Tables 1-4)."""

    name: str
    sockets_per_node: int
    gpus_per_socket: int
    ranks_per_node: int
    short_max_bytes: int
    eager_max_bytes: int
    protocol_source: str
    comm: Mapping[tuple[str, str, str], Mapping[str, float] | NotAvailable] = field(default_factory=dict)
    nodes: int | None = None
    cpu: str = ""
    gpu: str = ""
    network: str = ""
    mpi: str = ""
    source: str = ""
    description: str = ""
    path: Path | None = None

    @property
    def gpus_per_node(self) -> int:
        """GPUs per node (``sockets_per_node * gpus_per_socket``)."""
        return self.sockets_per_node * self.gpus_per_socket

    @property
    def ranks_per_socket(self) -> int:
        """MPI ranks per socket, ``ceil(ranks_per_node / sockets_per_node)``."""
        return math.ceil(self.ranks_per_node / self.sockets_per_node)

    def protocol(self, nbytes: Any) -> np.ndarray:
        """Protocol name of each message size (bytes), vectorized."""
        n = np.asarray(nbytes, dtype=float)
        if not np.all(np.isfinite(n)) or np.any(n <= 0):
            raise ValueError(f"message sizes must be positive and finite (bytes), got {n.ravel()[:5].tolist()}")
        idx = (n > self.short_max_bytes).astype(int) + (n > self.eager_max_bytes).astype(int)
        return np.asarray(PROTOCOLS, dtype=object)[idx]

    def entry(self, model: str, mode: str, protocol: str) -> Mapping[str, float] | NotAvailable:
        """The raw table entry: parameters or :class:`NotAvailable`."""
        _check_name("model", model, MODELS)
        _check_name("mode", mode, MODES)
        _check_name("protocol", protocol, PROTOCOLS)
        try:
            return self.comm[(model, mode, protocol)]
        except KeyError:
            raise ParameterNotAvailable(
                f"platform {self.name!r} has no {model} parameters for mode {mode!r}, "
                f"protocol {protocol!r}" + (f" ({self.path})" if self.path else "")
            ) from None

    def params(self, model: str, mode: str, protocol: str) -> dict[str, float]:
        """Parameters of a model, mode and protocol (SI units)."""
        e = self.entry(model, mode, protocol)
        if isinstance(e, NotAvailable):
            hint = f"; the paper says to apply the {e.fallback} model" if e.fallback else ""
            raise ParameterNotAvailable(
                f"platform {self.name!r}: {model} parameters for mode {mode!r}, protocol "
                f"{protocol!r} are {e.reason} ({e.source}){hint}"
            )
        return {k: e[k] for k in PARAM_NAMES[(model, protocol)]}

    def has(self, model: str, mode: str, protocol: str) -> bool:
        """True when real numbers exist for the model, mode and protocol."""
        e = self.comm.get((model, mode, protocol))
        return e is not None and not isinstance(e, NotAvailable)

    def replace(self, **changes: Any) -> Platform:
        """A copy with fields changed (what-if studies)."""
        return dataclasses.replace(self, **changes)

    def table(self) -> pd.DataFrame:
        """Long table: model, mode, protocol, parameter, value, note, source."""
        rows = []
        for (model, mode, protocol), e in sorted(self.comm.items()):
            if isinstance(e, NotAvailable):
                rows.append((model, mode, protocol, None, np.nan, e.reason, e.source))
                continue
            src = e.get("source", "") if isinstance(e, dict) else ""
            for p in PARAM_NAMES[(model, protocol)]:
                rows.append((model, mode, protocol, p, float(e[p]), "", src))
        return pd.DataFrame(rows, columns=["model", "mode", "protocol", "parameter", "value", "note", "source"])


def available() -> list[str]:
    """Names of the platforms in ``data/platforms``."""
    return sorted(p.stem for p in platforms_dir().glob("*.toml"))


def load(name_or_path: str | Path) -> Platform:
    """Load a platform by name (case-insensitive) or from a TOML file."""
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = platforms_dir() / f"{str(name_or_path).lower()}.toml"
        if not path.exists():
            raise PlatformError(f"unknown platform {name_or_path!r}; known platforms: {', '.join(available())}")
    elif not path.exists():
        raise PlatformError(f"{path}: no such platform file")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise PlatformError(f"{path}: not valid TOML: {exc}") from exc
    return from_dict(data, path=path)


def _num(where: str, field_: str, value: Any, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise PlatformError(f"{where}: {field_}: must be a number, got {value!r}")
    if positive and value <= 0:
        raise PlatformError(f"{where}: {field_}: must be a positive number, got {value!r}")
    return float(value)


def _int(where: str, field_: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise PlatformError(f"{where}: {field_}: must be an integer >= {minimum}, got {value!r}")
    return value


def _comm(where: str, data: Mapping[str, Any]) -> dict[tuple[str, str, str], Any]:
    out: dict[tuple[str, str, str], Any] = {}
    for model, modes in data.items():
        if model not in MODELS:
            raise PlatformError(f"{where}: comm.{model}: unknown model; expected one of {MODELS}")
        for mode, protos in modes.items():
            if mode not in MODES:
                raise PlatformError(f"{where}: comm.{model}.{mode}: unknown mode; expected one of {MODES}")
            for proto, entry in protos.items():
                key = f"comm.{model}.{mode}.{proto}"
                if proto not in PROTOCOLS:
                    raise PlatformError(f"{where}: {key}: unknown protocol; expected one of {PROTOCOLS}")
                source = str(entry.get("source", ""))
                if "na" in entry:
                    fb = entry.get("fallback")
                    if fb not in (None, "postal"):
                        raise PlatformError(f"{where}: {key}.fallback: must be 'postal', got {fb!r}")
                    out[(model, mode, proto)] = NotAvailable(str(entry["na"]), fb, source)
                    continue
                params: dict[str, Any] = {}
                for p in PARAM_NAMES[(model, proto)]:
                    if p not in entry:
                        raise PlatformError(f"{where}: {key}.{p}: missing")
                    params[p] = _num(where, f"{key}.{p}", entry[p], positive=p not in ("o", "g"))
                for extra, v in entry.items():
                    if extra.endswith("_se"):
                        params[extra] = _num(where, f"{key}.{extra}", v, positive=False)
                    elif extra not in params and extra != "source":
                        raise PlatformError(f"{where}: {key}.{extra}: unknown parameter")
                params["source"] = source
                out[(model, mode, proto)] = params
    return out


def from_dict(d: Mapping[str, Any], path: Path | None = None) -> Platform:
    """Build and validate a :class:`Platform` from the TOML layout."""
    where = str(path) if path else "<platform dict>"
    for f in ("name", *_INT_FIELDS):
        if f not in d:
            raise PlatformError(f"{where}: {f}: missing")
    ints = {
        "sockets_per_node": _int(where, "sockets_per_node", d["sockets_per_node"], 1),
        "gpus_per_socket": _int(where, "gpus_per_socket", d["gpus_per_socket"], 0),
        "ranks_per_node": _int(where, "ranks_per_node", d["ranks_per_node"], 1),
    }
    proto = d.get("protocols")
    if not isinstance(proto, Mapping):
        raise PlatformError(f"{where}: protocols: missing table [protocols]")
    short = _int(where, "protocols.short_max_bytes", proto.get("short_max_bytes"), 0)
    eager = _int(where, "protocols.eager_max_bytes", proto.get("eager_max_bytes"), 0)
    if eager < short:
        raise PlatformError(f"{where}: protocols.eager_max_bytes: must be >= short_max_bytes ({short})")
    nodes = d.get("nodes")
    if nodes is not None:
        nodes = _int(where, "nodes", nodes, 1)
    return Platform(
        name=str(d["name"]),
        short_max_bytes=short,
        eager_max_bytes=eager,
        protocol_source=str(proto.get("source", "")),
        comm=_comm(where, d.get("comm", {})),
        nodes=nodes,
        path=path,
        **ints,
        **{f: str(d.get(f, "")) for f in _STR_FIELDS},
    )


def to_dict(p: Platform) -> dict[str, Any]:
    """The TOML layout of a platform (inverse of :func:`from_dict`)."""
    out: dict[str, Any] = {"name": p.name}
    if p.nodes is not None:
        out["nodes"] = p.nodes
    out |= {f: getattr(p, f) for f in _INT_FIELDS}
    out |= {f: getattr(p, f) for f in _STR_FIELDS if getattr(p, f)}
    out["protocols"] = {
        "short_max_bytes": p.short_max_bytes,
        "eager_max_bytes": p.eager_max_bytes,
        "source": p.protocol_source,
    }
    comm: dict[str, Any] = {}
    for (model, mode, proto), e in sorted(p.comm.items()):
        if isinstance(e, NotAvailable):
            entry: dict[str, Any] = {"na": e.reason, "source": e.source}
            if e.fallback:
                entry["fallback"] = e.fallback
        else:
            entry = dict(e)
        comm.setdefault(model, {}).setdefault(mode, {})[proto] = entry
    out["comm"] = comm
    return out


def save(p: Platform, path: str | Path) -> Path:
    """Write a platform as TOML, atomically."""
    import tomli_w

    from .io import atomic_path

    with atomic_path(path) as tmp:
        tmp.write_text(f"# platform {p.name}, written by perfmod.platforms.save\n" + tomli_w.dumps(to_dict(p)))
    return Path(path)
