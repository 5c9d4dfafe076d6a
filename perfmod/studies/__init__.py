"""Study builders: the logic behind each notebook, as functions returning datasets.

The study contract (issue 10 item 4): the module of study ``<x>`` exposes
``run(**params) -> xarray.Dataset`` (all computation, units and provenance)
and ``figures(ds) -> dict[str, Figure]`` (drawn from the dataset alone), and
``notebooks/<x>.ipynb`` passes its parameters cell to ``run``.  Each notebook
has a module of its own name, ``perfmod.studies.<x>``; modules without a
notebook hold what several studies share:

- ``choi2020_comm``: communication-model computations of paper 000 (model
  curves, weak-scaling communication, Table 5), used by
  ``choi2020_comm_models`` (the study module of that notebook) and
  ``choi2020_end_to_end``.
"""
