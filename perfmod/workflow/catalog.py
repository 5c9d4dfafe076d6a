"""The list of studies, read from the notebooks themselves: the one source of the Makefile's study targets and tables.

A study is three files: its module ``perfmod/studies/<study>.py``, its
notebook ``notebooks/<study>.ipynb`` and its note
``docs/study_notes/<study>.md``.  The notebook's metadata ``perfmod`` says the
rest, and its first line (the markdown heading) is the study's title::

    "perfmod": {
      "paper": "003",                      # the paper it reproduces (three digits)
      "shows": "BSP model fitted on ...",  # one line for the study tables
      "exclusive": true,                   # measures this machine: holds the measuring lock alone
      "smoke_mpi": true,                   # (measuring studies) its smoke run launches MPI ranks
      "aliases": ["sharif-gol"],           # older make target names, kept working
      "smoke": {...}                       # parameters that run the whole notebook in seconds
    }

The study's name is the notebook's name, its module's name and its make
target (``make sharif_gol``, ``make repeat-sharif_gol``).  From this list the
Makefile includes its study targets and ``MEASURING`` (``python -m
perfmod.workflow.catalog make``, run by make itself), ``perfmod list
studies`` prints it, the study tables of README.md and docs/studies.md are
rendered from it (``python -m perfmod.workflow.catalog tables --write``;
``tables --check`` fails when the committed ones differ), and the contract,
repeat and docs tests parametrize over it.

Only the standard library is used here: make runs this module with the
system Python before ``.venv`` exists.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Study", "StudyMetadataError", "read_study", "studies", "make_fragment", "table", "TABLE_PAGES",
           "render_page", "stale_tables", "main"]

NAME = re.compile(r"^[a-z][a-z0-9_]*$")
ALIAS = re.compile(r"^[a-z][a-z0-9_-]*$")
BEGIN = "<!-- studies table: generated from the notebooks' metadata by `python -m perfmod.workflow.catalog tables "\
        "--write`; do not edit -->"
END = "<!-- end of the studies table -->"


class StudyMetadataError(ValueError):
    """A study notebook's ``perfmod`` metadata lacks a field or holds a bad value (the message names file and field)."""


@dataclass(frozen=True)
class Study:
    """One study, as its notebook declares it."""

    name: str
    """The notebook's name: also the module ``perfmod.studies.<name>``, the make target and the dataset's name."""
    title: str
    """The notebook's heading (its first line, without ``#``)."""
    paper: str
    """The paper it reproduces, three digits."""
    shows: str
    """What it shows, one line (the study tables)."""
    measuring: bool
    """Measures this machine (metadata ``exclusive``): holds the measuring lock alone; has ``make repeat-<name>``."""
    smoke_mpi: bool
    """A measuring study whose smoke run launches MPI ranks (the contract tests mark it ``mpi``)."""
    aliases: tuple[str, ...]
    """Older make target names."""
    smoke: dict[str, Any] = field(compare=False)
    """The smoke parameter set."""
    notebook: Path = field(compare=False)
    """The notebook file."""

    @property
    def module(self) -> str:
        """The study module's import name."""
        return f"perfmod.studies.{self.name}"


def _root(root: str | Path | None) -> Path:
    if root is not None:
        return Path(root)
    from perfmod.core.paths import repo_root

    return repo_root()


def _field(meta: dict[str, Any], key: str, kind: type, where: str, default: Any = None) -> Any:
    if key not in meta:
        if default is not None:
            return default
        raise StudyMetadataError(f"{where}: notebook metadata perfmod has no field {key!r}")
    value = meta[key]
    if not isinstance(value, kind):
        raise StudyMetadataError(f"{where}: notebook metadata perfmod.{key} is {type(value).__name__}, "
                                 f"expected {kind.__name__}")
    return value


def read_study(path: str | Path) -> Study:
    """The :class:`Study` a notebook declares; :class:`StudyMetadataError` names the file and the field."""
    path = Path(path)
    where = str(path)
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise StudyMetadataError(f"{where}: not a notebook (JSON error at line {e.lineno}: {e.msg})") from None
    name = path.stem
    if not NAME.match(name):
        raise StudyMetadataError(f"{where}: a study's name is lower case letters, digits and '_' (a make target "
                                 "and a module name)")
    meta = nb.get("metadata", {}).get("perfmod")
    if not isinstance(meta, dict):
        raise StudyMetadataError(f"{where}: notebook metadata has no perfmod mapping")
    cells = nb.get("cells") or [{}]
    source = cells[0].get("source", "")
    heading = ("".join(source) if isinstance(source, list) else source).split("\n", 1)[0]
    if cells[0].get("cell_type") != "markdown" or not heading.startswith("# "):
        raise StudyMetadataError(f"{where}: cell 0 must be markdown opening with '# <title>'")
    paper = _field(meta, "paper", str, where)
    if not re.fullmatch(r"\d{3}", paper):
        raise StudyMetadataError(f"{where}: notebook metadata perfmod.paper {paper!r} is not three digits")
    shows = _field(meta, "shows", str, where)
    if not shows.strip() or "|" in shows or "\n" in shows:
        raise StudyMetadataError(f"{where}: notebook metadata perfmod.shows must be one non-empty line without '|'")
    measuring = _field(meta, "exclusive", bool, where, default=False)
    smoke_mpi = _field(meta, "smoke_mpi", bool, where, default=False)
    if smoke_mpi and not measuring:
        raise StudyMetadataError(f"{where}: notebook metadata perfmod.smoke_mpi is for measuring studies only")
    aliases = _field(meta, "aliases", list, where, default=[])
    for a in aliases:
        if not isinstance(a, str) or not ALIAS.match(a) or a == name:
            raise StudyMetadataError(f"{where}: notebook metadata perfmod.aliases holds {a!r}, not a make target name")
    smoke = _field(meta, "smoke", dict, where)
    return Study(name=name, title=heading[2:].strip(), paper=paper, shows=shows.strip(), measuring=measuring,
                 smoke_mpi=smoke_mpi, aliases=tuple(aliases), smoke=dict(smoke), notebook=path)


def studies(root: str | Path | None = None) -> list[Study]:
    """Every study of the tree at ``root`` (default: this checkout), sorted by name.

    Raises :class:`StudyMetadataError` for a notebook with bad metadata, and for an alias used twice or equal to
    another study's name.
    """
    if root is None:  # this checkout's notebooks, or the copy an installed wheel ships
        from perfmod.workflow.notebooks import notebooks_dir

        where = notebooks_dir()
    else:
        where = Path(root) / "notebooks"
    out = [read_study(p) for p in sorted(where.glob("*.ipynb")) if not p.name.startswith("_")]
    names = {s.name for s in out}
    seen: dict[str, str] = {}
    for s in out:
        for a in s.aliases:
            if a in names or a in seen:
                raise StudyMetadataError(f"{s.notebook}: alias {a!r} is already "
                                         + (f"an alias of {seen[a]}" if a in seen else "a study's name"))
            seen[a] = s.name
    return out


def make_fragment(root: str | Path | None = None) -> str:
    """The Makefile text of the studies: ``STUDIES``, ``MEASURING``, one target per study and its aliases."""
    ss = studies(root)
    lines = ["# generated by `python -m perfmod.workflow.catalog make` from the notebooks' metadata; do not edit",
             f"STUDIES   := {' '.join(s.name for s in ss)}",
             f"MEASURING := {' '.join(s.name for s in ss if s.measuring)}",
             f"ALIASES   := {' '.join(a for s in ss for a in s.aliases)}"]
    for s in ss:
        also = f" (also {', '.join(s.aliases)})" if s.aliases else ""
        lines.append(f"{s.name}: $(PROCESSED)/{s.name}.nc ## paper {s.paper}: {s.shows}{also}")
        lines += [f"{a}: {s.name}" for a in s.aliases]
    return "\n".join(lines) + "\n"


def table(kind: str, root: str | Path | None = None) -> str:
    """The study table in markdown: ``kind`` ``"readme"`` (links to the notes) or ``"docs"`` (to the study pages)."""
    rows = ["| study (`make <study>`) | paper | measures here | what it shows |", "|---|---|---|---|"]
    for s in studies(root):
        link = f"docs/study_notes/{s.name}.md" if kind == "readme" else f"studies/{s.name}"
        rows.append(f"| [`{s.name}`]({link}) | {s.paper} | {'yes' if s.measuring else 'no'} | {s.shows} |")
    return "\n".join(rows) + "\n"


#: page (relative to the root) -> table kind
TABLE_PAGES = {"README.md": "readme", "docs/studies.md": "docs"}


def render_page(text: str, kind: str, root: str | Path | None = None, page: str = "<page>") -> str:
    """``text`` with the table between its markers rendered afresh; ValueError when the markers are missing."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError(f"{page}: needs one line {BEGIN!r} and one line {END!r} around the studies table")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table(kind, root)}{END}{tail}"


def stale_tables(root: str | Path | None = None, write: bool = False) -> list[str]:
    """The pages whose committed study table differs from the rendered one (rewritten when ``write``)."""
    base = _root(root)
    stale = []
    for page, kind in TABLE_PAGES.items():
        path = base / page
        text = path.read_text(encoding="utf-8")
        new = render_page(text, kind, base, page)
        if new != text:
            stale.append(page)
            if write:
                path.write_text(new, encoding="utf-8")
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m perfmod.workflow.catalog {list,make,tables [--check|--write]}``."""
    ap = argparse.ArgumentParser(prog="python -m perfmod.workflow.catalog", description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("list", "make", "tables"))
    ap.add_argument("--write", action="store_true", help="tables: rewrite the stale tables in place")
    ap.add_argument("--root", help="the tree (default: this checkout)")
    args = ap.parse_args(argv)
    try:
        if args.what == "make":
            sys.stdout.write(make_fragment(args.root))
        elif args.what == "list":
            for s in studies(args.root):
                print(f"{s.name}\t{s.paper}\t{'measuring' if s.measuring else 'analytic'}\t{s.title}")
        else:
            stale = stale_tables(args.root, write=args.write)
            if stale and not args.write:
                print(f"stale study tables in {', '.join(stale)}: python -m perfmod.workflow.catalog tables --write",
                      file=sys.stderr)
                return 1
            for page in stale:
                print(f"rewrote the studies table of {page}")
    except (StudyMetadataError, ValueError, OSError) as e:
        print(f"perfmod.workflow.catalog: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
