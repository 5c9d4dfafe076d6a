"""The communication models by name: one entry each (paper 000 §2.1, §3.1, §3.2).

A :class:`CommModel` says everything the rest of perfmod needs to use a
model, so adding one is one :func:`register` call:

- ``table``: the platform parameter table it reads
  (``comm.<table>.<mode>.<protocol>``; the parameter names per protocol are
  :data:`perfmod.machine.platforms.PARAM_NAMES`, or ``params`` for a model
  that brings a table of its own);
- ``forms``: the time formula per protocol, ``f(nbytes[, k], <parameters>)``
  in seconds (:func:`perfmod.models.comm.models.evaluate` calls it);
- ``k``: the name of its k rule, how the number of processes communicating
  at once is chosen (:mod:`perfmod.models.comm.krules`: ``"none"``, the
  formula has no k; ``"default"``, k given, else the processes of the
  socket or node, the replay counting the ranks sending in each phase;
  ``"kmodel"``, ``K_inter / K_total * k'`` from K-model counts, Eq. 4-5;
  or any rule registered since);
- ``derive``: parameters from other tables where the platform has none
  (LogGP from the postal ones);
- ``fitters``: the function of :mod:`perfmod.models.comm.fitting` that fits
  it from ping-pong data, per protocol, and ``fallback``: the 2-parameter
  formula that fit falls back to (Eq. 3, 000 §2.1);
- ``replay``: how the trace replay (:mod:`perfmod.replay`) applies it:
  ``"message"`` (a message holds its sender's network interface for the
  formula's whole time and costs the receiver nothing; every model but
  ``loggp``) or ``"loggops"`` (LogGOPS as LogGOPSim computes it: the
  sender's CPU busy ``o`` and its NIC ``g + (n - 1) G`` per message, the
  receiver's CPU ``o + (n - 1) G`` and NIC ``g + (n - 1) G``, rendezvous
  above the platform's eager threshold S; :mod:`perfmod.replay.loggops`).

The two LogGP models: ``loggp`` is replayed with the LogGOPS resources
(agreeing with LogGOPSim to the nanosecond on the same schedule);
``loggp_nic`` has the same formula and parameters but today's message
semantics, kept because it is the per-message LogGP time that
:func:`~perfmod.models.comm.message.message_time` and the collective and
phase models use, so a replay under it is comparable with those closed forms.

Who reads it: :class:`perfmod.models.comm.network.Network`, which binds a
model to a platform once (formula and parameters per mode and protocol,
the k rule) for the message, phase and collective models and the replay;
:mod:`perfmod.models.comm.calibration` (fitters); the replay (its
``replay`` rule).  Nothing else compares model names.  Platforms validate against the
parameter tables; the table lives in :mod:`perfmod.machine.platforms`,
below the models, because it is the platform file format.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from perfmod.machine.platforms import (
    PARAM_NAMES,
    PROTOCOLS,
    Platform,
    add_param_table,
    param_tables,
    remove_param_table,
)
from perfmod.models.comm.krules import k_rule, k_rule_names
from perfmod.models.comm.models import formula_params, loggp, maxrate, maxrate2, postal

__all__ = ["REPLAY_RULES", "CommModel", "register", "unregister", "comm_model", "model_names"]

#: How the trace replay applies a model (see the module docstring).
REPLAY_RULES = ("message", "loggops")


@dataclass(frozen=True)
class CommModel:
    """One communication model (see the module docstring).

    Attributes
    ----------
    name : str
        What ``model=`` takes (``"postal"``).
    table : str
        Platform parameter table the model reads.
    forms : mapping
        Protocol -> formula ``f(nbytes[, k], <parameters>)`` returning seconds.
    k : str
        The k rule (:func:`perfmod.models.comm.krules.k_rule_names`: "none", "default", "kmodel", ...).
    params : mapping, optional
        Protocol -> parameter names, for a model whose table the platforms
        do not have yet (added on :func:`register`); default: the platform
        table's names.
    derive : callable, optional
        ``derive(platform, mode, protocol) -> parameters`` used where the
        platform has no numbers in ``table``.
    fitters : mapping
        Protocol -> fitting function (empty: the model is not fitted here).
    fallback : callable, optional
        The 2-parameter formula a fit falls back to when the full form cannot
        be fitted (a negative parameter, one k only).
    description : str
        One line, with the paper equation.
    replay : {"message", "loggops"}
        How the trace replay applies the model (see the module docstring).
    """

    name: str
    table: str
    forms: Mapping[str, Callable[..., Any]]
    k: str = "none"
    params: Mapping[str, tuple[str, ...]] | None = None
    derive: Callable[[Platform, str, str], dict[str, float]] | None = None
    fitters: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    fallback: Callable[..., Any] | None = None
    description: str = ""
    replay: str = "message"

    def param_names(self, protocol: str) -> tuple[str, ...]:
        """Names of the parameters of ``protocol`` (SI units, :mod:`perfmod.machine.platforms`)."""
        return PARAM_NAMES[(self.table, protocol)]


_MODELS: dict[str, CommModel] = {}
_ADDED_TABLES: set[str] = set()  # parameter tables register() added to the platforms


def _check(m: CommModel) -> None:
    if not m.name or not isinstance(m.name, str):
        raise ValueError(f"a communication model needs a name, got {m.name!r}")
    if m.k not in k_rule_names():
        raise ValueError(f"model {m.name!r}: k must be one of {k_rule_names()}, got {m.k!r}")
    if m.replay not in REPLAY_RULES:
        raise ValueError(f"model {m.name!r}: replay must be one of {REPLAY_RULES}, got {m.replay!r}")
    if set(m.forms) != set(PROTOCOLS):
        raise ValueError(f"model {m.name!r}: give a formula for each protocol {PROTOCOLS}, got {sorted(m.forms)}")
    if m.table not in param_tables() and m.params is None:
        raise ValueError(f"model {m.name!r}: platforms have no parameter table {m.table!r} "
                         f"(known: {', '.join(param_tables())}); give params= to add one")
    for proto, f in m.forms.items():
        takes_k, names = formula_params(f)
        want = tuple(m.params[proto]) if m.params is not None else PARAM_NAMES[(m.table, proto)]
        if names != want:
            raise ValueError(f"model {m.name!r}, protocol {proto!r}: formula {f.__qualname__} takes {names}, "
                             f"the parameter table {m.table!r} has {want}")
        if takes_k and not k_rule(m.k).takes_k:
            raise ValueError(f"model {m.name!r}: formula {f.__qualname__} takes k, so k cannot be {m.k!r}")


def register(model: CommModel, replace: bool = False) -> CommModel:
    """Add a communication model; from then on every ``model=`` argument accepts its name.

    Raises
    ------
    ValueError
        The name is taken (unless ``replace``), a protocol has no formula, a
        formula's parameters differ from the table's, or ``k`` is unknown.
    """
    if model.name in _MODELS and not replace:
        raise ValueError(f"communication model {model.name!r} is registered already")
    _check(model)
    if model.params is not None:
        new = model.table not in param_tables()
        add_param_table(model.table, model.params)
        if new:
            _ADDED_TABLES.add(model.table)
    _MODELS[model.name] = model
    return model


def unregister(name: str) -> None:
    """Remove a model added by :func:`register`, and the parameter table it brought when no other model reads it."""
    m = comm_model(name)
    del _MODELS[name]
    if m.table in _ADDED_TABLES and not any(o.table == m.table for o in _MODELS.values()):
        remove_param_table(m.table)
        _ADDED_TABLES.discard(m.table)


def comm_model(name: str) -> CommModel:
    """The registered model ``name``; a ``ValueError`` lists the known ones."""
    try:
        return _MODELS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown model {name!r}; expected one of {model_names()}") from None


def model_names() -> tuple[str, ...]:
    """Names of the registered communication models, in registration order."""
    return tuple(_MODELS)


def _loggp_from_postal(platform: Platform, mode: str, protocol: str) -> dict[str, float]:
    """LogGP from the postal parameters: ``L = alpha``, ``o = g = 0``, ``G = beta``."""
    p = platform.params("postal", mode, protocol)
    return {"L": p["alpha"], "o": 0.0, "g": 0.0, "G": p["beta"]}


class _Fitters(Mapping):
    """Protocol -> fitter of :mod:`perfmod.models.comm.fitting`, named here and imported on first use (the
    fitting module pulls in scipy.optimize, which a replay does not need)."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self._names = dict(names)

    def __getitem__(self, protocol: str) -> Callable[..., Any]:
        import perfmod.models.comm.fitting as fitting  # the module, not the package (which imports this one)

        return getattr(fitting, self._names[protocol])

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


_MAXRATE_FORMS = {"short": maxrate2, "eager": maxrate, "rendezvous": maxrate}
_MAXRATE_FITTERS = _Fitters({"short": "fit_maxrate2", "eager": "fit_maxrate", "rendezvous": "fit_maxrate"})

register(CommModel("postal", "postal", dict.fromkeys(PROTOCOLS, postal),
                   fitters=_Fitters(dict.fromkeys(PROTOCOLS, "fit_postal")),
                   description="postal (alpha-beta), 000 Eq. 1"))
register(CommModel("maxrate", "maxrate", _MAXRATE_FORMS, k="default", fitters=_MAXRATE_FITTERS,
                   fallback=maxrate2, description="max-rate, 000 Eq. 2 (Eq. 3 for the short protocol)"))
register(CommModel("kmodel", "maxrate", _MAXRATE_FORMS, k="kmodel", fitters=_MAXRATE_FITTERS,
                   fallback=maxrate2, description="max-rate at k = K_inter / K_total k' (000 Eq. 4-5)"))
register(CommModel("loggp", "loggp", dict.fromkeys(PROTOCOLS, loggp), derive=_loggp_from_postal, replay="loggops",
                   description="LogGP, o + L + (n - 1) G + o; from the postal parameters where absent; replayed as "
                               "LogGOPS (LogGOPSim's CPU and NIC per rank)"))
register(CommModel("loggp_nic", "loggp", dict.fromkeys(PROTOCOLS, loggp), derive=_loggp_from_postal,
                   description="LogGP, o + L + (n - 1) G + o; replayed as one message at a time on the sender's NIC "
                               "for that whole time, nothing charged to the receiver"))
