"""MiniMD-like Lennard-Jones molecular dynamics proxy with skeleton regions (paper 004 §VI-A, application 1).

Mantevo's miniMD: atoms on an FCC lattice of ``size^3`` unit cells at reduced
density ``density`` (lattice constant ``(4 / density)^(1/3)``), Lennard-Jones
pair forces (epsilon = sigma = 1) within ``cutoff``, a neighbour list with a
skin of 0.3 rebuilt every ``rebuild_every`` (10) steps, velocity-Verlet
integration (dt = 0.005, initial temperature 1.44), periodic box.  Here the
box is cut into slabs along x, one per rank (each slab at least
``cutoff + skin`` wide); like miniMD, atoms migrate and ghost lists are
rebuilt only at reneighbouring steps, and on the other steps only the
positions of the same ghost atoms are communicated.

Per step::

    integrate (first half)                     region integrate (natoms)
    every rebuild_every steps:
        migrate: atoms that left the slab      region migrate   -> sendrecv right, left
        borders: ghost lists                   region borders   -> sendrecv right, left
        neighbour list (scipy cKDTree)         region neighbor (natoms, density, cutoff)
    else: ghost positions                      -> sendrecv right, left
    forces over the list                       region force (natoms, density, cutoff)
    integrate (second half)                    region integrate
    every thermo steps: kinetic energy         -> Allreduce

Two cost regimes: force every step, neighbour builds every ``rebuild_every``
steps (its cost grows faster with the skin volume), so the time per step
depends on the rebuild period as well as on the atom count.

Skeleton (paper 004 §III-A): ``migrate`` and ``borders`` steer later message
sizes; their stand-ins move no atom and return ghost lists of the expected
length ``density * (cutoff + skin) * L^2`` per side, so model mode makes the
same MPI calls (same peers, tags, order) with expected rather than counted
byte counts; the local atom count (a model input) stays the initial one.

Run with ``mpiexec -n P python -m perfmod.measure.proxies.minimd_lj --size 6 --steps 40 [--mode ...]``
(see :mod:`perfmod.measure.proxies.skeleton_cli`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from perfmod.measure.regions.skeleton import skeleton_function, skeleton_region, virtual_clock

__all__ = ["lattice", "run_minimd", "main", "REGIONS", "SKIN", "DT"]

SKIN = 0.3
DT = 0.005
REGIONS = {"force": ("natoms", "density", "cutoff"), "neighbor": ("natoms", "density", "cutoff"),
           "integrate": ("natoms",), "migrate": ("natoms",), "borders": ("natoms",)}


def lattice(size: int, density: float, x_cells: range | None = None) -> tuple[np.ndarray, float]:
    """FCC positions (4 atoms per unit cell) of the cells ``x_cells x size x size`` and the lattice constant.

    ``x_cells`` defaults to ``range(size)`` (the cubic box); lengths in reduced units.
    """
    if size < 1 or density <= 0:
        raise ValueError(f"size must be >= 1 and density > 0, got {size}, {density}")
    a = (4.0 / density) ** (1.0 / 3.0)
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    xs = np.arange(size) if x_cells is None else np.asarray(x_cells)
    cells = np.stack(np.meshgrid(xs, np.arange(size), np.arange(size), indexing="ij"), -1).reshape(-1, 1, 3)
    return ((cells + basis) * a).reshape(-1, 3), a


class _State:
    """One rank's atoms: ``x``, ``v``, ``f`` of the local atoms, then ghost positions."""

    def __init__(self, x: np.ndarray, v: np.ndarray, box: np.ndarray, lo: float, hi: float, rank: int,
                 nprocs: int, density: float, cutoff: float) -> None:
        self.x, self.v, self.f = x, v, np.zeros_like(x)
        self.ghost = np.zeros((0, 3))
        self.box, self.L = box, float(box[0])
        self.lo, self.hi, self.rank, self.nprocs = lo, hi, rank, nprocs
        self.density, self.cutoff = density, cutoff
        self.send_lists: list[np.ndarray] = [np.zeros(0, int), np.zeros(0, int)]
        self.shifts = [0.0, 0.0]
        self.pairs = (np.zeros(0, int), np.zeros(0, int))

    @property
    def natoms(self) -> int:
        return len(self.x)


def _integrate_first(s: _State) -> None:
    with skeleton_region("integrate", natoms=s.natoms) as run:
        if run:
            s.v += 0.5 * DT * s.f
            s.x += DT * s.v


def _integrate_final(s: _State) -> None:
    with skeleton_region("integrate", natoms=s.natoms) as run:
        if run:
            s.v += 0.5 * DT * s.f


def _no_migration(s: _State) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((0, 6)), np.zeros((0, 6))


@skeleton_function("migrate", params=lambda s: {"natoms": s.natoms}, stand_in=_no_migration)
def _migrate_pack(s: _State) -> tuple[np.ndarray, np.ndarray]:
    """Wrap positions into the box; remove and return the atoms now owned by the right / left neighbour."""
    s.x %= s.box
    width = s.L / s.nprocs
    owner = np.minimum((s.x[:, 0] // width).astype(int), s.nprocs - 1)
    right = owner == (s.rank + 1) % s.nprocs
    left = (owner != s.rank) & ~right
    out_r = np.hstack([s.x[right], s.v[right]])
    out_l = np.hstack([s.x[left], s.v[left]])
    keep = ~(right | left)
    s.x, s.v = s.x[keep], s.v[keep]
    return out_r, out_l


def _expected_lists(s: _State) -> tuple[list[np.ndarray], list[float]]:
    k = int(round(s.density * (s.cutoff + SKIN) * s.box[1] * s.box[2]))
    idx = np.arange(k) % max(s.natoms, 1)
    return [idx, idx.copy()], _shifts(s)


def _shifts(s: _State) -> list[float]:
    last, first = s.rank == s.nprocs - 1, s.rank == 0
    return [-s.L if last else 0.0, s.L if first else 0.0]


@skeleton_function("borders", params=lambda s: {"natoms": s.natoms}, stand_in=_expected_lists)
def _border_lists(s: _State) -> tuple[list[np.ndarray], list[float]]:
    """Local atoms within ``cutoff + skin`` of the right and left slab faces, and their periodic shifts."""
    rcs = s.cutoff + SKIN
    right = np.flatnonzero(s.x[:, 0] >= s.hi - rcs)
    left = np.flatnonzero(s.x[:, 0] < s.lo + rcs)
    return [right, left], _shifts(s)


def _no_pairs(s: _State) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, int), np.zeros(0, int)


@skeleton_function("neighbor", params=lambda s: {"natoms": s.natoms, "density": s.density, "cutoff": s.cutoff},
                   stand_in=_no_pairs)
def _neighbor(s: _State) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(i, j)``, ``i`` local, ``j`` local (``i < j``) or ghost, within ``cutoff + skin``."""
    rcs = s.cutoff + SKIN
    pos = np.vstack([s.x, s.ghost])
    pos[:, 0] -= s.lo - rcs
    pos[:, 1:] %= s.box[1:]
    width = s.hi - s.lo + 2 * rcs + 1.0
    pos[:, 0] = np.clip(pos[:, 0], 0.0, width - 1e-9)
    pairs = cKDTree(pos, boxsize=[width, s.box[1], s.box[2]]).query_pairs(rcs, output_type="ndarray")
    pairs = pairs[pairs[:, 0] < s.natoms]
    return pairs[:, 0], pairs[:, 1]


def _force(s: _State) -> None:
    with skeleton_region("force", natoms=s.natoms, density=s.density, cutoff=s.cutoff) as run:
        if run:
            i, j = s.pairs
            pos = np.vstack([s.x, s.ghost])
            d = pos[i] - pos[j]
            d[:, 1:] -= s.box[1:] * np.round(d[:, 1:] / s.box[1:])
            r2 = np.einsum("ij,ij->i", d, d)
            inside = r2 < s.cutoff * s.cutoff
            i, j, d, r2 = i[inside], j[inside], d[inside], r2[inside]
            sr6 = 1.0 / r2**3
            fd = d * ((48.0 * sr6 - 24.0) * sr6 / r2)[:, None]
            n = s.natoms
            local = j < n
            f = np.empty((n, 3))
            for k in range(3):
                f[:, k] = (np.bincount(i, fd[:, k], minlength=n)
                           - np.bincount(j[local], fd[local, k], minlength=n)[:n])
            s.f = f


def _exchange_ghosts(comm: Any, s: _State) -> None:
    """Send the ghost atoms' positions right then left; receive the neighbours' (sizes fixed since the lists)."""
    right, left = (s.rank + 1) % s.nprocs, (s.rank - 1) % s.nprocs
    got = []
    for k, (dest, src) in enumerate(((right, left), (left, right))):
        buf = s.x[s.send_lists[k]] if len(s.x) else np.zeros((len(s.send_lists[k]), 3))
        buf = buf + np.array([s.shifts[k], 0.0, 0.0])
        got.append(comm.sendrecv(buf, dest=dest, sendtag=10 + k, source=src, recvtag=10 + k))
    s.ghost = np.vstack(got) if got else np.zeros((0, 3))


def _rebuild(comm: Any, s: _State) -> None:
    right, left = (s.rank + 1) % s.nprocs, (s.rank - 1) % s.nprocs
    out_r, out_l = _migrate_pack(s)
    in_l = comm.sendrecv(out_r, dest=right, sendtag=1, source=left, recvtag=1)
    in_r = comm.sendrecv(out_l, dest=left, sendtag=2, source=right, recvtag=2)
    arrived = np.vstack([in_l, in_r])
    if len(arrived):  # none in model mode: the stand-in sends no atoms
        s.x = np.vstack([s.x, arrived[:, :3]])
        s.v = np.vstack([s.v, arrived[:, 3:]])
    s.send_lists, s.shifts = _border_lists(s)
    _exchange_ghosts(comm, s)
    s.pairs = _neighbor(s)


def run_minimd(comm: Any, size: int, steps: int = 40, density: float = 0.8442, cutoff: float = 2.5,
               rebuild_every: int = 10, thermo: int = 10, temperature: float = 1.44, seed: int = 0,
               weak: bool = False) -> dict[str, Any]:
    """Run the MD loop on this rank; every rank calls it.

    Parameters
    ----------
    comm : mpi4py communicator
        ``COMM_WORLD``, a recording proxy or a virtual communicator.
    size : int
        FCC unit cells per box edge (``4 size^3`` atoms).
    weak : bool
        Weak scaling: the box is ``nprocs * size`` cells long in x, so every rank
        holds ``4 size^3`` atoms (each rank builds only its own cells).
    steps : int
        Time steps (timed).
    density, cutoff : float
        Reduced density and force cutoff (Lennard-Jones units).
    rebuild_every : int
        Steps between neighbour-list rebuilds (miniMD's ``neigh_every``).
    thermo : int
        Steps between kinetic-energy reductions.
    temperature : float
        Initial temperature (reduced units).
    seed : int
        Velocity seed.

    Returns
    -------
    dict
        ``time``, ``virtual_time``, ``cpu_time`` (s, the timed loop between barriers: real,
        virtual, and this process's CPU time), ``natoms``
        (local atoms at the start), ``kinetic`` (last reduced kinetic energy per atom).
    """
    from mpi4py import MPI

    rank, nprocs = comm.Get_rank(), comm.Get_size()
    if steps < 1 or rebuild_every < 1 or thermo < 1:
        raise ValueError(f"steps, rebuild_every and thermo must be >= 1, got {steps}, {rebuild_every}, {thermo}")
    a = (4.0 / density) ** (1.0 / 3.0)
    box = np.array([size * (nprocs if weak else 1), size, size]) * a
    width = box[0] / nprocs
    if width < cutoff + SKIN:
        raise ValueError(f"slab width {width:.3g} = L / nprocs is below cutoff + skin = {cutoff + SKIN:.3g}: "
                         f"use a larger size than {size}, fewer ranks than {nprocs} or weak=True")
    if weak:
        x, _ = lattice(size, density, range(rank * size, (rank + 1) * size))
    else:
        pos, _ = lattice(size, density)
        x = pos[np.minimum((pos[:, 0] // width).astype(int), nprocs - 1) == rank].copy()
    rng = np.random.default_rng(seed + 7919 * rank)
    v = rng.normal(0.0, np.sqrt(temperature), size=x.shape)
    v -= v.mean(axis=0) if len(v) else 0.0
    s = _State(x, v, box, rank * width, (rank + 1) * width, rank, nprocs, density, cutoff)
    natoms0 = s.natoms
    ke_in, ke_out = np.zeros(2), np.zeros(2)
    _rebuild(comm, s)
    _force(s)
    comm.Barrier()
    t0, v0, c0 = time.perf_counter(), virtual_clock(), time.process_time()
    kinetic = float("nan")
    for step in range(1, steps + 1):
        _integrate_first(s)
        if step % rebuild_every == 0:
            _rebuild(comm, s)
        else:
            _exchange_ghosts(comm, s)
        _force(s)
        _integrate_final(s)
        if step % thermo == 0:
            ke_in[0] = 0.5 * float(np.sum(s.v * s.v))
            ke_in[1] = s.natoms
            comm.Allreduce(ke_in, ke_out, op=MPI.SUM)
            kinetic = ke_out[0] / max(ke_out[1], 1.0)
    comm.Barrier()
    elapsed, virtual, cpu = time.perf_counter() - t0, virtual_clock() - v0, time.process_time() - c0
    return {"time": elapsed, "virtual_time": virtual, "cpu_time": cpu, "natoms": natoms0, "kinetic": kinetic}


def main(argv: list[str] | None = None) -> None:
    """MPI entry point (see :mod:`perfmod.measure.proxies.skeleton_cli`)."""
    from perfmod.measure.proxies.skeleton_cli import proxy_main

    def add(ap: Any) -> None:
        ap.add_argument("--size", type=int, required=True, help="FCC unit cells per box edge")
        ap.add_argument("--steps", type=int, default=40)
        ap.add_argument("--density", type=float, default=0.8442)
        ap.add_argument("--cutoff", type=float, default=2.5)
        ap.add_argument("--rebuild-every", type=int, default=10)
        ap.add_argument("--weak", action="store_true", help="weak scaling: size^3 cells per rank")
        ap.add_argument("--seed", type=int, default=0)

    def program(comm: Any, args: Any) -> dict[str, Any]:
        return run_minimd(comm, args.size, args.steps, args.density, args.cutoff, args.rebuild_every,
                          seed=args.seed, weak=args.weak)

    proxy_main("minimd", add, program, argv)


if __name__ == "__main__":
    main()
