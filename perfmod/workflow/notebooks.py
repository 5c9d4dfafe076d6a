"""Run and check the study notebooks (papermill).

Every notebook in ``notebooks/`` follows one shape (docs/architecture.md, "Where a new thing goes"):

1. a markdown cell naming the paper and the study;
2. a code cell tagged ``parameters`` whose assignments are all
   type-annotated (``name: type = value  # comment``);
3. outputs written only to paths that are parameters (``dataset_path``,
   ``figures_dir``, ...), relative to ``notebooks/``;
4. notebook metadata ``{"perfmod": {"smoke": {...}}}``: a parameter set
   that runs the whole notebook in seconds (used by the tests).

Command line::

    python -m perfmod.workflow.notebooks run notebooks/x.ipynb [-p name value ...] [--smoke]
    python -m perfmod.workflow.notebooks check notebooks/*.ipynb
    python -m perfmod.workflow.notebooks strip notebooks/*.ipynb
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfmod.core.paths import repo_root

if TYPE_CHECKING:
    import nbformat

__all__ = [
    "NotebookShapeError",
    "notebooks_dir",
    "study_notebooks",
    "parameters_cell",
    "declared_parameters",
    "smoke_parameters",
    "check_notebook",
    "strip_outputs",
    "run_notebook",
    "smoke_outputs",
    "study_parameters",
    "main",
]


class NotebookShapeError(ValueError):
    """A notebook does not follow the study-notebook shape (message names file and cell)."""


def notebooks_dir() -> Path:
    """Return ``<repo>/notebooks`` in a checkout, else the copy an installed wheel ships (``perfmod/notebooks``)."""
    checkout = repo_root() / "notebooks"
    if checkout.is_dir():
        return checkout
    return Path(__file__).resolve().parents[1] / "notebooks"


def study_notebooks() -> list[Path]:
    """Return the study notebooks, sorted by name."""
    return sorted(p for p in notebooks_dir().glob("*.ipynb") if not p.name.startswith("_"))


def _read(nb: str | Path | nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, str]:
    import nbformat  # here, not at the top: study_parameters runs in every notebook kernel, and nbformat's
    # jsonschema import (with rfc3987_syntax building its grammar) costs about 3 s

    if isinstance(nb, nbformat.NotebookNode):
        return nb, "<notebook>"
    return nbformat.read(str(nb), as_version=4), str(nb)


def parameters_cell(nb: str | Path | nbformat.NotebookNode) -> tuple[int, nbformat.NotebookNode]:
    """Return ``(index, cell)`` of the cell tagged ``parameters``."""
    node, name = _read(nb)
    for i, cell in enumerate(node.cells):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            return i, cell
    raise NotebookShapeError(f"{name}: no cell tagged 'parameters'")


def declared_parameters(nb: str | Path | nbformat.NotebookNode) -> dict[str, str]:
    """Return ``{name: annotation}`` of the parameters cell.

    Raises :class:`NotebookShapeError` for an unannotated assignment, naming
    the file and the line in the cell.
    """
    node, name = _read(nb)
    idx, cell = parameters_cell(node)
    tree = ast.parse(cell.source)
    out: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            out[stmt.target.id] = ast.unparse(stmt.annotation)
        elif isinstance(stmt, ast.Assign):
            targets = ", ".join(ast.unparse(t) for t in stmt.targets)
            raise NotebookShapeError(
                f"{name}: cell {idx} (parameters), line {stmt.lineno}: "
                f"'{targets}' has no type annotation"
            )
    return out


def smoke_parameters(nb: str | Path | nbformat.NotebookNode) -> dict[str, Any]:
    """Return the smoke parameter set from the notebook metadata ``perfmod.smoke``."""
    node, name = _read(nb)
    smoke = node.metadata.get("perfmod", {}).get("smoke")
    if smoke is None:
        raise NotebookShapeError(f"{name}: notebook metadata has no perfmod.smoke parameter set")
    return dict(smoke)


def check_notebook(nb: str | Path) -> None:
    """Raise :class:`NotebookShapeError` unless ``nb`` has the study-notebook shape."""
    node, name = _read(nb)
    if not node.cells or node.cells[0].cell_type != "markdown":
        raise NotebookShapeError(f"{name}: cell 0 must be markdown naming the paper and study")
    idx, _ = parameters_cell(nb)
    if idx != 1:
        raise NotebookShapeError(f"{name}: the parameters cell must be cell 1, found at cell {idx}")
    params = declared_parameters(nb)
    smoke = smoke_parameters(nb)
    unknown = sorted(set(smoke) - set(params))
    if unknown:
        raise NotebookShapeError(f"{name}: smoke parameters {unknown} are not declared in the parameters cell")
    if "dataset_path" not in params:
        raise NotebookShapeError(f"{name}: the parameters cell declares no 'dataset_path' output")
    from papermill.translators import PythonTranslator  # papermill's own reading (papermill --help-notebook)

    seen = {p.name for p in PythonTranslator.inspect(node.cells[idx])}
    unread = [p for p in params if p not in seen]
    if unread:
        raise NotebookShapeError(f"{name}: cell {idx} (parameters): papermill cannot read the line of {unread} "
                                 "(keep '=' out of its comment)")
    if name != "<notebook>":  # nbformat.read renumbers repeated cell ids with a warning: look at the file itself
        ids = [c.get("id") for c in json.loads(Path(nb).read_text(encoding="utf-8")).get("cells", [])]
        again = sorted({i for i in ids if i is not None and ids.count(i) > 1})
        if again:
            raise NotebookShapeError(f"{name}: cell ids {again} are used by more than one cell; give each its own")
    for i, cell in enumerate(node.cells):
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count")):
            raise NotebookShapeError(f"{name}: cell {i} has outputs; strip them before committing")


def study_parameters(run: Any, namespace: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of a study's ``run`` taken from a notebook's namespace (its parameters cell).

    A study notebook passes its parameters through instead of re-typing them::

        ds = study.run(**study_parameters(study.run, globals()))

    Every parameter of ``run`` that the namespace defines is passed; ``run``'s
    defaults apply to the others.  A parameter of ``run`` without a default
    that the namespace lacks is an error naming it.

    Raises
    ------
    NotebookShapeError
        A required argument of ``run`` is not defined in the notebook.
    """
    sig = inspect.signature(run)
    out: dict[str, Any] = {}
    for name, par in sig.parameters.items():
        if par.kind in (par.VAR_POSITIONAL, par.VAR_KEYWORD):
            continue
        if name in namespace:
            out[name] = namespace[name]
        elif par.default is par.empty:
            raise NotebookShapeError(f"{run.__module__}.{run.__qualname__} needs parameter {name!r}, "
                                     "which the notebook's parameters cell does not define")
    return out


def strip_outputs(nb: str | Path) -> bool:
    """Remove outputs and execution counts in place; return True if the file changed."""
    import nbformat

    path = Path(nb)
    node = nbformat.read(str(path), as_version=4)
    changed = False
    for cell in node.cells:
        if cell.cell_type == "code":
            if cell.get("outputs") or cell.get("execution_count") is not None:
                changed = True
            cell.outputs = []
            cell.execution_count = None
        for key in ("execution", "papermill"):
            if key in cell.metadata:
                del cell.metadata[key]
                changed = True
    for key in ("papermill",):
        if key in node.metadata:
            del node.metadata[key]
            changed = True
    if changed:
        nbformat.write(node, str(path))
    return changed


def run_notebook(
    nb: str | Path,
    parameters: Mapping[str, Any] | None = None,
    smoke: bool = False,
    output: str | Path | None = None,
    progress: bool = True,
) -> Path:
    """Execute a study notebook with papermill, working directory ``notebooks/``.

    Parameters
    ----------
    nb : path
        The notebook.
    parameters : mapping, optional
        Parameter overrides (applied after the smoke set when ``smoke``).
    smoke : bool
        Start from the notebook's smoke parameter set.  A smoke run never
        writes into the project's ``data/`` or ``figures/``: every output
        parameter not given (``dataset_path``, ``figures_dir``, ``*_out``:
        raw files, ``local.toml``) goes to a new temporary directory,
        removed when the run ends (pass an output to keep it).  It
        still reads ``data/`` (committed measurements such as
        ``data/raw/gpu-h100``) and takes the measuring lock there.
    output : path, optional
        Where the executed notebook goes (default
        ``build/executed/<name>``, which git ignores; ``notebooks/`` holds
        only the source notebooks).
    progress : bool
        Show papermill's cell progress bar.

    Returns
    -------
    Path
        The executed notebook.
    """
    import papermill as pm

    src = Path(nb).resolve()
    params: dict[str, Any] = smoke_parameters(src) if smoke else {}
    params.update(parameters or {})
    declared = declared_parameters(src)
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise NotebookShapeError(f"{src}: unknown parameters {unknown}; declared: {sorted(declared)}")
    out = Path(output) if output else repo_root() / "build" / "executed" / src.name
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = None
    if smoke:
        tmp = Path(tempfile.mkdtemp(prefix=f"perfmod-smoke-{src.stem}-"))
        for name in smoke_outputs(declared):
            if name not in (parameters or {}):
                params[name] = str(tmp / name)
    try:
        pm.execute_notebook(
            str(src),
            str(out),
            parameters=params,
            cwd=str(src.parent),
            kernel_name="python3",
            progress_bar=progress,
            request_save_on_cell_execute=False,
            # the kernel listens on 127.0.0.1 with HMAC-signed messages; its "running over TCP without encryption"
            # warning, printed by every kernel, told a user nothing about the study
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
        )
    finally:  # a smoke run's outputs nobody asked for: every test run left a directory per notebook in /tmp
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def smoke_outputs(declared: Mapping[str, str]) -> list[str]:
    """The output parameters a smoke run redirects: ``dataset_path``, ``figures_dir`` and every ``*_out``."""
    return [n for n in declared if n in ("dataset_path", "figures_dir") or n.endswith("_out")]



def _coerce(value: str) -> Any:
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (see the module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m perfmod.workflow.notebooks", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="execute a notebook with papermill")
    run.add_argument("notebook")
    run.add_argument("-p", "--param", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
    run.add_argument("--smoke", action="store_true", help="use the notebook's smoke parameters")
    run.add_argument("--output", help="executed notebook path")
    chk = sub.add_parser("check", help="check the study-notebook shape")
    chk.add_argument("notebooks", nargs="+")
    strip = sub.add_parser("strip", help="strip outputs in place")
    strip.add_argument("notebooks", nargs="+")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        params = {k: _coerce(v) for k, v in args.param}
        out = run_notebook(args.notebook, params, smoke=args.smoke, output=args.output)
        print(f"executed -> {out}")
    elif args.cmd == "check":
        bad = 0
        for nb in args.notebooks:
            try:
                check_notebook(nb)
                print(f"ok   {nb}")
            except NotebookShapeError as exc:
                bad += 1
                print(f"FAIL {exc}", file=sys.stderr)
        return 1 if bad else 0
    else:
        for nb in args.notebooks:
            if strip_outputs(nb):
                print(f"stripped {nb}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
