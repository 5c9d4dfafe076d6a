"""Finding the rank files of a DUMPI trace: ``.meta`` file, directory, renamed traces, missing ranks.

Used by both DUMPI readers: :func:`perfmod.trace.formats.dumpi_bin.read_dumpi_bin`
(``.bin`` files) and :func:`perfmod.trace.formats.dumpi.read_dumpi`
(``dumpi2ascii`` text, ``text=True``: ``<prefix>-NNNN`` with any extension
but ``.bin`` and ``.meta``).  libdumpi writes ``<fileprefix>.meta``
(``key=value`` lines: ``numprocs``, ``fileprefix``, ``hostname``, ...) and
``<fileprefix>-NNNN.bin`` per rank.  Traces are often renamed after the run
(the published MiniFE and MiniMD traces: ``n16.meta`` whose ``fileprefix``
is the original date stamp); then the rank files beside the ``.meta`` file
with one prefix are read instead, preferring the ``.meta`` file's own name,
with a warning.
"""

from __future__ import annotations

import glob
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path

from ..core import TraceError
from .textio import FormatError

__all__ = ["BIN_NAME", "TEXT_NAME", "find_files", "rank_files", "text_files", "world_size"]

BIN_NAME = re.compile(r"^(.*)-(\d+)\.bin$")  #: ``<prefix>-<rank>.bin``
TEXT_NAME = re.compile(r"^(.*)-(\d+)(\.(?!bin$|meta$)[^.]*)?$")  #: ``<prefix>-<rank>[.txt]`` (not .bin/.meta)


def _read_meta(path: Path) -> dict[str, str]:
    """The ``key=value`` lines of a DUMPI ``.meta`` file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise TraceError(f"{path}: cannot read DUMPI .meta file: {getattr(err, 'strerror', None) or err}") from None
    out = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            key, sep, value = line.partition("=")
            if not sep:
                raise FormatError(path, n, f"expected key=value in a DUMPI .meta file, got {line[:80]!r}")
            out[key.strip()] = value.strip()
    return out


def _groups(folder: Path, text: bool = False) -> dict[str, list[Path]]:
    """The ``<prefix>-NNNN.bin`` (or text) files in ``folder``, by prefix."""
    out: dict[str, list[Path]] = {}
    name = TEXT_NAME if text else BIN_NAME
    for f in sorted(folder.iterdir() if text else folder.glob("*.bin")):
        m = name.match(f.name)
        if m and f.is_file():
            out.setdefault(m.group(1), []).append(f)
    return out


def find_files(path: Path, text: bool = False) -> tuple[list[Path], int | None, list[str]]:
    """The rank files of a ``.meta`` file or a directory, the ``numprocs`` the meta file gives, and notes.

    ``text=True`` looks for ``dumpi2ascii`` text files instead of ``.bin`` files.
    """
    notes: list[str] = []
    kind, pattern = ("text", "NNNN.*") if text else (".bin", "NNNN.bin")
    meta_path = path if path.suffix == ".meta" else None
    if path.is_dir():
        metas = sorted(path.glob("*.meta"))
        if len(metas) == 1:
            meta_path = metas[0]
        else:
            groups = _groups(path, text)
            if len(groups) != 1:
                what = f"{len(groups)} traces ({', '.join(sorted(groups))}); pass one .meta file" if groups else \
                    f"no DUMPI <prefix>-{pattern} files"
                raise TraceError(f"{path}: {what}")
            return next(iter(groups.values())), None, notes
    if meta_path is None:
        if path.is_file() and (text or path.suffix == ".bin"):
            return [path], None, notes
        raise TraceError(f"{path}: not a DUMPI .meta file, {kind} file or directory")
    if not meta_path.is_file():
        raise TraceError(f"{meta_path}: no such DUMPI .meta file")
    meta = _read_meta(meta_path)
    try:
        nprocs = int(meta["numprocs"]) if "numprocs" in meta else None
    except ValueError:
        raise TraceError(f"{meta_path}: numprocs={meta['numprocs']!r} is not an integer") from None
    prefix = meta.get("fileprefix", meta_path.stem)
    groups = _groups(meta_path.parent, text)
    if prefix in groups:
        return groups[prefix], nprocs, notes
    pick = meta_path.stem if meta_path.stem in groups else next(iter(groups)) if len(groups) == 1 else None
    if pick is None:
        found = f"the {kind} traces there are {', '.join(sorted(groups))}" if groups else f"there are no {kind} files"
        hint = " (convert the .bin files with dumpi2ascii first)" if text and any(meta_path.parent.glob("*.bin")) \
            else ""
        raise TraceError(f"{meta_path}: fileprefix={prefix!r} matches no {prefix}-{pattern} file next to it, and "
                         f"{found}; pass the directory of one trace or rename the files{hint}")
    notes.append(f"{meta_path.name}: fileprefix={prefix!r} matches no file; read the {len(groups[pick])} files "
                 f"{pick}-{pattern} beside it instead (trace renamed after the run?)")
    warnings.warn(notes[-1], stacklevel=3)
    return groups[pick], nprocs, notes


def rank_files(files: Sequence[Path], nprocs: int | None, explicit: bool,
               text: bool = False) -> tuple[list[int], int]:
    """Each file's rank (the number its name ends with) and the number of world ranks; missing files named."""
    name = TEXT_NAME if text else BIN_NAME
    ranks = []
    for f in files:
        m = name.match(f.name)
        ranks.append(int(m.group(2)) if m else None)
    if any(r is None for r in ranks) or len(set(ranks)) != len(ranks):
        ranks = list(range(len(files)))
    n = nprocs if nprocs is not None else max(ranks) + 1
    if max(ranks) >= n:
        raise TraceError(f"{files[ranks.index(max(ranks))]}: rank {max(ranks)} >= nprocs = {n}")
    if not explicit and len(files) < n:
        seen = set(ranks)
        missing = next(k for k in range(len(ranks) + 1) if k not in seen)
        stem = name.match(files[0].name)
        width = len(stem.group(2)) if stem else 4
        suffix = (stem.group(3) or "") if text and stem else ".bin"
        fname = f"{stem.group(1)}-{missing:0{width}d}{suffix}" if stem else f"rank {missing}"
        raise TraceError(f"{files[0].parent}: rank {missing}'s file {fname} is missing ({len(files)} of {n} rank "
                         "files); pass nprocs= to read the others alone")
    return ranks, n


def text_files(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> tuple[list[str], int | None, list[str], bool]:
    """The per-rank text files, the ``numprocs`` a ``.meta`` file gives, notes, and whether one file was given.

    A ``.meta`` file or a directory with one goes through
    :func:`perfmod.trace.formats.dumpi_bin_files.find_files` (shared with the
    binary reader: renamed traces, missing files).
    """
    if not isinstance(paths, str | os.PathLike):
        return [str(p) for p in paths], None, [], False
    p = Path(paths)
    if p.suffix == ".meta" or (p.is_dir() and any(p.glob("*.meta"))):
        files, nprocs, notes = find_files(p, text=True)
        return [str(f) for f in files], nprocs, notes, False
    if p.is_dir():
        found = sorted(str(f) for f in p.iterdir() if f.is_file() and f.suffix not in (".meta", ".bin"))
    elif p.exists():
        return [str(p)], None, [], True
    else:
        found = sorted(glob.glob(str(paths)))
    if not found:
        raise TraceError(f"{paths}: no DUMPI text files found")
    return found, None, [], False


def world_size(files: Sequence[str], ranks: Sequence[int], nprocs: int | None, meta_nprocs: int | None,
                recorded: int | None, alone: bool) -> int:
    """The number of world ranks, and an error naming the first missing rank file where files are missing.

    ``nprocs`` given wins; then the ``.meta`` file's ``numprocs``; then the
    size ``MPI_Comm_size(MPI_COMM_WORLD)`` returned in the trace; then the
    highest file rank + 1.  A single file given alone is one rank's view:
    the other ranks have no events.
    """
    n = nprocs if nprocs is not None else meta_nprocs if meta_nprocs is not None else \
        recorded if recorded is not None else max(ranks) + 1
    if max(ranks) >= n:
        raise TraceError(f"{files[ranks.index(max(ranks))]}: rank {max(ranks)} >= nprocs = {n}")
    if nprocs is None and not alone and len(files) < n:
        seen = set(ranks)
        missing = next(k for k in range(len(ranks) + 1) if k not in seen)
        m = TEXT_NAME.match(Path(files[0]).name)
        name = f"{m.group(1)}-{missing:0{len(m.group(2))}d}{m.group(3) or ''}" if m else f"rank {missing}"
        why = "numprocs in the .meta file" if meta_nprocs is not None else \
            "MPI_Comm_size in the trace" if recorded is not None else "the file names"
        raise TraceError(f"{Path(files[0]).parent}: rank {missing}'s file {name} is missing ({len(files)} of {n} "
                         f"rank files, {n} from {why}); pass nprocs= to read the others alone")
    return n
