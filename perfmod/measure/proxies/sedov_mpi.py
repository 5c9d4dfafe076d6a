"""Distributed Sedov proxy (paper 001 §5.2, Algorithm 2) with mpi4py.

Rank r owns a block of elements (contiguous ids) and a block of nodes (near
equal blocks along ``node_axis``: a different decomposition), and keeps ghost
copies of the other ranks' nodes its elements reference.  Per iteration:

1. kernels 1-2 of Algorithm 1 on the rank's workers;
2. kernel 3's force gather, then the ghost partial forces are sent to the
   owning ranks and summed there (the reverse half of the node exchange);
3. the owners' leapfrog update (rest of kernel 3), then
   ExchangeNodePositions / Velocities / Accelerations: one packed message
   ``(x, v, a)`` per neighbour from owner to ghost holders;
4. kernels 4-5, and ReduceConstraints: ``Allreduce(MIN)`` of the time step.

Messages are non-blocking (``Isend``/``Irecv``, ``Waitall``) as in §5.2.
Timing follows Eq. 4-6: per rank, computation (kernels including their joins)
and communication (exchanges and the reduction) summed over the iterations,
the maximum over ranks; the total the maximum of the ranks' loop times.
Rank 0 prints one JSON line; run with
``mpiexec -n P python -m perfmod.measure.proxies.sedov_mpi --nx .. --ny .. --nz .. --iterations ..``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from perfmod.measure.proxies.gol import row_block
from perfmod.measure.proxies.ranks import probed, serve
from perfmod.measure.proxies.sedov import DT_GROWTH, SedovState, corner_mass, physics_summary
from perfmod.measure.proxies.sedov_mesh import HexMesh, edge_cut, node_blocks

__all__ = ["NodeExchange", "run_distributed", "main"]


class NodeExchange:
    """Ghost-node exchange pattern between ranks (built once, used every iteration).

    ``recv[s]``: local indices of ghost nodes owned by rank s (what this rank
    receives forward and sends back in the reverse exchange); ``send[s]``:
    local indices of owned nodes rank s holds as ghosts.
    """

    def __init__(self, comm: Any, state: SedovState, node_owner_of: np.ndarray) -> None:
        self.comm = comm
        size, rank = comm.Get_size(), comm.Get_rank()
        ghost = ~state.owned
        owners = node_owner_of[ghost]
        ghost_idx = np.flatnonzero(ghost)
        self.recv = {int(s): ghost_idx[owners == s] for s in np.unique(owners) if s != rank}
        requests = [state.nodes[self.recv[s]] if s in self.recv else np.empty(0, np.int64) for s in range(size)]
        asked = comm.alltoall(requests)
        self.send = {s: np.searchsorted(state.nodes, ids) for s, ids in enumerate(asked) if ids.size}

    @classmethod
    def from_pattern(cls, comm: Any, recv: dict[int, np.ndarray], send: dict[int, np.ndarray]) -> NodeExchange:
        """The exchange with ``recv`` and ``send`` already known (computed from the mesh, no ``alltoall``)."""
        ex = cls.__new__(cls)
        ex.comm, ex.recv, ex.send = comm, recv, send
        return ex

    def _exchange(self, out: dict[int, np.ndarray], into: dict[int, np.ndarray], cols: int,
                  tag: int) -> dict[int, np.ndarray]:
        """Post receives for ``into`` (rows x ``cols``) and sends of ``out``; wait for all."""
        reqs, bufs = [], {}
        for s, idx in into.items():
            bufs[s] = np.zeros((idx.size, cols), dtype=float)  # zeros: a virtual rank's receive moves no data
            reqs.append(self.comm.Irecv(bufs[s], source=s, tag=tag))
        for s, buf in out.items():
            reqs.append(self.comm.Isend(buf, dest=s, tag=tag))
        if reqs:
            if hasattr(self.comm, "Waitall"):  # a recording or virtual communicator
                self.comm.Waitall(reqs)
            else:
                from mpi4py import MPI

                MPI.Request.Waitall(reqs)
        return bufs

    def reverse_add(self, arr: np.ndarray) -> None:
        """Send ghost rows of ``arr`` (n, k) to their owners and add what arrives to the owned rows."""
        out = {s: np.ascontiguousarray(arr[idx]) for s, idx in self.recv.items()}
        bufs = self._exchange(out, self.send, arr.shape[1], tag=11)
        for s, buf in bufs.items():
            np.add.at(arr, self.send[s], buf)

    def forward(self, arrays: list[np.ndarray]) -> None:
        """Copy the owners' rows of ``arrays`` (each (n, k)) into the ghost copies, one packed message each."""
        out = {s: np.ascontiguousarray(np.hstack([a[idx] for a in arrays])) for s, idx in self.send.items()}
        bufs = self._exchange(out, self.recv, sum(a.shape[1] for a in arrays), tag=12)
        for s, buf in bufs.items():
            col = 0
            for a in arrays:
                a[self.recv[s]] = buf[:, col:col + a.shape[1]]
                col += a.shape[1]


def _allreduce(comm: Any, values, op) -> np.ndarray:
    """Element-wise ``Allreduce`` of a short float vector."""
    send = np.asarray(values, dtype=float)
    recv = np.empty_like(send)
    comm.Allreduce(send, recv, op=op)
    return recv


def run_distributed(comm: Any, nx: int, ny: int, nz: int, iterations: int, workers: int = 1, chunks: int = 1,
                    node_axis: str = "z") -> dict[str, Any]:
    """Run Algorithm 2 on ``comm``; every rank returns the same dictionary.

    Keys: ``t_comp``, ``t_comm``, ``t_iter`` (Eq. 4, 5, 6 divided by the
    iteration count, s), ``t_iter_median`` (median over iterations of the
    slowest rank's iteration time, s), ``t_iter_min`` (its fastest iteration,
    s), ``x1_bytes`` (largest persistent memory of a rank),
    ``x1_total_bytes``, ``x2_chunks``, ``x3_peer_edges`` (largest edge-cut
    between the workers of a rank), ``x4_interprocess_edges`` (largest
    element-node references from a rank's elements to other ranks' nodes),
    ``x5_processes``, and the final physics (as :func:`run_shared`).
    """
    from mpi4py import MPI

    size, rank = comm.Get_size(), comm.Get_rank()
    mesh = HexMesh(nx, ny, nz)
    lo, hi = row_block(mesh.n_elements, size, rank)
    node_owner = node_blocks(mesh, size, node_axis)
    state = SedovState(mesh, np.arange(lo, hi), np.flatnonzero(node_owner == rank), workers, chunks, node_axis)
    try:
        ex = NodeExchange(comm, state, node_owner[state.nodes])
        inter = int(edge_cut(mesh.connectivity(np.arange(lo, hi)), np.full(hi - lo, rank), node_owner, size)[rank]) \
            if size > 1 else 0
        mass = corner_mass(state)[:, None]
        ex.reverse_add(mass)
        ex.forward([mass])
        state.nodal_mass = mass[:, 0].copy()
        dt = comm.allreduce(state.constraints(), op=MPI.MIN)
        e0 = float(_allreduce(comm, state.energies(), MPI.SUM).sum())
        t_comp = t_comm = 0.0
        per_iter = np.zeros(iterations)
        comm.Barrier()
        t0 = time.perf_counter()
        for it in range(iterations):
            c0 = time.perf_counter()
            state.init_nodes()
            state.volume_forces()
            state.gather_forces()
            c1 = time.perf_counter()
            ex.reverse_add(state.f)
            c2 = time.perf_counter()
            state.integrate_owned(dt)
            c3 = time.perf_counter()
            ex.forward([state.x, state.v, state.a])
            c4 = time.perf_counter()
            state.update_elements(dt)
            local = state.constraints()
            c5 = time.perf_counter()
            dt = min(comm.allreduce(local, op=MPI.MIN), DT_GROWTH * dt)
            c6 = time.perf_counter()
            t_comp += (c1 - c0) + (c3 - c2) + (c5 - c4)
            t_comm += (c2 - c1) + (c4 - c3) + (c6 - c5)
            per_iter[it] = c6 - c0
        loop = time.perf_counter() - t0
        mem = state.memory_bytes()
        tmax = _allreduce(comm, [t_comp, t_comm, loop, mem, state.peer_edges(), inter], MPI.MAX)
        e_int, e_kin = _allreduce(comm, state.energies(), MPI.SUM)
        summ = physics_summary(state, dt)
        slowest = _allreduce(comm, per_iter, MPI.MAX)  # per iteration, the slowest rank
        return {
            "t_comp": tmax[0] / iterations, "t_comm": tmax[1] / iterations, "t_iter": tmax[2] / iterations,
            "t_iter_median": float(np.median(slowest)), "t_iter_min": float(slowest.min()),
            "iterations": iterations, "nx": nx, "ny": ny, "nz": nz, "workers": workers, "chunks": chunks,
            "node_axis": node_axis, "x1_bytes": int(tmax[3]), "x1_total_bytes": int(comm.allreduce(mem)),
            "x2_chunks": chunks, "x3_peer_edges": int(tmax[4]), "x4_interprocess_edges": int(tmax[5]),
            "x5_processes": size, "e_internal": float(e_int), "e_kinetic": float(e_kin), "e_initial": float(e0),
            "dt": dt, "x_moment": comm.allreduce(summ["x_moment"]), "v_max": comm.allreduce(summ["v_max"], op=MPI.MAX),
        }
    finally:
        state.close()


def main(argv: list[str] | None = None) -> None:
    """MPI entry point: rank 0 prints the :func:`run_distributed` result as one JSON line (``--batch``:
    :func:`~perfmod.measure.proxies.ranks.serve`)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nx", type=int, required=True)
    ap.add_argument("--ny", type=int, required=True)
    ap.add_argument("--nz", type=int, required=True)
    ap.add_argument("--iterations", type=int, required=True)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--chunks", type=int, default=1)
    ap.add_argument("--node-axis", default="z", choices=["x", "y", "z"])

    def record(comm: Any, args: argparse.Namespace) -> dict[str, Any] | None:
        res, _, reports = probed(comm, lambda: run_distributed(comm, args.nx, args.ny, args.nz, args.iterations,
                                                               args.workers, args.chunks, args.node_axis))
        return {**res, "interference": {**reports, "threads": args.workers}} if comm.Get_rank() == 0 else None

    serve(ap, record, argv)


if __name__ == "__main__":
    main()
