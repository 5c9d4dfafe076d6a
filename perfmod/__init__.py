"""perfmod: performance models of parallel and GPU applications.

The library holds the models; the notebooks in ``notebooks/`` reproduce the
validation studies of the papers in ``shared/papers`` and run the same
methods on the machine at hand.  See README.md for the quick start.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("perfmod")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
