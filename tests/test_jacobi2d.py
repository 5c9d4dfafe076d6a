"""Jacobi2D proxy: Eq. 6, fixed points, serial = parallel, neighbours, kernel counts."""

import numpy as np
import pytest

from perfmod.apps import jacobi2d as aj
from perfmod.apps.jacobi2d import decompose as jacobi2d_exchange
from perfmod.machine.cart import compass_neighbours, dims_create
from perfmod.measure.proxies import jacobi2d as j
from perfmod.measure.runner import run_mpi


def _global(dims, n, init="wave", seed=0):
    gy = np.arange(-1, dims[0] * n + 1)[:, None]
    gx = np.arange(-1, dims[1] * n + 1)[None, :]
    return j.initial_field(gy, gx, init, seed)


def test_stencil_is_equation_6():
    a = np.arange(25.0).reshape(5, 5) ** 1.5
    out = np.zeros_like(a)
    j.stencil_step(np, a, out, np.empty((3, 3)))
    i, k = 2, 3
    expect = 0.5 * (a[i, k] + (a[i - 1, k] + a[i + 1, k] + a[i, k - 1] + a[i, k + 1]) / 4)
    assert out[i, k] == pytest.approx(expect, rel=1e-15)
    assert np.all(out[0] == 0) and np.all(out[:, 0] == 0)  # ghosts untouched


@pytest.mark.parametrize("init", ["constant", "linear"])
def test_fixed_points(init):
    res = j.run_jacobi(j.SerialComm(), 9, 15, warmup=1, init=init, gather=True)
    assert np.allclose(res["grid"], _global((1, 1), 9, init)[1:-1, 1:-1], rtol=0, atol=1e-13)


def test_one_rank_equals_serial_reference():
    n, iters, warmup = 11, 6, 2
    res = j.run_jacobi(j.SerialComm(), n, iters, warmup=warmup, seed=3, gather=True)
    ref = j.jacobi_serial(_global((1, 1), n, seed=3), iters + warmup)[1:-1, 1:-1]
    assert np.array_equal(res["grid"], ref)
    assert res["global_sum"] == pytest.approx(ref.sum(), rel=1e-14)
    phases = sum(res[f"t_{p}"] for p in j.PHASES)
    assert 0 < phases <= res["t_iter"] <= res["t_iter_max"]


def test_neighbours_match_the_decomposition():
    for p in (1, 2, 4, 6):
        dims = dims_create(p, 2)
        ex = jacobi2d_exchange(p, block=5)
        for r in range(p):
            nb = {v for v in compass_neighbours(r, dims).values() if v >= 0}
            assert nb == set(ex.neighbours(r))
    assert compass_neighbours(0, (2, 2)) == {"north": -1, "south": 2, "west": -1, "east": 1}


def test_kernel_counts():
    c = aj.proxy_kernel_counts(100)
    cells = 100 * 100
    assert c["stencil"]["compute_ops"] == 6 * cells
    # 17 streams of doubles on a CPU (two write-allocating passes), 15 on a GPU
    assert c["stencil"]["dram_bytes"] == 17 * 8 * cells
    assert aj.proxy_kernel_counts(100, write_allocate=False)["stencil"]["dram_bytes"] == 15 * 8 * cells
    assert c["reduce"]["compute_ops"] == cells + 100
    # two rows: read, write, allocate; columns read one 64 B line per element
    rows = aj.proxy_kernel_counts(100, ["north", "south"])["pack"]["dram_bytes"]
    assert rows == 2 * 3 * 8 * 100
    cols = aj.proxy_kernel_counts(100, ["west"])["pack"]["dram_bytes"]
    assert cols == (8 + 2) * 8 * 100
    assert aj.proxy_kernel_counts(100, [])["pack"]["compute_ops"] == 0
    with pytest.raises(ValueError, match="unknown directions"):
        aj.proxy_kernel_counts(10, ["up"])
    with pytest.raises(ValueError, match="block"):
        aj.proxy_kernel_counts(0)


def test_kernel_times_on_numpy():
    t = j.kernel_times(32, reps=3)
    assert set(t) == set(j.KERNELS) and all(v.shape == (3,) and np.all(v > 0) for v in t.values())


def test_bad_input():
    with pytest.raises(ValueError, match="unknown init"):
        j.initial_field(0, 0, "random")
    with pytest.raises(ValueError, match="iters"):
        j.run_jacobi(j.SerialComm(), 4, 0)


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [2, 3, 4])
def test_mpi_run_matches_serial(nprocs):
    n, iters, warmup = 8, 5, 2
    res = run_mpi("perfmod.measure.proxies.jacobi2d", nprocs,
                  ["--block", n, "--iters", iters, "--warmup", warmup, "--checksum"], timeout=120)
    ref = j.jacobi_serial(_global(dims_create(nprocs, 2), n), iters + warmup)[1:-1, 1:-1]
    assert res["global_sum"] == pytest.approx(ref.sum(), rel=1e-13)
    assert res["sum_squares"] == pytest.approx(float(np.sum(ref * ref)), rel=1e-13)
    assert res["dims"] == list(dims_create(nprocs, 2)) and res["t_exchange"] > 0


@pytest.mark.mpi
def test_recorded_run_replays(tmp_path):
    # a real 4-rank run records Listing 1's calls; the trace replays with per-iteration times
    from perfmod.replay import replay
    from perfmod.trace import Call
    from perfmod.trace.formats.npz import read_npz

    n, iters, warmup = 8, 3, 1
    path = tmp_path / "jacobi.npz"
    res = run_mpi("perfmod.measure.proxies.jacobi2d", 4,
                  ["--block", n, "--iters", iters, "--warmup", warmup, "--checksum", "--trace", path], timeout=120)
    ref = j.jacobi_serial(_global(dims_create(4, 2), n), iters + warmup)[1:-1, 1:-1]
    assert res["sum_squares"] == pytest.approx(float(np.sum(ref * ref)), rel=1e-13)  # recording changes nothing
    tr = read_npz(path)
    assert len(tr) == res["trace_events"]
    timed = tr.iteration >= 0
    # 2 x 2 grid, non-periodic: every rank has 2 neighbours -> 2 Irecv + 2 Isend + Waitall + Allreduce
    for call, per_rank in ((Call.IRECV, 2), (Call.ISEND, 2), (Call.WAITALL, 1), (Call.ALLREDUCE, 1)):
        assert int(((tr.call == call) & timed).sum()) == 4 * iters * per_rank, call
    assert sorted(set(tr.iteration[timed].tolist())) == list(range(iters))
    assert np.all(tr.nbytes[(tr.call == Call.ISEND) & timed] == 8 * n)  # one row or column of doubles
    ds = replay(tr, "summit", model="kmodel")
    assert ds.sizes["rank"] == 4 and float(ds.comm_time.min()) > 0
    assert ds.comm_time_iteration.sizes["iteration"] == iters


def test_proxy_and_paper_kernel_counts_agree_on_flops_and_differ_in_traffic():
    """The proxy's counts and perfmod.apps.jacobi2d's (the paper's fused CUDA kernels) are two programs' models."""
    from perfmod.apps.jacobi2d import kernel_counts as paper_counts

    n = 100
    paper = {k.kernel.lower(): k for k in paper_counts(n)}
    proxy = aj.proxy_kernel_counts(n, write_allocate=False, line_bytes=32)
    assert set(paper) == set(proxy) == set(j.KERNELS) == set(aj.KERNELS)
    assert tuple(proxy) == j.KERNELS == aj.KERNELS  # the program and its model name the same kernels, in order
    s = paper["stencil"]
    assert s.items * s.invocations * (s.fp_inst + s.fma_inst) == proxy["stencil"]["compute_ops"] == 6 * n * n
    # one fused kernel reads and writes each cell once; the proxy's six passes move 15 doubles per cell
    assert s.items * s.dram_bytes == 2 * 8 * n * n
    assert proxy["stencil"]["dram_bytes"] == 15 * 8 * n * n
