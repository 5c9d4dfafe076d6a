"""TRITON-like flood proxy (paper 003 §III-B): 2D shallow water, finite volumes, wet/dry cells.

State per cell: water depth h (m) and discharges hu, hv (m^2/s) over a bed
elevation z (m), cell size dx (m).  First-order Godunov-type scheme with the
Rusanov flux and the hydrostatic reconstruction of Audusse et al. (2004),
which keeps a lake at rest at rest over any terrain and handles wet/dry
fronts with non-negative depths.  Closed (reflective) boundaries, so mass
changes only by the inflow hydrograph.

Like TRITON, the work varies with the scenario: each step updates only the
rows that hold water or touch a wet row, so a mostly dry domain costs less
per cell (K_w depends on the flood event); and the time step is
adaptive, ``dt = CFL dx / max(|u| + sqrt(g h))``, reduced over all ranks
every step (an allreduce: Eq. 6's ``lg(P) K_r``), so the iteration count is
only known after the run and scales with 1 / dx.

Rows are partitioned over ranks (one ghost row each side, exchanged every
step); :func:`run_swe` times compute, communication (halo + allreduce) and
the rest.  Run under MPI with ``python -m perfmod.measure.proxies.swe``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from perfmod.measure.proxies.gol import row_block
from perfmod.measure.proxies.ranks import probed, serve

__all__ = ["G", "DRY", "EPS_U", "MANNING", "STRIP_CELLS", "EVENTS", "base_flow", "velocity", "max_speed", "step_fluxes",
           "terrain", "coarsen", "scenario", "run_swe", "main"]

G = 9.81
DRY = 1e-6  # depth below which a cell is dry (m)
EPS_U = 1e-2  # depth (m) below which velocities are desingularized
MANNING = 0.03  # Manning's roughness (s m^-1/3) of the proxy's floodplain
STRIP_CELLS = 8192  # cells updated per strip (a strip's temporaries stay in the L2 cache)


def _rusanov(hl, hul, hvl, hr, hur, hvr, zl, zr, normal):
    """Hydrostatically reconstructed Rusanov fluxes across interfaces (arrays of equal shape).

    ``normal`` 0: interfaces normal to x (hu is normal); 1: normal to y.
    Returns (flux seen by the left cell, flux seen by the right cell), each a
    tuple (mass, x-momentum, y-momentum).
    """
    ul, vl, ur, vr = velocity(hl, hul), velocity(hl, hvl), velocity(hr, hur), velocity(hr, hvr)
    zmax = np.maximum(zl, zr)
    hls = np.maximum(0.0, hl + zl - zmax)
    hrs = np.maximum(0.0, hr + zr - zmax)
    unl, utl = (ul, vl) if normal == 0 else (vl, ul)
    unr, utr = (ur, vr) if normal == 0 else (vr, ur)
    a = np.maximum(np.abs(unl) + np.sqrt(G * hls), np.abs(unr) + np.sqrt(G * hrs))
    fl = (hls * unl, hls * unl * unl + 0.5 * G * hls * hls, hls * unl * utl)
    fr = (hrs * unr, hrs * unr * unr + 0.5 * G * hrs * hrs, hrs * unr * utr)
    ql = (hls, hls * unl, hls * utl)
    qr = (hrs, hrs * unr, hrs * utr)
    f = [0.5 * (fl[k] + fr[k]) - 0.5 * a * (qr[k] - ql[k]) for k in range(3)]
    left = (f[0], f[1] + 0.5 * G * (hl * hl - hls * hls), f[2])
    right = (f[0], f[1] + 0.5 * G * (hr * hr - hrs * hrs), f[2])
    # back to (mass, x-momentum, y-momentum)
    if normal == 1:
        left = (left[0], left[2], left[1])
        right = (right[0], right[2], right[1])
    return left, right


def _mirror(h, hu, hv, z, axis):
    """Pad with reflective ghost cells along ``axis`` (normal momentum negated)."""
    pad = [(0, 0), (0, 0)]
    pad[axis] = (1, 1)
    hp, hup, hvp, zp = (np.pad(a, pad, mode="edge") for a in (h, hu, hv, z))
    sl = (slice(None), [0, -1]) if axis == 1 else ([0, -1], slice(None))
    if axis == 1:
        hup[sl] *= -1
    else:
        hvp[sl] *= -1
    return hp, hup, hvp, zp


def step_fluxes(h: np.ndarray, hu: np.ndarray, hv: np.ndarray, z: np.ndarray, dx: float, dt: float,
                manning: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One explicit step of the interior of arrays that carry one ghost row above and below.

    Columns get reflective walls here; the ghost rows are filled by the caller
    (neighbour ranks, or mirrors at the domain's top and bottom).  Bed
    friction with Manning's ``manning`` (s m^-1/3) is applied semi-implicitly
    after the flux update, ``q / (1 + dt g n^2 |u| / h^(4/3))``, as TRITON does;
    it keeps velocities on slopes physical, so the time step, set by them,
    scales with the cell size.
    """
    # x-direction (columns): walls at the first and last column
    hp, hup, hvp, zp = _mirror(h, hu, hv, z, axis=1)
    lx, rx = _rusanov(hp[:, :-1], hup[:, :-1], hvp[:, :-1], hp[:, 1:], hup[:, 1:], hvp[:, 1:],
                      zp[:, :-1], zp[:, 1:], 0)
    # y-direction (rows): ghost rows are already in the arrays
    ly, ry = _rusanov(h[:-1], hu[:-1], hv[:-1], h[1:], hu[1:], hv[1:], z[:-1], z[1:], 1)
    c = dt / dx
    out = []
    for k, q in enumerate((h, hu, hv)):
        inner = q[1:-1].copy()
        inner -= c * (lx[k][1:-1, 1:] - rx[k][1:-1, :-1])
        inner -= c * (ly[k][1:] - ry[k][:-1])
        out.append(inner)
    out[0] = np.maximum(out[0], 0.0)
    if manning > 0:
        hn, qx, qy = out
        u, v = velocity(hn, qx), velocity(hn, qy)
        with np.errstate(divide="ignore"):
            k = dt * G * manning * manning * np.sqrt(u * u + v * v) / np.maximum(hn, EPS_U) ** (4 / 3)
        out[1] = qx / (1 + k)
        out[2] = qy / (1 + k)
    return out[0], out[1], out[2]


def terrain(kind: str, ny: int, nx: int, dx: float, seed: int = 0) -> np.ndarray:
    """Synthetic DEMs (m), smooth so that they are resolved at every resolution: ``"valley"``
    (a sloping valley of parabolic section), ``"bowl"``, ``"plain"`` (gentle slope
    with random hills)."""
    y, x = np.meshgrid((np.arange(ny) + 0.5) * dx, (np.arange(nx) + 0.5) * dx, indexing="ij")
    ly, lx = ny * dx, nx * dx
    if kind == "valley":
        return 0.01 * (ly - y) + 20.0 * ((x - lx / 2) / lx) ** 2
    if kind == "bowl":
        return 5.0 * (((x - lx / 2) / lx) ** 2 + ((y - ly / 2) / ly) ** 2)
    if kind == "plain":
        rng = np.random.default_rng(seed)
        z = 0.005 * (ly - y)
        for cy, cx, r in rng.random((6, 3)):
            z += 2.0 * np.exp(-(((y - cy * ly) ** 2 + (x - cx * lx) ** 2) / (0.02 * (0.3 + r) * lx * ly)))
        return z
    raise ValueError(f"unknown terrain {kind!r}; known: valley, bowl, plain")


def coarsen(a: np.ndarray, factor: int) -> np.ndarray:
    """Average squares of ``factor`` x ``factor`` cells (the paper's coarser resolutions)."""
    ny, nx = a.shape
    if ny % factor or nx % factor:
        raise ValueError(f"grid {a.shape} is not divisible by {factor}")
    return a.reshape(ny // factor, factor, nx // factor, factor).mean(axis=(1, 3))


# Flood events (the paper's Conasauga, Harvey, Allatoona, Harris): terrain, its seed, the inflow (m^3/s) and
# the base flow: water up to ``base`` m above the lowest ground of each row when the event starts
EVENTS: dict[str, dict[str, Any]] = {
    "valley": {"terrain": "valley", "seed": 0, "inflow": 400.0, "base": 0.15},
    "bowl": {"terrain": "bowl", "seed": 0, "inflow": 300.0, "base": 0.1},
    "plain": {"terrain": "plain", "seed": 0, "inflow": 600.0, "base": 0.08},
    "hills": {"terrain": "plain", "seed": 7, "inflow": 250.0, "base": 0.3},
}


def base_flow(z: np.ndarray, base: float) -> np.ndarray:
    """Initial depth (m) of a river's base flow: in every row, water up to ``base`` m above the row's lowest ground.

    Every row holds water, as every rank of the row partition does on a river
    crossing the domain; how wide it spreads depends on the terrain.
    """
    return np.maximum(0.0, z.min(axis=1, keepdims=True) + base - z)


def scenario(kind: str, ny: int, nx: int, dx: float, factor: int = 1, seed: int = 0):
    """(z, dx, inflow cells) of a flood event at a resolution ``factor`` times coarser than ``dx``.

    The inflow enters along a river crossing the domain: every row, in the
    middle 1/16 of the columns of the finest grid ``ny x nx`` (the same area
    at every resolution when ``factor`` divides those counts).  Every rank of
    the row partition gets water, as on a real DEM, while how far it spreads
    (and so the share of cells skipped as dry) depends on the terrain.
    """
    z = terrain(kind, ny, nx, dx, seed)
    if factor > 1:
        z = coarsen(z, factor)
    c0, c1 = (nx * 15 // 32) // factor, -(-(nx * 17 // 32) // factor)
    return z, dx * factor, (slice(None), slice(c0, max(c1, c0 + 1)))


def velocity(h: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Velocity ``q / h`` (m/s), desingularized below ``EPS_U`` (Kurganov & Petrova 2007).

    ``2 h q / (h^2 + max(h^2, EPS_U^2))`` equals ``q / h`` wherever ``h >= EPS_U``
    and goes smoothly to zero on thinner films, so a few millimetres of water
    at a wetting front cannot dictate the time step.
    """
    h2 = h * h
    return 2.0 * h * q / (h2 + np.maximum(h2, EPS_U * EPS_U))


def max_speed(h: np.ndarray, hu: np.ndarray, hv: np.ndarray) -> float:
    """Largest ``|u| + sqrt(g h)`` (m/s) over the cells given; 0 for no cells."""
    if h.size == 0:
        return 0.0
    u, v = velocity(h, hu), velocity(h, hv)
    return float((np.sqrt(u * u + v * v) + np.sqrt(G * h)).max())


def _active_columns(block: np.ndarray, src_cols: np.ndarray) -> tuple[int, int]:
    """Columns ``[c0, c1)`` to update in a strip: wet ones (ghost rows included) or fed, plus one dry column
    each side.  Outside them every cell is dry and borders only dry cells, so no flux crosses and the walls
    that :func:`step_fluxes` puts at ``c0`` and ``c1`` give the same zero flux as the real dry neighbours."""
    cols = np.flatnonzero((block > DRY).any(axis=0) | src_cols)
    if cols.size == 0:
        return 0, 0
    return max(int(cols[0]) - 1, 0), min(int(cols[-1]) + 2, block.shape[1])


def run_swe(comm: Any, z: np.ndarray, dx: float, t_end: float, h0: np.ndarray | None = None,
            inflow: float = 0.0, inflow_cells: tuple[slice, slice] | None = None,
            cfl: float = 0.4, h_ref: float = 0.25, manning: float = MANNING,
            strip_cells: int = STRIP_CELLS) -> dict[str, Any]:
    """Run to simulated time ``t_end`` (s); return timings (max over ranks), steps, mass and, on rank 0,
    h and each rank's halo-exchange time ``t_halo_ranks`` (s).

    Each step: pack the first and last rows of h, hu, hv (compute, ``H O_h``),
    exchange them with the neighbour ranks and reduce the time step over all
    ranks (communication), then update the active rows in strips of about
    ``strip_cells`` cells, so the per-cell cost does not depend on the grid
    size (the working set of a strip stays in cache).  Rows that are dry and
    not next to a wet row are skipped, and within a strip the columns outside
    the wet ones (plus a dry margin): like TRITON, which skips most of the
    work of dry cells, the cost per cell depends on the flood event.  The time step is
    ``cfl dx / max(|u| + sqrt(g h))``, capped at ``cfl dx / sqrt(g h_ref)``
    while the domain is (nearly) dry, so that the step count scales as 1 / dx.
    """
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    t0 = time.perf_counter()
    ny, nx = z.shape
    start, stop = row_block(ny, size, rank)
    n = stop - start
    zl = np.empty((n + 2, nx))
    zl[1:-1] = z[start:stop]
    zl[0] = z[start - 1] if start > 0 else z[start]
    zl[-1] = z[stop] if stop < ny else z[stop - 1]
    h = np.zeros((n + 2, nx))
    if h0 is not None:
        h[1:-1] = h0[start:stop]
    hu, hv = np.zeros_like(h), np.zeros_like(h)
    src = np.zeros((n, nx), dtype=bool)
    if inflow and inflow_cells is not None:
        mask = np.zeros((ny, nx), dtype=bool)
        mask[inflow_cells] = True
        src = mask[start:stop]
    src_rows = src.any(axis=1)
    src_cols = src.any(axis=0)
    n_src = comm.allreduce(int(src.sum()))
    up = rank - 1 if rank > 0 else MPI.PROC_NULL
    down = rank + 1 if rank < size - 1 else MPI.PROC_NULL
    send_up, send_down, recv_up, recv_down = (np.zeros((3, nx)) for _ in range(4))
    strip = max(1, strip_cells // nx)
    dt_cap = cfl * dx / np.sqrt(G * h_ref)
    wet = (h[1:-1] > DRY).any(axis=1)
    smax = max_speed(h[1:-1], hu[1:-1], hv[1:-1])
    t_comp = t_comm = t_halo = 0.0
    t_sim, steps = 0.0, 0
    while t_sim < t_end - 1e-12:
        c0 = time.perf_counter()
        if size > 1:  # pack the boundary rows (Eq. 1's H O_h)
            send_up[:] = h[1], hu[1], hv[1]
            send_down[:] = h[-2], hu[-2], hv[-2]
        c1 = time.perf_counter()
        if size > 1:
            comm.Sendrecv(send_up, dest=up, sendtag=1, recvbuf=recv_down, source=down, recvtag=1)
            comm.Sendrecv(send_down, dest=down, sendtag=2, recvbuf=recv_up, source=up, recvtag=2)
        c2 = time.perf_counter()
        for ghost, inner, recv, other in ((0, 1, recv_up, up), (-1, -2, recv_down, down)):
            if other == MPI.PROC_NULL:  # a wall: mirror, normal (y) momentum reversed
                h[ghost], hu[ghost], hv[ghost] = h[inner], hu[inner], -hv[inner]
            else:
                h[ghost], hu[ghost], hv[ghost] = recv
        local_dt = min(cfl * dx / smax if smax > 0 else dt_cap, dt_cap)
        c3 = time.perf_counter()
        dt = min(comm.allreduce(local_dt, op=MPI.MIN), t_end - t_sim)
        c4 = time.perf_counter()
        ext = np.concatenate(([h[0].max() > DRY], wet | src_rows, [h[-1].max() > DRY]))
        rows = np.flatnonzero(ext[:-2] | ext[1:-1] | ext[2:])
        smax = 0.0
        if rows.size:
            r0, r1 = int(rows[0]), int(rows[-1]) + 1
            done = []
            for a in range(r0, r1, strip):  # new values are kept aside until every strip has read the old
                b = min(a + strip, r1)
                cs = slice(*_active_columns(h[a:b + 2], src_cols))
                new = step_fluxes(h[a:b + 2, cs], hu[a:b + 2, cs], hv[a:b + 2, cs], zl[a:b + 2, cs], dx, dt, manning)
                wet[a:b] = (new[0] > DRY).any(axis=1)
                smax = max(smax, max_speed(*new))
                done.append((a, b, cs, new))
            for a, b, cs, (nh, nhu, nhv) in done:
                h[a + 1:b + 1, cs], hu[a + 1:b + 1, cs], hv[a + 1:b + 1, cs] = nh, nhu, nhv
        if n_src:
            h[1:-1][src] += inflow * dt / (n_src * dx * dx)
            wet |= src_rows
            smax = max(smax, max_speed(h[1:-1][src], hu[1:-1][src], hv[1:-1][src]))
        if size > 1:
            comm.Barrier()  # waiting for the slowest rank is synchronization, O_w of Eq. 1 (as in the GOL proxy)
        c5 = time.perf_counter()
        t_halo += c2 - c1
        t_comm += (c2 - c1) + (c4 - c3)
        t_comp += (c1 - c0) + (c3 - c2) + (c5 - c4)
        t_sim += dt
        steps += 1
    mass = comm.allreduce(float(h[1:-1].sum()) * dx * dx)
    parts = comm.gather(h[1:-1], root=0)
    halo = comm.gather(t_halo, root=0)
    t_other = time.perf_counter() - t0 - t_comp - t_comm
    worst = np.zeros(3)
    comm.Allreduce(np.array([t_comp, t_comm, t_other]), worst, op=MPI.MAX)
    out: dict[str, Any] = {"t_w": worst[0], "t_c": worst[1], "t_o": worst[2], "steps": steps, "mass": mass}
    if rank == 0:
        out["h"] = np.concatenate(parts)
        out["t_halo_ranks"] = [float(t) for t in halo]
    return out


def main(argv: list[str] | None = None) -> None:
    """MPI entry point: a flood event on a synthetic terrain; prints one JSON line on rank 0 (``--batch``:
    :func:`~perfmod.measure.proxies.ranks.serve`)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--event", choices=sorted(EVENTS), help="a flood event (sets terrain, seed, inflow, base)")
    ap.add_argument("--terrain", default="valley")
    ap.add_argument("--ny", type=int, required=True)
    ap.add_argument("--nx", type=int, required=True)
    ap.add_argument("--dx", type=float, required=True, help="cell size of this resolution (m)")
    ap.add_argument("--coarsen", type=int, default=1, help="average squares of this many cells of the DEM")
    ap.add_argument("--t-end", type=float, required=True, help="simulated time (s)")
    ap.add_argument("--inflow", type=float, default=50.0, help="inflow (m^3/s) at the upstream centre")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--base", type=float, default=0.0, help="base flow: water level above each row's lowest ground (m)")

    def record(comm: Any, args: argparse.Namespace) -> dict[str, Any] | None:
        if args.event:
            vars(args).update(EVENTS[args.event])

        def work() -> tuple[dict, Any, float]:
            z, dx, cells = scenario(args.terrain, args.ny, args.nx, args.dx, args.coarsen, args.seed)
            h0 = base_flow(z, args.base) if args.base > 0 else None
            return run_swe(comm, z, dx, args.t_end, h0=h0, inflow=args.inflow, inflow_cells=cells), z.shape, dx

        (res, (ny, nx), dx), total, reports = probed(comm, work)
        if comm.Get_rank() != 0:
            return None
        wet = float((res["h"] > DRY).mean())
        # T_o is everything but compute and communication (DEM, set-up, gathering), so T_w + T_c + T_o = total
        t_o = total - res["t_w"] - res["t_c"]
        return {"t_w": res["t_w"], "t_c": res["t_c"], "t_o": t_o, "total_time": total,
                "steps": res["steps"], "mass": res["mass"], "wet_fraction": wet,
                "nprocs": comm.Get_size(), "t_halo_ranks": res["t_halo_ranks"],
                "ny": ny, "nx": nx, "dx": dx, "terrain": args.terrain, "interference": reports}

    serve(ap, record, argv)


if __name__ == "__main__":
    main()
