"""R-style regression models for performance data (paper 001, Sasidharan, §3, §5, §6).

================================  =====================================================================
``lm(formula, data)``             linear model as R's ``lm``: ``coef_table()``, ``summary()``, ``predict``
``anova(*models)``                R's ``anova``: nested models (Tables 2, 9) or one model's Type-I table;
                                  ``format_anova`` prints it as R does
``holdout``, ``kfold``            cross-validation scored on held-out rows; ``compare_models`` chooses
``prediction_errors``             RMSE, MAPE, bias, interval coverage of predictions against measurements
``gam``, ``compare_with_lm``      penalized-spline GAM of the same variables (statsmodels GLMGam), beside lm
``t_comp``, ``t_comm``, ...       Eq. 4-7 responses and Eq. 8-11 energy from per-device timing arrays
``PublishedModel``                a published coefficient table as a model that evaluates at given X
``viz.validation``                measured against predicted with intervals (one plot for every study)
================================  =====================================================================

Formulas are R's, as the paper writes them: ``time ~ (X1 + I(X1^2)) * X2 * X3``
is Model C of §5.1.2 with R's term names (``I(X1^2):X2``) in R's order.
"""

from perfmod.models.regression.anova import NotNestedError, NotNestedWarning, anova, anova_table
from perfmod.models.regression.crossval import CVResult, compare_models, holdout, holdout_split, kfold, kfold_splits
from perfmod.models.regression.formula import DataError, FormulaError, RegressionError
from perfmod.models.regression.gam import GAMFit, compare_with_lm, gam
from perfmod.models.regression.linear import LinearModel, lm
from perfmod.models.regression.published import PublishedModel
from perfmod.models.regression.responses import distributed_responses, energy, t_comm, t_comp, t_tot, t_tot_montecarlo
from perfmod.models.regression.rformat import format_anova
from perfmod.models.regression.validation import prediction_errors

__all__ = [
    "lm",
    "anova",
    "anova_table",
    "format_anova",
    "LinearModel",
    "holdout",
    "kfold",
    "holdout_split",
    "kfold_splits",
    "compare_models",
    "CVResult",
    "prediction_errors",
    "gam",
    "GAMFit",
    "compare_with_lm",
    "PublishedModel",
    "t_comp",
    "t_comm",
    "t_tot",
    "t_tot_montecarlo",
    "distributed_responses",
    "energy",
    "RegressionError",
    "FormulaError",
    "DataError",
    "NotNestedError",
    "NotNestedWarning",
]
