"""Performance models: communication (:mod:`.comm`), GPU kernels (:mod:`.roofline`), regression
(:mod:`.regression`), BSP (:mod:`.bsp`) and the end-to-end composition (:mod:`.endtoend`)."""
