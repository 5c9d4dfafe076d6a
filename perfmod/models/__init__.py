"""Performance models: communication (:mod:`.comm`), GPU kernels (:mod:`.roofline`), regression
(:mod:`.regression`), BSP (:mod:`.bsp`), the end-to-end composition (:mod:`.endtoend`) and
statistical compute models of code regions (:mod:`.compute`, paper 004)."""
