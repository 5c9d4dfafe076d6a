"""What a study takes: its parameters with types, defaults and comments (``perfmod show STUDY``).

Read from the notebook's parameters cell (``name: type = value  # comment``)
and its metadata (the smoke set, whether it measures this machine), without
executing anything.
"""

from __future__ import annotations

import ast
import io
import json
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Parameter", "parameters", "describe_study"]


@dataclass(frozen=True)
class Parameter:
    """One line of a parameters cell."""

    name: str
    type: str
    default: str  #: the value's source text
    comment: str


def _cells(nb: Path) -> tuple[dict[str, Any], str]:
    node = json.loads(nb.read_text(encoding="utf-8"))
    for cell in node.get("cells", []):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            src = cell.get("source", "")
            return node.get("metadata", {}), "".join(src) if isinstance(src, list) else src
    raise ValueError(f"{nb}: no cell tagged 'parameters'")


def parameters(nb: str | Path) -> list[Parameter]:
    """The parameters of a study notebook, in the order of its parameters cell."""
    _, src = _cells(Path(nb))
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    out = []
    for stmt in ast.parse(src).body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            default = ast.get_source_segment(src, stmt.value) if stmt.value is not None else ""
            comment = " ".join(comments[n] for n in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1)
                               if n in comments)
            out.append(Parameter(stmt.target.id, ast.unparse(stmt.annotation), default or "", comment))
    return out


def describe_study(nb: str | Path) -> str:
    """The text ``perfmod show`` prints: the study, whether it measures, its parameters and its smoke set."""
    path = Path(nb)
    meta, _ = _cells(path)
    perfmod_meta = meta.get("perfmod", {})
    params = parameters(path)
    width = max((len(p.name) for p in params), default=4)
    twidth = max((len(p.type) for p in params), default=4)
    lines = [f"{path.stem} ({path})",
             "measures this machine (runs hold the measuring lock)" if perfmod_meta.get("exclusive")
             else "computes from committed data and models (no measurement)",
             "", "parameters (perfmod run STUDY -p NAME VALUE, or -f params.yaml):"]
    for p in params:
        lines.append(f"  {p.name:<{width}s}  {p.type:<{twidth}s}  = {p.default}" + (f"  # {p.comment}"
                                                                                   if p.comment else ""))
    smoke = perfmod_meta.get("smoke")
    if smoke:
        lines += ["", "smoke set (--smoke): " + ", ".join(f"{k}={v!r}" for k, v in smoke.items())]
    return "\n".join(lines)
