"""A canonical run replaces a study's outputs together, or not at all.

``perfmod run --canonical`` writes a study's dataset, figures (and a fitted
platform) where the notebook's parameters cell says (``../data/processed``,
``../figures/<study>``, ...), and the executed notebook to
``build/executed``.  Written there directly, an interrupted run leaves new
figures beside the previous dataset.  :func:`staged_outputs` points every
output into a staging directory instead; :func:`swap_in` moves them into
place once the notebook has finished (each a rename on one file system: a
file replaced atomically, a directory swapped with its predecessor), so an
interrupted or failed run leaves the previous complete set and removes its
staging directory.
"""

from __future__ import annotations

import ast
import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from perfmod.core.paths import repo_root
from perfmod.workflow.show import parameters

__all__ = ["STAGED", "canonical_paths", "staged_outputs", "swap_in"]

#: Output parameters a canonical run stages (raw measurements keep their own timestamped names in data/raw).
STAGED = ("dataset_path", "figures_dir", "platform_out")


def canonical_paths(nb: Path) -> dict[str, Path]:
    """``{parameter: path}`` of the notebook's canonical outputs: its defaults, relative to its directory."""
    out = {}
    for p in parameters(nb):
        if p.name in STAGED:
            value = ast.literal_eval(p.default)
            if isinstance(value, str) and value:
                out[p.name] = (nb.parent / value).resolve()
    return out


@contextlib.contextmanager
def staged_outputs(nb: Path, executed: Path) -> Iterator[tuple[dict[str, str], Path, dict[Path, Path]]]:
    """Yield ``(parameters, executed notebook path, {staged: final})`` for a canonical run of ``nb``.

    The parameters point the outputs into a staging directory beside the executed notebook's final place
    (``build/staging``); the staging directory is removed on the way out, whatever happened.  Call
    :func:`swap_in` with the mapping once the run succeeded.
    """
    stage = Path(repo_root()) / "build" / "staging" / f"{nb.stem}-{os.getpid()}"
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    try:
        moves: dict[Path, Path] = {}
        params: dict[str, str] = {}
        for name, final in canonical_paths(nb).items():
            staged = stage / name / final.name
            staged.parent.mkdir()
            params[name] = str(staged)
            moves[staged] = final
        staged_nb = stage / nb.name
        moves[staged_nb] = executed
        yield params, staged_nb, moves
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def swap_in(moves: dict[Path, Path]) -> list[Path]:
    """Move each staged output onto its final path (what a run did not write is left as it was).

    A file replaces the old one atomically; a directory takes the old one's place and the old one is removed.
    Returns the final paths written.
    """
    done = []
    for staged, final in moves.items():  # all on the checkout's file system: each move is a rename
        if not staged.exists():
            continue
        final.parent.mkdir(parents=True, exist_ok=True)
        if staged.is_dir() and final.is_dir():
            old = final.with_name(f".{final.name}.old-{os.getpid()}")
            os.replace(final, old)
            os.replace(staged, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            if staged.is_dir() != final.is_dir() and final.exists():
                shutil.rmtree(final) if final.is_dir() else final.unlink()
            os.replace(staged, final)
        done.append(final)
    return done
