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
the rest.  Run under MPI with ``python -m perfmod.proxies.swe``.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from .gol import row_block

__all__ = ["G", "DRY", "step_fluxes", "terrain", "coarsen", "scenario", "run_swe", "main"]

G = 9.81
DRY = 1e-6  # depth below which a cell is dry (m)


def _rusanov(hl, hul, hvl, hr, hur, hvr, zl, zr, normal):
    """Hydrostatically reconstructed Rusanov fluxes across interfaces (arrays of equal shape).

    ``normal`` 0: interfaces normal to x (hu is normal); 1: normal to y.
    Returns (flux seen by the left cell, flux seen by the right cell), each a
    tuple (mass, x-momentum, y-momentum).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        ul = np.where(hl > DRY, hul / hl, 0.0)
        vl = np.where(hl > DRY, hvl / hl, 0.0)
        ur = np.where(hr > DRY, hur / hr, 0.0)
        vr = np.where(hr > DRY, hvr / hr, 0.0)
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
                rows_ghost: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One explicit step of the interior of arrays that carry one ghost row above and below.

    Columns get reflective walls here; the ghost rows are filled by the caller
    (neighbour ranks, or mirrors at the domain's top and bottom).
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
    return out[0], out[1], out[2]


def terrain(kind: str, ny: int, nx: int, dx: float, seed: int = 0) -> np.ndarray:
    """Synthetic DEMs (m): ``"valley"`` (a sloping V valley), ``"bowl"``, ``"plain"`` (gentle slope
    with random hills)."""
    y, x = np.meshgrid((np.arange(ny) + 0.5) * dx, (np.arange(nx) + 0.5) * dx, indexing="ij")
    ly, lx = ny * dx, nx * dx
    if kind == "valley":
        return 0.02 * (ly - y) + 0.1 * np.abs(x - lx / 2)
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


def scenario(kind: str, ny: int, nx: int, dx: float, factor: int = 1, seed: int = 0):
    """(z, dx, inflow cells) of a flood event at a resolution ``factor`` times coarser than ``dx``.

    The inflow enters over the top 5 % of rows and the middle 5 % of columns.
    """
    z = terrain(kind, ny, nx, dx, seed)
    if factor > 1:
        z = coarsen(z, factor)
    n_y, n_x = z.shape
    cells = (slice(0, max(1, n_y // 20)), slice(n_x // 2 - max(1, n_x // 40), n_x // 2 + max(1, n_x // 40)))
    return z, dx * factor, cells


def run_swe(comm: Any, z: np.ndarray, dx: float, t_end: float, h0: np.ndarray | None = None,
            inflow: float = 0.0, inflow_cells: tuple[slice, slice] | None = None,
            cfl: float = 0.4, dt_max: float = 10.0) -> dict[str, Any]:
    """Run to simulated time ``t_end`` (s); return timings (max over ranks), steps, mass and, on rank 0, h."""
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    t0 = time.perf_counter()
    ny, nx = z.shape
    start, stop = row_block(ny, size, rank)
    zl = np.pad(z[start:stop], ((1, 1), (0, 0)), mode="edge")
    zl[0] = z[start - 1] if start > 0 else z[start]
    zl[-1] = z[stop] if stop < ny else z[stop - 1]
    h = np.zeros((stop - start + 2, nx))
    if h0 is not None:
        h[1:-1] = h0[start:stop]
    hu, hv = np.zeros_like(h), np.zeros_like(h)
    src = np.zeros((stop - start, nx), dtype=bool)
    if inflow and inflow_cells is not None:
        mask = np.zeros((ny, nx), dtype=bool)
        mask[inflow_cells] = True
        src = mask[start:stop]
    n_src = comm.allreduce(int(src.sum()))
    up, down = rank - 1, rank + 1
    t_comp = t_comm = 0.0
    t_sim, steps = 0.0, 0
    t_other = time.perf_counter() - t0
    while t_sim < t_end - 1e-12:
        c0 = time.perf_counter()
        # halo rows: neighbours, or mirrored walls at the domain's top and bottom
        for q, sign in ((h, 1), (hu, 1), (hv, -1)):
            if size > 1:
                comm.Sendrecv(q[1].copy() if up >= 0 else q[1], dest=up if up >= 0 else MPI.PROC_NULL,
                              recvbuf=q[-1], source=down if down < size else MPI.PROC_NULL)
                comm.Sendrecv(q[-2].copy(), dest=down if down < size else MPI.PROC_NULL,
                              recvbuf=q[0], source=up if up >= 0 else MPI.PROC_NULL)
            if up < 0:
                q[0] = sign * q[1]
            if down >= size:
                q[-1] = sign * q[-2]
        c1 = time.perf_counter()
        wet = h[1:-1] > DRY
        with np.errstate(divide="ignore", invalid="ignore"):
            speed = np.where(wet, np.sqrt(hu[1:-1] ** 2 + hv[1:-1] ** 2) / h[1:-1] + np.sqrt(G * h[1:-1]), 0.0)
        local_dt = cfl * dx / speed.max() if speed.max() > 0 else dt_max
        c2 = time.perf_counter()
        dt = min(comm.allreduce(min(local_dt, dt_max), op=MPI.MIN), t_end - t_sim)
        c3 = time.perf_counter()
        # active interior rows: wet, next to a wet row (ghost rows included), or fed by the inflow
        wa = (h > DRY).any(axis=1)
        rows = np.flatnonzero(wa[:-2] | wa[1:-1] | wa[2:] | src.any(axis=1))
        if rows.size:
            r0, r1 = rows[0], rows[-1] + 1
            sl = slice(r0, r1 + 2)  # with their ghost rows
            nh, nhu, nhv = step_fluxes(h[sl], hu[sl], hv[sl], zl[sl], dx, dt)
            h[r0 + 1:r1 + 1], hu[r0 + 1:r1 + 1], hv[r0 + 1:r1 + 1] = nh, nhu, nhv
        if n_src:
            h[1:-1][src] += inflow * dt / (n_src * dx * dx)
        c4 = time.perf_counter()
        t_comm += (c1 - c0) + (c3 - c2)
        t_comp += (c2 - c1) + (c4 - c3)
        t_sim += dt
        steps += 1
    g0 = time.perf_counter()
    mass = comm.allreduce(float(h[1:-1].sum()) * dx * dx)
    parts = comm.gather(h[1:-1], root=0)
    t_other += time.perf_counter() - g0
    worst = np.zeros(3)
    comm.Allreduce(np.array([t_comp, t_comm, t_other]), worst, op=MPI.MAX)
    out: dict[str, Any] = {"t_w": worst[0], "t_c": worst[1], "t_o": worst[2], "steps": steps, "mass": mass}
    if rank == 0:
        out["h"] = np.concatenate(parts)
    return out


def main() -> None:
    """MPI entry point: a flood event on a synthetic terrain; prints one JSON line on rank 0."""
    from mpi4py import MPI

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--terrain", default="valley")
    ap.add_argument("--ny", type=int, required=True)
    ap.add_argument("--nx", type=int, required=True)
    ap.add_argument("--dx", type=float, required=True, help="cell size of this resolution (m)")
    ap.add_argument("--coarsen", type=int, default=1, help="average squares of this many cells of the DEM")
    ap.add_argument("--t-end", type=float, required=True, help="simulated time (s)")
    ap.add_argument("--inflow", type=float, default=50.0, help="inflow (m^3/s) at the upstream centre")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    t0 = time.perf_counter()
    z, dx, cells = scenario(args.terrain, args.ny, args.nx, args.dx, args.coarsen, args.seed)
    ny, nx = z.shape
    try:
        res = run_swe(comm, z, dx, args.t_end, inflow=args.inflow, inflow_cells=cells)
    except Exception:  # one failing rank must not leave the others waiting forever
        import traceback

        traceback.print_exc()
        comm.Abort(1)
    total = time.perf_counter() - t0
    if comm.Get_rank() == 0:
        wet = float((res["h"] > DRY).mean())
        print(json.dumps({"t_w": res["t_w"], "t_c": res["t_c"], "t_o": res["t_o"], "t_total": total,
                          "steps": res["steps"], "mass": res["mass"], "wet_fraction": wet, "nprocs": comm.Get_size(),
                          "ny": ny, "nx": nx, "dx": dx, "terrain": args.terrain}))


if __name__ == "__main__":
    main()
