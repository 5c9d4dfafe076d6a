"""The one warning of every extrapolation in perfmod, importable without the models (numpy only)."""

from __future__ import annotations

__all__ = ["ExtrapolationWarning"]


class ExtrapolationWarning(UserWarning):
    """A prediction the training data do not support.

    A compute model's prediction at or below zero, or with a term whose sign differs from its sign on the
    training range (e.g. ``log2 x`` below ``x = 1``: :mod:`perfmod.models.compute`); a trace extrapolated far
    beyond its training scales, or with call sites whose pattern does not generalize
    (:func:`perfmod.apps.extrapolate.extrapolate_trace`).  One class, so that one filter silences or catches
    both.
    """
