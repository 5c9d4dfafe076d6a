"""What the studies of paper 003 (the BSP model of Sharif et al.) share: the model's times and their names.

The BSP model's total time per run is the sum of the compute (T_w), communication (T_c) and other (T_o) times;
both studies of that paper (``sharif_gol``, ``sharif_triton``) measure and predict these four.
"""

from __future__ import annotations

__all__ = ["QUANTITIES", "LONG"]

QUANTITIES = ("t_w", "t_c", "t_o", "total_time")
"""The times a run measures and the BSP model predicts (their sum, T_t = T_w + T_c + T_o)."""

LONG = {"t_w": "compute time (T_w)", "t_c": "communication time (T_c)", "t_o": "other time (T_o)",
        "total_time": "total time (T_t)"}
"""The long name of each of :data:`QUANTITIES`."""
