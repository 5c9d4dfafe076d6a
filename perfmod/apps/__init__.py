"""The paper applications, one module each (:mod:`.jacobi2d`, :mod:`.minife`, :mod:`.minimd`):
decomposition and halo exchange, kernel counts; looked up by name in :mod:`.registry`;
synthetic traces of their communication in :mod:`.traces`."""
