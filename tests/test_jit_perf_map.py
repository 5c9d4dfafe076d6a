"""``perf_map`` names numba's compiled code for ``perf``: the address it gives is the function's code."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from numba import njit

from perfmod.core.jit import _symbol, perf_map


@njit(cache=False)
def _twice_plus(a, b):
    return a + 2 * b


@njit(cache=False)
def _sum_of(x):
    return x.sum()


def _rows(path) -> list[tuple[int, int, str]]:
    rows = []
    for line in path.read_text().splitlines():
        start, size, name = line.split(" ", 2)
        rows.append((int(start, 16), int(size, 16), name))
    return rows


def test_the_mapped_address_runs_the_function(tmp_path):
    assert _twice_plus(1, 2) == 5
    _sum_of(np.arange(4.0))
    rows = _rows(perf_map(tmp_path / "perf.map"))
    names = {name: start for start, _, name in rows}
    ours = f"{__name__}._twice_plus"
    assert ours in names and f"cpython.{ours}" in names and f"{__name__}._sum_of" in names
    # numba's native calling convention: status = f(&result, &exception, a, b)
    native = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p, ctypes.c_int64,
                              ctypes.c_int64)(names[ours])
    result, exc = ctypes.c_int64(0), ctypes.c_void_p(0)
    assert native(ctypes.byref(result), ctypes.addressof(exc), 5, 7) == 0
    assert result.value == 19


def test_numba_names_are_read_back_as_dotted_names():
    assert _symbol("_ZN7perfmod6replay14loggops_kernel4_runB4v153B38c8tJTIeFIjxE5ArrayIxLi1E") == \
        "perfmod.replay.loggops_kernel._run"
    assert _symbol("cfunc._ZN8__main__10twice_plusB2v1Exx") == "cfunc.__main__.twice_plus"
    assert _symbol("NRT_incref") == "NRT_incref"


def test_a_numba_that_keeps_its_code_elsewhere_is_said(monkeypatch, tmp_path):
    """Where numba's libraries hold none of the attributes perf_map reads, it says so instead of an empty map."""
    import types

    from perfmod.core import jit

    lib = types.SimpleNamespace(get_pointer_to_function=lambda name: 0)
    fake = types.SimpleNamespace(overloads={"sig": types.SimpleNamespace(library=lib)})
    monkeypatch.setattr(jit, "_dispatchers", lambda: [fake])
    with pytest.raises(RuntimeError, match="found no code in their libraries"):
        perf_map(tmp_path / "perf.map")
    assert not (tmp_path / "perf.map").exists()
