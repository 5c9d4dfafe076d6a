"""DUMPI binary reader benchmark (``make bench``); under ``make test`` it runs once as a test.

Target (issue 14): at least 1,000,000 events/s in one process, and no more
memory per event than the trace itself needs.  The trace is libdumpi's
4-rank ``p2p_coll`` fixture (``tests/data/dumpi-bin``) with the block of
calls between ``MPI_Init`` and ``MPI_Comm_dup`` (point-to-point,
nonblocking with waits, collectives, ``MPI_Comm_rank``/``_size``) repeated
in every rank file, the file's index moved to match: about 1.1 M events,
58 bytes of ``.bin`` per event.  events/s (with the trace's validation, as
users read), the trace's bytes per event and the peak of NumPy memory per
event while decoding and with :meth:`Trace.validate` (tracemalloc; the
memory-mapped files are not counted) go into ``extra_info`` and are printed.
Decoding writes straight into the trace's columns, so its peak is the trace;
``Trace.validate`` (shared by every reader) adds its own temporaries.
"""

import struct
import time
import tracemalloc
from pathlib import Path

import pytest

from perfmod.trace.core import Call
from perfmod.trace.formats.dumpi_bin import read_dumpi_bin

FIXTURE = Path(__file__).parent / "data" / "dumpi-bin" / "p2p_coll"
REPS = 11_000


def replicate(src: Path, dst: Path, reps: int) -> tuple[Path, int]:
    """Copy the trace in ``src`` to ``dst`` with each rank's Init..Comm_dup block of records ``reps`` times.

    Returns the new ``.meta`` file and the number of events it reads as (calls perfmod models).
    """
    meta = next(src.glob("*.meta"))
    t = read_dumpi_bin(meta, unknown="keep")
    events = int((t.call != Call.OTHER).sum())
    names = list(t.other_names)
    for r, path in enumerate(t.meta["files"]):
        data = Path(path).read_bytes()
        ev = t.rank_events(r)
        calls, peers, offs = t.call[ev], t.peer[ev], t.line[ev]
        start = int(offs[list(calls).index(Call.INIT) + 1])
        stop = int(offs[[i for i in range(len(calls)) if calls[i] == Call.OTHER
                         and names[peers[i]] == "MPI_Comm_dup"][0]])
        block = data[start:stop]
        inside = (offs >= start) & (offs < stop)
        events += (reps - 1) * int((inside & (calls != Call.OTHER)).sum())
        grow = len(block) * (reps - 1)
        index = list(struct.unpack(">8q", data[-64:]))
        index[1:] = [off + grow if off > start else off for off in index[1:]]
        out = data[:stop] + block * (reps - 1) + data[stop:-64] + struct.pack(">8q", *index)
        (dst / Path(path).name).write_bytes(out)
    (dst / meta.name).write_bytes(meta.read_bytes())
    return dst / meta.name, events


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory):
    return replicate(FIXTURE, tmp_path_factory.mktemp("dumpi-bin-big"), REPS)


def _nbytes(trace) -> int:
    arrays = [getattr(trace, f) for f in ("rank", "seq", "call", "peer", "nbytes", "tag", "comm", "request",
                                          "compute", "aux_ptr", "aux", "t_entry", "t_exit", "line")]
    return sum(a.nbytes for a in arrays)


@pytest.mark.bench
def test_bench_read_dumpi_bin(benchmark, big_trace):
    read_dumpi_bin(FIXTURE)  # compiled scanner loaded before timing
    meta, expected = big_trace
    trace = benchmark.pedantic(read_dumpi_bin, args=(meta,), rounds=3, iterations=1)
    n = len(trace)
    assert n == expected > 1_000_000
    peaks = {}
    for check in (False, True):
        tracemalloc.start()
        t0 = time.perf_counter()
        read_dumpi_bin(meta, validate=check)
        wall = time.perf_counter() - t0
        peaks[check] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    best = benchmark.stats.stats.min if benchmark.stats is not None else wall
    file_bytes = sum(Path(f).stat().st_size for f in trace.meta["files"])
    info = {"events": n, "events_per_s": n / best, "trace_bytes_per_event": _nbytes(trace) / n,
            "peak_bytes_per_event_reading": peaks[False] / n, "peak_bytes_per_event_with_validate": peaks[True] / n,
            "file_bytes_per_event": file_bytes / n}
    benchmark.extra_info.update(info)
    print(f"\n{trace!r}: {info['events_per_s'] / 1e6:.2f} M events/s, trace {info['trace_bytes_per_event']:.0f} "
          f"B/event, peak while decoding {info['peak_bytes_per_event_reading']:.0f} B/event, with "
          f"Trace.validate {info['peak_bytes_per_event_with_validate']:.0f} B/event, .bin "
          f"{info['file_bytes_per_event']:.0f} B/event")
    assert info["peak_bytes_per_event_reading"] <= 1.05 * info["trace_bytes_per_event"]
