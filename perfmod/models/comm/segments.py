"""Protocol segments whose postal fits are always usable: merge what cannot be fitted, bound the rest.

The breakpoints that :func:`perfmod.models.comm.fitting.segment_bic` finds
follow the measured curve, noise included.  Around MPICH's 8 KiB switch a
shared machine can give a segment of three sizes whose times fall with
the size (``tests/data/pingpong-negative-beta.nc``: 7.21 us at 8,192 B,
7.81 us at 10,240 B, 6.09 us at 12,288 B), and a postal fit of it a
negative per-byte cost, which no platform may hold.  :func:`fit_segments`
therefore

1. fits each segment without bounds (relative weights, paper 000 Eq. 1);
2. merges a segment into a neighbour when it has fewer than ``min_points``
   sizes, when its latency alpha is not positive, or when its per-byte cost
   beta is not significantly positive (``beta / se(beta)`` below the
   one-sided 95 % quantile of Student's t with the segment's degrees of
   freedom); the neighbour is the one whose merged segment fits best
   (lowest RMS relative residual), and the breakpoint between them goes;
   the worst segment first, then again until every segment passes;
3. fits the final segments by bounded least squares (alpha, beta >= 0),
   so no noise can give a negative parameter even where step 2 kept one.

Every merge is recorded as a sentence (:attr:`Segments.decisions`) and per
final segment (:attr:`Segments.notes`), for the platform file and the
notebook.  When a single segment is left and it still fails step 2, the
measurement is unusable: :class:`CalibrationError`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from perfmod.models.comm.fitting import PROTOCOL_NAMES, Fit, fit_postal

__all__ = ["CalibrationError", "Segments", "fit_segments", "segment_problem"]


class CalibrationError(ValueError):
    """A ping-pong measurement from which no valid platform can be fitted (the message says what to do)."""


@dataclass(frozen=True)
class Segments:
    """Result of :func:`fit_segments`.

    Attributes
    ----------
    fits : dict
        Protocol name -> bounded postal :class:`~perfmod.models.comm.fitting.Fit`.
    breakpoints : list of int
        The breakpoints kept (bytes; the largest size of each lower segment).
    decisions : list of str
        Every merge, in order, with the numbers behind it ("" when none).
    notes : dict
        Protocol name -> one sentence on how its fit was obtained.
    """

    fits: dict[str, Fit]
    breakpoints: list[int]
    decisions: list[str] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)


def _range(lo: float, hi: float) -> str:
    return f"{lo:,.0f} < n <= {hi:,.0f} B" if np.isfinite(hi) else f"n > {lo:,.0f} B"


def segment_problem(n: np.ndarray, t: np.ndarray, min_points: int = 3, level: float = 0.95) -> str:
    """Why a segment's postal fit is not usable ("" when it is).

    Parameters
    ----------
    n, t : numpy.ndarray
        Sizes (B) and one-way times (s) of the segment.
    min_points : int
        Fewest sizes a segment needs.
    level : float
        One-sided confidence that beta > 0 required.
    """
    if n.size < min_points:
        return f"{n.size} sizes (fewer than {min_points})"
    fit = fit_postal(n, t)
    a, b, se = fit.params["alpha"], fit.params["beta"], fit.stderr["beta"]
    if b <= 0:
        return f"per-byte cost beta = {b:.3g} s/B <= 0"
    dof = n.size - 2
    tcrit = float(stats.t.ppf(level, dof))
    if se > 0 and b / se < tcrit:
        return f"beta = {b:.3g} +- {se:.2g} s/B not significantly > 0 (t = {b / se:.2f} < {tcrit:.2f}, {dof} dof)"
    if a <= 0:
        return f"latency alpha = {a:.3g} s <= 0"
    return ""


def _rms(n: np.ndarray, t: np.ndarray) -> float:
    return fit_postal(n, t).rel_rms if n.size > 2 else np.inf


def fit_segments(nbytes: Any, t: Any, breakpoints: list[int], min_points: int = 3, level: float = 0.95,
                 where: str = "the measurement") -> Segments:
    """Postal fits per protocol segment that a platform can hold (module docstring).

    Parameters
    ----------
    nbytes, t : array_like
        Sizes (B) and one-way times (s), e.g. medians over repetitions.
    breakpoints : list of int
        Candidate thresholds (bytes), e.g. from ``segment_bic``.
    min_points : int
        Fewest sizes per segment.
    level : float
        One-sided confidence required that a segment's beta is > 0.
    where : str
        How errors and notes name the data (a file).

    Returns
    -------
    Segments

    Raises
    ------
    CalibrationError
        When even one segment over all sizes has no usable fit.
    """
    n = np.asarray(nbytes, dtype=float)
    tt = np.asarray(t, dtype=float)
    order = np.argsort(n)
    n, tt = n[order], tt[order]
    edges = [0.0, *sorted(float(b) for b in breakpoints), np.inf]
    decisions: list[str] = []
    spans: list[tuple[float, float]] = []
    while True:
        segs = list(itertools.pairwise(edges))
        sel = [(n > lo) & (n <= hi) for lo, hi in segs]
        probs = [segment_problem(n[s], tt[s], min_points, level) for s in sel]
        bad = [i for i, p in enumerate(probs) if p]
        if not bad:
            break
        if len(segs) == 1:
            raise CalibrationError(
                f"{where}: no usable postal fit even with all {n.size} sizes ({n.min():,.0f}-{n.max():,.0f} B, "
                f"median one-way {tt.min() * 1e6:.3g}-{tt.max() * 1e6:.3g} us) as one segment: {probs[0]}. "
                "The time does not grow with the message size as a ping-pong's must, so the run was disturbed "
                "or the sizes are too few: re-measure (`make calibration`, or `python -m "
                "perfmod.measure.bench.pingpong --pairs 1 --reps 20`) on a quieter machine, with sizes up to "
                "at least 1 MiB")
        # the worst first: fewest sizes, then lowest significance (problem order is stable)
        i = min(bad, key=lambda k: (sel[k].sum(), k))
        cands = [j for j in (i - 1, i + 1) if 0 <= j < len(segs)]
        rms = {j: _rms(n[sel[i] | sel[j]], tt[sel[i] | sel[j]]) for j in cands}
        j = min(cands, key=rms.__getitem__)
        lo, hi = segs[min(i, j)][0], segs[max(i, j)][1]
        gone = segs[min(i, j)][1]
        decisions.append(
            f"segment {_range(*segs[i])} ({sel[i].sum()} sizes): {probs[i]}; merged with "
            f"{'the one below' if j < i else 'the one above'} ({_range(*segs[j])}) into {_range(lo, hi)} "
            f"(RMS relative residual {rms[j]:.1%}); breakpoint {gone:,.0f} B dropped")
        spans.append((lo, hi))
        edges.remove(gone)
    breaks = [int(e) for e in edges[1:-1]]
    names = PROTOCOL_NAMES[len(breaks)]
    fits: dict[str, Fit] = {}
    notes: dict[str, str] = {}
    for name, (lo, hi) in zip(names, itertools.pairwise(edges), strict=True):
        s = (n > lo) & (n <= hi)
        fits[name] = fit_postal(n[s], tt[s], nonnegative=True)
        merges = [d for d, (a, b) in zip(decisions, spans, strict=True) if lo <= a and b <= hi]
        notes[name] = (f"bounded least squares (alpha, beta >= 0) on {s.sum()} sizes {_range(lo, hi)}"
                       + ("; " + "; ".join(merges) if merges else "; no merge needed"))
    return Segments(fits, breaks, decisions, notes)
