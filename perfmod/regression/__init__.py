"""R-style regression models for performance data (paper 001, Sasidharan, §3, §5, §6).

``lm(formula, data)`` fits a linear model written as R writes it and reports
what R's ``summary(lm)`` reports; ``anova(*models)`` compares nested models as
R's ``anova``; cross-validation, intervals, a GAM comparison, and the
distributed-response and energy aggregations of Eq. 4-11 live in the
submodules listed in ``__all__``'s neighbours below.
"""

from .anova import NotNestedError, NotNestedWarning, anova, anova_table
from .formula import DataError, FormulaError, RegressionError
from .linear import LinearModel, lm

__all__ = [
    "lm",
    "anova",
    "anova_table",
    "LinearModel",
    "RegressionError",
    "FormulaError",
    "DataError",
    "NotNestedError",
    "NotNestedWarning",
]
