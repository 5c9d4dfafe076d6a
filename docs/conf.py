"""Sphinx configuration of perfmod's documentation (``make docs``; build warnings are errors).

Stack: Sphinx with MyST-NB (Markdown pages and executed notebooks rendered
without running them again), autodoc + autosummary with napoleon over the
numpydoc docstrings, and ``_ext/perfmod_docs.py`` for the study pages, the
numbers read from the datasets and the figure gallery.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "docs" / "_ext")]

from perfmod import __version__  # noqa: E402

project = "perfmod"
author = "the perfmod developers"
copyright = "the perfmod developers"  # noqa: A001 - Sphinx's name
version = release = __version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "perfmod_docs",
]

# the notebooks are executed by `make all` (build/executed); the docs only render them
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3

# API reference: one page per module, generated from the docstrings (numpydoc style, read by napoleon)
autosummary_generate = True
autosummary_imported_members = False
# a package documents what it defines; what it re-exports is documented once, in the module that defines it
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True,
                           "ignore-module-all": True}
autodoc_typehints = "description"
autodoc_member_order = "bysource"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True  # "Attributes" sections as fields: the dataclass fields are documented once, by autodoc

templates_path = ["_templates"]
exclude_patterns = ["_build", "study_notes", "_templates", "README.md", "**.ipynb_checkpoints"]
# short names in docstrings (`path`, `nbytes`) match attributes of several classes; Sphinx links the first
suppress_warnings = ["ref.python"]

html_theme = "alabaster"
html_title = f"perfmod {version}"
html_theme_options = {"description": "Performance models of parallel and GPU applications",
                      "page_width": "1200px", "sidebar_width": "240px"}
