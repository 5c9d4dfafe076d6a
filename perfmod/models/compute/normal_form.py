"""Multi-parameter performance-model normal form and its search (perfmod mode with several parameters).

Hypotheses (Calotoiu et al., "Fast Multi-Parameter Performance Modeling", Cluster 2016, §II-III;
the single-parameter form of Calotoiu et al., "Using Automated Performance Modeling to Find
Scalability Bugs in Complex Codes", SC13, §II-B)::

    y = c0 + sum_k c_k * prod_l |x_l|^(i_kl) * log2(|x_l|)^(j_kl)

The search is Extra-P's, with the scores changed:

1. repetitions of one parameter point are aggregated (the mean by default, which measured
   better than the median under uniform noise; the median on request, robust to a slow outlier);
2. per parameter, the *marginal profile* (the aggregated values averaged over the other
   parameters at each value of this one) is fitted by each single-parameter hypothesis
   ``c0 + c1 * |x|^i * log2(|x|)^j`` and by the constant; on a full grid the profile has the
   shape of ``g(x)`` for both ``c0 + g(x) + h(z)`` and ``c0 + c * g(x) * h(z)``.  The hypotheses
   are ranked by their leave-one-out relative error and the best ``top_k`` kept (Extra-P keeps one),
   and the constant with them: on noisy data (a second rank count whose points differ by a few atoms)
   a hypothesis such as ``x^3 log2(x)^2`` can rank above the constant on the marginal profile alone,
   and without the constant every combination would have to carry it.  ``x^1``, a loop over ``x``, is
   kept too where some points vary ``x`` alone (4 or more values over a factor 2 or more, the others
   fixed): off a grid the marginal profile mixes the other parameters (a region measured at small
   sizes on 2 ranks and at large ones on 1 looks sublinear) and ranks ``x^1`` out; where ``x`` never
   varies alone (it moves with another parameter) it is not forced in, since ``x^1`` then stands in
   for that parameter.  Measured (``modeling_benchmark``, 2 parameters, 1/5/10 % noise): seed sets
   20-22 (100 cases each), lead-order term right 72/60/53 -> 73/62/54 %, 90th-percentile error at 8x
   0.18/1.33/11.0 -> 0.13/1.05/9.9 %; seed sets 0-2 (40 cases each) 70/58/49 -> 72/59/51 %,
   0.19/4.02/10.1 -> 0.17/1.93/11.3 %; one parameter unchanged;
3. every choice of one kept hypothesis per parameter is combined in every way the terms can
   form products (each set of non-empty parameter subsets that covers the chosen parameters: for
   two parameters ``g + h``, ``g*h``, ``g + g*h``, ``h + g*h``, ``g + h + g*h``), each combination
   fitted by relative least squares on the aggregated points and scored by K-fold cross-validation
   over distinct parameter points (Extra-P scores the combinations on the training points); the
   hypothesis with the fewest terms within 10 % of the best score wins (parsimony, which measured
   best against noise in the ``modeling_benchmark`` study).

Keeping ``top_k > 1`` per parameter and cross-validating the combinations is what makes the
lead-order term survive noise that reorders the single-parameter ranking.  With one parameter the
same search picks among the ``top_k`` single-term hypotheses by the K-fold score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations, product
from typing import Any

import numpy as np

from .errors import TooFewPointsError
from .pool import EPM_EXPONENTS, Term

__all__ = ["NormalFormSearch", "aggregate_points", "bootstrap_selection", "normal_form_search", "structures"]


def aggregate_points(X: np.ndarray, y: np.ndarray, how: str = "median") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct parameter points, their aggregated target (``median`` or ``mean``) and repetition count."""
    pts, inv, counts = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    inv = np.asarray(inv).ravel()
    if how == "mean":
        agg = np.bincount(inv, weights=y, minlength=len(pts)) / counts
    elif how == "median":
        order = np.argsort(inv, kind="stable")
        groups = np.split(y[order], np.cumsum(counts)[:-1])
        agg = np.array([np.median(g) for g in groups])
    else:
        raise ValueError(f"aggregate must be 'median' or 'mean', not {how!r}")
    return pts, agg, counts


def structures(params: Sequence[int], max_terms: int) -> list[tuple[tuple[int, ...], ...]]:
    """Ways to combine one term per parameter in ``params`` into at most ``max_terms`` products.

    Each is a tuple of parameter subsets (one product term each) whose union is ``params``.
    """
    params = tuple(params)
    if not params:
        return [()]
    subsets = [s for r in range(1, len(params) + 1) for s in combinations(params, r)]
    out = []
    for r in range(1, min(max_terms, len(subsets)) + 1):
        for combo in combinations(subsets, r):
            if set().union(*combo) == set(params):
                out.append(combo)
    return out


def _candidates(exponents: Sequence[float], log_powers: Sequence[int], negative: bool) -> list[tuple[float, int]]:
    out = [(float(e), int(k)) for e in exponents for k in log_powers if not (float(e) == 0 and int(k) == 0)]
    if negative:  # strong scaling: x^-(i/j) log2(x)^-k, as Extra-P's option for negative exponents
        out += [(-float(e), -int(k)) for e in exponents for k in log_powers if float(e) > 0]
    return out


def _factor(x: np.ndarray, e: float, k: int) -> np.ndarray:
    a = np.abs(x)
    with np.errstate(all="ignore"):
        out = a**e
        if k:
            out = out * np.log2(a) ** k
    return out


def _loo_simple(T: np.ndarray, y: np.ndarray, w: np.ndarray, relative: bool, x: np.ndarray,
                extrapolation: float) -> np.ndarray:
    """Leave-one-out mean relative (or absolute) error of ``y ~ c0 + c1 * T[:, c]`` for each column c.

    ``T`` has one column per candidate; a column of zeros stands for the constant alone.  With
    ``extrapolation`` > 0 the score is ``(1 - extrapolation) * LOO + extrapolation * e_max``, where
    ``e_max`` is the error at the largest ``x`` predicted from the others.
    """
    v, C = T.shape
    errs = np.zeros(C)
    last = int(np.argmax(x))
    e_last = np.zeros(C)
    for i in range(v):
        keep = np.arange(v) != i
        wk, tk, yk = w[keep], T[keep], y[keep]
        sw = wk.sum()
        tm = (wk[:, None] * tk).sum(0) / sw
        ym = (wk * yk).sum() / sw
        dt = tk - tm
        sxx = (wk[:, None] * dt**2).sum(0)
        sxy = (wk[:, None] * dt * (yk - ym)[:, None]).sum(0)
        with np.errstate(all="ignore"):
            c1 = np.where(sxx > 1e-300 * (1 + tm**2), sxy / np.where(sxx > 0, sxx, 1), 0.0)
        pred = ym + c1 * (T[i] - tm)
        e = np.abs(pred - y[i])
        e = e / abs(y[i]) if relative and y[i] != 0 else e
        errs += e
        if i == last:
            e_last = e
    return (1.0 - extrapolation) * errs / v + extrapolation * e_last


def _spans_a_line(pts: np.ndarray, q: int, points: int = 4, ratio: float = 2.0) -> bool:
    """Whether some points share every parameter but ``q`` and take ``points`` or more values of it over a
    factor ``ratio`` or more (parameter ``q`` measured varying alone: module docstring, step 2)."""
    others = np.delete(pts, q, axis=1)
    _, grp = np.unique(others, axis=0, return_inverse=True)
    grp = np.asarray(grp).ravel()
    for g in np.unique(grp):
        v = np.unique(pts[grp == g, q])
        lo, hi = np.min(np.abs(v)), np.max(np.abs(v))
        if v.size >= points and lo > 0 and hi >= ratio * lo:
            return True
    return False


def _fold_ids(n: int, n_folds: int, rng: np.random.Generator) -> np.ndarray:
    perm = rng.permutation(n)
    ids = np.empty(n, dtype=int)
    for f, chunk in enumerate(np.array_split(perm, n_folds)):
        ids[chunk] = f
    return ids


@dataclass(frozen=True)
class _CVPlan:
    """The splits of a search's cross-validation, made once for all its hypotheses: the K folds' training rows,
    then those beside ``outer`` (the extrapolation split), as row indices padded to one length with ``d`` (an
    all-zero row appended to the design: a zero row changes no least-squares solution), so that every fold of a
    hypothesis is fitted by one batched call."""

    fold: np.ndarray  # per point, its fold
    outer: np.ndarray  # per point, whether it is in the extrapolation split's held-out set
    rows: np.ndarray  # (K + 1, n) training rows per split, padded with d
    count: np.ndarray  # (K + 1,) training rows per split

    @classmethod
    def of(cls, folds: np.ndarray, outer: np.ndarray) -> _CVPlan:
        d = folds.size
        train = [np.flatnonzero(folds != f) for f in range(folds.max() + 1)] + [np.flatnonzero(~outer)]
        rows = np.full((len(train), max(t.size for t in train)), d, dtype=np.intp)
        for k, t in enumerate(train):
            rows[k, :t.size] = t
        return cls(folds, outer, rows, np.array([t.size for t in train]))


def _cv_score(D: np.ndarray, y: np.ndarray, w: np.ndarray, plan: _CVPlan, relative: bool,
              extrapolation: float = 0.0) -> float:
    """K-fold mean relative (absolute) error of the weighted least-squares fit of ``y`` on ``D``.

    With ``extrapolation`` > 0 the score is ``(1 - extrapolation) * K-fold + extrapolation * (mean error
    on ``plan.outer`` (the points at the largest value of some parameter), fitted on the rest)``; where the rest
    has fewer points than ``D`` has columns (:func:`extrapolation_weight`) the score is the K-fold error alone.
    Each split's fit is the minimum-norm least-squares solution with ``np.linalg.lstsq``'s default cut-off
    (singular values below ``eps * max(rows, columns)`` of the largest), all splits in one batched SVD.
    """
    p = D.shape[1]
    ex = extrapolation_weight(plan.outer, p, extrapolation)
    n_splits = plan.rows.shape[0] - (0 if ex > 0 else 1)
    if np.any(plan.count[:n_splits] < p):
        return np.inf
    sw = np.sqrt(w)
    A = np.vstack([D * sw[:, None], np.zeros((1, p))])
    b = np.append(y * sw, 0.0)
    rows = plan.rows[:n_splits]
    rtol = np.finfo(float).eps * np.maximum(plan.count[:n_splits], p)
    coef = np.linalg.pinv(A[rows], rtol=rtol) @ b[rows][:, :, None]  # (splits, p, 1)
    scale = np.abs(y) if relative else np.ones_like(y)
    e = np.abs(np.einsum("ij,ij->i", D, coef[plan.fold, :, 0]) - y) / scale  # each point predicted by its fold
    err = float(np.sum(e)) / len(y)
    if ex > 0:
        o = plan.outer
        out_err = float(np.mean(np.abs(D[o] @ coef[-1, :, 0] - y[o]) / scale[o]))
        return (1.0 - ex) * err + ex * out_err
    return err


def outer_points(pts: np.ndarray) -> np.ndarray:
    """Points at the largest value of some parameter (held out together to score extrapolation)."""
    return np.any(pts == pts.max(axis=0, keepdims=True), axis=1)


def extrapolation_weight(outer: np.ndarray | None, n_columns: int, extrapolation: float) -> float:
    """``extrapolation``, or 0 where the points left beside ``outer`` cannot fit ``n_columns`` coefficients.

    Without this, a hypothesis whose extrapolation fold cannot be fitted scores infinity; when that holds
    for every hypothesis (e.g. a two-valued parameter whose larger value takes all but one point, as the
    region calls of runs on 2 ranks where the 1-rank runs were disturbed), the search would pick one of
    them in no order at all.  The K-fold error alone still ranks them.
    """
    if outer is None or extrapolation <= 0 or int(np.sum(~outer)) < n_columns or not np.any(outer):
        return 0.0
    return float(extrapolation)


@dataclass
class NormalFormSearch:
    """Outcome of :func:`normal_form_search`.

    Attributes
    ----------
    terms : list of Term
        The selected hypothesis, constant first (``Term("identity")``), then its products.
    score : float
        Its K-fold cross-validated mean relative error on the aggregated points.
    per_parameter : list of list of (float, int, float)
        Per parameter, the kept single-parameter hypotheses ``(exponent, log power, LOO error)``,
        best first (``(0, 0, err)`` is the constant).
    ranking : list of (float, list of Term)
        The best hypotheses with their scores, best first.
    """

    terms: list[Term]
    score: float
    per_parameter: list[list[tuple[float, int, float]]] = field(default_factory=list)
    ranking: list[tuple[float, list[Term]]] = field(default_factory=list)


def normal_form_search(X: np.ndarray, y: np.ndarray, *, exponents: Sequence[float] = EPM_EXPONENTS,
                       log_powers: Sequence[int] = (0, 1, 2), top_k: int | None = None, max_terms: int = 4,
                       relative: bool = True, aggregate: str = "mean", n_folds: int = 5,
                       rng: np.random.Generator | None = None, keep_ranking: int = 10,
                       tolerance: float = 0.1, extrapolation: float = 0.25,
                       negative: bool = True) -> NormalFormSearch:
    """Search the multi-parameter normal form for the hypothesis that predicts ``y`` from ``X`` best.

    Parameters
    ----------
    X : ndarray, shape (n, m)
        Parameter values of each row (repetitions share a row value).
    y : ndarray, shape (n,)
        Target (positive when ``relative``).
    exponents, log_powers
        Single-parameter search space ``|x|^i * log2(|x|)^j`` (Extra-P's default: i in 0..3 in
        quarters and thirds, j in 0..2).
    top_k : int, optional
        Single-parameter hypotheses kept per parameter (default 10 with one parameter, 3 with two, 2 beyond).
        With one parameter these are also the candidates the bootstrap reruns the choice among
        (:func:`bootstrap_selection`): 10 rather than 6 measured a shorter tail at 10 % noise and
        intervals closer to their level (``modeling_benchmark``, variant ``perfmod_top6``).
    max_terms : int
        Most product terms in a combination (besides the constant).
    relative : bool
        Minimize and score relative errors (weights ``1/y^2``).
    aggregate : {"mean", "median"}
        How repetitions of a point are aggregated before the search.
    n_folds : int
        Folds over distinct points for scoring the combinations.
    rng : numpy Generator, optional
        Fold assignment (default seed 0).
    keep_ranking : int
        How many of the best hypotheses to report in ``ranking``.
    negative : bool
        Also try ``|x|^-i * log2(|x|)^-j`` (``i > 0``): work divided among ``x`` ranks, ``n^3 / p``.
    extrapolation : float
        Weight of the extrapolation fold in every score: the points at the largest value of some
        parameter predicted from the others (0: K-fold / leave-one-out alone).
    tolerance : float
        Parsimony: the hypothesis with the fewest terms among those whose score is within
        ``(1 + tolerance)`` of the best (plus 1e-9, which settles exact fits) wins.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    rng = np.random.default_rng(0) if rng is None else rng
    m = X.shape[1]
    pts, ya, _ = aggregate_points(X, y, aggregate)
    d = len(pts)
    if d < 3:
        raise TooFewPointsError(f"{d} distinct parameter point(s); the normal-form search needs at least 3")
    top_k = {1: 10, 2: 3}.get(m, 2) if top_k is None else int(top_k)
    cands = _candidates(exponents, log_powers, negative)
    w = 1.0 / ya**2 if relative else np.ones(d)
    # ---- step 2: single-parameter hypotheses on each parameter's marginal profile
    per_param: list[list[tuple[float, int, float]]] = []
    for q in range(m):
        vals, inv = np.unique(pts[:, q], return_inverse=True)
        inv = np.asarray(inv).ravel()
        prof = np.bincount(inv, weights=ya, minlength=len(vals)) / np.bincount(inv, minlength=len(vals))
        if len(vals) < 2:
            per_param.append([(0.0, 0, 0.0)])
            continue
        if len(vals) == 2:  # two values determine c0 + c1 * x and nothing else
            per_param.append([(1.0, 0, 0.0)])
            continue
        # logarithms need positive values
        usable = cands if np.all(vals > 0) else [(e, k) for e, k in cands if k == 0]
        T = np.column_stack([np.zeros(len(vals))] + [_factor(vals, e, k) for e, k in usable])
        ok = np.all(np.isfinite(T), axis=0)
        wp = 1.0 / prof**2 if relative else np.ones(len(vals))
        errs = np.where(ok, _loo_simple(np.where(ok, T, 0.0), prof, wp, relative, vals, extrapolation), np.inf)
        labels = [(0.0, 0)] + usable
        order = list(np.argsort(errs, kind="stable")[:top_k])
        if 0 not in order:  # "this parameter does not matter" stays a candidate of the combinations
            order.append(0)
        lin = 1 + usable.index((1.0, 0)) if (1.0, 0) in usable else None
        if lin is not None and lin not in order and _spans_a_line(pts, q):  # and so does "linear in it"
            order.append(lin)
        per_param.append([(labels[c][0], labels[c][1], float(errs[c])) for c in order])
    # ---- step 3: combinations, scored by K-fold CV over the aggregated points
    plan = _CVPlan.of(_fold_ids(d, min(n_folds, d), rng), outer_points(pts))
    cols: dict[tuple[int, float, int], np.ndarray] = {}

    def col(q: int, e: float, k: int) -> np.ndarray:
        key = (q, e, k)
        if key not in cols:
            cols[key] = _factor(pts[:, q], e, k)
        return cols[key]

    struct_cache: dict[tuple[int, ...], list] = {}
    scored: list[tuple[float, int, list[Term]]] = []
    for choice in product(*[[(e, k) for e, k, _ in kept] for kept in per_param]):
        active = tuple(q for q in range(m) if choice[q] != (0.0, 0))
        if active not in struct_cache:
            struct_cache[active] = structures(active, max_terms)
        for st in struct_cache[active]:
            if 1 + len(st) >= d:
                continue
            D = np.ones((d, 1 + len(st)))
            for t, subset in enumerate(st):
                for q in subset:
                    D[:, 1 + t] *= col(q, *choice[q])
            if not np.all(np.isfinite(D)):
                continue
            s = _cv_score(D, ya, w, plan, relative, extrapolation)
            terms = [Term("identity")] + [Term.product_of([(q, *choice[q]) for q in subset]) for subset in st]
            scored.append((s, len(st), terms))
    if not scored:
        raise TooFewPointsError(f"{d} distinct points leave no normal-form hypothesis with a free degree")
    scored.sort(key=lambda r: (r[0], r[1]))
    best = _parsimonious(scored, tolerance)
    ranking = [(float(s), t) for s, _, t in scored[:keep_ranking]]
    return NormalFormSearch(best[2], float(best[0]), per_param, ranking)


def _parsimonious(scored: list[tuple[float, int, Any]], tolerance: float) -> tuple[float, int, Any]:
    """The fewest terms among the hypotheses within ``tolerance`` of the best score (``scored`` sorted)."""
    limit = scored[0][0] * (1.0 + tolerance) + 1e-9
    return min((r for r in scored if r[0] <= limit), key=lambda r: (r[1], r[0]))


#: Above this many resampled values (replicates x rows) the mean of a resampled point is drawn from its
#: normal limit instead of resampling every repetition (a region called a million times).
_MAX_RESAMPLED = 2_000_000


def bootstrap_selection(X: np.ndarray, y: np.ndarray, candidates: Sequence[list[Term]], fitted: np.ndarray, *,
                        replicates: int = 200, relative: bool = True, aggregate: str = "mean",
                        n_folds: int = 5, tolerance: float = 0.1, extrapolation: float = 0.25,
                        rng: np.random.Generator | None = None) -> list[tuple[list[Term], np.ndarray]]:
    """Bootstrap of the selection and the fit: per replicate, the best of ``candidates`` and its coefficients.

    Each replicate resamples the repetitions of every parameter point (with replacement, within
    the point, deviations from the point's mean rescaled by ``sqrt(c / (c - 1))``), or, where a
    point has a single repetition, the relative residuals ``y / fitted - 1`` over all rows; it
    aggregates them per point as the search does, scores every candidate hypothesis by the
    search's K-fold cross-validation, keeps the best (same parsimony rule) and fits it by least
    squares on the replicate's points.  The spread of the
    replicates' predictions gives intervals that include the uncertainty of choosing among the
    candidates (the search's best hypotheses), not only that of the coefficients.

    With the mean and more than ``_MAX_RESAMPLED`` resampled values, each point's resampled mean is
    drawn from its normal limit (the point's mean and variance over its count) instead.

    Weights (``1/y^2`` of the original aggregated points when ``relative``) are held fixed over
    the replicates, so every fold fit is one precomputed linear map of the replicate's values.
    """
    from .pool import evaluate_terms

    X = np.asarray(X, dtype=float)
    X = X[:, None] if X.ndim == 1 else X
    y = np.asarray(y, dtype=float)
    rng = np.random.default_rng(0) if rng is None else rng
    pts, inv, counts = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    inv = np.asarray(inv).ravel()
    d, B = len(pts), int(replicates)
    if B < 1 or not candidates:
        return []
    order = np.argsort(inv, kind="stable")
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    # replicate rows (B x n): within-point resampling, or residual resampling without repetitions
    agg = np.median if aggregate == "median" else np.mean
    rows_of = [order[start[p]:start[p] + counts[p]] for p in range(d)]
    if counts.min() >= 2 and aggregate == "mean" and B * len(y) > _MAX_RESAMPLED:
        # many repetitions: the mean of a resampled point is drawn from its normal limit (same mean and variance)
        mean_p = np.bincount(inv, weights=y, minlength=d) / counts
        var_p = np.bincount(inv, weights=(y - mean_p[inv]) ** 2, minlength=d) / (counts - 1.0)
        Ya = mean_p[None, :] + rng.standard_normal((B, d)) * np.sqrt(var_p / counts)[None, :]
    else:
        if counts.min() >= 2:
            pick = order[start[inv][None, :] + np.floor(rng.random((B, len(y))) * counts[inv][None, :]).astype(int)]
            # deviations from the point mean, rescaled by sqrt(c / (c - 1)) so that their variance is unbiased
            mean_p = np.bincount(inv, weights=y, minlength=d) / counts
            infl = np.sqrt(counts / (counts - 1.0))[inv]
            Ys = mean_p[inv][None, :] + (y[pick] - mean_p[inv][None, :]) * infl[None, :]
        else:
            resid = y / fitted - 1.0 if relative else y - fitted
            r = resid[rng.integers(len(y), size=(B, len(y)))]
            Ys = fitted[None, :] * (1.0 + r) if relative else fitted[None, :] + r
        Ya = np.column_stack([agg(Ys[:, rows], axis=1) for rows in rows_of])  # B x d
    _, ya0, _ = aggregate_points(X, y, aggregate)
    w = 1.0 / ya0**2 if relative else np.ones(d)
    sw = np.sqrt(w)
    folds = _fold_ids(d, min(n_folds, d), rng)
    outer = outer_points(pts)
    denom = np.abs(Ya) if relative else np.ones_like(Ya)
    scores = np.full((len(candidates), B), np.inf)
    full_maps = []
    for h, terms in enumerate(candidates):
        D = evaluate_terms(terms, pts)
        A = D * sw[:, None]
        full_maps.append(np.linalg.pinv(A) * sw[None, :])  # coef = map @ ya
        if not np.all(np.isfinite(D)):
            continue
        err = np.zeros(B)
        ok = True
        ex = extrapolation_weight(outer, D.shape[1], extrapolation)
        splits = [folds != f for f in range(folds.max() + 1)] + ([~outer] if ex > 0 else [])
        for k, tr in enumerate(splits):
            if tr.sum() < D.shape[1]:
                ok = False
                break
            P = np.linalg.pinv(A[tr]) * sw[tr][None, :]  # k x d_tr
            pred = Ya[:, tr] @ (D[~tr] @ P).T  # B x d_te
            e = np.abs(pred - Ya[:, ~tr]) / denom[:, ~tr]
            if k <= folds.max():
                err += np.sum(e, axis=1) * ((1.0 - ex) / d if ex > 0 else 1.0 / d)
            else:
                err += ex * np.mean(e, axis=1)
        if ok:
            scores[h] = err
    sizes = np.array([len(t) for t in candidates])
    out = []
    for b in range(B):
        col = scores[:, b]
        if not np.isfinite(col).any():
            continue
        limit = np.min(col) * (1.0 + tolerance) + 1e-9
        within = np.nonzero(col <= limit)[0]
        h = int(within[np.lexsort((col[within], sizes[within]))[0]])
        out.append((list(candidates[h]), full_maps[h] @ Ya[b]))
    return out


def describe(search: NormalFormSearch, names: Sequence[str]) -> dict[str, Any]:
    """Diagnostics of a search, readable (per-parameter kept hypotheses and the best combinations)."""
    per = {names[q]: [f"{Term.product_of([(q, e, k)]).name(names)} ({err:.3g})" for e, k, err in kept]
           for q, kept in enumerate(search.per_parameter)}
    return {"per_parameter": per,
            "ranking": [(s, " + ".join(t.name(names) for t in terms)) for s, terms in search.ranking]}
