"""Sedov-like Lagrangian proxy (paper 001 §5, Algorithms 1 and 2).

A staggered Lagrangian hydrodynamics step on the structured hexahedral mesh
of :mod:`perfmod.measure.proxies.sedov_mesh`, in the spirit of LULESH (the DOE
benchmark the paper re-wrote, its ref. [25]): node positions, velocities,
accelerations, forces and masses; element volumes, specific internal
energies, pressures (ideal gas) and artificial viscosities.  The blast is
the energy put into the corner element at the origin; the planes x = 0,
y = 0 and z = 0 are symmetry planes and the far faces are rigid walls (zero
normal velocity on all six faces), so the box stays closed and the total
energy stays constant up to the time-discretisation error however many
iterations run.

One iteration runs the five kernels of Algorithm 1, each spawned on every
worker and joined:

1. ``InitializeNodes`` (node partition): clear the nodal forces.
2. ``ComputeVolumeForces`` (element partition): the pressure force on the 8
   corners, ``F_a = (p + q) dV/dx_a`` with the one-point volume
   ``V = 8 det J`` of the trilinear map; reads the positions of nodes owned
   by other workers.  The corner forces of an element sum to zero.
3. ``UpdateNodeQuantities`` (node partition): gather the corner forces of
   the (up to 8) elements around each node (reads other workers' elements),
   ``a = F / m``, ``v += a dt``, ``x += v dt`` (leapfrog).
4. ``UpdateElementProperties`` (element partition): new volume, work
   ``de = -(p + q) dV / M``, pressure ``p = (gamma - 1) rho e``, artificial
   viscosity ``q`` on compression.
5. ``CalculateConstraints`` (element partition): Courant and volume-change
   limits of the time step; their minimum over workers is the next ``dt``
   (growth capped at 1.2x per iteration).

Workers are threads of one process (NumPy releases the GIL inside its
kernels); elements and nodes are decomposed differently (elements by id
blocks, nodes by blocks along ``node_axis``), so kernels read other
partitions' data: the peer accesses X3 counted by
:func:`perfmod.measure.proxies.sedov_mesh.edge_cut`.  Each worker processes its range
in ``chunks`` vectorized pieces: the counterpart of the GPU thread count X2.

The distributed version (Algorithm 2, :func:`run_distributed`) gives each MPI
rank a block of elements and a block of nodes (again different
decompositions) plus ghost copies of the other ranks' nodes its elements use.
After the node kernel's force gather, the ghost partial forces go to the
owners (summed there) and, after the owners' update, positions, velocities
and accelerations go back to the ghost copies (ExchangeNodePositions /
Velocities / Accelerations, one packed non-blocking message per neighbour);
the constraint minimum is an ``Allreduce`` (ReduceConstraints).  Times follow
Eq. 4-6: computation and communication summed over iterations, maximum over
ranks.  The distributed driver is :func:`perfmod.measure.proxies.sedov_mpi.run_distributed`; run it with
``mpiexec -n P python -m perfmod.measure.proxies.sedov_mpi ...``.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from perfmod.measure.interference import Probe, classify
from perfmod.measure.proxies.sedov_mesh import CORNERS, HexMesh, edge_cut, node_blocks, split_sorted

__all__ = ["GAMMA", "DN", "hex_volume", "hex_volume_gradient", "SedovState", "corner_mass", "physics_summary",
           "run_shared"]

GAMMA = 1.4  # ideal-gas ratio of specific heats
RHO0 = 1.0  # initial density (kg/m^3)
BLAST_ENERGY = 1.0  # energy put into the corner element (J)
CFL = 0.3  # Courant factor
DVOV_MAX = 0.1  # largest relative volume change per step
Q_LIN, Q_QUAD = 0.25, 1.5  # linear and quadratic artificial-viscosity coefficients
DT_GROWTH = 1.2

#: derivatives of the trilinear shape functions at the element centre, d N_a / d xi_j, shape (8, 3)
DN = (2.0 * CORNERS - 1.0) / 8.0


def _jacobian_cofactor(xe: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centre Jacobian determinant and cofactor matrix of elements with corner positions ``xe`` (n, 8, 3)."""
    jac = np.einsum("nai,aj->nij", xe, DN)
    c0, c1, c2 = jac[:, :, 0], jac[:, :, 1], jac[:, :, 2]
    cof = np.stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)], axis=2)
    det = np.einsum("ni,ni->n", c0, cof[:, :, 0])
    return det, cof


def hex_volume(xe: np.ndarray) -> np.ndarray:
    """One-point volume ``8 det J(0)`` (m^3) of hexahedra with corner positions ``xe`` (n, 8, 3) (m).

    Exact for parallelepipeds (a box of edges a, b, c has volume a b c).
    """
    return 8.0 * _jacobian_cofactor(xe)[0]


def hex_volume_gradient(xe: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Volumes (m^3) and ``dV/dx_a`` (m^2), shape (n, 8, 3), of hexahedra with corners ``xe``.

    ``dV/dx_a = 8 cof(J) dN_a``; the gradients of one element sum to zero over
    its corners, so internal forces conserve momentum.
    """
    det, cof = _jacobian_cofactor(xe)
    return 8.0 * det, 8.0 * np.einsum("nij,aj->nai", cof, DN)


class SedovState:
    """Local arrays and the five kernels of Algorithm 1 for one process.

    Parameters
    ----------
    mesh : HexMesh
        The global mesh.
    elems : array of int
        Global ids of the elements this process owns (sorted).
    owned_nodes : array of int
        Global ids of the nodes this process owns (sorted).
    workers : int
        Worker threads (partitions) inside the process.
    chunks : int
        Vectorized pieces each worker splits its range into (X2).
    node_axis : {"x", "y", "z"}
        Axis along which the process's nodes are split over its workers.
    """

    def __init__(self, mesh: HexMesh, elems: np.ndarray, owned_nodes: np.ndarray, workers: int = 1,
                 chunks: int = 1, node_axis: str = "z") -> None:
        self.mesh, self.workers, self.chunks = mesh, int(workers), int(chunks)
        if self.chunks < 1:
            raise ValueError(f"chunks must be a positive integer, got {chunks!r}")
        self.elems = np.asarray(elems, dtype=np.int64)
        conn_g = mesh.connectivity(self.elems)
        self.nodes = np.union1d(np.unique(conn_g), owned_nodes)  # local node ids (global, sorted)
        self.owned = np.isin(self.nodes, owned_nodes)
        self.conn = np.searchsorted(self.nodes, conn_g)
        ne, nn = self.elems.size, self.nodes.size
        # node -> 8 corner slots in the flat corner-force array (ne*8 is a zero pad row)
        slots = np.full((nn, 8), ne * 8, dtype=np.int64)
        flat = self.conn.ravel()
        for c in range(8):
            idx = flat[c::8]
            slots[idx, c] = np.arange(ne) * 8 + c
        self.slots = slots
        self.x = mesh.coordinates(self.nodes)
        self.v = np.zeros((nn, 3))
        self.a = np.zeros((nn, 3))
        self.f = np.zeros((nn, 3))
        ijk = mesh.node_ijk(self.nodes)
        self.fixed = (ijk == 0) | (ijk == np.array([mesh.nx, mesh.ny, mesh.nz]))  # walls: zero normal velocity
        self.fc = np.zeros((ne * 8 + 1, 3))
        self.vol = hex_volume(self.x[self.conn])
        self.mass = RHO0 * self.vol
        self.e = np.zeros(ne)
        self.e[self.elems == 0] = BLAST_ENERGY / self.mass[self.elems == 0]
        self.p = (GAMMA - 1.0) * RHO0 * self.e
        self.q = np.zeros(ne)
        self.div = np.zeros(ne)
        self.nodal_mass = np.zeros(nn)  # set by the driver (needs the other processes' elements)
        self.elem_owner = split_sorted(np.arange(ne), self.workers)  # contiguous blocks of local elements
        self.node_owner = node_blocks(mesh, self.workers, node_axis, self.nodes)
        self.elem_ranges = [np.flatnonzero(self.elem_owner == w) for w in range(self.workers)]
        self.node_ranges = [np.flatnonzero(self.node_owner == w) for w in range(self.workers)]
        self.pool = ThreadPoolExecutor(self.workers) if self.workers > 1 else None

    # -- bookkeeping -------------------------------------------------------
    def memory_bytes(self) -> int:
        """Persistent memory of the process's arrays (bytes): X1 of §5.1."""
        arrays = (self.conn, self.slots, self.nodes, self.owned, self.x, self.v, self.a, self.f, self.fixed,
                  self.fc, self.vol, self.mass, self.e, self.p, self.q, self.div, self.nodal_mass, self.elems)
        return int(sum(a.nbytes for a in arrays))

    def peer_edges(self) -> int:
        """Largest edge-cut between this process's workers (X3)."""
        return int(edge_cut(self.conn, self.elem_owner, self.node_owner, self.workers).max())

    def close(self) -> None:
        """Stop the worker threads."""
        if self.pool is not None:
            self.pool.shutdown()

    def _spawn(self, kernel, ranges: list[np.ndarray], *args) -> list:
        """SPAWN the kernel on every worker (over its chunks) and JOIN."""
        def work(w: int) -> list:
            idx = ranges[w]
            out = []
            for c in range(self.chunks):
                lo, hi = c * idx.size // self.chunks, (c + 1) * idx.size // self.chunks
                if hi > lo:
                    out.append(kernel(idx[lo:hi], *args))
            return out
        if self.pool is None:
            return work(0)
        return [r for res in self.pool.map(work, range(self.workers)) for r in res]

    # -- the five kernels ---------------------------------------------------
    def _init_nodes(self, idx: np.ndarray) -> None:
        self.f[idx] = 0.0

    def _volume_forces(self, idx: np.ndarray) -> None:
        _, grad = hex_volume_gradient(self.x[self.conn[idx]])
        grad *= (self.p[idx] + self.q[idx])[:, None, None]
        rows = (idx[:, None] * 8 + np.arange(8)).ravel()
        self.fc[rows] = grad.reshape(-1, 3)

    def _gather_forces(self, idx: np.ndarray) -> None:
        self.f[idx] += self.fc[self.slots[idx]].sum(axis=1)

    def _integrate(self, idx: np.ndarray, dt: float) -> None:
        a = self.f[idx] / self.nodal_mass[idx, None]
        fixed = self.fixed[idx]
        a[fixed] = 0.0
        v = self.v[idx] + a * dt
        v[fixed] = 0.0
        self.a[idx], self.v[idx] = a, v
        self.x[idx] += v * dt

    def _update_nodes(self, idx: np.ndarray, dt: float) -> None:
        self._gather_forces(idx)
        self._integrate(idx, dt)

    def _update_elements(self, idx: np.ndarray, dt: float) -> None:
        vnew = hex_volume(self.x[self.conn[idx]])
        if np.any(vnew <= 0.0):
            bad = self.elems[idx][vnew <= 0.0]
            raise FloatingPointError(f"Sedov proxy: elements {bad[:5].tolist()} inverted (non-positive volume)")
        m, vold = self.mass[idx], self.vol[idx]
        e = np.maximum(self.e[idx] - (self.p[idx] + self.q[idx]) * (vnew - vold) / m, 0.0)
        rho = m / vnew
        p = (GAMMA - 1.0) * rho * e
        div = (vnew - vold) / (vnew * dt)
        length = np.cbrt(vnew)
        c = np.sqrt(GAMMA * p / rho)
        comp = np.minimum(div, 0.0)
        self.q[idx] = rho * (Q_QUAD * (length * comp) ** 2 + Q_LIN * length * c * -comp)
        self.e[idx], self.p[idx], self.vol[idx], self.div[idx] = e, p, vnew, div

    def _constraints(self, idx: np.ndarray) -> float:
        vol = self.vol[idx]
        rho = self.mass[idx] / vol
        length = np.cbrt(vol)
        speed = np.sqrt(GAMMA * (self.p[idx] + self.q[idx]) / rho) + length * np.abs(self.div[idx])
        with np.errstate(divide="ignore"):
            courant = np.where(speed > 0.0, CFL * length / speed, np.inf)
            hydro = np.where(self.div[idx] != 0.0, DVOV_MAX / np.abs(self.div[idx]), np.inf)
        return float(min(courant.min(initial=np.inf), hydro.min(initial=np.inf)))

    # -- phases used by the drivers ------------------------------------------
    def init_nodes(self) -> None:
        """Kernel 1 on every worker."""
        self._spawn(self._init_nodes, self.node_ranges)

    def volume_forces(self) -> None:
        """Kernel 2 on every worker."""
        self._spawn(self._volume_forces, self.elem_ranges)

    def update_nodes(self, dt: float) -> None:
        """Kernel 3 (force gather and leapfrog update) on every worker."""
        self._spawn(self._update_nodes, self.node_ranges, dt)

    def gather_forces(self) -> None:
        """First half of kernel 3 (distributed version: before the owners receive ghost forces)."""
        self._spawn(self._gather_forces, self.node_ranges)

    def integrate_owned(self, dt: float) -> None:
        """Second half of kernel 3 on the owned nodes (distributed version)."""
        ranges = [r[self.owned[r]] for r in self.node_ranges]
        self._spawn(self._integrate, ranges, dt)

    def update_elements(self, dt: float) -> None:
        """Kernel 4 on every worker."""
        self._spawn(self._update_elements, self.elem_ranges, dt)

    def constraints(self) -> float:
        """Kernel 5 on every worker; the minimum over workers (s)."""
        return min(self._spawn(self._constraints, self.elem_ranges), default=np.inf)

    def energies(self) -> tuple[float, float]:
        """Internal energy of the elements and kinetic energy of the owned nodes (J)."""
        kin = 0.5 * float(np.sum(self.nodal_mass[self.owned] * np.einsum("ni,ni->n", self.v, self.v)[self.owned]))
        return float(np.sum(self.mass * self.e)), kin


def corner_mass(state: SedovState) -> np.ndarray:
    """Partial nodal masses from this process's elements (kg): an eighth of each element's mass per corner."""
    fc = np.zeros(state.fc.shape[0])
    fc[:-1] = np.repeat(state.mass / 8.0, 8)
    return fc[state.slots].sum(axis=1)


def physics_summary(state: SedovState, dt: float) -> dict[str, float]:
    owned = state.owned
    xo = state.x[owned]
    return {"dt": dt, "x_moment": float(np.sum(xo * np.array([1.0, 2.0, 3.0]))),
            "v_max": float(np.abs(state.v[owned]).max(initial=0.0))}


def run_shared(nx: int, ny: int, nz: int, iterations: int, workers: int = 2, chunks: int = 1,
               node_axis: str = "z", return_state: bool = False) -> dict[str, Any]:
    """Shared-memory version (Algorithm 1): ``workers`` threads over one process's arrays.

    Returns per-iteration times (s): ``t_iter`` (loop time / iterations),
    ``t_iter_median`` (median over iterations: robust to bursts of load from
    other processes), ``t_iter_min`` (fastest iteration) and ``t_kernel`` per
    kernel, the variables ``x1_bytes`` (persistent memory),
    ``x2_chunks``, ``x3_peer_edges`` (max edge-cut over workers), and the final
    physics (energies in J, ``dt`` in s, a position moment) for checks; the
    interference record of the timed loop (``interference``: the probe
    report, ``interfered``, ``interference_reason``, ``off_cpu``,
    :mod:`perfmod.measure.interference`).
    """
    mesh = HexMesh(nx, ny, nz)
    state = SedovState(mesh, np.arange(mesh.n_elements), np.arange(mesh.n_nodes), workers, chunks, node_axis)
    try:
        state.nodal_mass = corner_mass(state)
        dt = state.constraints()
        e0 = sum(state.energies())
        kt = np.zeros(5)
        per_iter = np.zeros(iterations)
        probe = Probe()
        t0 = time.perf_counter()
        for it in range(iterations):
            c = [time.perf_counter()]
            state.init_nodes()
            c.append(time.perf_counter())
            state.volume_forces()
            c.append(time.perf_counter())
            state.update_nodes(dt)
            c.append(time.perf_counter())
            state.update_elements(dt)
            c.append(time.perf_counter())
            dt = min(state.constraints(), DT_GROWTH * dt)
            c.append(time.perf_counter())
            kt += np.diff(c)
            per_iter[it] = c[-1] - c[0]
        loop = time.perf_counter() - t0
        report = {**probe.stop(), "threads": workers}
        verdict = classify(report)
        e_int, e_kin = state.energies()
        out: dict[str, Any] = {
            "t_iter": loop / iterations, "t_iter_median": float(np.median(per_iter)),
            "t_iter_min": float(per_iter.min()),
            "t_kernel": (kt / iterations).tolist(), "iterations": iterations,
            "nx": nx, "ny": ny, "nz": nz, "workers": workers, "chunks": chunks, "node_axis": node_axis,
            "x1_bytes": state.memory_bytes(), "x2_chunks": chunks, "x3_peer_edges": state.peer_edges(),
            "e_internal": e_int, "e_kinetic": e_kin, "e_initial": e0, **physics_summary(state, dt),
            "interference": report, "interfered": verdict.interfered, "interference_reason": verdict.reason,
            "off_cpu": verdict.off_cpu}
        if return_state:
            out["state"] = state
        return out
    finally:
        state.close()
