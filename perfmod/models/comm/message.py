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

:func:`message_time` binds the platform and the model once
(:class:`perfmod.models.comm.network.Network`) and prices with it; code
that prices many messages binds one network and calls its
:meth:`~perfmod.models.comm.network.Network.message_time`.

Default k per mode (when ``k`` is not given): ``ranks_per_socket`` for
intra- and inter-socket messages, ``ranks_per_node`` (k') for inter-node
messages, i.e. every process of the socket or node communicates at once,
as in a halo exchange.
"""

from __future__ import annotations

from typing import Any

from perfmod.machine.platforms import Platform
from perfmod.models.comm.network import Network, bind

__all__ = ["message_time"]


def message_time(
    nbytes: Any,
    mode: str,
    platform: Platform | str | Network,
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
    platform : Platform, str or Network
        A platform or the name of one (see :func:`perfmod.machine.platforms.available`),
        or a network bound to ``model`` already.
    model : str
        A communication model (:func:`perfmod.models.comm.registry.model_names`:
        "postal", "maxrate", "kmodel", "loggp" and any registered since).
    k : array_like, optional
        Processes per node (or socket) communicating at once, for models
        whose k rule is ``"default"`` (``"maxrate"``); default the ranks of
        the socket (intra-/inter-socket) or node (inter-node).  Must satisfy
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
    return bind(platform, model).message_time(nbytes, mode, k=k, k_inter=k_inter, k_total=k_total, k_prime=k_prime)
