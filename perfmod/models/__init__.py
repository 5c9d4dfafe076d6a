"""Performance models (the models layer)."""
