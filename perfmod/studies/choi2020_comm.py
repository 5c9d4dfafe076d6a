"""Paper 000 communication study: model curves (Tables 2-4), K counts (Table 5)
and per-iteration communication time of the proxies under weak scaling
(model side of Figures 5, 7 and 10).

Per iteration, Jacobi2D and MiniFE have one halo-exchange phase and MiniMD
two (the forward exchange of step 2 and the reverse communication of step 4,
000 §5.3), costed by :func:`perfmod.comm.phase.phase_time`.  The scale is
swept in nodes.  Jacobi2D fills every node (``nodes x ranks per node``
ranks, as its 1,536 ranks on 256 Summit nodes); MiniFE and MiniMD run at
power-of-two rank counts, the largest that fits (the paper's 256 MiniFE
ranks on 43 Summit nodes and 1,024 MiniMD ranks on 171): :func:`nprocs_for`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr
from tqdm.auto import tqdm

from ..comm.message import message_time
from ..comm.phase import phase_time
from ..decomposition import exchange
from ..platforms import MODES, ParameterNotAvailable, load
from ..topology import kmodel_counts

__all__ = [
    "PHASES_PER_ITERATION",
    "nprocs_for",
    "model_curves",
    "weak_scaling_comm",
]

PHASES_PER_ITERATION = {"jacobi2d": 1, "minife": 1, "minimd": 2}


def nprocs_for(app: str, nodes: int, ranks_per_node: int) -> int:
    """Rank count of ``app`` on ``nodes`` nodes (see the module docstring)."""
    full = int(nodes) * int(ranks_per_node)
    return full if app == "jacobi2d" else 1 << (full.bit_length() - 1)


def model_curves(platforms: Sequence[str], sizes: np.ndarray) -> xr.Dataset:
    """Message time over (platform, model, mode, msg_bytes) for the postal and max-rate models.

    Max-rate uses every process of the socket (intra/inter-socket) or node
    (inter-node) communicating at once; cells the paper marks N/A for a mode
    that cannot occur are NaN.
    """
    models = ["postal", "maxrate"]
    out = np.full((len(platforms), len(models), len(MODES), len(sizes)), np.nan)
    for i, name in enumerate(platforms):
        plat = load(name)
        for j, model in enumerate(models):
            for m, mode in enumerate(MODES):
                try:
                    out[i, j, m] = message_time(sizes, mode, plat, model=model)
                except ParameterNotAvailable:
                    pass
    return xr.Dataset(
        {"t_msg": (("platform", "model", "mode", "msg_bytes"), out,
                   {"units": "s", "long_name": "one message time (000 Tables 2-4)"})},
        coords={"platform": list(platforms), "model": models, "mode": list(MODES),
                "msg_bytes": ("msg_bytes", sizes, {"units": "B", "long_name": "message size"})},
    )


def weak_scaling_comm(
    apps: Sequence[str],
    platforms: Sequence[str],
    nodes: Sequence[int],
    models: Sequence[str] = ("postal", "maxrate", "kmodel"),
    progress: bool = True,
) -> xr.Dataset:
    """Predicted communication time per iteration over (app, platform, nodes, model).

    Also returns the K counts of each configuration (``k_inter``, ``k_total``,
    ``k``) and the rank count ``nprocs`` (nodes x ranks per node).
    """
    shape = (len(apps), len(platforms), len(nodes))
    t = np.full((*shape, len(models)), np.nan)
    k_inter, k_total, k_eff, nprocs = (np.full(shape, np.nan) for _ in range(4))
    todo = [(a, p, n) for a in range(len(apps)) for p in range(len(platforms)) for n in range(len(nodes))]
    for a, p, n in tqdm(todo, desc="weak scaling", disable=not progress):
        plat = load(platforms[p])
        procs = nprocs_for(apps[a], nodes[n], plat.ranks_per_node)
        nprocs[a, p, n] = procs
        ex = exchange(apps[a], procs)
        counts = kmodel_counts(ex, plat, procs)
        k_inter[a, p, n], k_total[a, p, n], k_eff[a, p, n] = counts.k_inter, counts.k_total, counts.k
        for m, model in enumerate(models):
            ph = phase_time(ex, plat, model=model, counts=counts)
            t[a, p, n, m] = PHASES_PER_ITERATION[apps[a]] * float(ph["t_phase"])
    dims = ("app", "platform", "nodes")
    return xr.Dataset(
        {
            "t_comm_predicted": ((*dims, "model"), t,
                                 {"units": "s", "long_name": "predicted communication time per iteration"}),
            "k_inter": (dims, k_inter, {"units": "1", "long_name": "K_inter: max inter-node messages per node"}),
            "k_total": (dims, k_total, {"units": "1", "long_name": "K_total (000 Eq. 4)"}),
            "k": (dims, k_eff, {"units": "1", "long_name": "K-model k = K_inter / K_total * k'"}),
            "nprocs": (dims, nprocs, {"units": "1", "long_name": "MPI ranks (see nprocs_for)"}),
        },
        coords={"app": list(apps), "platform": list(platforms),
                "nodes": ("nodes", np.asarray(nodes), {"units": "1", "long_name": "nodes"}),
                "model": list(models)},
    )
