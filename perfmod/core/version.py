"""The installed version of perfmod (``0.0.0+unknown`` when run from a source tree without install)."""

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("perfmod")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+unknown"
