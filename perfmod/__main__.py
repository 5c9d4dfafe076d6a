"""``python -m perfmod``: the ``perfmod`` command (:mod:`perfmod.workflow.cli`)."""

from perfmod.workflow.cli import main

raise SystemExit(main())
