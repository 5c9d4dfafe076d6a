"""GPU kernel model: the quantitative roofline (QRoof) of paper 000 §2.3 and §3.3.

The device parameter tables it reads are :mod:`perfmod.machine.devices`
(their names are imported from there, not from here); the per-kernel time
(:func:`qroof_time`, :mod:`.qroof`), kernel metric tables and profiler
importers (:mod:`.metrics`, :mod:`.importers`), the table-level prediction
as an xarray Dataset (:mod:`.predict`), the bytes an element-wise pass moves
(:mod:`.traffic`); the roofline plot is :func:`perfmod.viz.roofline.plot_roofline`.
"""

from perfmod.models.roofline.importers import (
    NCU_METRICS,
    NVPROF_METRICS,
    ProfileError,
    read_ncu,
    read_nvprof_metrics,
    read_nvprof_summary,
)
from perfmod.models.roofline.metrics import (
    KERNEL_COLUMNS,
    from_flops_bytes,
    from_instruction_counts,
    kernel_table,
    read_kernel_table,
    selective_profiling,
    validate_kernels,
    write_kernel_table,
)
from perfmod.models.roofline.predict import kernels_dataset, predict
from perfmod.models.roofline.qroof import DOMINANT_OPS, KernelInputError, qroof, qroof_time

__all__ = [
    "DOMINANT_OPS",
    "KernelInputError",
    "qroof",
    "qroof_time",
    "KERNEL_COLUMNS",
    "from_instruction_counts",
    "from_flops_bytes",
    "kernel_table",
    "read_kernel_table",
    "selective_profiling",
    "validate_kernels",
    "write_kernel_table",
    "NCU_METRICS",
    "NVPROF_METRICS",
    "ProfileError",
    "read_ncu",
    "read_nvprof_metrics",
    "read_nvprof_summary",
    "kernels_dataset",
    "predict",
]
