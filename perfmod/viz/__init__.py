"""Figures: study plots (:mod:`.plots`), the roofline (:mod:`.roofline`) and regression fits
(:mod:`.regression`)."""
