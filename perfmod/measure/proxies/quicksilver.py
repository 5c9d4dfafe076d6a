"""Quicksilver-like Monte Carlo particle transport proxy (paper 001 §6, Algorithms 3-5).

A structured mesh of ``nx x ny x nz`` hexahedra on the unit cube; like
Quicksilver (the paper's ref. [36]) every element has 6 faces, 24 facets
(each face split into 4 triangles around its centre) and 14 nodes (8
corners, 6 face centres).  The mesh arrays per element are the facet planes
(24 x (normal, offset)), the facet neighbours (24), the 14 node coordinates
and a total cross-section; their size is the mesh memory X1.

Particles have a position, a unit direction, an element, a weight and a
state; they are created at random positions and directions.  One *tracking
iteration* moves every live particle for one census time step: segment by
segment it goes to the nearest of (collision, facet crossing, census), with
the distance to the facet found from all 24 facet planes of its element (the
mesh reads).  At a collision the particle is absorbed with probability
``absorption`` or scattered isotropically; a particle leaving the domain
escapes; one entering another worker's block stops and waits there to be
migrated.  Killed particles stay allocated until the next population control,
so the active particle memory is below the allocated one (§6.3).

Algorithm 4: each of ``K`` iterations runs ``m`` tracking iterations on every
worker, then a barrier; every ``f`` iterations Algorithm 5's population
control migrates waiting particles to the worker owning their element,
compacts the arrays and, per worker, draws a desired count ``r`` (normal
around the target, 10 % spread) and deletes random particles down to ``r`` or
adds new random ones up to it.  Workers are threads of one process
(:class:`concurrent.futures.ThreadPoolExecutor`; NumPy releases the GIL),
each owning a contiguous block of elements (slabs along z) and the particles
in it, each with its own random stream: results depend on the seed only.

Measured per run (§6.2-6.3): mean time per iteration and per tracking
iteration (s), Eq. 7's total from the per-worker times, mesh memory (X1, B),
mean allocated particle memory (X2, B), threads (X3), and a particle ledger.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perfmod.measure.interference import Probe, classify
from perfmod.measure.proxies.sedov_mesh import CORNERS, HexMesh, split_sorted
from perfmod.models.regression.responses import t_tot_montecarlo

__all__ = ["QSMesh", "Particles", "QuicksilverSim", "run_quicksilver"]

ESCAPE = -1
#: outward unit normals of the 6 faces (-x, +x, -y, +y, -z, +z)
FACE_NORMALS = np.array([[-1, 0, 0], [1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]], dtype=float)


@dataclass
class QSMesh:
    """Mesh arrays of the proxy (unit cube, ``nx x ny x nz`` elements)."""

    nx: int
    ny: int
    nz: int
    sigma_t: float = 2.0  # total macroscopic cross-section (1/m)

    def __post_init__(self) -> None:
        self.box = HexMesh(self.nx, self.ny, self.nz)
        n = self.box.n_elements
        ijk = self.box.element_ijk()
        h = 1.0 / np.array([self.nx, self.ny, self.nz], dtype=float)
        lo, hi = ijk * h, (ijk + 1) * h
        # face planes n . x = d, each repeated for the face's 4 triangular facets
        d = np.empty((n, 6))
        d[:, 0::2] = -lo
        d[:, 1::2] = hi
        planes = np.concatenate([np.broadcast_to(FACE_NORMALS, (n, 6, 3)), d[:, :, None]], axis=2)
        self.facets = np.repeat(planes, 4, axis=1).copy()  # (n, 24, 4)
        step = np.array([-1, 1, -self.nx, self.nx, -self.nx * self.ny, self.nx * self.ny])
        at_wall = np.stack([ijk[:, 0] == 0, ijk[:, 0] == self.nx - 1, ijk[:, 1] == 0, ijk[:, 1] == self.ny - 1,
                            ijk[:, 2] == 0, ijk[:, 2] == self.nz - 1], axis=1)
        nbr = np.where(at_wall, ESCAPE, np.arange(n)[:, None] + step[None, :])
        self.facet_neighbor = np.repeat(nbr, 4, axis=1)  # (n, 24)
        centres = (lo + hi) / 2
        corners = lo[:, None, :] + CORNERS[None, :, :] * h
        face_centres = centres[:, None, :] + FACE_NORMALS[None, :, :] * h / 2
        self.nodes = np.concatenate([corners, face_centres], axis=1)  # (n, 14, 3)
        self.xs = np.full(n, float(self.sigma_t))
        self.lo, self.h = lo, h

    @property
    def n_elements(self) -> int:
        """Number of elements."""
        return self.box.n_elements

    def memory_bytes(self) -> int:
        """Mesh memory (bytes): X1 of paper 001 §6.3."""
        return int(self.facets.nbytes + self.facet_neighbor.nbytes + self.nodes.nbytes + self.xs.nbytes)

    def locate(self, x: np.ndarray) -> np.ndarray:
        """Element ids of positions ``x`` (n, 3) in the unit cube."""
        n = np.array([self.nx, self.ny, self.nz])
        ijk = np.clip(np.floor(x * n).astype(np.int64), 0, n - 1)
        return ijk[:, 0] + self.nx * (ijk[:, 1] + self.ny * ijk[:, 2])


@dataclass
class Particles:
    """Structure of arrays of one worker's particles (allocated; ``alive`` marks the active ones)."""

    x: np.ndarray
    u: np.ndarray
    elem: np.ndarray
    weight: np.ndarray
    alive: np.ndarray
    waiting: np.ndarray  # entered another worker's block; migrated at the next population control

    @classmethod
    def empty(cls) -> Particles:
        """No particles."""
        return cls(np.empty((0, 3)), np.empty((0, 3)), np.empty(0, np.int64), np.empty(0), np.empty(0, bool),
                   np.empty(0, bool))

    def __len__(self) -> int:
        return int(self.elem.size)

    def nbytes(self) -> int:
        """Allocated particle memory (bytes)."""
        return int(sum(a.nbytes for a in (self.x, self.u, self.elem, self.weight, self.alive, self.waiting)))

    def take(self, mask: np.ndarray) -> Particles:
        """The particles selected by ``mask`` (a copy)."""
        return Particles(self.x[mask], self.u[mask], self.elem[mask], self.weight[mask], self.alive[mask],
                         self.waiting[mask])

    @staticmethod
    def concat(parts: list[Particles]) -> Particles:
        """All particles of ``parts`` in order."""
        if not parts:
            return Particles.empty()
        return Particles(*(np.concatenate([getattr(p, f) for p in parts])
                           for f in ("x", "u", "elem", "weight", "alive", "waiting")))


def isotropic(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` unit vectors uniformly distributed on the sphere."""
    mu = rng.uniform(-1.0, 1.0, n)
    phi = rng.uniform(0.0, 2 * np.pi, n)
    s = np.sqrt(1.0 - mu * mu)
    return np.stack([s * np.cos(phi), s * np.sin(phi), mu], axis=1)


@dataclass
class Ledger:
    """Particle bookkeeping of one run (counts)."""

    initial: int = 0
    absorbed: int = 0
    escaped: int = 0
    added: int = 0
    deleted: int = 0
    migrated: int = 0
    collisions: int = 0
    facet_crossings: int = 0
    history: list[dict[str, int]] = field(default_factory=list)


class QuicksilverSim:
    """State and kernels of the proxy (Algorithms 3-5) on ``workers`` threads."""

    def __init__(self, mesh: QSMesh, particles: int, workers: int = 1, seed: int = 0, census_dt: float = 0.01,
                 absorption: float = 0.1, spread: float = 0.1) -> None:
        if particles < 0 or workers < 1:
            raise ValueError(f"need particles >= 0 and workers >= 1, got {particles}, {workers}")
        self.mesh, self.workers, self.target = mesh, int(workers), int(particles)
        self.census_dt, self.absorption, self.spread = float(census_dt), float(absorption), float(spread)
        self.owner = split_sorted(np.arange(mesh.n_elements), self.workers)  # element blocks (z slabs)
        self.blocks = [np.flatnonzero(self.owner == w) for w in range(self.workers)]
        seqs = np.random.SeedSequence(seed).spawn(self.workers + 1)
        self.rngs = [np.random.default_rng(s) for s in seqs[1:]]
        rng0 = np.random.default_rng(seqs[0])
        x = rng0.random((self.target, 3))
        allp = Particles(x, isotropic(rng0, self.target), mesh.locate(x), np.ones(self.target),
                         np.ones(self.target, bool), np.zeros(self.target, bool))
        self.parts = [allp.take(self.owner[allp.elem] == w) for w in range(self.workers)]
        self.ledger = Ledger(initial=self.target)
        self.pool = ThreadPoolExecutor(self.workers) if self.workers > 1 else None
        self._counts = np.zeros((self.workers, 4), dtype=np.int64)  # absorbed, escaped, collisions, crossings

    def close(self) -> None:
        """Stop the worker threads."""
        if self.pool is not None:
            self.pool.shutdown()

    def spawn(self, fn, *args) -> list:
        """SPAWN ``fn(worker, *args)`` on every worker and JOIN; the results in worker order."""
        if self.pool is None:
            return [fn(0, *args)]
        return list(self.pool.map(lambda w: fn(w, *args), range(self.workers)))

    # -- Algorithm 4: tracking -----------------------------------------------
    def track(self, w: int, max_segments: int = 1000) -> None:
        """ParticleTrackingKernel: one census step for worker ``w``'s live particles."""
        p, m, rng = self.parts[w], self.mesh, self.rngs[w]
        act = np.flatnonzero(p.alive & ~p.waiting)
        t_left = np.full(act.size, self.census_dt)  # unit speed: distance = time
        for _ in range(max_segments):
            if act.size == 0:
                return
            e, x, u = p.elem[act], p.x[act], p.u[act]
            planes = m.facets[e]  # (k, 24, 4): the mesh reads
            nu = np.einsum("kfi,ki->kf", planes[:, :, :3], u)
            nx = np.einsum("kfi,ki->kf", planes[:, :, :3], x)
            with np.errstate(divide="ignore", invalid="ignore"):
                dist = np.where(nu > 0, (planes[:, :, 3] - nx) / nu, np.inf)
            facet = np.argmin(dist, axis=1)
            s_facet = np.maximum(dist[np.arange(act.size), facet], 0.0)
            s_coll = -np.log1p(-rng.random(act.size)) / m.xs[e]
            s = np.minimum(np.minimum(s_facet, s_coll), t_left)
            p.x[act] = x + u * s[:, None]
            t_left = t_left - s
            census = t_left <= 0.0
            coll = ~census & (s_coll <= s_facet)
            cross = ~census & ~coll
            # collisions: absorb or scatter
            ci = np.flatnonzero(coll)
            absorbed = rng.random(ci.size) < self.absorption
            p.alive[act[ci[absorbed]]] = False
            scat = act[ci[~absorbed]]
            p.u[scat] = isotropic(rng, scat.size)
            # facet crossings: next element, escape, or wait for migration
            xi = np.flatnonzero(cross)
            nxt = m.facet_neighbor[e[xi], facet[xi]]
            esc = nxt == ESCAPE
            p.alive[act[xi[esc]]] = False
            moved, nxt = act[xi[~esc]], nxt[~esc]
            p.elem[moved] = nxt
            p.waiting[moved[self.owner[nxt] != w]] = True
            self._counts[w] += (absorbed.sum(), esc.sum(), ci.size, xi.size)
            keep = np.zeros(act.size, bool)
            keep[ci[~absorbed]] = True  # scattered: go on
            keep[xi[~esc][self.owner[nxt] == w]] = True  # crossed into an element of this worker's block
            act, t_left = act[keep], t_left[keep]
        raise RuntimeError(f"worker {w}: particles still moving after {max_segments} segments")

    def track_many(self, w: int, m: int) -> float:
        """``m`` tracking iterations of worker ``w``; its time (s), T_ijk summed over j of Eq. 7."""
        t0 = time.perf_counter()
        for _ in range(m):
            self.track(w)
        return time.perf_counter() - t0

    # -- Algorithm 5: population control -------------------------------------
    def population_control(self) -> dict[str, int]:
        """Migrate waiting particles, drop killed ones, then delete or add to a random desired count per worker."""
        movers, counts = [], {"migrated": 0, "added": 0, "deleted": 0}
        for w, p in enumerate(self.parts):
            go = p.alive & p.waiting
            counts["migrated"] += int(go.sum())
            movers.append(p.take(go))
            self.parts[w] = p.take(p.alive & ~p.waiting)
        mv = Particles.concat(movers)
        mv.waiting[:] = False
        for w in range(self.workers):
            self.parts[w] = Particles.concat([self.parts[w], mv.take(self.owner[mv.elem] == w)])
        share = self.target / self.workers
        for w in range(self.workers):
            rng, p = self.rngs[w], self.parts[w]
            r = max(0, int(round(rng.normal(share, self.spread * share))))
            n = len(p)
            if r <= n:
                keep = np.zeros(n, bool)
                keep[rng.choice(n, r, replace=False)] = True
                self.parts[w] = p.take(keep)
                counts["deleted"] += n - r
            else:
                k = r - n
                blk = self.blocks[w]
                e = blk[rng.integers(0, blk.size, k)]
                x = self.mesh.lo[e] + rng.random((k, 3)) * self.mesh.h
                new = Particles(x, isotropic(rng, k), e, np.ones(k), np.ones(k, bool), np.zeros(k, bool))
                self.parts[w] = Particles.concat([p, new])
                counts["added"] += k
        return counts

    # -- bookkeeping -------------------------------------------------------
    def alive(self) -> int:
        """Live particles (tracked or waiting)."""
        return int(sum(p.alive.sum() for p in self.parts))

    def particle_bytes(self) -> int:
        """Allocated particle memory over all workers (bytes)."""
        return sum(p.nbytes() for p in self.parts)

    def flush_counts(self) -> None:
        """Move the per-worker event counts into the ledger."""
        tot = self._counts.sum(axis=0)
        self.ledger.absorbed += int(tot[0])
        self.ledger.escaped += int(tot[1])
        self.ledger.collisions += int(tot[2])
        self.ledger.facet_crossings += int(tot[3])
        self._counts[:] = 0


def run_quicksilver(nx: int, ny: int, nz: int, particles: int, iterations: int = 10, m: int = 5, f: int = 5,
                    workers: int = 1, seed: int = 0, sigma_t: float = 2.0, return_sim: bool = False,
                    **kw: Any) -> dict[str, Any]:
    """Algorithm 3: ``iterations`` iterations of ``m`` tracking iterations, population control every ``f``.

    Returns per-iteration means (s): ``t_iter`` (wall time per iteration),
    ``t_track`` (per tracking iteration: the slowest worker's ``m`` tracking
    iterations / m, averaged; ``t_track_median`` the median, ``t_track_min`` the minimum over
    iterations),
    ``t_popctl`` (per population control), Eq. 7's
    ``t_total_eq7`` (s); ``x1_mesh_bytes``, ``x2_particle_bytes`` (mean over
    iterations of the allocated particle memory), ``x3_threads``,
    ``mean_particles`` (live, mean over iterations) and the ledger counts;
    the interference record of the timed loop (``interference``,
    ``interfered``, ``interference_reason``, ``off_cpu``,
    :mod:`perfmod.measure.interference`).
    ``sigma_t`` is the cross-section (1/m); ``kw`` go to :class:`QuicksilverSim`
    (``census_dt``, ``absorption``, ``spread``).
    """
    if iterations < 1 or m < 1 or f < 1:
        raise ValueError(f"iterations, m and f must be positive, got {iterations}, {m}, {f}")
    sim = QuicksilverSim(QSMesh(nx, ny, nz, sigma_t), particles, workers, seed, **kw)
    try:
        track_t = np.zeros((iterations, sim.workers))
        pop_t, mem, live = [], [], []
        probe = Probe()
        t0 = time.perf_counter()
        for i in range(1, iterations + 1):
            mem.append(sim.particle_bytes())
            live.append(sim.alive())
            track_t[i - 1] = sim.spawn(sim.track_many, m)  # ends in BARRIER(n)
            sim.flush_counts()
            if i % f == 0:
                p0 = time.perf_counter()
                c = sim.population_control()
                pop_t.append(time.perf_counter() - p0)
                for k, v in c.items():
                    setattr(sim.ledger, k, getattr(sim.ledger, k) + v)
                sim.ledger.history.append({"iteration": i, "alive": sim.alive(), **c})
        loop = time.perf_counter() - t0
        report = {**probe.stop(), "threads": sim.workers}
        verdict = classify(report)
        led = sim.ledger
        out: dict[str, Any] = {
            "t_iter": loop / iterations, "t_track": float(track_t.max(axis=1).mean() / m),
            "t_track_median": float(np.median(track_t.max(axis=1)) / m),
            "t_track_min": float(track_t.max(axis=1).min() / m),
            "t_popctl": float(np.mean(pop_t)) if pop_t else 0.0,
            # Eq. 7 with the m tracking iterations of a worker timed together (step axis of length 1) and
            # population control timed once for all workers (device axis of length 1)
            "t_total_eq7": float(t_tot_montecarlo(track_t[:, None, :], np.reshape(pop_t, (-1, 1)))),
            "x1_mesh_bytes": sim.mesh.memory_bytes(), "x2_particle_bytes": float(np.mean(mem)),
            "x3_threads": sim.workers, "mean_particles": float(np.mean(live)), "final_particles": sim.alive(),
            "nx": nx, "ny": ny, "nz": nz, "target_particles": particles, "iterations": iterations, "m": m, "f": f,
            **{k: getattr(led, k) for k in ("initial", "absorbed", "escaped", "added", "deleted", "migrated",
                                             "collisions", "facet_crossings")},
            "interference": report, "interfered": verdict.interfered, "interference_reason": verdict.reason,
            "off_cpu": verdict.off_cpu}
        if return_sim:
            out["sim"] = sim
        return out
    finally:
        sim.close()
