"""Run a skeleton as any number of ranks in one process, without MPI traffic (paper 004 §III, §V step 7).

In model mode a skeleton's compute is modeled and its data are stand-ins,
so its ranks need not exchange anything: what matters is the sequence of
MPI calls each rank makes and the modeled compute between them.
:func:`run_virtual` runs a rank program once per rank, in turn, on a
:class:`VirtualComm`: a :class:`perfmod.trace.recorder.RecordingComm`
around a :class:`NullComm` that accepts every call and moves no data
(receives leave their buffer as it is, reductions copy the rank's own
contribution, pickle-based calls echo the object).  The events are stamped
on each rank's virtual clock and merged into one
:class:`perfmod.trace.Trace`, which :func:`perfmod.replay.replay` replays
on a platform: SST/macro's role in the paper, at rank counts this machine
does not have.

A program is fit for this when its control flow and message sizes do not
depend on received data, which is what the skeleton rules (skippable
regions, stand-ins) already require.  Only ``COMM_WORLD`` is supported: no
``Split``/``Dup``/``Create_cart``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from perfmod.measure.regions.skeleton import Skeleton
from perfmod.measure.regions.skeleton_trace import SkeletonTraceRecorder
from perfmod.trace.builder import TraceBuilder
from perfmod.trace.core import NO_PEER, Call, Trace
from perfmod.trace.recorder import RecordingComm

__all__ = ["NullComm", "VirtualComm", "VirtualRun", "run_virtual", "build_trace"]


def _array(buf: Any) -> Any:
    return buf[0] if isinstance(buf, list | tuple) else buf


class _NullRequest:
    __slots__ = ()

    def Wait(self, status: Any = None) -> None:  # noqa: N802 - mpi4py's name
        return None

    def Test(self, status: Any = None) -> bool:  # noqa: N802
        return True


class NullComm:
    """An mpi4py-like communicator of ``size`` ranks, seen from ``rank``, that moves no data.

    Parameters
    ----------
    rank, size : int
        This rank and the number of ranks.
    """

    def __init__(self, rank: int, size: int) -> None:
        if not 0 <= rank < size:
            raise ValueError(f"rank {rank} is outside 0..{size - 1}")
        self.rank, self.size = int(rank), int(size)

    def Get_rank(self) -> int:  # noqa: N802
        return self.rank

    def Get_size(self) -> int:  # noqa: N802
        return self.size

    # buffer-based: no data move; a reduction leaves the rank's own contribution
    def Send(self, *a: Any, **k: Any) -> None: ...  # noqa: N802, E704
    def Ssend(self, *a: Any, **k: Any) -> None: ...  # noqa: N802, E704
    def Recv(self, *a: Any, **k: Any) -> None: ...  # noqa: N802, E704
    def Sendrecv(self, *a: Any, **k: Any) -> None: ...  # noqa: N802, E704
    def Barrier(self) -> None: ...  # noqa: N802, E704
    def Bcast(self, *a: Any, **k: Any) -> None: ...  # noqa: N802, E704
    def Gather(self, *a: Any, **k: Any) -> None: ...  # noqa: N802, E704
    def Scatter(self, *a: Any, **k: Any) -> None: ...  # noqa: N802, E704
    def Alltoall(self, *a: Any, **k: Any) -> None: ...  # noqa: N802, E704
    def Allgather(self, *a: Any, **k: Any) -> None: ...  # noqa: N802, E704

    def Isend(self, *a: Any, **k: Any) -> _NullRequest:  # noqa: N802
        return _NullRequest()

    def Irecv(self, *a: Any, **k: Any) -> _NullRequest:  # noqa: N802
        return _NullRequest()

    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Any = None) -> None:  # noqa: N802
        src, dst = _array(sendbuf), _array(recvbuf)
        if isinstance(src, np.ndarray) and isinstance(dst, np.ndarray):
            np.copyto(dst, src.reshape(dst.shape))

    def Reduce(self, sendbuf: Any, recvbuf: Any, op: Any = None, root: int = 0) -> None:  # noqa: N802
        if self.rank == root and recvbuf is not None:
            self.Allreduce(sendbuf, recvbuf)

    # pickle-based: the object comes back
    def send(self, *a: Any, **k: Any) -> None: ...  # noqa: E704
    def barrier(self) -> None: ...  # noqa: E704

    def recv(self, buf: Any = None, *a: Any, **k: Any) -> Any:
        return buf

    def sendrecv(self, sendobj: Any, *a: Any, **k: Any) -> Any:
        return sendobj

    def bcast(self, obj: Any, root: int = 0) -> Any:
        return obj

    def reduce(self, obj: Any, op: Any = None, root: int = 0) -> Any:
        return obj if self.rank == root else None

    def allreduce(self, obj: Any, op: Any = None) -> Any:
        return obj

    def gather(self, obj: Any, root: int = 0) -> list[Any] | None:
        return [obj] * self.size if self.rank == root else None

    def allgather(self, obj: Any) -> list[Any]:
        return [obj] * self.size

    def scatter(self, obj: Any, root: int = 0) -> Any:
        return obj[self.rank] if obj is not None else None


def _no_waitall(requests: Sequence[Any], statuses: Any = None) -> None:
    return None


class VirtualComm(RecordingComm):
    """A :class:`RecordingComm` of one virtual rank: records every call, sends nothing.

    Parameters
    ----------
    rank, size : int
        The virtual rank and the number of ranks.
    skeleton : Skeleton
        Its virtual clock stamps the events.
    """

    def __init__(self, rank: int, size: int, skeleton: Skeleton) -> None:
        null = NullComm(rank, size)
        super().__init__(null, SkeletonTraceRecorder(null, skeleton), 0)
        self._waitall = _no_waitall

    def Waitany(self, requests: Sequence[Any], status: Any = None) -> int:  # noqa: N802
        t0 = time.perf_counter_ns()
        idx = next((i for i, r in enumerate(requests) if not r.done), 0)
        done = []
        if requests and not requests[idx].done:
            requests[idx].done = True
            done = [requests[idx].id]
        self._log(Call.WAITANY, NO_PEER, 0, 0, t0, time.perf_counter_ns(), aux=done)
        return idx

    def _wrap(self, comm: Any) -> Any:
        raise NotImplementedError("a virtual run supports COMM_WORLD only (no Split, Dup or Create_cart)")


def build_trace(recorders: Sequence[SkeletonTraceRecorder], variant: str = "predicted",
                source: str = "virtual skeleton") -> Trace:
    """Merge the virtual ranks' events (one recorder per rank, in rank order) into a :class:`Trace`."""
    nprocs = len(recorders)
    b = TraceBuilder(nprocs, comms={}, source=source)
    cols = [r.columns(variant) for r in recorders]
    marked = any(np.any(c["iteration"] >= 0) for c in cols)
    for rank, c in enumerate(cols):
        n = len(c["call"])
        if n:
            extra = {"iteration": c["iteration"]} if marked else {}
            b.extend(np.full(n, rank), c["call"], c["peer"], c["nbytes"], c["tag"], c["comm"], c["request"],
                     aux_len=c["aux_len"], aux=c["aux"], t_entry=c["t_entry"], t_exit=c["t_exit"], **extra)
    return b.build(meta={"format": "perfmod-virtual-skeleton", "variant": variant})


@dataclass
class VirtualRun:
    """Result of :func:`run_virtual`.

    Attributes
    ----------
    traces : dict
        Variant (``predicted``, ``lower``, ``upper``) -> :class:`Trace` of all ranks.
    wall_s : float
        Real time of running every rank's skeleton (s), trace building excluded.
    results : list
        What the program returned on each rank.
    stats : DataFrame
        Per region, summed over ranks: calls run and modeled, model evaluations and their cost
        (``eval_s_per_call``: mean real seconds per modeled call).
    """

    traces: dict[str, Trace]
    wall_s: float
    results: list[Any] = field(default_factory=list)
    stats: pd.DataFrame = field(default_factory=pd.DataFrame)


def run_virtual(program: Callable[[RecordingComm], Any], nprocs: int,
                skeleton: Callable[[int], Skeleton], variants: Sequence[str] = ("predicted",)) -> VirtualRun:
    """Run ``program(comm)`` as ``nprocs`` virtual ranks in turn and merge their traces.

    Parameters
    ----------
    program : callable
        One rank's code, taking the communicator (``comm.Get_rank()`` tells the rank).
    nprocs : int
        Number of virtual ranks.
    skeleton : callable
        ``skeleton(rank) -> Skeleton`` (usually model mode); one per rank, since each
        rank has its own virtual clock.  Share its models (and a warm cache) as you like.
    variants : sequence of str
        Which traces to build: ``predicted`` and the interval bounds ``lower``, ``upper``.
    """
    if nprocs < 1:
        raise ValueError(f"nprocs must be >= 1, got {nprocs}")
    recs, results, stats = [], [], []
    t0 = time.perf_counter()
    for rank in range(nprocs):
        sk = skeleton(rank)
        comm = VirtualComm(rank, nprocs, sk)
        with sk:
            results.append(program(comm))
        recs.append(comm.recorder)
        stats.append(sk)
    wall = time.perf_counter() - t0
    traces = {v: build_trace(recs, v) for v in variants}
    return VirtualRun(traces, wall, results, _sum_stats(stats))


def _sum_stats(skeletons: Sequence[Skeleton]) -> pd.DataFrame:
    total: dict[str, dict[str, float]] = {}
    for sk in skeletons:
        for name, st in sk.stats.items():
            acc = total.setdefault(name, dict.fromkeys(vars(st), 0.0))
            for k, v in vars(st).items():
                acc[k] = max(acc[k], v) if k == "switched_after" else acc[k] + v
    df = pd.DataFrame.from_dict(total, orient="index")
    if len(df):
        df["eval_s_per_call"] = df["eval_s"] / df["modeled"].where(df["modeled"] > 0)
    df.index.name = "region"
    return df
