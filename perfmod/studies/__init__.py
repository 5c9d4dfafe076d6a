"""Study builders: the logic behind each notebook, as functions returning datasets.

The study contract (issue 10 item 4): the module of study ``<x>`` exposes
``run(**params) -> xarray.Dataset`` (all computation, units and provenance)
and ``figures(ds) -> dict[str, Figure]`` (drawn from the dataset alone), and
``notebooks/<x>.ipynb`` passes its parameters cell to ``run``.  The floor
plan (tests/test_architecture.py checks it):

- ``perfmod.studies.<x>``, one module per notebook (the list of studies is the notebooks' metadata,
  :mod:`perfmod.workflow.catalog`); a study module imports no other study module;
- ``perfmod.studies.papers.<paper>``: what the studies of one paper share (:mod:`perfmod.studies.papers`);
- any other module here is one study's helper, imported by that study alone (``anger_skeleton_steps``,
  ``jacobi2d_gpu``, ``local_jacobi2d_model``).

What every measuring study shares (run orders, raw records, headline figures) is a layer below,
:mod:`perfmod.campaign`.
"""
