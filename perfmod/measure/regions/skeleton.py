"""Skeleton mode: one annotated program runs measured, modeled or hybrid (paper 004 §III, §V).

lwperf turns an instrumented application into its own skeleton at compile
time: every ``PERFLOG``/``PERFSTOP`` region is replaced by a call that returns
the model's time to SST/macro (paper 004 §V, Figure 4c).  Python has no
preprocessor and a ``with`` block cannot skip its own body, so a region that
may be skipped says so and guards its body::

    with skeleton_region("waxpby", n=n) as run:
        if run:
            w[:] = a * x + b * y

or, for a function, ``@skeleton_function("ddot", params=("n",), stand_in=...)``.
The active :class:`Skeleton` decides per call:

``measure``
    every body runs; calls are recorded by the active region
    :class:`~perfmod.measure.regions.recorder.Recorder` (if any), exactly as
    with :func:`~perfmod.measure.regions.recorder.region`.
``model``
    skippable bodies are skipped; the region's model predicts its time and a
    *virtual clock* advances by it.  MPI calls recorded through
    :meth:`Skeleton.record` (a :class:`perfmod.trace.recorder.RecordingComm`)
    are stamped on that clock, so the modeled compute sits between them and
    the trace replays with :func:`perfmod.replay.replay` on any platform; with
    :func:`perfmod.measure.regions.virtual.run_virtual` the same program runs
    as any number of ranks in one process.
``hybrid``
    SimGrid's ``SMPI_SAMPLE``: a region runs for real, per distinct parameter
    point, until the relative standard error of its time (standard error of
    the mean / mean) is below ``rse_threshold`` (with at least
    ``min_samples`` samples, at most ``max_samples``); then the region's model
    takes over, or, without a model, the sample mean.

Virtual time.  The virtual clock is the real clock plus, for every skipped
call, the predicted time minus the real time the skeleton spent on the call
(its enter/exit and the model evaluation).  So the virtual time of a program
is its real glue code (everything outside regions) plus the modeled region
times, and the skeleton's own overhead is not counted as the application's.

Control flow (paper 004 §III-A).  A skipped body produces nothing, so:

* a region whose results steer control flow (an iteration count, a
  convergence test, the sizes of later messages or loops) is declared
  ``skippable=False``: it runs in every mode (the paper's "preserve any
  calculations that dictate the termination conditions"), its real time is
  on the virtual clock and it is recorded like a measured call;
* a skippable *function* that returns values gives a cheap ``stand_in``
  with the same signature; in model mode the program continues with the
  stand-in's value (e.g. a dot product returns 1.0 so a fixed-iteration CG
  keeps its MPI calls, an expected ghost-atom count replaces the counted
  one).  A skipped function without a stand-in returns ``None``;
* a region's parameters must be known without running skipped regions (they
  are the model's inputs); a parameter that is ``None`` or not a finite
  number in model mode is an error naming the region.

The data-dependent values a stand-in replaces are what makes model mode's
MPI call sequence equal to measure mode's (same calls, peers, tags,
communicators; byte counts equal where they do not depend on data).
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from perfmod.measure.regions.activation import Activatable, ActiveSlot
from perfmod.measure.regions.modelcall import SkeletonError, evaluate_model
from perfmod.measure.regions.recorder import param_getter
from perfmod.measure.regions.recorder import region as _record_region

if TYPE_CHECKING:
    import pandas as pd

    from perfmod.trace.recorder import Recorder as TraceRecorder
    from perfmod.trace.recorder import RecordingComm

__all__ = ["MODES", "Skeleton", "SkeletonError", "RegionStats", "active_skeleton",
           "skeleton_region", "skeleton_function", "virtual_clock"]

MODES = ("measure", "model", "hybrid")
VARIANTS = {"predicted": 1, "lower": 2, "upper": 3}

_active: Skeleton | None = None  # read by skeleton_region() on every call


def _publish(sk: Skeleton | None) -> None:
    global _active
    _active = sk


_SLOT = ActiveSlot(_publish)


def active_skeleton() -> Skeleton | None:
    """The skeleton that :func:`skeleton_region` consults, or ``None``."""
    return _active


def virtual_clock() -> float:
    """The active skeleton's virtual time (s), or ``time.perf_counter()`` without one; for timing a program's
    sections so that they read the same in every mode."""
    sk = _active
    return time.perf_counter() if sk is None else sk.now()


@dataclass
class RegionStats:
    """What the skeleton did with one region.

    Attributes
    ----------
    run : int
        Calls whose body ran.
    modeled : int
        Calls replaced by the model.
    run_s : float
        Real time of the calls that ran (s).
    modeled_s : float
        Predicted time of the modeled calls (s).
    eval_s : float
        Real time spent evaluating the model, cache hits included (s).
    evaluations : int
        Model evaluations that missed the prediction cache.
    switched_after : int
        Hybrid: the most samples a parameter point took before the model took over (0: never switched).
    clipped : int
        Model evaluations whose prediction (or interval bound) was below 0 and was clipped to 0
        (each also warned as an ``ExtrapolationWarning``).
    """

    run: int = 0
    modeled: int = 0
    run_s: float = 0.0
    modeled_s: float = 0.0
    eval_s: float = 0.0
    evaluations: int = 0
    switched_after: int = 0
    clipped: int = 0


class _Sampler:
    """Running mean and variance of one region's time at one parameter point (Welford)."""

    __slots__ = ("n", "mean", "m2", "done")

    def __init__(self) -> None:
        self.n, self.mean, self.m2, self.done = 0, 0.0, 0.0, False

    def add(self, x: float) -> None:
        self.n += 1
        d = x - self.mean
        self.mean += d / self.n
        self.m2 += d * (x - self.mean)

    def rse(self) -> float:
        """Standard error of the mean over the mean (inf with fewer than 2 samples)."""
        if self.n < 2 or self.mean <= 0:
            return math.inf
        return math.sqrt(self.m2 / (self.n - 1) / self.n) / self.mean


class _SkelRegion:
    """One call of a skeleton region (context manager yielding whether the body should run)."""

    __slots__ = ("sk", "name", "params", "skippable", "run", "inner", "t0")

    def __init__(self, sk: Skeleton, name: str, params: dict[str, Any], skippable: bool) -> None:
        self.sk, self.name, self.params, self.skippable = sk, name, params, skippable

    def __enter__(self) -> bool:
        sk = self.sk
        t0 = sk._clock()
        run = sk._decide(self.name, self.params, self.skippable)
        self.run = run
        if run:
            self.inner = _record_region(self.name, **self.params)
            self.inner.__enter__()
            self.t0 = sk._clock()
        else:
            self.t0 = t0
        return run

    def __exit__(self, et: object, ev: object, tb: object) -> bool:
        sk = self.sk
        if self.run:
            t1 = sk._clock()
            self.inner.__exit__(et, ev, tb)
            sk._ran(self.name, self.params, t1 - self.t0)
        elif et is None:
            sk._modeled(self.name, self.params, self.t0)
        return False


class _Always:
    """The context of a region when no skeleton is active: record (if a recorder is) and run."""

    __slots__ = ("inner",)

    def __init__(self, name: str, params: dict[str, Any]) -> None:
        self.inner = _record_region(name, **params)

    def __enter__(self) -> bool:
        self.inner.__enter__()
        return True

    def __exit__(self, et: object, ev: object, tb: object) -> bool:
        return self.inner.__exit__(et, ev, tb)


def skeleton_region(name: str, skippable: bool = True, **params: Any) -> _SkelRegion | _Always:
    """Context manager for one call of a region the skeleton may replace; yields whether to run the body.

    Parameters
    ----------
    name : str
        Region name (the key of its model).
    skippable : bool
        False for a region whose results steer control flow: it always runs.
    **params : number
        The call's parameters: recorded when the body runs, the model's inputs when it does not.
    """
    sk = _active
    if sk is None:
        return _Always(name, params)
    return _SkelRegion(sk, name, params, skippable)


def skeleton_function(name: str | None = None, params: Sequence[str] | Callable[..., Mapping[str, Any]] = (), *,
                      skippable: bool = True, stand_in: Callable[..., Any] | None = None
                      ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator making each call of a function a skeleton region.

    Parameters
    ----------
    name : str, optional
        Region name (default: the function's qualified name).
    params : sequence of str or callable
        Names of the arguments that are the region's parameters, or a callable
        taking the call's arguments and returning the parameter mapping.
    skippable : bool
        False for a function whose result steers control flow (it always runs).
    stand_in : callable, optional
        Called with the same arguments when the body is skipped; its value is returned instead.
    """
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        rname = name or fn.__qualname__
        getter = param_getter(fn, rname, params)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            p = dict(getter(*args, **kwargs))
            sk = _active
            ctx = _Always(rname, p) if sk is None else _SkelRegion(sk, rname, p, skippable)
            with ctx as run:
                if run:
                    return fn(*args, **kwargs)
            return None if stand_in is None else stand_in(*args, **kwargs)

        wrapper.region_name = rname  # type: ignore[attr-defined]
        return wrapper

    return deco


class Skeleton(Activatable):
    """The mode an annotated program runs in, its region models and its virtual clock.

    Parameters
    ----------
    mode : {"measure", "model", "hybrid"}
        See the module docstring.
    models : mapping, optional
        Region name -> model: a fitted compute model (``predict(frame)`` returning a
        dataset with ``predicted``, and ``parameters``), a constant in seconds, or a
        callable ``f(params) -> seconds``.  Required in model mode for every
        skippable region the program enters.
    rse_threshold : float
        Hybrid: relative standard error of the mean below which the model takes over.
    min_samples, max_samples : int
        Hybrid: samples taken at least, and at most (the model takes over then even if
        the threshold is not met), per region and parameter point.
    interval : {"confidence", "prediction", None}
        Interval of each modeled call kept beside the prediction (for the trace's
        ``lower``/``upper`` variants); ``None`` keeps none.
    level : float
        Coverage of that interval.
    cache : bool or dict
        Keep each parameter point's prediction (regions repeat their parameters); a dict
        is used as the cache itself, so skeletons of several virtual ranks can share one.
    clock : {"real", "modeled"}
        ``"real"``: the virtual clock is the real clock plus the modeled time of the
        skipped calls less the skeleton's cost of them (the program's glue code
        counts, as measured now).  ``"modeled"``: only modeled time counts; every
        MPI event is stamped at the modeled time before it and takes no time
        (SST/macro's view; immune to load on the machine running the skeleton).
    invariants : mapping, optional
        Parameters every modeled call gets besides its own (a call's own value wins), as a
        :class:`~perfmod.measure.regions.recorder.Recorder` records invariants with every
        call: e.g. ``{"ranks_per_node": 2}`` for models fitted on runs with 1 and 2 ranks
        sharing a machine's caches and memory bandwidth.
    """

    def __init__(self, mode: str = "measure", models: Mapping[str, Any] | None = None, *,
                 rse_threshold: float = 0.02, min_samples: int = 5, max_samples: int = 1000,
                 interval: str | None = "confidence", level: float = 0.95, cache: bool | dict = True,
                 clock: str = "real", invariants: Mapping[str, float] | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if not rse_threshold > 0:
            raise ValueError(f"rse_threshold must be > 0, got {rse_threshold}")
        if not 2 <= min_samples <= max_samples:
            raise ValueError(f"need 2 <= min_samples <= max_samples, got {min_samples}, {max_samples}")
        if clock not in ("real", "modeled"):
            raise ValueError(f"clock must be 'real' or 'modeled', not {clock!r}")
        self.mode, self.clock = mode, clock
        self.invariants = dict(invariants or {})
        self._inv_key = (_key(self.invariants),) if self.invariants else ()
        self.models = dict(models or {})
        self.rse_threshold = float(rse_threshold)
        self.min_samples, self.max_samples = int(min_samples), int(max_samples)
        self.interval, self.level = interval, float(level)
        self.cache = cache is not False
        self.stats: dict[str, RegionStats] = {}
        self.offset_ns = [0.0, 0.0, 0.0]  # virtual-clock shift (ns) with the predicted, lower, upper times
        self.marks: list[tuple[int, float, float, float]] = []
        self._samplers: dict[tuple, _Sampler] = {}
        self._cache: dict[tuple, tuple[float, float, float]] = cache if isinstance(cache, dict) else {}
        self._trace: TraceRecorder | None = None
        self._clock = time.perf_counter_ns

    _slot = _SLOT  # start(), stop(), with skeleton: (Activatable)

    def region(self, name: str, skippable: bool = True, **params: Any) -> _SkelRegion:
        """A region call decided by this skeleton (active or not); see :func:`skeleton_region`."""
        return _SkelRegion(self, name, params, skippable)

    # ------------------------------------------------------------------ MPI recording
    def record(self, comm: Any) -> RecordingComm:
        """A :class:`RecordingComm` around ``comm`` whose events are stamped on this skeleton's virtual clock."""
        from perfmod.measure.regions.skeleton_trace import SkeletonTraceRecorder
        from perfmod.trace.recorder import RecordingComm

        return RecordingComm(comm, SkeletonTraceRecorder(comm, self))

    def attach(self, recorder: TraceRecorder) -> None:
        """Stamp the events of ``recorder`` (a trace recorder) on this skeleton's virtual clock."""
        if self._trace is not None and self._trace is not recorder:
            raise SkeletonError("this skeleton already stamps another trace recorder; use one skeleton per rank")
        self._trace = recorder

    def event_offsets(self, n_events: int, variant: str = "predicted") -> np.ndarray:
        """Virtual-clock shift (integer ns) of each of the first ``n_events`` recorded MPI events."""
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {sorted(VARIANTS)}, not {variant!r}")
        if not self.marks:
            return np.zeros(n_events, dtype=np.int64)
        at = np.array([m[0] for m in self.marks])
        val = np.array([m[VARIANTS[variant]] for m in self.marks])
        k = np.searchsorted(at, np.arange(n_events), side="right") - 1
        return np.where(k >= 0, np.round(val[np.maximum(k, 0)]), 0).astype(np.int64)

    def now(self) -> float:
        """Virtual time (s): ``perf_counter`` plus the modeled shift (``clock="real"``), or the modeled time alone."""
        shift = float(self.offset_ns[0]) * 1e-9
        return shift if self.clock == "modeled" else time.perf_counter() + shift

    @property
    def modeled_time(self) -> float:
        """Virtual minus real time so far (s): the predicted time of the skipped calls (less the skeleton's
        cost of them with ``clock="real"``)."""
        return float(self.offset_ns[0]) * 1e-9

    # ------------------------------------------------------------------ decisions
    def _stats(self, name: str) -> RegionStats:
        st = self.stats.get(name)
        if st is None:
            st = self.stats[name] = RegionStats()
        return st

    def _decide(self, name: str, params: dict[str, Any], skippable: bool) -> bool:
        if not skippable or self.mode == "measure":
            return True
        if self.mode == "model":
            return False
        s = self._samplers.get((name, _key(params)))
        if s is None:
            return True
        if s.done:
            return False
        if s.n >= self.min_samples and (s.rse() < self.rse_threshold or s.n >= self.max_samples):
            s.done = True
            st = self._stats(name)
            st.switched_after = max(st.switched_after, s.n)
            return False
        return True

    def _ran(self, name: str, params: dict[str, Any], ns: int) -> None:
        st = self._stats(name)
        st.run += 1
        st.run_s += ns * 1e-9
        if self.mode == "hybrid":
            key = (name, _key(params))
            s = self._samplers.get(key)
            if s is None:
                s = self._samplers[key] = _Sampler()
            s.add(ns * 1e-9)

    def _modeled(self, name: str, params: dict[str, Any], t0: int) -> None:
        te = self._clock()
        pred, lo, hi = self.predict(name, params)
        st = self._stats(name)
        st.modeled += 1
        st.modeled_s += pred
        t1 = self._clock()
        st.eval_s += (t1 - te) * 1e-9
        cost = t1 - t0 if self.clock == "real" else 0
        off = self.offset_ns  # Python floats: numpy scalar updates doubled the cost of a modeled call
        off[0] += pred * 1e9 - cost
        off[1] += lo * 1e9 - cost
        off[2] += hi * 1e9 - cost
        if self._trace is not None:
            n = len(self._trace.events)
            mark = (n, off[0], off[1], off[2])
            if self.marks and self.marks[-1][0] == n:
                self.marks[-1] = mark
            else:
                self.marks.append(mark)

    # ------------------------------------------------------------------ models
    def predict(self, name: str, params: Mapping[str, Any]) -> tuple[float, float, float]:
        """Predicted time of one call and its interval bounds (s).

        A negative prediction or bound is clipped to 0, counted in the region's ``clipped`` and warned
        (``ExtrapolationWarning``): a negative time cannot be replayed, and must not pass unnoticed.
        """
        own = (name, _key(params))  # the hybrid samplers are keyed by the call's own parameters
        key = own + self._inv_key if self._inv_key else own  # invariants merged only on a cache miss
        if self.cache:
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        self._stats(name).evaluations += 1
        if name in self.models:
            model = self.models[name]
        elif self.mode == "hybrid" and own in self._samplers:
            m = self._samplers[own].mean  # SMPI_SAMPLE: the sample mean of this point
            out = (m, m, m)
            self._cache[key] = out
            return out
        else:
            raise SkeletonError(f"region {name!r} has no model; models are given for {sorted(self.models)}")
        if self.invariants:
            params = {**self.invariants, **params}
        out = evaluate_model(model, name, params, self.interval, self.level)
        if min(out) < 0.0:
            from perfmod.models.compute.errors import ExtrapolationWarning

            self._stats(name).clipped += 1
            warnings.warn(f"region {name!r}: the model predicts {out[0]:.4g} s (interval {out[1]:.4g} to "
                          f"{out[2]:.4g} s) at {dict(params)}; negative values are clipped to 0 s",
                          ExtrapolationWarning, stacklevel=2)
            out = tuple(max(v, 0.0) for v in out)
        if self.cache:
            self._cache[key] = out
        return out

    def summary(self) -> pd.DataFrame:
        """One row per region: calls run and modeled, their times (s), model evaluation cost."""
        import pandas as pd

        rows = [{"region": k, **vars(v)} for k, v in sorted(self.stats.items())]
        df = pd.DataFrame(rows, columns=["region", *RegionStats.__dataclass_fields__])
        df["eval_s_per_call"] = df["eval_s"] / df["modeled"].where(df["modeled"] > 0)
        return df.set_index("region")


def _key(params: Mapping[str, Any]) -> tuple:
    return tuple(sorted(params.items()))
