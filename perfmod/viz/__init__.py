"""Figures: measured against predicted with intervals (:mod:`.validation`), study plots (:mod:`.plots`)
and the roofline (:mod:`.roofline`)."""
