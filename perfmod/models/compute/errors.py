"""Exceptions of the compute models (paper 004 §IV): each names what was wrong and where."""

from __future__ import annotations

from perfmod.core.extrapolation import ExtrapolationWarning  # the one class (re-exported here)

__all__ = ["ComputeModelError", "ExtrapolationWarning", "MissingParameterError", "TooFewPointsError",
           "UnknownParameterError", "EigerModelFileError"]


class ComputeModelError(ValueError):
    """Base class of the compute-model errors."""


class MissingParameterError(ComputeModelError):
    """A parameter the model needs is absent or NaN in some rows."""


class TooFewPointsError(ComputeModelError):
    """A cluster or segment has too few distinct parameter points for the pool."""


class UnknownParameterError(ComputeModelError):
    """Prediction data carries a parameter the model was not trained on."""


class EigerModelFileError(ComputeModelError):
    """An Eiger model file does not parse; the message starts with ``file:line:``."""

    def __init__(self, path: str, line: int, message: str) -> None:
        self.path = str(path)
        self.line = int(line)
        super().__init__(f"{path}:{line}: {message}")


