"""Build hook: the study notebooks ship inside the package, as ``perfmod/notebooks/*.ipynb``.

The notebooks live in ``notebooks/`` of the checkout (where they are edited and
run by ``make``); a wheel carries a copy so that ``perfmod list``, ``perfmod
run`` and ``perfmod sweep`` find the studies when perfmod is installed
(:func:`perfmod.workflow.notebooks.notebooks_dir`).  Everything else about the
build is in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithNotebooks(build_py):
    """``build_py`` that also copies ``notebooks/*.ipynb`` into the built package."""

    def run(self) -> None:
        super().run()
        src = Path(__file__).resolve().parent / "notebooks"
        dest = Path(self.build_lib) / "perfmod" / "notebooks"
        dest.mkdir(parents=True, exist_ok=True)
        for nb in sorted(src.glob("*.ipynb")):
            self.copy_file(str(nb), str(dest / nb.name))


setup(cmdclass={"build_py": BuildWithNotebooks})
