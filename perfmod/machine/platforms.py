"""Platforms: node topology and communication parameters per model, mode and protocol.

A platform (``data/platforms/<name>.toml``) gives the node layout (sockets
per node, GPUs per socket, MPI ranks per node), the MPI protocol thresholds
(with where they come from) and, per model, mode and protocol, the
communication parameters in SI units:

- ``postal``: ``alpha`` (s), ``beta`` (s/B) -- paper 000 Table 2
  (Choi et al., ICS 2020, paper 000);
- ``maxrate``: short protocol ``alpha`` (s), ``beta`` (s/B) (Table 3, the
  two-parameter form, Eq. 3); eager and rendezvous ``alpha`` (s), ``r_cb``
  and ``r_ci`` (B/s) (Table 4, the three-parameter form, Eq. 2);
- ``loggp``: ``L``, ``o``, ``g`` (s) and ``G`` (s/B), each >= 0 (LogGP allows
  zero, e.g. ``G = 0``), optional (not in the papers); the replay's LogGOPS
  rendezvous threshold S is ``eager_max_bytes``.

A parameter entry may also carry standard errors ``<name>_se`` (same unit)
when it was fitted here (:mod:`perfmod.models.comm.calibration`), and any
entry (and ``[protocols]``) a ``note``: how it was decided (bounded fits,
merged segments).  A table cell the paper
marks "N/A" is kept as :class:`NotAvailable` with the paper's words, and
``fallback = "postal"`` where the paper says to apply the postal model
(000 §4.1).  Modes are ``intra_socket``, ``inter_socket`` and
``inter_node``; a message of ``n`` bytes uses ``short`` for
``n <= short_max_bytes``, ``eager`` for ``n <= eager_max_bytes`` and
``rendezvous`` above.  The papers do not state the thresholds; each file
says where its values come from (``[protocols].source``).

TOML layout::

    name = "summit"
    sockets_per_node = 2
    gpus_per_socket = 3
    ranks_per_node = 6
    [protocols]
    short_max_bytes = 231
    eager_max_bytes = 65535
    source = "..."
    [comm.postal.inter_node.eager]
    alpha = 2.86e-6
    beta = 1.55e-10
    source = "000 Table 2"
    [comm.maxrate.intra_socket.short]
    na = "N/A (Apply postal model)"
    fallback = "postal"
    source = "000 Table 3"
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from perfmod.core.paths import platforms_dir, repo_root, shipped_platforms_dir

if TYPE_CHECKING:
    import pandas as pd
from perfmod.machine.mapping import MODES
from perfmod.machine.plausibility import PlatformWarning, implausible

__all__ = [
    "MODES",
    "PROTOCOLS",
    "PARAM_NAMES",
    "param_tables",
    "add_param_table",
    "remove_param_table",
    "PlatformError",
    "ParameterNotAvailable",
    "NotAvailable",
    "Params",
    "Platform",
    "available",
    "load",
    "as_platform",
    "from_dict",
    "to_dict",
    "write",
]

PROTOCOLS = ("short", "eager", "rendezvous")
#: (table, protocol) -> parameter names of a ``comm.<table>.<mode>.<protocol>`` entry.  This is the
#: platform file format, so it lives here, below the models: a platform validates without importing
#: them.  The communication models (:mod:`perfmod.models.comm.registry`) name the table they read; a
#: model with a table of its own adds it with :func:`add_param_table` when it is registered.
PARAM_NAMES: dict[tuple[str, str], tuple[str, ...]] = (
    {("postal", p): ("alpha", "beta") for p in PROTOCOLS}
    | {
        ("maxrate", "short"): ("alpha", "beta"),
        ("maxrate", "eager"): ("alpha", "r_cb", "r_ci"),
        ("maxrate", "rendezvous"): ("alpha", "r_cb", "r_ci"),
    }
    | {("loggp", p): ("L", "o", "g", "G") for p in PROTOCOLS}
)
_SHIPPED_TABLES = ("postal", "maxrate", "loggp")
_NONNEGATIVE = ("L", "o", "g", "G")  # LogGP allows zero latency, overhead, gap and gap per byte; others > 0
_TOP_FIELDS = ("name", "nodes", "sockets_per_node", "gpus_per_socket", "ranks_per_node",
               "cpu", "gpu", "network", "mpi", "source", "description", "protocols", "comm")
_STR_FIELDS = ("cpu", "gpu", "network", "mpi", "source", "description")


def param_tables() -> tuple[str, ...]:
    """The parameter tables a platform may hold (``comm.<table>``), in the order they were added."""
    return tuple(dict.fromkeys(t for t, _ in PARAM_NAMES))


def add_param_table(table: str, names: Mapping[str, tuple[str, ...]]) -> None:
    """Add a parameter table: ``names`` maps every protocol to its parameter names.

    Adding a table that exists with the same names does nothing; with other
    names, or a shipped table, it is a ``ValueError``.
    """
    if set(names) != set(PROTOCOLS) or not all(isinstance(v, tuple) and v for v in names.values()):
        raise ValueError(f"parameter table {table!r}: give a non-empty tuple of names for each of {PROTOCOLS}")
    if table in param_tables():
        if any(PARAM_NAMES[(table, p)] != tuple(names[p]) for p in PROTOCOLS):
            raise ValueError(f"parameter table {table!r} exists with other names: "
                             f"{ {p: PARAM_NAMES[(table, p)] for p in PROTOCOLS} }")
        return
    PARAM_NAMES.update({(table, p): tuple(names[p]) for p in PROTOCOLS})


def remove_param_table(table: str) -> None:
    """Remove a table added by :func:`add_param_table` (the shipped tables stay)."""
    if table in _SHIPPED_TABLES:
        raise ValueError(f"parameter table {table!r} is shipped with perfmod and cannot be removed")
    for p in PROTOCOLS:
        PARAM_NAMES.pop((table, p), None)


class PlatformError(ValueError):
    """An unknown platform or a malformed platform description.

    The message names the file (or the platform) and the dotted field, e.g.
    ``data/platforms/summit.toml: comm.postal.inter_node.eager.beta: must be a
    positive number, got -1``.
    """


class ParameterNotAvailable(LookupError):
    """A platform has no numbers for a model, mode and protocol (the message says why)."""


@dataclass(frozen=True)
class NotAvailable:
    """A table cell the paper marks N/A.

    Attributes
    ----------
    reason : str
        The paper's words, e.g. ``"N/A (Apply postal model)"`` (000 Tables 2-4).
    fallback : str or None
        ``"postal"`` when the paper says to apply the postal model, else None.
    source : str
        The table the cell belongs to, e.g. ``"000 Table 3"``.
    note : str
        How the cell was decided (e.g. by a calibration), "" when nothing to say.
    """

    reason: str
    fallback: str | None = None
    source: str = ""
    note: str = ""


class Params(Mapping[str, float]):
    """The parameters of one table cell: a read-only mapping name -> value (SI units).

    Behaves like a ``dict`` of floats (``p["alpha"]``, ``dict(p)``) and keeps
    where the numbers come from in :attr:`source`.

    Parameters
    ----------
    values : mapping of str to float
        Parameter values in s, s/B or B/s (see the module docstring), and
        optionally their standard errors ``<name>_se``.
    source : str
        Where the numbers come from, e.g. ``"000 Table 2"``.
    note : str
        How they were obtained when that needs saying (a calibration's fit
        decisions: bounds, merged segments); "" otherwise.
    """

    __slots__ = ("_values", "source", "note")

    def __init__(self, values: Mapping[str, float], source: str = "", note: str = "") -> None:
        self._values = {str(k): float(v) for k, v in values.items()}
        self.source = str(source)
        self.note = str(note)

    def __getitem__(self, key: str) -> float:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Params):
            return self._values == other._values and self.source == other.source
        if isinstance(other, Mapping):
            return self._values == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Params({self._values!r}, source={self.source!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Params, (self._values, self.source, self.note))


def _where(path: Path | None, name: str = "") -> str:
    """How errors name a platform: its file relative to the checkout, or its name."""
    if path is None:
        return f"platform {name!r}" if name else "<platform dict>"
    try:
        return str(Path(path).resolve().relative_to(repo_root()))
    except ValueError:
        return str(path)


def _check_name(kind: str, value: str, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise ValueError(f"unknown {kind} {value!r}; expected one of {', '.join(valid)}")


def _num(where: str, key: str, value: Any, minimum: str = "positive") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise PlatformError(f"{where}: {key}: must be a finite number, got {value!r}")
    if minimum == "positive" and value <= 0:
        raise PlatformError(f"{where}: {key}: must be a positive number, got {value!r}")
    if minimum == "nonnegative" and value < 0:
        raise PlatformError(f"{where}: {key}: must be a number >= 0, got {value!r}")
    return float(value)


def _int(where: str, key: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise PlatformError(f"{where}: {key}: must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _entry(where: str, key: tuple[str, str, str], entry: Any) -> Params | NotAvailable:
    """Validate one comm entry (a TOML table, a :class:`Params` or a :class:`NotAvailable`)."""
    model, mode, proto = key
    dotted = f"comm.{model}.{mode}.{proto}"
    if isinstance(entry, NotAvailable):
        entry = {"na": entry.reason, "fallback": entry.fallback, "source": entry.source, "note": entry.note}
    elif isinstance(entry, Params):
        entry = {**entry, "source": entry.source, "note": entry.note}
    if not isinstance(entry, Mapping):
        raise PlatformError(f"{where}: {dotted}: must be a table, got {entry!r}")
    source = entry.get("source", "")
    if not isinstance(source, str):
        raise PlatformError(f"{where}: {dotted}.source: must be a string, got {source!r}")
    note = entry.get("note", "")
    if not isinstance(note, str):
        raise PlatformError(f"{where}: {dotted}.note: must be a string, got {note!r}")
    if "na" in entry:
        extra = set(entry) - {"na", "fallback", "source", "note"}
        if extra:
            raise PlatformError(f"{where}: {dotted}: an N/A entry carries no parameters, got {sorted(extra)}")
        if not isinstance(entry["na"], str) or not entry["na"]:
            raise PlatformError(f"{where}: {dotted}.na: must be the paper's reason (a string), got {entry['na']!r}")
        fb = entry.get("fallback")
        if fb not in (None, "postal") or (fb == "postal" and model == "postal"):
            raise PlatformError(f"{where}: {dotted}.fallback: must be 'postal' (for a non-postal model), got {fb!r}")
        return NotAvailable(entry["na"], fb, source, note)
    names = PARAM_NAMES[(model, proto)]
    values: dict[str, float] = {}
    for p in names:
        if p not in entry:
            raise PlatformError(f"{where}: {dotted}.{p}: missing (a {model} {proto} entry needs {', '.join(names)})")
        values[p] = _num(where, f"{dotted}.{p}", entry[p], "nonnegative" if p in _NONNEGATIVE else "positive")
    for k, v in entry.items():
        if k in values or k in ("source", "note"):
            continue
        if k.endswith("_se") and k[:-3] in names:
            values[k] = _num(where, f"{dotted}.{k}", v, "nonnegative")
        else:
            raise PlatformError(f"{where}: {dotted}.{k}: unknown parameter; expected {', '.join(names)}")
    return Params(values, source, note)


@dataclass(frozen=True)
class Platform:
    """A machine: node topology, protocol thresholds and communication parameters.

    The GPU platforms transcribe paper 000 (Choi et al., ICS 2020):
    Table 1 (nodes, CPU, GPU, GPUs per node and socket, network, MPI) and
    Tables 2-4 (postal and max-rate parameters per mode and protocol).
    Construction validates every field (:class:`PlatformError`), also after
    :meth:`replace`.

    Attributes
    ----------
    name : str
        Short lowercase name (``"summit"``).
    sockets_per_node : int
        CPU sockets per node.
    gpus_per_socket : int
        GPUs attached to each socket; 0 for a CPU-only platform.
    ranks_per_node : int
        MPI ranks per node (one per GPU on the GPU platforms, 000 §4.1).
    short_max_bytes : int
        Largest message (bytes) sent with the short protocol.
    eager_max_bytes : int
        Largest message (bytes) sent eagerly; larger ones use rendezvous.
    protocol_source : str
        Where the two thresholds come from (not from the papers).
    protocol_note : str
        How the thresholds were decided when that needs saying (a
        calibration's merged segments), "" otherwise.
    comm : mapping
        ``(model, mode, protocol) -> Params | NotAvailable``.
    nodes : int or None
        Nodes in the machine.
    cpu, gpu, network, mpi, source, description : str
        Descriptive fields; ``source`` names the paper table.
    path : Path or None
        The file the platform was read from.
    """

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
    protocol_note: str = ""

    def __post_init__(self) -> None:
        where = _where(self.path, self.name)
        if not isinstance(self.name, str) or not self.name:
            raise PlatformError(f"{where}: name: must be a non-empty string, got {self.name!r}")
        _int(where, "sockets_per_node", self.sockets_per_node, 1)
        _int(where, "gpus_per_socket", self.gpus_per_socket, 0)
        _int(where, "ranks_per_node", self.ranks_per_node, 1)
        if self.nodes is not None:
            _int(where, "nodes", self.nodes, 1)
        short = _int(where, "protocols.short_max_bytes", self.short_max_bytes, 0)
        eager = _int(where, "protocols.eager_max_bytes", self.eager_max_bytes, 0)
        if eager < short:
            raise PlatformError(
                f"{where}: protocols.eager_max_bytes: must be >= short_max_bytes ({short}), got {eager}")
        comm: dict[tuple[str, str, str], Params | NotAvailable] = {}
        for key, entry in dict(self.comm).items():
            if not (isinstance(key, tuple) and len(key) == 3):
                raise PlatformError(f"{where}: comm: keys must be (model, mode, protocol), got {key!r}")
            for kind, value, valid in zip(("model", "mode", "protocol"), key, (param_tables(), MODES, PROTOCOLS),
                                          strict=True):
                if value not in valid:
                    raise PlatformError(f"{where}: comm.{'.'.join(map(str, key))}: unknown {kind} {value!r}; "
                                        f"expected one of {', '.join(valid)}")
            comm[key] = _entry(where, key, entry)
        object.__setattr__(self, "comm", comm)

    @property
    def gpus_per_node(self) -> int:
        """GPUs per node, ``sockets_per_node * gpus_per_socket`` (000 Table 1)."""
        return self.sockets_per_node * self.gpus_per_socket

    @property
    def ranks_per_socket(self) -> int:
        """MPI ranks per socket, ``ceil(ranks_per_node / sockets_per_node)``."""
        return math.ceil(self.ranks_per_node / self.sockets_per_node)

    def protocol(self, nbytes: Any) -> np.ndarray:
        """Protocol of each message size.

        Parameters
        ----------
        nbytes : array_like
            Message sizes in bytes, > 0 and finite.

        Returns
        -------
        numpy.ndarray
            Same shape, dtype object: ``"short"`` for ``n <= short_max_bytes``,
            ``"eager"`` for ``n <= eager_max_bytes``, else ``"rendezvous"``.
        """
        n = np.asarray(nbytes, dtype=float)
        bad = ~np.isfinite(n) | (n <= 0)
        if np.any(bad):
            raise ValueError(f"message sizes must be positive and finite (bytes), got {n[bad].ravel()[:5].tolist()}")
        idx = (n > self.short_max_bytes).astype(int) + (n > self.eager_max_bytes).astype(int)
        return np.asarray(PROTOCOLS, dtype=object)[idx]

    def entry(self, model: str, mode: str, protocol: str) -> Mapping[str, float] | NotAvailable:
        """The raw table cell: :class:`Params` or :class:`NotAvailable`.

        Raises
        ------
        ValueError
            Unknown model, mode or protocol name (the message lists the valid ones).
        ParameterNotAvailable
            The platform has no entry for the cell (e.g. Stampede2, whose
            communication parameters are not published).
        """
        _check_name("model", model, param_tables())
        _check_name("mode", mode, MODES)
        _check_name("protocol", protocol, PROTOCOLS)
        try:
            return self.comm[(model, mode, protocol)]
        except KeyError:
            have = sorted({m for m, _, _ in self.comm}) or ["none"]
            raise ParameterNotAvailable(
                f"platform {self.name!r} ({_where(self.path, self.name)}): no {model} parameters for mode "
                f"{mode!r}, protocol {protocol!r}: the platform file has no such entry "
                f"(models present: {', '.join(have)}); measure them with perfmod.models.comm.calibration"
            ) from None

    def params(self, model: str, mode: str, protocol: str) -> dict[str, float]:
        """Parameters of a model, mode and protocol in SI units (names in :data:`PARAM_NAMES`).

        Raises
        ------
        ParameterNotAvailable
            The cell is N/A in the paper (the message gives the paper's reason
            and whether it says to apply the postal model) or absent.
        """
        e = self.entry(model, mode, protocol)
        if isinstance(e, NotAvailable):
            hint = f"; the paper says to apply the {e.fallback} model" if e.fallback else ""
            raise ParameterNotAvailable(
                f"platform {self.name!r}: {model} parameters for mode {mode!r}, protocol {protocol!r} "
                f"are {e.reason} ({e.source}){hint}"
            )
        return {k: e[k] for k in PARAM_NAMES[(model, protocol)]}

    def has(self, model: str, mode: str, protocol: str) -> bool:
        """True when real numbers exist for the model, mode and protocol (not N/A, not absent)."""
        _check_name("model", model, param_tables())
        _check_name("mode", mode, MODES)
        _check_name("protocol", protocol, PROTOCOLS)
        e = self.comm.get((model, mode, protocol))
        return e is not None and not isinstance(e, NotAvailable)

    def replace(self, **changes: Any) -> Platform:
        """A validated copy with fields changed (``dataclasses.replace``), for what-if studies."""
        return dataclasses.replace(self, **changes)

    def table(self) -> pd.DataFrame:
        """Long table with columns model, mode, protocol, parameter, value, note, source.

        One row per parameter (value in SI units, standard errors included as
        ``<name>_se``); an N/A cell is one row with ``parameter`` None, value
        NaN and the paper's reason in ``note``.
        """
        import pandas as pd  # here: loading a platform starts without pandas

        order = {k: i for i, k in enumerate((m, mo, p) for m in param_tables() for mo in MODES for p in PROTOCOLS)}
        rows = []
        for key in sorted(self.comm, key=order.__getitem__):
            e = self.comm[key]
            if isinstance(e, NotAvailable):
                rows.append((*key, None, np.nan, e.reason, e.source))
                continue
            for p, v in e.items():
                rows.append((*key, p, float(v), "", getattr(e, "source", "")))
        return pd.DataFrame(rows, columns=["model", "mode", "protocol", "parameter", "value", "note", "source"])


def _platform_files() -> dict[str, Path]:
    """Platform name -> file: the shipped ones, then the project's ``data/platforms`` (which wins)."""
    out: dict[str, Path] = {}
    for d in (shipped_platforms_dir(), platforms_dir()):
        if d.is_dir():
            out |= {p.stem.lower(): p for p in sorted(d.glob("*.toml"))}
    return out


def available() -> list[str]:
    """Names of the platforms: those shipped with perfmod and those in the project's ``data/platforms``."""
    return sorted(_platform_files())


def load(name_or_path: str | Path) -> Platform:
    """Load a platform by name (case-insensitive, see :func:`available`) or from a TOML file.

    A parameter outside its physical range (``beta = 12.5``: a bandwidth in
    GB/s typed as s/B) is a :class:`~perfmod.machine.plausibility.PlatformWarning`
    naming the file, the field and the likely unit mistake.

    Raises
    ------
    PlatformError
        Unknown name (the message lists the known platforms), missing file,
        invalid TOML, or an invalid field (the message names file and field).
    """
    text = str(name_or_path)
    is_path = isinstance(name_or_path, Path) or text.endswith(".toml") or "/" in text or "\\" in text
    if is_path:
        path = Path(name_or_path)
        if not path.is_file():
            raise PlatformError(f"{path}: no such platform file")
    else:
        path = _platform_files().get(text.lower())
        if path is None:
            raise PlatformError(f"unknown platform {text!r}; known platforms: {', '.join(available())}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise PlatformError(f"{_where(path)}: not valid TOML: {exc}") from exc
    plat = from_dict(data, path=path)
    for message in implausible(plat.comm, _where(path)):
        warnings.warn(message, PlatformWarning, stacklevel=2)
    return plat


def as_platform(platform: Platform | str | Path) -> Platform:
    """The platform itself, or the one :func:`load` finds for a name or a TOML path.

    Every function that takes "a platform or its name" coerces with this.
    Objects other than names and paths are returned as they are (a
    :class:`Platform`, or an object with the same attributes).
    """
    return load(platform) if isinstance(platform, str | Path) else platform


def from_dict(d: Mapping[str, Any], path: Path | None = None) -> Platform:
    """Build and validate a :class:`Platform` from the TOML layout (see the module docstring).

    Errors name the file (``path``, or the platform) and the dotted field.
    """
    where = _where(path, str(d.get("name", "")) if isinstance(d, Mapping) else "")
    if not isinstance(d, Mapping):
        raise PlatformError(f"{where}: must be a table, got {type(d).__name__}")
    for f in ("name", "sockets_per_node", "gpus_per_socket", "ranks_per_node"):
        if f not in d:
            raise PlatformError(f"{where}: {f}: missing")
    for f in d:
        if f not in _TOP_FIELDS:
            raise PlatformError(f"{where}: {f}: unknown field; expected one of {', '.join(_TOP_FIELDS)}")
    for f in ("name", *_STR_FIELDS):
        if f in d and not isinstance(d[f], str):
            raise PlatformError(f"{where}: {f}: must be a string, got {d[f]!r}")
    proto = d.get("protocols")
    if not isinstance(proto, Mapping):
        raise PlatformError(f"{where}: protocols: missing table [protocols]")
    for f in ("short_max_bytes", "eager_max_bytes"):
        if f not in proto:
            raise PlatformError(f"{where}: protocols.{f}: missing")
    for f in proto:
        if f not in ("short_max_bytes", "eager_max_bytes", "source", "note"):
            raise PlatformError(f"{where}: protocols.{f}: unknown field")
    comm: dict[tuple[str, str, str], Any] = {}
    tables = d.get("comm", {})
    if not isinstance(tables, Mapping):
        raise PlatformError(f"{where}: comm: must be a table")
    for model, modes in tables.items():
        if model not in param_tables():
            raise PlatformError(
                f"{where}: comm.{model}: unknown model; expected one of {', '.join(param_tables())}")
        if not isinstance(modes, Mapping):
            raise PlatformError(f"{where}: comm.{model}: must be a table")
        for mode, protos in modes.items():
            if mode not in MODES:
                raise PlatformError(f"{where}: comm.{model}.{mode}: unknown mode; expected one of {', '.join(MODES)}")
            if not isinstance(protos, Mapping):
                raise PlatformError(f"{where}: comm.{model}.{mode}: must be a table")
            for p, entry in protos.items():
                if p not in PROTOCOLS:
                    raise PlatformError(
                        f"{where}: comm.{model}.{mode}.{p}: unknown protocol; expected one of {', '.join(PROTOCOLS)}")
                comm[(model, mode, p)] = _entry(where, (model, mode, p), entry)
    return Platform(
        name=d["name"],
        sockets_per_node=d["sockets_per_node"],
        gpus_per_socket=d["gpus_per_socket"],
        ranks_per_node=d["ranks_per_node"],
        short_max_bytes=proto["short_max_bytes"],
        eager_max_bytes=proto["eager_max_bytes"],
        protocol_source=str(proto.get("source", "")),
        protocol_note=str(proto.get("note", "")),
        comm=comm,
        nodes=d.get("nodes"),
        path=path,
        **{f: d.get(f, "") for f in _STR_FIELDS},
    )


def to_dict(p: Platform) -> dict[str, Any]:
    """The TOML layout of a platform (inverse of :func:`from_dict`; ``path`` is not stored)."""
    out: dict[str, Any] = {"name": p.name}
    if p.nodes is not None:
        out["nodes"] = p.nodes
    out |= {"sockets_per_node": p.sockets_per_node, "gpus_per_socket": p.gpus_per_socket,
            "ranks_per_node": p.ranks_per_node}
    out |= {f: getattr(p, f) for f in _STR_FIELDS if getattr(p, f)}
    out["protocols"] = {"short_max_bytes": p.short_max_bytes, "eager_max_bytes": p.eager_max_bytes,
                        "source": p.protocol_source}
    if p.protocol_note:
        out["protocols"]["note"] = p.protocol_note
    comm: dict[str, Any] = {}
    for (model, mode, proto), e in p.comm.items():
        if isinstance(e, NotAvailable):
            entry: dict[str, Any] = {"na": e.reason}
            if e.fallback:
                entry["fallback"] = e.fallback
        else:
            entry = dict(e)
        entry["source"] = e.source if isinstance(e, NotAvailable | Params) else ""
        if getattr(e, "note", ""):
            entry["note"] = e.note
        comm.setdefault(model, {}).setdefault(mode, {})[proto] = entry
    out["comm"] = comm
    return out


def write(p: Platform, path: str | Path) -> Path:
    """Write a platform as TOML (via ``tomli_w``), atomically; return the path."""
    import tomli_w

    from perfmod.core.io import atomic_path

    header = f"# platform {p.name}, written by perfmod.machine.platforms.write\n"
    if p.source:
        header += f"# source: {p.source}\n"
    with atomic_path(path) as tmp:
        tmp.write_text(header + tomli_w.dumps(to_dict(p)), encoding="utf-8")
    return Path(path)
