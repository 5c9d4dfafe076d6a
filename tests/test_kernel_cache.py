"""perfmod's kernels are cached under one stamp of all kernel sources (perfmod.core.kernel_cache): a change to a
callee's file reaches the callers' caches."""

import os

import numpy as np

from perfmod.core import kernel_cache as kc


def test_every_kernel_of_the_replay_is_cached_under_the_package_stamp():
    from perfmod.replay import loggops_kernel, loggops_stream
    from perfmod.trace.formats import dumpi_bin_scan

    for kernel in (loggops_kernel._run, loggops_stream.run_stream, dumpi_bin_scan.scan):
        locator = kernel._cache._impl._locator
        assert isinstance(locator, (kc.InTreeKernelLocator, kc.UserWideKernelLocator))
        assert locator.get_source_stamp() == kc.package_stamp()
        assert kernel._cache._cache_file._source_stamp == kc.package_stamp()  # what the index is checked against


def test_the_sources_are_the_modules_numba_compiles_from():
    names = {p.relative_to(kc.PACKAGE).as_posix() for p in kc.kernel_sources()}
    # the loop, the stream whose hooks it compiles in, the helpers both take from other packages, the intrinsics
    assert {"replay/loggops_kernel.py", "replay/loggops_stream.py", "trace/formats/goal_graph.py",
            "core/prefetch.py", "core/bitlen.py", "trace/formats/dumpi_bin_scan.py", "core/kernel_cache.py"} <= names
    assert "studies/modeling_benchmark.py" not in names and "trace/core.py" not in names


def test_the_stamp_follows_any_sources_content(tmp_path, monkeypatch):
    files = [tmp_path / "a.py", tmp_path / "b.py"]
    for i, f in enumerate(files):
        f.write_text(f"from numba import njit\nX = {i}\n")
    monkeypatch.setattr(kc, "PACKAGE", tmp_path)
    monkeypatch.setattr(kc, "kernel_sources", lambda: tuple(files))
    before = kc.package_stamp()
    st = files[1].stat()
    files[1].write_text("from numba import njit\nX = 7\n")  # the callee's file changes, the caller's does not
    os.utime(files[1], ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    changed = kc.package_stamp()
    assert changed != before
    files[1].write_text("from numba import njit\nX = 1\n")  # back as it was: the stamp is of the content
    os.utime(files[1], ns=(st.st_atime_ns, st.st_mtime_ns + 2 * 10**9))
    assert kc.package_stamp() == before


def test_a_kernel_outside_perfmod_keeps_numbas_own_locator(tmp_path):
    import importlib.util

    src = tmp_path / "outside_kernel.py"
    src.write_text("from numba import njit\n\n@njit(cache=True)\ndef f(x):\n    return x + 1\n")
    spec = importlib.util.spec_from_file_location("outside_kernel", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    locator = mod.f._cache._impl._locator
    assert not isinstance(locator, (kc.InTreeKernelLocator, kc.UserWideKernelLocator))
    assert mod.f(np.int64(41)) == 42
