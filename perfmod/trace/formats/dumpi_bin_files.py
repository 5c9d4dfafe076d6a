"""Finding the rank files of a DUMPI trace: ``.meta`` file, directory, renamed traces, missing ranks.

Used by :func:`perfmod.trace.formats.dumpi_bin.read_dumpi_bin`.  libdumpi
writes ``<fileprefix>.meta`` (``key=value`` lines: ``numprocs``,
``fileprefix``, ``hostname``, ...) and ``<fileprefix>-NNNN.bin`` per rank.
Traces are often renamed after the run (the published MiniFE and MiniMD
traces: ``n16.meta`` whose ``fileprefix`` is the original date stamp); then
the ``.bin`` files beside the ``.meta`` file with one prefix are read
instead, preferring the ``.meta`` file's own name, with a warning.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from pathlib import Path

from ..core import TraceError

__all__ = ["BIN_NAME", "find_files", "rank_files"]

BIN_NAME = re.compile(r"^(.*)-(\d+)\.bin$")  #: ``<prefix>-<rank>.bin``


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
                raise TraceError(f"{path}:{n}: expected key=value in a DUMPI .meta file, got {line[:80]!r}")
            out[key.strip()] = value.strip()
    return out


def _groups(folder: Path) -> dict[str, list[Path]]:
    """The ``<prefix>-NNNN.bin`` files in ``folder``, by prefix."""
    out: dict[str, list[Path]] = {}
    for f in sorted(folder.glob("*.bin")):
        m = BIN_NAME.match(f.name)
        if m and f.is_file():
            out.setdefault(m.group(1), []).append(f)
    return out


def find_files(path: Path) -> tuple[list[Path], int | None, list[str]]:
    """The rank files of a ``.meta`` file or a directory, the ``numprocs`` the meta file gives, and notes."""
    notes: list[str] = []
    meta_path = path if path.suffix == ".meta" else None
    if path.is_dir():
        metas = sorted(path.glob("*.meta"))
        if len(metas) == 1:
            meta_path = metas[0]
        else:
            groups = _groups(path)
            if len(groups) != 1:
                what = f"{len(groups)} traces ({', '.join(sorted(groups))}); pass one .meta file" if groups else \
                    "no DUMPI <prefix>-NNNN.bin files"
                raise TraceError(f"{path}: {what}")
            return next(iter(groups.values())), None, notes
    if meta_path is None:
        if path.suffix == ".bin" and path.is_file():
            return [path], None, notes
        raise TraceError(f"{path}: not a DUMPI .meta file, .bin file or directory")
    if not meta_path.is_file():
        raise TraceError(f"{meta_path}: no such DUMPI .meta file")
    meta = _read_meta(meta_path)
    try:
        nprocs = int(meta["numprocs"]) if "numprocs" in meta else None
    except ValueError:
        raise TraceError(f"{meta_path}: numprocs={meta['numprocs']!r} is not an integer") from None
    prefix = meta.get("fileprefix", meta_path.stem)
    groups = _groups(meta_path.parent)
    if prefix in groups:
        return groups[prefix], nprocs, notes
    pick = meta_path.stem if meta_path.stem in groups else next(iter(groups)) if len(groups) == 1 else None
    if pick is None:
        found = f"the .bin traces there are {', '.join(sorted(groups))}" if groups else "there are no .bin files"
        raise TraceError(f"{meta_path}: fileprefix={prefix!r} matches no {prefix}-NNNN.bin file next to it, and "
                         f"{found}; pass the directory of one trace or rename the files")
    notes.append(f"{meta_path.name}: fileprefix={prefix!r} matches no file; read the {len(groups[pick])} files "
                 f"{pick}-NNNN.bin beside it instead (trace renamed after the run?)")
    warnings.warn(notes[-1], stacklevel=3)
    return groups[pick], nprocs, notes


def rank_files(files: Sequence[Path], nprocs: int | None, explicit: bool) -> tuple[list[int], int]:
    """Each file's rank (the number its name ends with) and the number of world ranks; missing files named."""
    ranks = []
    for f in files:
        m = BIN_NAME.match(f.name)
        ranks.append(int(m.group(2)) if m else None)
    if any(r is None for r in ranks) or len(set(ranks)) != len(ranks):
        ranks = list(range(len(files)))
    n = nprocs if nprocs is not None else max(ranks) + 1
    if max(ranks) >= n:
        raise TraceError(f"{files[ranks.index(max(ranks))]}: rank {max(ranks)} >= nprocs = {n}")
    if not explicit and len(files) < n:
        missing = min(set(range(n)) - set(ranks))
        stem = BIN_NAME.match(files[0].name)
        name = f"{stem.group(1)}-{missing:04d}.bin" if stem else f"rank {missing}"
        raise TraceError(f"{files[0].parent}: rank {missing}'s file {name} is missing ({len(files)} of {n} rank "
                         "files); pass nprocs= to read the others alone")
    return ranks, n
