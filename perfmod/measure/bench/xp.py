"""Array backends: NumPy on the CPU, CuPy on a GPU (imported only when asked for).

The proxies and device microbenchmarks are written once against an array
module ``xp`` (the NumPy API) and run on either backend.  CuPy is optional:
asking for it where it is not installed, or where no GPU is visible, raises
a :class:`BackendUnavailable` that says which.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from types import ModuleType
from typing import Any

__all__ = ["BACKENDS", "BackendUnavailable", "array_module", "synchronize", "to_host", "backend_info",
           "cupy_available"]

BACKENDS = ("numpy", "cupy")


class BackendUnavailable(RuntimeError):
    """The requested array backend cannot run here (not installed, or no GPU)."""


def array_module(backend: str) -> ModuleType:
    """Return the array module for ``backend`` ("numpy" or "cupy").

    Raises
    ------
    ValueError
        Unknown backend name.
    BackendUnavailable
        CuPy is not installed or sees no GPU.
    """
    if backend == "numpy":
        import numpy

        return numpy
    if backend != "cupy":
        raise ValueError(f"unknown array backend {backend!r}; known: {', '.join(BACKENDS)}")
    try:
        cp = importlib.import_module("cupy")
    except ImportError as exc:
        raise BackendUnavailable(f"backend 'cupy' requested but CuPy is not installed ({exc})") from None
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDA driver missing or broken
        raise BackendUnavailable(f"backend 'cupy': no usable CUDA device ({exc})") from None
    if n < 1:
        raise BackendUnavailable("backend 'cupy': CuPy is installed but sees no GPU")
    return cp


def cupy_available() -> bool:
    """True if CuPy is installed and sees at least one GPU."""
    try:
        array_module("cupy")
    except BackendUnavailable:
        return False
    return True


def synchronize(xp: ModuleType) -> None:
    """Wait for the device to finish queued work (no-op for NumPy); call before reading a host timer."""
    if xp.__name__ != "numpy":
        xp.cuda.Device().synchronize()


def to_host(xp: ModuleType, a: Any) -> Any:
    """``a`` as a NumPy array (a device-to-host copy for CuPy)."""
    return a if xp.__name__ == "numpy" else xp.asnumpy(a)


def backend_info(xp: ModuleType) -> dict[str, str]:
    """Provenance of the backend: versions, and for CuPy the GPU name, driver and runtime."""
    info = {"backend": xp.__name__, f"{xp.__name__}_version": str(xp.__version__)}
    if xp.__name__ == "numpy":
        return info
    rt = xp.cuda.runtime
    props = rt.getDeviceProperties(xp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    info.update(gpu=name, gpu_memory_bytes=str(props["totalGlobalMem"]),
                gpu_multiprocessors=str(props["multiProcessorCount"]),
                gpu_l2_bytes=str(props.get("l2CacheSize", "")),
                cuda_driver=str(rt.driverGetVersion()), cuda_runtime=str(rt.runtimeGetVersion()))
    try:
        import pynvml

        pynvml.nvmlInit()
        info["nvidia_driver"] = str(pynvml.nvmlSystemGetDriverVersion())
    except Exception:  # nvidia-ml-py is optional
        pass
    try:
        info["cupy_wheel"] = next(d for d in ("cupy-cuda13x", "cupy-cuda12x", "cupy")
                                  if _has_dist(d))
    except StopIteration:
        pass
    return info


def _has_dist(name: str) -> bool:
    try:
        importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True
