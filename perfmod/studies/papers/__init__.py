"""What the studies of one paper share: its tables, its constants, the computations several of its studies make.

A study module (``perfmod.studies.<study>``, one per notebook) imports no
other study module; what two studies of one paper both need lives here, in the
module of that paper:

- :mod:`.choi2020`: paper 000's communication computations (model curves, weak-scaling communication,
  Table 5), its iteration counts and the measured overheads (000, 002), used by ``choi2020_comm_models``,
  ``choi2020_end_to_end``, ``choi2020_traces``, ``choi2020_what_if`` and ``choi2019_minife``;
- :mod:`.sasidharan` and :mod:`.sasidharan_published`: paper 001's run design, fits and tables, and its
  published models, used by ``sasidharan_sedov`` and ``sasidharan_quicksilver``;
- :mod:`.sharif`: paper 003's times and their names, used by ``sharif_gol`` and ``sharif_triton``.
"""
