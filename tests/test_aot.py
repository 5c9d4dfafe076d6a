"""Kernels compiled ahead of time (perfmod.core.aot): the same results as numba's JIT, checked arguments, and a
run-time fallback where they cannot be built (issue 23 item 5)."""

import importlib.util
import shutil
from types import SimpleNamespace

import numpy as np
import pytest
from test_replay_loggops import platform as ns_platform

from perfmod.core import aot
from perfmod.replay import loggops, loggops_kernel
from perfmod.trace.formats import goal_scan, goal_scan_kernels
from perfmod.trace.formats.goal_halo import write_halo_goal

needs_cc = pytest.mark.skipif((shutil.which("cc") is None and shutil.which("gcc") is None)
                              or importlib.util.find_spec("numba.pycc") is None,
                              reason="no C compiler or no numba.pycc: the kernels run under numba's JIT")


def _jit(ns_name, module, specs):
    return SimpleNamespace(aot=False, **{k.name: getattr(module, k.name) for k in specs})


@needs_cc
def test_ahead_of_time_kernels_give_the_jit_results_bit_for_bit(tmp_path, monkeypatch):
    p = write_halo_goal(tmp_path / "h.goal", 6, 4, iterations=3, calc_spread=700, periodic=False)
    plat = ns_platform(2500, 1500, 1000, 6, 65535)
    compiled = goal_scan._kernels(), loggops._kernels()
    assert all(k.aot for k in compiled)
    g_aot = goal_scan.read_goal_graph(p)
    t_aot = loggops.goal_finish_times(p, plat)
    monkeypatch.setitem(aot._loaded, "goal_reader", _jit("goal_reader", goal_scan_kernels, goal_scan.AOT_KERNELS))
    monkeypatch.setitem(aot._loaded, "loggops_loop", _jit("loggops_loop", loggops_kernel, loggops.AOT_KERNELS))
    g_jit = goal_scan.read_goal_graph(p)
    t_jit = loggops.goal_finish_times(p, plat)
    for f in ("rank", "kind", "size", "peer", "tag", "line", "ndeps", "succ_ptr", "succ", "ssucc_ptr", "ssucc"):
        np.testing.assert_array_equal(getattr(g_aot, f), getattr(g_jit, f), err_msg=f)
    np.testing.assert_array_equal(t_aot.total_time, t_jit.total_time)
    np.testing.assert_array_equal(t_aot.compute_time, t_jit.compute_time)
    assert t_aot.total_time.max() > 0


@needs_cc
def test_a_compiled_kernel_refuses_arrays_of_another_type():
    k = goal_scan._kernels()
    assert k.aot
    a = np.array([0, 1, 1])
    ptr, out = k._csr(a, np.array([2, 0, 1]), 3)
    assert ptr.tolist() == [0, 1, 3, 3] and out.tolist() == [2, 0, 1]
    with pytest.raises(TypeError, match=r"_csr: argument 0 must be a C-contiguous 1-d int64 array, not int32 1-d"):
        k._csr(a.astype(np.int32), np.array([2, 0, 1]), 3)  # compiled code would read it as int64
    with pytest.raises(TypeError, match=r"_csr: argument 1 must be .* not list"):
        k._csr(a, [2, 0, 1], 3)


def test_where_the_module_cannot_be_built_numba_compiles_them_and_says_so(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    monkeypatch.setenv("PERFMOD_AOT_DIR", str(blocker / "aot"))  # cannot be created
    ns = aot.kernels("test_unbuildable", "perfmod.replay.loggops_kernel", "perfmod.replay.loggops:AOT_KERNELS")
    assert not ns.aot and ns.run_loggops is loggops_kernel.run_loggops
    assert "the ahead-of-time build of test_unbuildable failed" in capsys.readouterr().err
    monkeypatch.setenv("PERFMOD_AOT", "0")
    ns = aot.kernels("test_disabled", "perfmod.replay.loggops_kernel", "perfmod.replay.loggops:AOT_KERNELS")
    assert not ns.aot and capsys.readouterr().err == ""
    for name in ("test_unbuildable", "test_disabled"):
        aot._loaded.pop(name)


def test_the_module_name_follows_the_sources():
    a = aot._module_name("x", "perfmod.replay.loggops_kernel", ("perfmod.replay.loggops",))
    b = aot._module_name("x", "perfmod.replay.loggops_kernel", ("perfmod.replay.loggops_layout",))
    assert a != b and a.startswith("perfmod_aot_x_") and a == aot._module_name("x", "perfmod.replay.loggops_kernel",
                                                                             ("perfmod.replay.loggops",))
