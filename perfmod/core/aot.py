"""Kernels compiled ahead of time, so that a short job starts without numba (issue 23 item 5).

A numba kernel costs every process that calls it numba's start before its
first event: importing numba (about 0.2 CPU-s and 65 MiB resident), its
typing registries (which import SciPy's BLAS; about 0.4 CPU-s and 50 MiB)
and loading the cached machine code.  For ``perfmod replay x.goal --model
loggp`` on LogGOPSim's own ground that start was more than the job.  So a
module can declare some of its kernels with their exact argument types
(:class:`Arg`), and :func:`kernels` gives them compiled ahead of time by
numba's ``pycc`` into a small extension module that needs only NumPy:

- the module is built once per install (source, Python, NumPy and numba
  versions: a content hash names it) into ``$PERFMOD_AOT_DIR``, else
  ``$XDG_CACHE_HOME/perfmod/aot`` or ``~/.cache/perfmod/aot``, in a child
  process (a C compiler is needed: gcc on Linux), and loaded from there by
  every later process;
- where it cannot be built (no compiler, a read-only cache, ``pycc`` gone
  from numba: it is pending deprecation) or ``PERFMOD_AOT=0``, the same
  functions run under numba's just-in-time compiler, as before: nothing
  fails for want of a compiler;
- a compiled function does not check what it is given (a wrong dtype reads
  memory as another type), so each call checks its arrays against the
  declared types first and raises TypeError.

Measured (2026-11-27, development VM, load 1-2): importing NumPy and an
extension module of the GOAL reader and the LogGOPS event loop, 0.24 s and
27 MiB; numba's start before the same kernels ran, 1.1-1.3 CPU-s and
165 MiB.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

__all__ = ["Arg", "Kernel", "kernels", "aot_dir", "build"]


@dataclass(frozen=True)
class Arg:
    """One argument or result of an ahead-of-time kernel: a NumPy dtype and ``ndim`` (0: a scalar of that
    type); ``readonly``: an array the caller may pass read-only (``np.frombuffer`` of bytes)."""

    dtype: Any
    ndim: int = 1
    readonly: bool = False


@dataclass(frozen=True)
class Kernel:
    """A kernel to compile ahead of time: the ``@njit`` function called ``name`` in the JIT module, its
    arguments and result (an :class:`Arg`, a tuple of them, or None)."""

    name: str
    args: tuple[Arg, ...]
    result: Any = None


def aot_dir() -> Path:
    """Where the ahead-of-time modules live (see the module docstring)."""
    env = os.environ.get("PERFMOD_AOT_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "perfmod" / "aot"


def _module_name(name: str, jit_module: str, sources: tuple[str, ...]) -> str:
    """``perfmod_aot_<name>_<hash>``: the hash of the kernels' sources (``jit_module``, the module declaring their
    types, ``sources``) and of the versions that compile them."""
    from importlib.metadata import version

    root = Path(__file__).resolve().parents[1]  # the perfmod package
    h = hashlib.sha256()
    for mod in (jit_module, *sources):
        h.update((root.joinpath(*mod.split(".")[1:]).with_suffix(".py")).read_bytes())
    h.update(f"{sys.version}|{np.__version__}|{version('numba')}|{sys.platform}".encode())
    return f"perfmod_aot_{name}_{h.hexdigest()[:16]}"


def _numba_type(a: Arg) -> Any:
    from numba import from_dtype, types

    t = from_dtype(np.dtype(a.dtype))
    return t if a.ndim == 0 else types.Array(t, a.ndim, "C", readonly=a.readonly)


def build(jit_module: str, specs: tuple[Kernel, ...], module: str, out_dir: str | os.PathLike) -> Path:
    """Compile ``specs`` of ``jit_module`` with numba's ``pycc`` into ``out_dir/module``; returns its path."""
    import warnings

    from numba import types

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycc's pending-deprecation notice
        from numba.pycc import CC
    jit = importlib.import_module(jit_module)
    cc = CC(module)
    cc.output_dir = str(out_dir)
    cc.verbose = False
    for k in specs:
        res = k.result
        if res is None:
            rt = types.none
        elif isinstance(res, tuple):
            rt = types.Tuple(tuple(_numba_type(a) for a in res))
        else:
            rt = _numba_type(res)
        cc.export(k.name, rt(*(_numba_type(a) for a in k.args)))(getattr(jit, k.name).py_func)
    cc.compile()
    found = sorted(Path(out_dir).glob(module + ".*"))
    if not found:
        raise RuntimeError(f"pycc wrote no {module} in {out_dir}")
    return found[0]


def _checked(fn: Any, k: Kernel) -> Any:
    """``fn`` with its arguments checked against ``k.args`` (a compiled function does not check them)."""
    arrays = [(i, np.dtype(a.dtype), a.ndim) for i, a in enumerate(k.args) if a.ndim]

    def call(*args: Any) -> Any:
        for i, dt, nd in arrays:
            x = args[i]
            if not (isinstance(x, np.ndarray) and x.dtype == dt and x.ndim == nd and x.flags.c_contiguous):
                got = f"{x.dtype} {x.ndim}-d" if isinstance(x, np.ndarray) else type(x).__name__
                raise TypeError(f"{k.name}: argument {i} must be a C-contiguous {nd}-d {dt} array, not {got}")
        return fn(*args)

    call.__name__ = call.__qualname__ = k.name
    return call


_loaded: dict[str, SimpleNamespace] = {}


def kernels(name: str, jit_module: str, specs_at: str, sources: tuple[str, ...] = ()) -> SimpleNamespace:
    """The kernels of ``jit_module`` that ``specs_at`` (``"module:NAME"``, a tuple of :class:`Kernel`) declares,
    compiled ahead of time where possible (see the module docstring).

    ``sources``: further modules whose text the kernels depend on (their constants); a change to any of them
    or to ``jit_module`` names a new module, built on first use.  The namespace's ``aot`` says which ran.
    """
    if name in _loaded:
        return _loaded[name]
    specs = _specs(specs_at)
    ns = None
    if os.environ.get("PERFMOD_AOT", "1") != "0":
        try:
            ns = _load_or_build(name, jit_module, specs_at, specs, sources)
        except Exception as e:  # no compiler, no cache directory, no pycc: the JIT runs them
            print(f"perfmod: the ahead-of-time build of {name} failed ({type(e).__name__}: "
                  f"{str(e).strip().splitlines()[-1] if str(e).strip() else ''}); numba compiles them at run time",
                  file=sys.stderr, flush=True)
    if ns is None:
        jit = importlib.import_module(jit_module)
        ns = SimpleNamespace(aot=False, **{k.name: getattr(jit, k.name) for k in specs})
    _loaded[name] = ns
    return ns


def _specs(specs_at: str) -> tuple[Kernel, ...]:
    owner, attr = specs_at.split(":")
    return getattr(importlib.import_module(owner), attr)


def _load_or_build(name: str, jit_module: str, specs_at: str, specs: tuple[Kernel, ...],
                   sources: tuple[str, ...]) -> SimpleNamespace:
    module = _module_name(name, jit_module, (specs_at.split(":")[0], *sources))
    where = aot_dir()
    found = sorted(where.glob(module + ".*.so")) + sorted(where.glob(module + ".*.pyd")) if where.is_dir() else []
    if not found:
        where.mkdir(parents=True, exist_ok=True)
        print(f"perfmod: compiling {name} ahead of time with numba's pycc (once per install) ...", file=sys.stderr,
              flush=True)
        t0 = time.perf_counter()
        tmp = where / f".build-{module}-{os.getpid()}"
        tmp.mkdir()
        try:
            # the child imports this same perfmod, wherever it was found
            root = str(Path(__file__).resolve().parents[2])
            path = os.pathsep.join(x for x in (root, os.environ.get("PYTHONPATH", "")) if x)
            p = subprocess.run([sys.executable, "-m", "perfmod.core.aot", jit_module, specs_at, module, str(tmp)],
                               capture_output=True, text=True, check=False,
                               env={**os.environ, "PERFMOD_AOT": "0", "PYTHONPATH": path})
            if p.returncode:
                raise RuntimeError((p.stderr or p.stdout).strip() or f"exit status {p.returncode}")
            built = next(tmp.glob(module + ".*"))
            os.replace(built, where / built.name)  # atomic: a concurrent build writes the same file
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"perfmod: {name} compiled in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        found = sorted(where.glob(module + ".*"))
    spec = importlib.util.spec_from_file_location(module, found[0])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return SimpleNamespace(aot=True, **{k.name: _checked(getattr(mod, k.name), k) for k in specs})


def _main(argv: list[str]) -> int:
    jit_module, specs_at, module, out = argv
    build(jit_module, _specs(specs_at), module, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
