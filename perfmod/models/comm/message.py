"""Node-aware message times on a platform (paper 000 §3.1, §3.2).

:func:`message_time` picks the protocol of every message from its size
(the platform's short/eager thresholds), the parameters from the platform's
table for the message's mode (intra-socket, inter-socket, inter-node), and
evaluates the chosen model, one of :mod:`perfmod.models.comm.registry`
(which says its formula per protocol, its parameter table and how k is
chosen); the shipped ones are:

``"postal"``
    Eq. 1 with the postal parameters of Table 2.
``"maxrate"``
    Eq. 3 (short protocol, Table 3) or Eq. 2 (eager and rendezvous,
    Table 4) with k processes per node communicating at once.
``"kmodel"``
    The max-rate model with k replaced by ``K_inter / K_total * k'``
    (Eq. 4-5) for inter-node messages.  Intra-node messages keep the
    max-rate k of their mode: the K-model corrects the number of processes
    sharing the *network*, which only inter-node messages use.
``"loggp"``
    LogGP with the platform's ``loggp`` parameters; when a platform has
    none they are derived from the postal ones (``L = alpha``, ``o = 0``,
    ``G = beta``), which reduces LogGP to the postal model up to the
    ``(n - 1)`` byte count.

Where the paper's table says "N/A (Apply postal model)" the postal
parameters of that mode and protocol are used, exactly as the paper says;
where it says N/A for another reason (e.g. "1 process/socket": the mode
cannot occur on that platform) a :class:`~perfmod.machine.platforms.ParameterNotAvailable`
error names platform, model, mode, protocol and the reason.

Default k per mode (when ``k`` is not given): ``ranks_per_socket`` for
intra- and inter-socket messages, ``ranks_per_node`` (k') for inter-node
messages, i.e. every process of the socket or node communicates at once,
as in a halo exchange.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from perfmod.machine.platforms import MODES, PROTOCOLS, NotAvailable, ParameterNotAvailable, Platform, as_platform
from perfmod.models.comm.models import check_k, check_sizes, evaluate, kmodel_k
from perfmod.models.comm.registry import CommModel, comm_model

__all__ = ["message_time", "protocol_masks", "default_k"]


def default_k(platform: Platform, mode: str) -> int:
    """Processes per socket (intra-/inter-socket) or per node (inter-node) communicating at once."""
    return platform.ranks_per_node if mode == "inter_node" else platform.ranks_per_socket


def _where(cond: Any, a: Any, b: Any) -> Any:
    if any(isinstance(x, xr.DataArray | xr.Dataset) for x in (cond, a, b)):
        return xr.where(cond, a, b)
    return np.where(cond, a, b)


def protocol_masks(platform: Platform, nbytes: Any) -> dict[str, Any]:
    """Boolean masks (same type and shape as ``nbytes``) selecting each protocol."""
    short = nbytes <= platform.short_max_bytes
    eager = (nbytes > platform.short_max_bytes) & (nbytes <= platform.eager_max_bytes)
    rndv = nbytes > platform.eager_max_bytes
    return {"short": short, "eager": eager, "rendezvous": rndv}


def _formula(platform: Platform, spec: CommModel, mode: str, protocol: str) -> tuple[Any, dict[str, float]]:
    """(formula, parameters) of a model, mode and protocol, applying the paper's postal fallback."""
    if spec.derive is not None and not platform.has(spec.table, mode, protocol):
        return spec.forms[protocol], spec.derive(platform, mode, protocol)
    entry = platform.entry(spec.table, mode, protocol)
    if isinstance(entry, NotAvailable):
        if entry.fallback is not None:
            return _formula(platform, comm_model(entry.fallback), mode, protocol)
        raise ParameterNotAvailable(
            f"platform {platform.name!r}: no {spec.table} parameters for mode {mode!r}, protocol "
            f"{protocol!r}: {entry.reason} ({entry.source})"
        )
    return spec.forms[protocol], {n: entry[n] for n in spec.param_names(protocol)}


def message_time(
    nbytes: Any,
    mode: str,
    platform: Platform | str,
    model: str = "postal",
    k: Any = None,
    k_inter: Any = None,
    k_total: Any = None,
    k_prime: Any = None,
) -> Any:
    """Time of one message of ``nbytes`` bytes in ``mode`` on ``platform``.

    Parameters
    ----------
    nbytes : array_like or xarray.DataArray
        Message sizes in bytes (> 0).  Broadcasts with ``k``, ``k_inter``,
        ``k_total`` and ``k_prime``.
    mode : {"intra_socket", "inter_socket", "inter_node"}
        Where sender and receiver are relative to each other.
    platform : Platform or str
        A platform or the name of one (see :func:`perfmod.machine.platforms.available`).
    model : str
        A communication model (:func:`perfmod.models.comm.registry.model_names`:
        "postal", "maxrate", "kmodel", "loggp" and any registered since).
    k : array_like, optional
        Processes per node (or socket) communicating at once, for models
        whose k rule is ``"default"`` (``"maxrate"``); default :func:`default_k`.  Must satisfy
        ``1 <= k <= k'``.
    k_inter, k_total : array_like, optional
        K-model counts (paper 000 Eq. 4), required for ``"kmodel"``.
    k_prime : array_like, optional
        k' of the K-model; default the platform's ranks per node.

    Returns
    -------
    array_like or xarray.DataArray
        Time in seconds, broadcast over the inputs.
    """
    plat = as_platform(platform)
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    spec = comm_model(model)
    check_sizes(nbytes)
    if spec.k == "kmodel":
        if k_inter is None or k_total is None:
            raise ValueError(f"model {model!r} needs k_inter and k_total (see perfmod.apps.registry.kmodel_counts)")
        kp = plat.ranks_per_node if k_prime is None else k_prime
        k = kmodel_k(k_inter, k_total, kp) if mode == "inter_node" else (k or default_k(plat, mode))
        # K_inter may be 0 (no inter-node message): the max-rate k then has no meaning,
        # and 1 is the smallest meaningful number of processes sharing the network.
        k = np.maximum(k, 1) if not isinstance(k, xr.DataArray) else k.clip(min=1)
    elif spec.k == "default":
        if k is None:
            k = default_k(plat, mode)
        check_k(k, plat.ranks_per_node)
    masks = protocol_masks(plat, nbytes)
    result: Any = None
    for protocol in PROTOCOLS:
        mask = masks[protocol]
        if not np.any(np.asarray(mask)):
            continue
        formula, params = _formula(plat, spec, mode, protocol)
        t = evaluate(formula, nbytes, k, params)
        result = t if result is None else _where(mask, t, result)
    return result
