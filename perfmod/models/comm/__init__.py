"""Communication models: point-to-point formulas, platform-aware message
times, collectives, fitting from ping-pong data and the calibration of a
platform from a ping-pong file (:func:`calibrate`)."""

from perfmod.models.comm.calibration import Calibration, CalibrationError, calibrate
from perfmod.models.comm.models import kmodel_k, loggp, maxrate, maxrate2, postal

__all__ = ["postal", "maxrate", "maxrate2", "kmodel_k", "loggp", "calibrate", "Calibration", "CalibrationError"]
