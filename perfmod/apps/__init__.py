"""The paper applications, one module each (:mod:`.jacobi2d`, :mod:`.minife`, :mod:`.minimd`, and
:mod:`.allreduce`): decomposition and halo exchange, kernel counts, each module's declaration
(:class:`~perfmod.apps.application.Application`); registered and looked up by name in :mod:`.registry`;
synthetic traces of their communication in :mod:`.traces`."""
