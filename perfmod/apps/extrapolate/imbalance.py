"""Per-rank computation imbalance and start-up skew of an extrapolated trace.

In a replay, a rank's waiting time is made by its partners' lateness: a
waitall ends when the last neighbour has computed and sent.  In the authors'
Lassen traces of MiniFE nearly all of the slowest rank's replayed
communication time is such waiting, and it comes from two things the call
sites' mean gaps do not show:

- **persistent per-rank imbalance**: a rank's gap at a call site (the time it
  computes between two MPI calls) has a level of its own that stays all run
  long.  In weak scaling the level grows with the number of neighbours the
  rank exchanges with (in MiniFE's computation before each exchange, about
  7-10 us per neighbour), and around that it scatters by rank (by node and
  GPU: a standard deviation of about 45 us from 16 ranks on, near zero on
  one node).  The slowest rank is
  then the one whose neighbours are slowest relative to itself: an extreme of
  the per-rank levels, which grows with the number of ranks;
- **start-up skew**: the gap from ``MPI_Init`` to the first traced call
  differs by rank (process start and set-up), and the first exchange waits
  for the latest neighbour.  Its spread grows with the rank count.

The model, fitted on the training traces (so on 2-16 ranks when 32 is
predicted, leave-one-scale-out), is for every call site ``s`` with gaps
(every call other than a send or receive, and the first send or receive of a
block):

    level(rank, s) = a(P, s) + slope(s) * neighbours(rank) + sigma(s) * z(rank)

``slope(s)`` the within-trace least-squares slope of the per-rank levels on
the number of distinct peers, pooled over the training traces that share the
template's call sequence; ``sigma(s)`` the standard deviation of the residual
levels in the template (the largest training trace: per-rank spread is taken
as a property of the machine and the per-rank work, which weak scaling keeps;
it is not extrapolated); ``z`` one standard normal draw per rank (a rank slow
at one call site is slow at all).  The start-up gap's spread is extrapolated
as a power law of the rank count fitted over all training traces (log-log
least squares, never shrinking).  A target rank keeps its class's template
rank's gaps call by call (their fluctuations) with that rank's own level
replaced by the model's.

Which draw: the slowest rank's wait is an extreme value, and one draw of
``z`` may be far from a typical one.  A rank's *lateness* is how much later
than its own its latest neighbour's level is, at the computation between a
block's first send or receive and the call before it (what a waitall waits
for); of :data:`DRAWS` seeded draws the one whose latenesses, sorted, are
closest (summed absolute difference) to their median over the draws is
kept, so the trace is a typical realization.  What stays random is where the
late ranks sit: over seeds, the slowest rank's K-model time of MiniFE at 32
ranks extrapolated from 2-16 still varies by a standard deviation of about
4 % (7 % when the draw is kept by the median of the largest lateness alone).
Beyond :data:`ONE_DRAW_RANKS` ranks the latenesses of so many ranks vary
little between draws and the first is used.

The extrapolation idea is ScalaExtrap's (Wu and Mueller, PPoPP 2011), which
extrapolates the communication and keeps no per-rank timing; the per-rank
imbalance and skew are perfmod's, motivated by the replay of Choi et al.
(ICS 2020 §3.2), whose predicted communication time includes the time spent
waiting for requests to complete.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from perfmod.apps.extrapolate.training import ExtrapolationError, Training
from perfmod.trace.core import Call, code_set

__all__ = ["Imbalance", "check_start_sd", "fit_imbalance", "draw_levels", "gap_events", "neighbours", "start_law",
           "start_spread_check", "ONE_DRAW_RANKS", "DRAWS", "START_TOLERANCE"]

ONE_DRAW_RANKS = 4096
"""Targets with more ranks use the first draw of the per-rank levels (module docstring)."""

START_TOLERANCE = 0.25
"""A start-up spread that :func:`start_spread_check` predicts further off than this flags the extrapolation."""

DRAWS = 1001
"""Seeded draws of the per-rank levels among which the typical one is kept."""

WORK = 20_000_000
"""At most this many rank pairs are compared over all draws (fewer draws for large targets)."""

_SENDS = code_set({Call.SEND, Call.ISEND, Call.SSEND, Call.ISSEND})


def gap_events(tr: Training) -> np.ndarray:
    """Events whose gap the model sets: every call but a send or receive, and the first send or receive of each
    block of a rank (the computation before a block's exchange); not each rank's first two events (``MPI_Init``
    and the start-up gap after it)."""
    t = tr.trace
    key = t.rank.astype(np.int64) * (int(tr.block.max(initial=0)) + 2) + tr.block
    first_of_block = np.r_[True, key[1:] != key[:-1]] if len(t) else np.zeros(0, bool)
    out = ~tr.is_p2p | (tr.is_p2p & first_of_block)
    out[t.rank_ptr[:-1]] = False
    out[np.minimum(t.rank_ptr[:-1] + 1, len(t) - 1)[np.diff(t.rank_ptr) > 1]] = False
    return out


def neighbours(tr: Training) -> np.ndarray:
    """Distinct ranks each rank sends to."""
    t = tr.trace
    s = np.isin(t.call, _SENDS)
    pairs = np.unique(t.rank[s].astype(np.int64) * t.nprocs + t.peer[s])
    return np.bincount(pairs // t.nprocs, minlength=t.nprocs).astype(np.float64)


def _levels(tr: Training, site: np.ndarray, sites: np.ndarray) -> np.ndarray:
    """(nprocs, len(sites)) mean gap of each rank at each site (gap events only)."""
    t = tr.trace
    gb = gap_events(tr)
    k = np.searchsorted(sites, site[gb])
    ok = (k < sites.size) & (sites[np.minimum(k, sites.size - 1)] == site[gb])
    idx = t.rank[gb][ok].astype(np.int64) * sites.size + k[ok]
    n = t.nprocs * sites.size
    tot = np.bincount(idx, weights=t.compute[gb][ok], minlength=n)
    cnt = np.bincount(idx, minlength=n)
    return (tot / np.maximum(cnt, 1)).reshape(t.nprocs, sites.size)


@dataclass
class Imbalance:
    """The fitted model (module docstring); per-site arrays follow ``sites``."""

    sites: np.ndarray
    slope: np.ndarray  # s per neighbour
    sigma: np.ndarray  # s
    resid: np.ndarray  # (template ranks, sites): each template rank's level minus the model's mean
    neighbours: np.ndarray  # (template ranks,)
    start_resid: np.ndarray  # (template ranks,): start-up gap minus the template's mean
    start_sd: dict[int, float] = field(default_factory=dict)  # training nprocs -> sd of the start-up gap
    start_law: tuple[float, float] = (0.0, 0.0)  # log sd = c + alpha * log P: (alpha, c)

    def start_sigma(self, nprocs: int) -> float:
        alpha, c = self.start_law
        return float(np.exp(c + alpha * np.log(max(int(nprocs), 1))))

    def describe(self, nprocs: int) -> dict:
        """What the trace's metadata records of the model at ``nprocs`` ranks."""
        return {"sites": self.sites.tolist(), "slope_per_neighbour_s": self.slope.tolist(),
                "sigma_s": self.sigma.tolist(), "start_sd_training_s": {str(k): v for k, v in self.start_sd.items()},
                "start_sd_exponent": self.start_law[0], "start_sd_target_s": self.start_sigma(nprocs)}


def fit_imbalance(tpl_tr: Training, site_of: Mapping[int, tuple[Training, np.ndarray]],
                  trainings: Sequence[Training], start_sd: float | None = None) -> Imbalance:
    """Fit the model (module docstring): per-rank levels on ``site_of`` (by rank count, the training traces that
    share the template's call sequence, with the call site of each event; the template ``tpl_tr`` among them),
    the start-up spread on all ``trainings``.  ``start_sd`` (s, >= 0), when given, is the start-up gap's spread at
    any target in place of the power law that :func:`start_law` fits (a what-if: the launcher's skew at scale);
    the training spreads are still recorded."""
    tsite = site_of[tpl_tr.nprocs][1]
    gb = gap_events(tpl_tr)
    sites = np.unique(tsite[gb])
    sxy = np.zeros(sites.size)
    sxx = 0.0
    for x, site in site_of.values():
        lv = _levels(x, site, sites)
        nb = neighbours(x)
        dx = nb - nb.mean()
        sxx += float(dx @ dx)
        sxy += dx @ (lv - lv.mean(axis=0))
    slope = sxy / sxx if sxx > 0 else np.zeros(sites.size)
    lv = _levels(tpl_tr, tsite, sites)
    nb = neighbours(tpl_tr)
    resid = lv - lv.mean(axis=0) - np.outer(nb - nb.mean(), slope)
    sigma = resid.std(axis=0, ddof=1) if tpl_tr.nprocs > 1 else np.zeros(sites.size)
    spread: dict[int, float] = {}
    for x in trainings:
        t = x.trace
        if x.nprocs < 2 or np.any(np.diff(t.rank_ptr) < 2):
            continue
        spread[x.nprocs] = float(np.std(t.compute[t.rank_ptr[:-1] + 1], ddof=1))
    if start_sd is None:
        law = start_law(spread)
    else:
        sd = check_start_sd(start_sd)
        law = (0.0, float(np.log(sd)) if sd > 0 else -np.inf)
    t = tpl_tr.trace
    sg = t.compute[t.rank_ptr[:-1] + 1] if np.all(np.diff(t.rank_ptr) > 1) else np.zeros(t.nprocs)
    return Imbalance(sites, slope, sigma, resid, nb, sg - sg.mean(), spread, law)


def check_start_sd(start_sd: float) -> float:
    """``start_sd`` as a float, or :class:`ExtrapolationError` where it is not a spread in seconds (finite, >= 0)."""
    sd = float(start_sd)
    if not (np.isfinite(sd) and sd >= 0):
        raise ExtrapolationError(f"start_sd must be a standard deviation in seconds (>= 0), got {start_sd!r}")
    return sd


def start_law(start_sd: Mapping[int, float]) -> tuple[float, float]:
    """``(alpha, c)`` of the start-up gap's spread, ``log sd = c + alpha * log P``, from ``start_sd`` (rank count ->
    standard deviation, s): log-log least squares over the positive ones, never shrinking with scale."""
    good = {p: s for p, s in start_sd.items() if s > 0}
    law = (0.0, float(np.log(next(iter(good.values()))))) if good else (0.0, -np.inf)
    if len(good) >= 2:
        alpha, c = np.polyfit(np.log(list(good)), np.log(list(good.values())), 1)
        if alpha < 0:  # the spread is not taken to shrink with scale: the mean level
            alpha, c = 0.0, float(np.mean(np.log(list(good.values()))))
        law = (float(alpha), float(c))
    return law


def start_spread_check(start_sd: Mapping[int, float]) -> dict | None:
    """The start-up spread of the largest training rank count predicted by :func:`start_law` from the others
    (leave-one-scale-out, the step the target takes); None with fewer than three positive spreads.

    The law is the least certain part of the model: the start-up gap is process start and set-up, and
    its spread grows with the machine's launcher and nodes, which small runs show little of (the authors'
    MiniFE traces on Lassen: 0.7-0.9 ms from 2 to 16 ranks, 1.8 ms at 32; at 256 ranks the nodes start
    in waves up to 0.1 s apart).
    """
    good = {int(p): float(s) for p, s in start_sd.items() if s > 0}
    if len(good) < 3:
        return None
    top = max(good)
    alpha, c = start_law({p: s for p, s in good.items() if p != top})
    pred = float(np.exp(c + alpha * np.log(top)))
    return {"nprocs": top, "from": sorted(p for p in good if p != top), "predicted_s": pred,
            "recorded_s": good[top], "error": pred / good[top] - 1.0}


def draw_levels(imb: Imbalance, tpl_rank: np.ndarray, nb: np.ndarray, pairs: tuple[np.ndarray, np.ndarray],
                nprocs: int, draws: int = DRAWS, seed: int = 0) -> tuple[np.ndarray, np.ndarray, int]:
    """Per target rank, the change of its template rank's level at each site ``(nprocs, sites)`` and of its
    start-up gap ``(nprocs,)``, and the draw kept (module docstring).

    ``tpl_rank``: each target rank's class template rank; ``nb``: its distinct peers; ``pairs``: (sender,
    receiver) rank arrays of the target's messages.
    """
    base = np.outer(nb - imb.neighbours[tpl_rank], np.ones(imb.sites.size)) * imb.slope - imb.resid[tpl_rank]
    rng = np.random.default_rng(seed)
    n = 1 if nprocs > ONE_DRAW_RANKS else int(np.clip(WORK // max(pairs[0].size, 1), 1, max(int(draws), 1)))
    keep = 0
    if n > 1 and pairs[0].size:
        a, b = pairs
        before = imb.sites % 2 == 1  # odd call sites: a block's first send or receive (generate._sites)
        if not before.any():
            before = np.ones(imb.sites.size, bool)
        tot = imb.sigma[before].sum()
        fixed = base[:, before].sum(axis=1)
        sorted_late = np.empty((n, nprocs))
        for j in range(n):
            lev = fixed + tot * rng.standard_normal(nprocs)
            rng.standard_normal(nprocs)  # the draw's start-up skew
            late = np.full(nprocs, -np.inf)
            np.maximum.at(late, a, lev[b] - lev[a])
            sorted_late[j] = np.sort(late)
        keep = int(np.argmin(np.abs(sorted_late - np.median(sorted_late, axis=0)).sum(axis=1)))
        rng = np.random.default_rng(seed)
        for _ in range(keep):
            rng.standard_normal(nprocs), rng.standard_normal(nprocs)
    z, z0 = rng.standard_normal(nprocs), rng.standard_normal(nprocs)
    delta = base + np.outer(z, imb.sigma)
    start = -imb.start_resid[tpl_rank] + imb.start_sigma(nprocs) * z0
    return delta, start, keep
