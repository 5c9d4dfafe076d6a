"""Node-aware message times on a platform (paper 000 §3.1, §3.2).

:func:`message_time` picks the protocol of every message from its size
(the platform's short/eager thresholds), the parameters from the platform's
table for the message's mode (intra-socket, inter-socket, inter-node), and
evaluates the chosen model:

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

from perfmod.machine.platforms import MODES, PROTOCOLS, NotAvailable, ParameterNotAvailable, Platform, load
from perfmod.models.comm.models import check_k, check_sizes, kmodel_k, loggp, maxrate, maxrate2, postal

__all__ = ["MODELS", "message_time", "protocol_masks", "default_k"]

MODELS = ("postal", "maxrate", "kmodel", "loggp")


def _platform(p: Platform | str) -> Platform:
    return load(p) if isinstance(p, str) else p


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


def _entry(platform: Platform, model: str, mode: str, protocol: str) -> tuple[str, dict[str, float]]:
    """Return (model actually used, parameters), applying the paper's postal fallback."""
    entry = platform.entry(model, mode, protocol)
    if isinstance(entry, NotAvailable):
        if entry.fallback == "postal":
            return "postal", platform.params("postal", mode, protocol)
        raise ParameterNotAvailable(
            f"platform {platform.name!r}: no {model} parameters for mode {mode!r}, protocol "
            f"{protocol!r}: {entry.reason} ({entry.source})"
        )
    return model, dict(entry)


def _one_protocol(
    platform: Platform, nbytes: Any, mode: str, protocol: str, model: str, k: Any
) -> Any:
    if model == "loggp":
        if platform.has("loggp", mode, protocol):
            p = platform.params("loggp", mode, protocol)
            return loggp(nbytes, p["L"], p["o"], p["g"], p["G"])
        p = platform.params("postal", mode, protocol)
        return loggp(nbytes, p["alpha"], 0.0, 0.0, p["beta"])
    if model == "postal":
        p = platform.params("postal", mode, protocol)
        return postal(nbytes, p["alpha"], p["beta"])
    used, p = _entry(platform, "maxrate", mode, protocol)
    if used == "postal":
        return postal(nbytes, p["alpha"], p["beta"])
    if protocol == "short":
        return maxrate2(nbytes, k, p["alpha"], p["beta"])
    return maxrate(nbytes, k, p["alpha"], p["r_cb"], p["r_ci"])


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
    model : {"postal", "maxrate", "kmodel", "loggp"}
        The communication model (see the module docstring).
    k : array_like, optional
        Processes per node (or socket) communicating at once, for
        ``"maxrate"``; default :func:`default_k`.  Must satisfy
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
    plat = _platform(platform)
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; expected one of {MODELS}")
    check_sizes(nbytes)
    if model == "kmodel":
        if k_inter is None or k_total is None:
            raise ValueError("model 'kmodel' needs k_inter and k_total (see perfmod.apps.registry.kmodel_counts)")
        kp = plat.ranks_per_node if k_prime is None else k_prime
        k = kmodel_k(k_inter, k_total, kp) if mode == "inter_node" else (k or default_k(plat, mode))
        model_used = "maxrate"
        # K_inter may be 0 (no inter-node message): the max-rate k then has no meaning,
        # and 1 is the smallest meaningful number of processes sharing the network.
        k = np.maximum(k, 1) if not isinstance(k, xr.DataArray) else k.clip(min=1)
    else:
        model_used = model
        if k is None:
            k = default_k(plat, mode)
        if model == "maxrate":
            check_k(k, plat.ranks_per_node)
    masks = protocol_masks(plat, nbytes)
    result: Any = None
    for protocol in PROTOCOLS:
        mask = masks[protocol]
        if not np.any(np.asarray(mask)):
            continue
        t = _one_protocol(plat, nbytes, mode, protocol, model_used, k)
        result = t if result is None else _where(mask, t, result)
    return result
