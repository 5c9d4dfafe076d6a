"""Measurement: instrumentation of program regions and their stores (the measure layer)."""
