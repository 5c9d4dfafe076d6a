"""Communication models: point-to-point formulas, platform-aware message
times, collectives, fitting from ping-pong data and the calibration of a
platform from a ping-pong file (:func:`calibrate`)."""

from typing import Any

from perfmod.models.comm.models import kmodel_k, loggp, maxrate, maxrate2, postal

__all__ = ["postal", "maxrate", "maxrate2", "kmodel_k", "loggp", "calibrate", "Calibration", "CalibrationError"]


def __getattr__(name: str) -> Any:
    """The calibration (scipy, xarray) is imported when first asked for, not with the formulas the replay needs."""
    if name in ("calibrate", "Calibration", "CalibrationError"):
        from perfmod.models.comm import calibration

        return getattr(calibration, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
