"""The ``loggp`` replay is LogGOPS as LogGOPSim computes it (issue 14 item 11).

Closed forms of the LogGOPS rules (:mod:`perfmod.replay.loggops`): a send
holds its CPU ``o`` and its NIC ``g + (n - 1) G``; a message reaches the
receiver ``o + L`` after its send started and holds the receiver's CPU
``o + (n - 1) G`` and NIC ``g + (n - 1) G``; rendezvous above S.  Then
per-host finishing times that LogGOPSim itself computed, committed, and
(when ``PERFMOD_LOGGOPSIM`` names a directory with LogGOPSim's ``txt2bin``
and ``LogGOPSim`` binaries) LogGOPSim run on the spot.
"""

import os
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from perfmod.apps.traces import collective, synthetic
from perfmod.machine.platforms import MODES, PROTOCOLS, PlatformError, from_dict, load, to_dict
from perfmod.replay import DeadlockError, ReplayWarning, replay
from perfmod.replay.graph import CALC, RECV, SEND, WILD, build_graph
from perfmod.trace import TraceBuilder, read_trace
from perfmod.trace.formats.goal import read_goal, write_goal
from perfmod.trace.requests import resolve_requests

NS = 1e-9


def platform(L, o, g, G, S=65535):
    """Summit's layout with one LogGP parameter set (integer nanoseconds) for every mode and protocol."""
    base = load("summit")
    comm = dict(base.comm)
    for m in MODES:
        for p in PROTOCOLS:
            comm[("loggp", m, p)] = {"L": L * NS, "o": o * NS, "g": g * NS, "G": G * NS}
    return base.replace(comm=comm, eager_max_bytes=S, short_max_bytes=min(base.short_max_bytes, S))


def ns(ds, var="total_time"):
    return np.rint(ds[var].values / NS).astype(np.int64).tolist()


@pytest.mark.parametrize("n", [1001, 0])  # a zero-byte message costs LogGOPSim's (0 - 1) G
@pytest.mark.parametrize("o, g, G", [(1500, 1000, 2), (1500, 1000, 0), (500, 3000, 1), (800, 800, 0)])
def test_back_to_back_messages_inject_every_max_o_g(o, g, G, n):
    L = 2000
    b = TraceBuilder(2)
    for tag in (0, 1):
        b.append(0, "isend", peer=1, nbytes=n, tag=tag, request=tag)
        b.append(1, "irecv", peer=0, nbytes=n, tag=tag, request=tag)
    b.append(0, "waitall", aux=[0, 1])
    b.append(1, "waitall", aux=[0, 1])
    ds = replay(b.build(), platform(L, o, g, G), "loggp")
    gn = (n - 1) * G
    second = max(o, g + gn)  # the second send starts when CPU (o) and NIC (g + (n-1)G) are free again
    first_in = o + L  # taken in at once: the receiver's CPU and NIC are idle
    second_in = max(second + o + L, first_in + o + gn, first_in + g + gn)  # behind the first reception
    assert ns(ds) == [second + o, second_in + o + gn]
    assert ns(ds, "wait_time") == ns(ds) and ns(ds, "compute_time") == [0, 0]


def test_a_zero_byte_message_costs_minus_G_unless_loggopsims_arithmetic_wraps():
    L, o, G = 2500, 1500, 6
    b = TraceBuilder(2)
    b.append(0, "send", peer=1, nbytes=0)
    b.append(1, "recv", peer=0, nbytes=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # g >= G: no warning
        assert ns(replay(b.build(), platform(L, o, 1000, G), "loggp")) == [o, o + L + o - G]
    with pytest.warns(ReplayWarning, match=r"trace: 1 zero-byte message\(s\) where o or g is less than G"):
        ds = replay(b.build(), platform(L, o, 4, G), "loggp")  # g < G: LogGOPSim's g - G wraps; one byte's cost
    assert ns(ds) == [o, o + L + o]


@pytest.mark.parametrize("o, g, G", [(1500, 1000, 3), (500, 3000, 1), (1000, 1000, 0)])
def test_receiver_cpu_is_busy_o_plus_n_minus_1_G_per_message(o, g, G):
    L, n = 2500, 513
    b = TraceBuilder(3)
    for src in (1, 2):
        b.append(0, "irecv", peer=src, nbytes=n, request=src)
        b.append(src, "send", peer=0, nbytes=n)
    b.append(0, "waitall", aux=[1, 2])
    ds = replay(b.build(), platform(L, o, g, G), "loggp")
    gn = (n - 1) * G
    # both arrive at o + L; the second is taken in when the first has left CPU and NIC
    assert ns(ds) == [o + L + max(o, g) + gn + o + gn, o, o]
    assert ns(ds, "send_time")[1:] == [o, o]


def test_a_ranks_send_queues_behind_the_message_its_cpu_takes_in():
    L, o, g, G, n, c = 2500, 1500, 1000, 2, 1001, 10_000
    b = TraceBuilder(3)
    b.append(0, "send", peer=1, nbytes=n)
    b.append(1, "irecv", peer=0, nbytes=n, request=0)
    b.append(1, "isend", peer=2, nbytes=n, request=1, compute=c * NS)  # computing while the message arrives
    b.append(1, "waitall", aux=[0, 1])
    b.append(2, "recv", peer=1, nbytes=n)
    ds = replay(b.build(), platform(L, o, g, G), "loggp")
    gn = (n - 1) * G
    send = c + o + gn  # the message waiting since o + L is taken in first, then rank 1 sends
    assert ns(ds)[2] == send + o + L + o + gn
    assert ns(ds)[1] == send + o and ns(ds, "compute_time")[1] == c
    # the message semantics (loggp_nic) do not charge the receiver: its send starts when the computation ends
    nic = replay(b.build(), platform(L, o, g, G), "loggp_nic")
    assert ns(nic)[2] == c + 2 * o + L + gn


@pytest.mark.parametrize("n, S", [(4096, 65535), (4096, 4095)])
def test_rendezvous_above_S_completes_the_send_when_the_receive_is_posted(n, S):
    L, o, g, G, late = 2500, 1500, 1000, 1, 50_000
    b = TraceBuilder(2)
    b.append(0, "send", peer=1, nbytes=n)
    b.append(1, "recv", peer=0, nbytes=n, compute=late * NS)
    ds = replay(b.build(), platform(L, o, g, G, S=S), "loggp")
    sender = late if n > S else o  # rendezvous: done when matched; eager: when started (plus its o)
    assert ns(ds) == [sender, late + o + (n - 1) * G]
    assert ns(ds, "send_time")[0] == sender


def test_zero_parameters_loggp_allows_are_accepted():
    d = to_dict(platform(2500, 0, 0, 6))
    for entry in d["comm"]["loggp"]["inter_node"].values():
        entry["G"] = 0.0
        entry["L"] = 0.0
    plat = from_dict(d)
    assert plat.params("loggp", "inter_node", "eager") == {"L": 0.0, "o": 0.0, "g": 0.0, "G": 0.0}
    d["comm"]["loggp"]["inter_node"]["eager"]["G"] = -1e-9
    with pytest.raises(PlatformError, match=r"comm.loggp.inter_node.eager.G: must be a number >= 0"):
        from_dict(d)
    d = to_dict(load("summit"))
    d["comm"]["postal"]["inter_node"]["eager"]["beta"] = 0.0  # postal's beta stays positive
    with pytest.raises(PlatformError, match=r"beta: must be a positive number"):
        from_dict(d)


@pytest.mark.parametrize("trace", [synthetic("jacobi2d", 16, 2, compute=1e-6), synthetic("minimd", 12, 1),
                                   synthetic("allreduce", 12, 2)], ids=["jacobi2d", "minimd", "allreduce"])
def test_graph_is_write_goals_schedule(tmp_path, trace):
    g = build_graph(trace, resolve_requests(trace), trace.compute)
    s = read_goal(write_goal(trace, tmp_path / "s.goal"))
    kinds = {"send": SEND, "recv": RECV, "calc": CALC}
    for r in range(trace.nprocs):
        nodes = range(g.rank_ptr[r], g.rank_ptr[r + 1])
        ops = list(s.ops[r].values())
        assert [kinds[op.kind] for op in ops] == g.kind[nodes].tolist()
        size = [op.size * 1000 if op.kind == "calc" else op.size for op in ops]  # calc: ns -> ps
        assert size == g.size[nodes].tolist()
        assert [op.peer for op in ops if op.kind != "calc"] == g.peer[nodes][g.kind[nodes] != CALC].tolist()
        assert [op.tag for op in ops if op.kind != "calc"] == g.tag[nodes][g.kind[nodes] != CALC].tolist()
        index = {op.label: k + g.rank_ptr[r] for k, op in enumerate(ops)}
        edges = sorted((index[b], index[a]) for a, b, _ in s.requires[r])
        ours = sorted((v, int(w)) for v in nodes for w in g.succ[g.succ_ptr[v]:g.succ_ptr[v + 1]])
        assert edges == ours
    assert WILD == -1


@pytest.mark.parametrize("make", [lambda: synthetic("jacobi2d", 1024, 2), lambda: synthetic("jacobi2d", 256, 10),
                                  lambda: synthetic("minife", 64, 3, box=20), lambda: collective("allreduce", 4096),
                                  lambda: collective("bcast", 4096)])
def test_the_check_before_allocating_covers_what_the_replay_allocates(make):
    """``stream_bytes``, which the ``loggp`` replay of a trace checks against the memory available before it
    allocates, is at least the peak of what the replay allocates beyond the trace (tracemalloc counts NumPy's
    and numba's arrays): one event a rank and several, halos and collectives."""
    import tracemalloc

    from perfmod.replay.engine import replay_times
    from perfmod.replay.loggops import stream_bytes

    trace = make()
    replay_times(trace, "summit", "loggp", progress=False)  # compiled code loaded first
    tracemalloc.start()
    try:
        replay_times(trace, "summit", "loggp", progress=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0.2 * stream_bytes(len(trace), trace.nprocs) < peak <= stream_bytes(len(trace), trace.nprocs)


def test_the_event_loop_shows_its_progress_while_it_runs(capsys):
    """The streamed event loop runs without the GIL and counts the events its generator made: a thread shows
    them while it runs (values between none and all of them) and all of them once it is done; a replay with a
    progress bar shows the final count on the bar."""
    from perfmod.core.kernel_progress import polled
    from perfmod.replay import engine, loggops

    trace = synthetic("jacobi2d", 4096, 5)
    n = len(trace)
    seen = []
    real = loggops.polled

    def fast(counter, show, every=0.5):
        return real(counter, lambda k: (seen.append(k), show(k)), 0.002)

    replay(synthetic("jacobi2d", 16, 2), "summit", "loggp")  # compiled first
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(loggops, "polled", fast)
        engine.replay_times(trace, "summit", "loggp", progress=True)
    assert seen[-1] == n
    assert seen == sorted(seen)
    assert any(0 < k < n for k in seen), "no count seen while the loop ran: does it hold the GIL?"
    assert f"event loop: {n:,} of {n:,} events made (100%)" in capsys.readouterr().err
    with pytest.raises(ValueError, match="one-element int64"):
        with polled(np.zeros(2, dtype=np.int64), print):
            pass


def test_dataset_adds_up_and_deadlocks_are_named():
    ds = replay(synthetic("jacobi2d", 16, 3, compute=2e-6), platform(2500, 1500, 1000, 6), "loggp")
    np.testing.assert_allclose(ds.comm_time + ds.compute_time, ds.total_time, rtol=1e-12)
    np.testing.assert_allclose(ds.comm_time_iteration.sum("iteration"), ds.comm_time, rtol=1e-12)
    np.testing.assert_allclose(ds.compute_time, 3 * 2e-6, rtol=1e-12)
    assert ds.attrs["model"] == "loggp"
    b = TraceBuilder(2)
    b.append(0, "recv", peer=1, nbytes=8, tag=3)
    b.append(1, "compute", compute=1e-6)
    with pytest.raises(DeadlockError, match=r"rank 0 event 0 MPI_Recv peer 1 tag 3: no matching send"):
        replay(b.build(), platform(2500, 1500, 1000, 6), "loggp")


def test_deadlock_report_names_what_each_rank_waits_for_as_the_message_kernel_does():
    # rank 0's rendezvous send matches rank 1's second receive, which rank 1 never posts: its first receive
    # has no send (the loggp replay matches again for the report, having let the matching go before its loop)
    b = TraceBuilder(2)
    b.append(0, "send", peer=1, nbytes=1 << 22, tag=1)
    b.append(0, "recv", peer=1, nbytes=8, tag=5)
    b.append(1, "recv", peer=0, nbytes=8, tag=9)
    b.append(1, "recv", peer=0, nbytes=1 << 22, tag=1)
    details = {}
    for model in ("kmodel", "loggp"):
        with pytest.raises(DeadlockError) as err:
            replay(b.build(), "summit", model)
        details[model] = err.value.details
    assert [d["waiting_for"] for d in details["loggp"]] == [
        "rendezvous: rank 1 has not posted the receive (event 1)", "no matching send in the trace"]
    assert details["loggp"] == details["kmodel"]


# LogGOPSim's per-host finishing times (ns), computed by LogGOPSim built from github.com/spcl/LogGOPSim at
# commit 76451de16546c7ea39651c183cbc532f4a3457c0 (src/LogGOPSim: make, with -O2), for perfmod's write_goal
# schedule of the trace: txt2bin -i s.goal -o s.bin; LogGOPSim -f s.bin -L L -o o -g g -G G -S 65535
# (the "Host i: t" lines).
JACOBI16 = synthetic("jacobi2d", 16, 10, compute=2e-6)  # 10 iterations, one allreduce of 8 B each
LOGGOPSIM_JACOBI16 = {
    (2500, 1500, 1000, 6): [42878776, 42880318, 42880902, 42877818, 42874734, 42876276, 42876860, 42873776,
                            42882818, 42884360, 42884944, 42881860, 42878776, 42880318, 42880902, 42877818],
    (2500, 1500, 1000, 0): [373500, 375000, 375000, 373500, 374500, 376000, 376000, 374500, 377500, 379000,
                            379000, 377500, 373500, 375000, 374500, 373500],
    (1000, 200, 3000, 1): [5497783, 5496390, 5497976, 5498176, 5496183, 5495183, 5496769, 5496783, 5496576,
                           5495783, 5497783, 5499383, 5497783, 5496390, 5497976, 5497990],
}
LOGGOPSIM_ALLREDUCE12 = [48920, 44878, 48920, 44878, 48920, 44878, 48920, 44878, 47420, 47420, 47420, 47420]
# MiniFE, 16 ranks, 3 iterations, box=20, L=2500 o=1500 g=1000 G=6: up to 34 operations freed at once, which
# LogGOPSim orders with GCC's (unstable) std::sort
LOGGOPSIM_MINIFE16 = [671148, 675190, 668648, 672690, 667106, 671148, 664606, 668648, 667106, 671148, 664606,
                      668648, 663064, 667106, 660564, 664606]

# LogGOPSim's headline kind of schedule (collective(): rooted collectives alone), 13 ranks, root 5, 2 in a row,
# L=2500 o=1500 g=1000 G=6 S=65535: a binomial broadcast of 4,096 B (eager) and a reduce of 100,000 B (rendezvous)
LOGGOPSIM_ROOTED13 = {
    ("bcast", 4096): [184990, 213560, 189490, 218060, 162420, 180490, 209060, 184990, 213560, 184990, 213560, 189490,
                      218060],
    ("reduce", 100000): [4815952, 3614464, 3614464, 1808482, 3614464, 4815952, 4214458, 4214458, 1208488, 4815952,
                         2411476, 2411476, 1208488],
}


@pytest.mark.parametrize("call, nbytes", list(LOGGOPSIM_ROOTED13))
def test_rooted_collectives_alone_agree_with_loggopsim_to_the_ns(call, nbytes):
    ds = replay(collective(call, 13, nbytes, root=5, iterations=2), platform(2500, 1500, 1000, 6), "loggp")
    assert ns(ds) == LOGGOPSIM_ROOTED13[call, nbytes]
    assert ds.attrs["operations"] == 2 * 2 * 12  # a send and a receive per edge of the tree, twice


@pytest.mark.parametrize("call, nbytes", [("bcast", 4096), ("reduce", 100000), ("bcast", 8), ("allreduce", 8),
                                          ("barrier", 0)])
@pytest.mark.parametrize("iterations", [1, 2])
def test_a_lone_collectives_stream_with_small_homes_equals_the_graph_held_whole(tmp_path, call, nbytes, iterations):
    """One event per rank and one operation a round (a lone broadcast or reduce) gives each rank 4 home slots in
    the streaming replay instead of 8 (``loggops_stream._HOME_SHIFT_ONE``): the same simulation, host for host, as
    the whole graph of ``write_goal``'s schedule of it (the GOAL path); 300 ranks, root 7, so that the root's
    sends outrun a small home.  A barrier's messages have zero bytes: LogGOPSim's ``(0 - 1) G`` on both paths."""
    trace = collective(call, 300, nbytes, root=7, iterations=iterations)
    plat = platform(2500, 1500, 1000, 6, S=4096)
    streamed = replay(trace, plat, "loggp")
    whole = replay(read_trace(write_goal(trace, tmp_path / "c.goal")), plat, "loggp")
    assert ns(streamed) == ns(whole)
    assert streamed.attrs["operations"] == whole.attrs["operations"]
    if call in ("bcast", "reduce"):  # a send and a receive per edge of the tree
        assert streamed.attrs["operations"] == iterations * 2 * 299


# LogGOPSim's per-host finishing times (ns) for write_goal's schedule of the authors' DUMPI traces of "End-to-end
# Performance Modeling of Distributed GPU Applications" (Choi et al., ICS 2020; Lassen; SOURCES.md of the trace
# directory names their origin), L=2500
# o=1500 g=1000 G=6 S=65535, LogGOPSim as above (commit 76451de).  MiniMD's 2,401 barriers a rank are 57,624
# zero-byte messages, which LogGOPSim costs (0 - 1) G.
LOGGOPSIM_CHOI = {
    ("minife", 16): [6265359637, 6265361763, 6265355595, 6265357721, 6265355595, 6265357721, 6265351553, 6265353679,
                     6265355595, 6265357721, 6265351553, 6265353679, 6265351553, 6265353679, 6265347511, 6265349637],
    ("minimd", 8): [11269281442, 11269237785, 11269236655, 11269236755, 11269239165, 11269234611, 11269239972,
                    11269237155],
}


@pytest.mark.parametrize("app, nprocs", list(LOGGOPSIM_CHOI))
def test_the_authors_lassen_traces_replay_as_loggopsim_runs_their_schedule(tmp_path, app, nprocs):
    from perfmod.replay.loggops import goal_finish_times
    from perfmod.studies.papers.choi2020_lassen import trace_root

    root = trace_root("")
    if root is None or not (root / app / f"n{nprocs}.meta").is_file():
        pytest.skip("the authors' Lassen DUMPI traces are not here (PERFMOD_CHOI2020_TRACES)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the traces were renamed after the run: the reader says so
        trace = read_trace(root / app / f"n{nprocs}.meta")
    plat = platform(2500, 1500, 1000, 6)
    assert ns(replay(trace, plat, "loggp")) == LOGGOPSIM_CHOI[app, nprocs]  # streamed, never whole
    whole = goal_finish_times(write_goal(trace, tmp_path / "t.goal"), plat).total_time  # the file's graph, whole
    assert np.rint(whole / NS).astype(np.int64).tolist() == LOGGOPSIM_CHOI[app, nprocs]


@pytest.mark.parametrize("params", list(LOGGOPSIM_JACOBI16))
def test_jacobi2d_halo_and_allreduce_agree_with_loggopsim_to_the_ns(tmp_path, params):
    plat = platform(*params)
    assert ns(replay(JACOBI16, plat, "loggp")) == LOGGOPSIM_JACOBI16[params]
    back = read_trace(write_goal(JACOBI16, tmp_path / "j.goal"))  # the schedule LogGOPSim ran
    assert ns(replay(back, plat, "loggp")) == LOGGOPSIM_JACOBI16[params]


def test_recursive_doubling_allreduce_with_the_fold_agrees_with_loggopsim():
    ds = replay(synthetic("allreduce", 12, 2), platform(2500, 1500, 1000, 6), "loggp")
    assert ns(ds) == LOGGOPSIM_ALLREDUCE12


def test_more_than_16_operations_freed_at_once_are_ordered_as_std_sort_does():
    ds = replay(synthetic("minife", 16, 3, box=20), platform(2500, 1500, 1000, 6), "loggp")
    assert ns(ds) == LOGGOPSIM_MINIFE16


def _loggopsim():
    d = os.environ.get("PERFMOD_LOGGOPSIM")
    tools = [Path(d) / "txt2bin", Path(d) / "LogGOPSim"] if d else []
    if not tools or not all(t.is_file() and shutil.which(str(t)) for t in tools):
        pytest.skip("set PERFMOD_LOGGOPSIM to a directory with LogGOPSim's txt2bin and LogGOPSim binaries")
    return tools


@pytest.mark.parametrize("name, trace", [
    ("jacobi2d_64x10", synthetic("jacobi2d", 64, 10, compute=2e-6)),
    ("jacobi2d_256x10", synthetic("jacobi2d", 256, 10, compute=2e-6)),
    ("jacobi2d_halo_64x10", synthetic("jacobi2d", 64, 10, allreduces=0, compute=2e-6)),
    ("allreduce_64x5", synthetic("allreduce", 64, 5)),
    ("minife_64x3", synthetic("minife", 64, 3, box=20)),
    ("bcast_100x2", collective("bcast", 100, 4096, root=7, iterations=2)),
    ("reduce_100x2", collective("reduce", 100, 100000, root=99, iterations=2)),
])
@pytest.mark.parametrize("params", [(2500, 1500, 1000, 6), (2500, 1500, 1000, 0), (700, 700, 700, 2)])
def test_loggopsim_itself_agrees(tmp_path, name, trace, params):
    txt2bin, sim = _loggopsim()
    goal, binary = write_goal(trace, tmp_path / f"{name}.goal"), tmp_path / f"{name}.bin"
    subprocess.run([str(txt2bin), "-i", str(goal), "-o", str(binary)], check=True, capture_output=True)
    L, o, g, G = params
    out = subprocess.run([str(sim), "-f", str(binary), "-b", "-L", str(L), "-o", str(o), "-g", str(g), "-G", str(G),
                          "-S", "65535"], check=True, capture_output=True, text=True).stdout
    expect = int(re.search(r"Maximum finishing time at host \d+: (\d+)", out).group(1))
    assert max(ns(replay(read_trace(goal), platform(*params), "loggp"))) == expect


def _loggopsim_times(goal, L, o, g, G, S):
    """LogGOPSim's finishing times of a GOAL file: ``{host: ns}`` where it prints every host (small runs), else
    ``{None: ns}`` (its maximum)."""
    txt2bin, sim = _loggopsim()
    binary = goal.with_suffix(".bin")
    subprocess.run([str(txt2bin), "-i", str(goal), "-o", str(binary)], check=True, capture_output=True)
    out = subprocess.run([str(sim), "-f", str(binary), "-L", str(L), "-o", str(o), "-g", str(g), "-G", str(G),
                          "-S", str(S)], check=True, capture_output=True, text=True).stdout
    hosts = {int(h): int(t) for h, t in re.findall(r"^Host (\d+): (\d+)$", out, flags=re.M)}
    return hosts or {None: int(re.search(r"Maximum finishing time at host \d+: (\d+)", out).group(1))}


@pytest.mark.parametrize("seed", range(24))
def test_seeded_random_goal_schedules_agree_with_loggopsim_on_every_host(tmp_path, seed):
    """Halos (periodic or not, with or without allreduces and computation, any-tag receives) and rooted
    collectives, sizes on both sides of S, random L, o, g, G, S: every host's finishing time equal to the ns,
    the GOAL file read as written (``goal_finish_times``), and read from the binary ``txt2bin`` made of it.
    Zero-byte messages only where o and g are at least G: elsewhere LogGOPSim's unsigned ``t + g - G`` wraps
    around (:func:`perfmod.replay.loggops._zero_byte_durations`).  In every other halo a third of the
    ``requires`` become ``irequires`` (an operation may start once the other has started)."""
    from perfmod.replay.loggops import goal_finish_times
    from perfmod.trace.formats.goal_halo import write_halo_goal

    _loggopsim()
    rnd = np.random.default_rng(seed)
    L, o, g = (int(rnd.choice(v)) for v in ((2500, 700, 13, 0), (1500, 700, 1, 0), (1000, 700, 3000, 0)))
    G, S = int(rnd.choice((6, 2, 1, 0))), int(rnd.choice((65535, 1024, 100000, 0)))
    goal = tmp_path / "s.goal"
    if seed % 3:
        write_halo_goal(goal, int(rnd.integers(2, 10)), int(rnd.integers(1, 10)), int(rnd.integers(1, 4)),
                        nbytes=int(rnd.choice((0 if min(o, g) >= G else 1, 1, 1000, 1024, 1025, 65535, 65536,
                                               99999))), periodic=bool(seed % 2),
                        calc=int(rnd.choice((0, 500, 20000))), calc_spread=int(rnd.choice((0, 100, 3000))),
                        allreduce=bool(rnd.random() < 0.7), allreduce_bytes=int(rnd.choice((8, 4096, 200000))),
                        any_tag=bool(rnd.random() < 0.3))
        if seed % 2:
            lines = goal.read_text().splitlines(keepends=True)
            goal.write_text("".join(ln.replace(" requires ", " irequires ") if " requires " in ln and
                                    rnd.random() < 1 / 3 else ln for ln in lines))
    else:
        p = int(rnd.integers(2, 70))
        write_goal(collective(str(rnd.choice(("bcast", "reduce", "allreduce"))), p, int(rnd.choice((8, 4096, 70000))),
                            root=int(rnd.integers(p)), iterations=int(rnd.integers(1, 3))), goal)
    want = _loggopsim_times(goal, L, o, g, G, S)
    got = np.rint(goal_finish_times(goal, platform(L, o, g, G, S)).total_time / NS).astype(np.int64)
    assert {h: int(got.max() if h is None else got[h]) for h in want} == want
    # and LogGOPSim's own binary of it (txt2bin's output) the same
    got_bin = np.rint(goal_finish_times(goal.with_suffix(".bin"), platform(L, o, g, G, S)).total_time / NS)
    assert np.array_equal(got_bin.astype(np.int64), got)
