"""Communication models: point-to-point formulas, platform-aware message
times, collectives and fitting from ping-pong data."""

from perfmod.models.comm.models import kmodel_k, loggp, maxrate, maxrate2, postal

__all__ = ["postal", "maxrate", "maxrate2", "kmodel_k", "loggp"]
