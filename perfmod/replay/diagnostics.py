"""The replay's warning class, importable without numba or the dataset libraries (the GOAL -> ``loggp`` path
warns with it too: :mod:`perfmod.replay.loggops`)."""

from __future__ import annotations

__all__ = ["ReplayWarning"]


class ReplayWarning(UserWarning):
    """Something in the trace MPI would tolerate but a replay should mention (unmatched eager sends, ...)."""
