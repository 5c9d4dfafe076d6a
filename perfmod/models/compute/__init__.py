"""Statistical compute models of code regions (paper 004 §IV, §VI): Eiger, perfmod mode, baselines."""

from .baselines import ConstantMeanModel, LoopModel, fit_constant_mean, fit_loop_model
from .eiger import EigerModel, EigerOptions, fit_eiger
from .eigerfile import read_eiger_model, write_eiger_model
from .errors import (
    ComputeModelError,
    EigerModelFileError,
    ExtrapolationWarning,
    MissingParameterError,
    TooFewPointsError,
    UnknownParameterError,
)
from .extrap_io import ExtrapFormatError, model_expression, prediction_table, read_extrap, write_extrap_text
from .memory import BandwidthCurve, MemoryHierarchyModel, MemoryTraffic, fit_past_the_cache, with_memory_hierarchy
from .normal_form import normal_form_search
from .pool import EPM_EXPONENTS, Term, eiger_pool, normal_form_pool
from .synth import PerfmodModel, fit_compute_model, fit_perfmod, perfmod_pool
from .varimax import eiger_pca, varimax

__all__ = [
    "BandwidthCurve",
    "MemoryHierarchyModel",
    "MemoryTraffic",
    "with_memory_hierarchy",
    "fit_past_the_cache",
    "ConstantMeanModel",
    "LoopModel",
    "PerfmodModel",
    "fit_compute_model",
    "fit_constant_mean",
    "fit_loop_model",
    "fit_perfmod",
    "perfmod_pool",
    "ComputeModelError",
    "EigerModel",
    "EigerModelFileError",
    "EPM_EXPONENTS",
    "EigerOptions",
    "ExtrapFormatError",
    "ExtrapolationWarning",
    "MissingParameterError",
    "Term",
    "TooFewPointsError",
    "UnknownParameterError",
    "eiger_pca",
    "eiger_pool",
    "fit_eiger",
    "model_expression",
    "normal_form_pool",
    "normal_form_search",
    "prediction_table",
    "read_extrap",
    "read_eiger_model",
    "varimax",
    "write_eiger_model",
    "write_extrap_text",
]
