"""LULESH-like Lagrangian hydrodynamics proxy with skeleton regions (paper 004 §VI-A, application 3).

The Sedov proxy's kernels (:mod:`perfmod.measure.proxies.sedov`: a
staggered Lagrangian step on a hexahedral mesh, the blast in the corner
element, in the spirit of LULESH) and its distributed exchange
(:mod:`perfmod.measure.proxies.sedov_mpi`, Algorithm 2 of paper 001), with
every kernel a skeleton region.  Rank r owns a contiguous block of element
ids (slabs along z) and a near-equal block of node ids (planes along z, a
different decomposition), and keeps ghost copies of the other ranks' nodes
its elements use.  One iteration, with LULESH's counterparts::

    init_nodes       clear nodal forces            (CalcForceForNodes, first part)
    volume_forces    corner forces (p + q) dV/dx   (IntegrateStressForElems)
    gather_forces    sum corner forces per node    (CalcForceForNodes, gather)
    reverse exchange: ghost partial forces to the owners, summed there   (CommSBN)
    integrate        a = F / m, v, x (owned nodes) (CalcAcceleration/Velocity/PositionForNodes)
    forward exchange: x, v, a from the owners to the ghost copies        (CommSyncPosVel)
    update_elements  volume, work, p, q            (LagrangeElements)
    constraints      Courant and volume limits     (CalcTimeConstraintsForElems)
    Allreduce(MIN) of the time step

Regions and parameters (:data:`REGIONS`): ``n``, the kernel's loop extent
(local elements for ``volume_forces``, ``update_elements``, ``constraints``;
local nodes, ghosts included, for ``init_nodes``, ``gather_forces``; owned
nodes for ``integrate``), and ``chunks``, the vectorized pieces a kernel is
split into (the Sedov proxy's X2, LULESH's thread chunking: more chunks,
more per-call overhead and smaller working sets).

Control flow (paper 004 §III-A).  LULESH runs until a stop time, so its time
step, which every kernel's results feed, would decide the iteration count:
nothing could be skipped.  This proxy runs a fixed number of iterations
(LULESH's ``-i``), so the time step steers no control flow and no message
size: ``constraints`` is skippable and its stand-in returns the current time
step (the ``Allreduce`` stays, outside the region).  The exchange pattern is
computed from the mesh on every rank (no ``alltoall``), so the skeleton runs
as virtual ranks too; message sizes depend on the decomposition only, so
model mode makes the same MPI calls, with the same byte counts, as measure
mode.

Run with ``mpiexec -n P python -m perfmod.measure.proxies.lulesh --size 16 --iterations 20 [--mode ...]``
(see :mod:`perfmod.measure.proxies.skeleton_cli`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from perfmod.measure.proxies.gol import row_block
from perfmod.measure.proxies.sedov import DT_GROWTH, SedovState, corner_mass
from perfmod.measure.proxies.sedov_mesh import CORNERS, HexMesh
from perfmod.measure.proxies.sedov_mpi import NodeExchange
from perfmod.measure.regions.skeleton import skeleton_region, virtual_clock

__all__ = ["REGIONS", "block_owner", "exchange_pattern", "run_lulesh", "main"]

#: Regions of the time step and their parameters.
REGIONS = {"init_nodes": ("n", "chunks"), "volume_forces": ("n", "chunks"), "gather_forces": ("n", "chunks"),
           "integrate": ("n", "chunks"), "update_elements": ("n", "chunks"), "constraints": ("n", "chunks")}


def block_owner(ids: np.ndarray, n: int, parts: int) -> np.ndarray:
    """Owner of each id when ``n`` ids are split into ``parts`` contiguous blocks as ``row_block`` splits them.

    Closed form (no array of all ``n`` owners), so a rank finds the owners of its own ids only.
    """
    row_block(n, parts, 0)  # the same error for too few ids
    base, extra = divmod(n, parts)
    cut = extra * (base + 1)
    ids = np.asarray(ids, dtype=np.int64)
    return np.where(ids < cut, ids // (base + 1), extra + (ids - cut) // base)


def exchange_pattern(mesh: HexMesh, state: SedovState, rank: int, nprocs: int
                     ) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """The ghost-node exchange of ``rank`` from the mesh alone (what ``NodeExchange`` learns by ``alltoall``).

    Elements and nodes are split into ``nprocs`` blocks of ids (the nodes' blocks are
    ``node_blocks(mesh, nprocs, "z")``).

    Returns
    -------
    recv : dict
        Rank s -> local indices of the ghost nodes s owns (ascending global id).
    send : dict
        Rank s -> local indices of this rank's owned nodes that s's elements use (ascending global id).
    """
    node_owner = block_owner(state.nodes, mesh.n_nodes, nprocs)
    ghost = np.flatnonzero(~state.owned)
    owners = node_owner[ghost]
    recv = {int(s): ghost[owners == s] for s in np.unique(owners)}
    own = np.flatnonzero(state.owned)
    ijk = mesh.node_ijk(state.nodes[own])
    shape = np.array([mesh.nx, mesh.ny, mesh.nz])
    idx, who = [], []
    for corner in CORNERS:  # element ijk - corner has this node as that corner
        e = ijk - corner
        ok = np.all((e >= 0) & (e < shape), axis=1)
        eid = e[ok, 0] + mesh.nx * (e[ok, 1] + mesh.ny * e[ok, 2])
        idx.append(own[ok])
        who.append(block_owner(eid, mesh.n_elements, nprocs))
    idx_a, who_a = np.concatenate(idx), np.concatenate(who)
    other = who_a != rank
    send = {int(s): np.unique(idx_a[other & (who_a == s)]) for s in np.unique(who_a[other])}
    return recv, send


def _kernel(name: str, n: int, chunks: int, body: Callable[[], Any]) -> None:
    with skeleton_region(name, n=n, chunks=chunks) as run:
        if run:
            body()


def run_lulesh(comm: Any, size: int, iterations: int = 20, chunks: int = 1, weak: bool = False) -> dict[str, Any]:
    """Run the fixed-iteration hydro loop on this rank; every rank calls it.

    Parameters
    ----------
    comm : mpi4py communicator
        ``COMM_WORLD``, a recording proxy or a virtual communicator.
    size : int
        Elements per mesh edge (``size^3`` elements; strong scaling over the ranks).
    iterations : int
        Time steps (fixed, as LULESH's ``-i``).
    chunks : int
        Vectorized pieces of each kernel.
    weak : bool
        Weak scaling: the mesh is ``size x size x (nprocs size)`` elements, ``size^3`` per rank.

    Returns
    -------
    dict
        ``time``, ``virtual_time``, ``cpu_time`` (s, the timed loop between two barriers:
        real, virtual, and this process's CPU time), ``elements``, ``nodes``, ``owned_nodes``
        (this rank's), and the final physics summed over ranks: ``e_internal``,
        ``e_kinetic``, ``e_initial`` (J), ``dt`` (s, the last time step), ``x_moment``
        (sum of the owned nodes' positions weighted 1, 2, 3 per axis, m).
    """
    from mpi4py import MPI

    if iterations < 1 or chunks < 1:
        raise ValueError(f"iterations and chunks must be >= 1, got {iterations}, {chunks}")
    rank, nprocs = comm.Get_rank(), comm.Get_size()
    mesh = HexMesh(size, size, size * nprocs if weak else size)
    if mesh.n_elements < nprocs:
        raise ValueError(f"a mesh of {mesh.n_elements} elements cannot be split over {nprocs} ranks")
    lo, hi = row_block(mesh.n_elements, nprocs, rank)
    nlo, nhi = row_block(mesh.n_nodes, nprocs, rank)
    state = SedovState(mesh, np.arange(lo, hi), np.arange(nlo, nhi), workers=1, chunks=chunks)
    ex = NodeExchange.from_pattern(comm, *exchange_pattern(mesh, state, rank, nprocs))
    mass = corner_mass(state)[:, None]
    ex.reverse_add(mass)
    ex.forward([mass])
    state.nodal_mass = mass[:, 0].copy()
    dt = comm.allreduce(state.constraints(), op=MPI.MIN)
    e0 = comm.allreduce(sum(state.energies()))
    ne, nn, no = state.elems.size, state.nodes.size, int(state.owned.sum())
    comm.Barrier()
    t0, v0, c0 = time.perf_counter(), virtual_clock(), time.process_time()
    for _ in range(iterations):
        _kernel("init_nodes", nn, chunks, state.init_nodes)
        _kernel("volume_forces", ne, chunks, state.volume_forces)
        _kernel("gather_forces", nn, chunks, state.gather_forces)
        ex.reverse_add(state.f)
        _kernel("integrate", no, chunks, lambda dt=dt: state.integrate_owned(dt))
        ex.forward([state.x, state.v, state.a])
        _kernel("update_elements", ne, chunks, lambda dt=dt: state.update_elements(dt))
        local = dt  # stand-in of a skipped constraints region: the time step does not steer control flow
        with skeleton_region("constraints", n=ne, chunks=chunks) as run:
            if run:
                local = state.constraints()
        dt = min(comm.allreduce(local, op=MPI.MIN), DT_GROWTH * dt)
    comm.Barrier()
    elapsed, virtual, cpu = time.perf_counter() - t0, virtual_clock() - v0, time.process_time() - c0
    e_int, e_kin = state.energies()
    moment = float(np.sum(state.x[state.owned] * np.array([1.0, 2.0, 3.0])))
    state.close()
    return {"time": elapsed, "virtual_time": virtual, "cpu_time": cpu, "elements": ne, "nodes": nn,
            "owned_nodes": no, "e_internal": comm.allreduce(e_int), "e_kinetic": comm.allreduce(e_kin),
            "e_initial": e0, "dt": dt, "x_moment": comm.allreduce(moment)}


def main(argv: list[str] | None = None) -> None:
    """MPI entry point (see :mod:`perfmod.measure.proxies.skeleton_cli`)."""
    from perfmod.measure.proxies.skeleton_cli import proxy_main

    def add(ap: Any) -> None:
        ap.add_argument("--size", type=int, required=True, help="elements per mesh edge (size^3 elements)")
        ap.add_argument("--iterations", type=int, default=20)
        ap.add_argument("--chunks", type=int, default=1, help="vectorized pieces per kernel")
        ap.add_argument("--weak", action="store_true", help="weak scaling: size^3 elements per rank")

    def program(comm: Any, args: Any) -> dict[str, Any]:
        return run_lulesh(comm, args.size, args.iterations, args.chunks, weak=args.weak)

    proxy_main("lulesh", add, program, argv)


if __name__ == "__main__":
    main()
