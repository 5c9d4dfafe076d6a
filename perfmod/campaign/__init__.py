"""What a measuring study does around its measurements: the run order, the raw records, the headline figures.

Not measurement itself (``perfmod.measure`` runs programs and judges one run's
validity) and not a study (``perfmod.studies`` holds one module per
notebook): the campaign layer is what every measuring study shares, so that a
study opens with one import, ``import perfmod.campaign as campaign``, and
calls ``campaign.save_raw``, ``campaign.interleaved_order``,
``campaign.headline_figures`` and the rest.

- :mod:`perfmod.campaign.design`: interleaved run orders of training and held-out configurations.
- :mod:`perfmod.campaign.records`: raw files written once, per-run validity flags over a study's dimensions,
  dropped runs, provenance.
- :mod:`perfmod.campaign.headline`: a study's headline figures (errors, run counts) for ``perfmod repeat``.
"""

from perfmod.campaign.design import interleaved_order, position_of
from perfmod.campaign.headline import (
    COUNTS,
    abs_rel_errors,
    headline_figures,
    mean_max,
    not_fitted,
    run_counts,
    total_time_headline,
)
from perfmod.campaign.records import (
    FLAG_FIELDS,
    clean_medians,
    flag_variables,
    mask_interfered,
    new_flags,
    provenance,
    read_raw,
    record_drops,
    record_flags,
    save_raw,
    validity_note,
)

__all__ = ["interleaved_order", "position_of", "COUNTS", "abs_rel_errors", "headline_figures", "mean_max",
           "not_fitted", "run_counts", "total_time_headline", "FLAG_FIELDS", "clean_medians", "flag_variables",
           "mask_interfered", "new_flags", "provenance", "read_raw", "record_drops", "record_flags", "save_raw",
           "validity_note"]
