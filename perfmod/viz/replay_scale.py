"""The replay's scale table as a figure (:func:`perfmod.replay.scale.scale_table`'s dataset)."""

from __future__ import annotations

import os
from pathlib import Path

import xarray as xr

__all__ = ["plot_scale"]


def plot_scale(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Events per CPU-second and bytes per event against rank count, one line per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    for m in ds.model.values.tolist():
        a.plot(ds.ranks, ds.events_per_cpu_s.sel(model=m) / 1e6, marker="o", label=m)
        b.plot(ds.ranks, ds.peak_bytes_per_event.sel(model=m), marker="o", label=m)
    for ax, lab in ((a, "M events per CPU-second"), (b, "peak bytes per event")):
        ax.set_xscale("log")
        ax.set_xlabel("ranks")
        ax.set_ylabel(lab)
    a.legend()
    fig.suptitle(f"replay scale (load average {ds.attrs.get('load_average', '?')})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)
