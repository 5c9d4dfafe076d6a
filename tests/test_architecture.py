"""The package's layers (docs/architecture.md): each module imports only from its own layer or below, no circles.

Every import counts, including those inside functions (only ``if TYPE_CHECKING:``
blocks are left out, as they never run).  There is no exceptions list.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import perfmod

ROOT = Path(perfmod.__file__).parent

#: Bottom to top.  A module may import from its own layer and the layers before it.
LAYERS = [
    "core",  # datasets, paths, paper tables, argument checks, the result protocol
    "machine",  # rank mapping, Cartesian grids, platforms, devices
    "trace",  # the Trace, requests, recorder, file formats
    "models",  # comm, roofline, regression, bsp, endtoend, compute
    "apps",  # Jacobi2D, MiniFE, MiniMD: decompositions, kernel counts, synthetic traces
    "replay",  # trace-driven replay
    "measure",  # benchmarks, proxies, power, running MPI programs
    "viz",  # figures
    "studies",  # one module per study notebook
    "workflow",  # running notebooks, the command line
]


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for f in sorted(ROOT.rglob("*.py")):
        parts = ["perfmod", *f.relative_to(ROOT).with_suffix("").parts]
        pkg = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if pkg else parts)] = (f, pkg)
    return mods


MODULES = _modules()
#: above every layer: the root package (the public API) and ``python -m perfmod`` (the command line)
TOP = ("perfmod", "perfmod.__main__")


def layer_of(module: str) -> int:
    """Index into :data:`LAYERS` (the root package ``perfmod`` and ``perfmod.__main__`` are above them all)."""
    if module in TOP:
        return len(LAYERS)
    top = module.split(".")[1]
    if top not in LAYERS:
        raise AssertionError(f"{module}: not inside a layer package (one of {', '.join(LAYERS)})")
    return LAYERS.index(top)


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test):
            skip |= {id(x) for x in ast.walk(n)}
    return skip


def imports_of(module: str) -> set[str]:
    """perfmod modules that ``module`` imports (resolved to the deepest existing module)."""
    path, pkg = MODULES[module]
    tree = ast.parse(path.read_text())
    skip = _type_checking_nodes(tree)
    out: set[str] = set()
    for n in ast.walk(tree):
        if id(n) in skip:
            continue
        targets: list[str] = []
        if isinstance(n, ast.Import):
            targets = [a.name for a in n.names]
        elif isinstance(n, ast.ImportFrom):
            base = module.split(".") if pkg else module.split(".")[:-1]
            if n.level > 1:
                base = base[: len(base) - (n.level - 1)]
            b = ".".join(base + ([n.module] if n.module else [])) if n.level else (n.module or "")
            targets = [b] + [f"{b}.{a.name}" for a in n.names]
        for t in targets:
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t and t != module:
                out.add(t)
    return out


GRAPH = {m: imports_of(m) for m in MODULES}


def test_every_module_is_in_a_layer_and_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [(m, "api" if m in TOP else LAYERS[layer_of(m)]) for m in MODULES]
    with capsys.disabled():
        print("\nlayer     module")
        for m, layer in sorted(rows, key=lambda r: (layer_of(r[0]), r[0])):
            print(f"{layer:<9} {m}")
    assert {layer for _, layer in rows} >= set(LAYERS) - {"workflow"} | {"api"}


def test_imports_go_down_the_layers() -> None:
    bad = [f"{m} ({LAYERS[layer_of(m)] if m not in TOP else 'api'}) imports {t} ({LAYERS[layer_of(t)]})"
           for m, deps in GRAPH.items() for t in sorted(deps)
           if t != "perfmod" and layer_of(t) > layer_of(m)]
    assert not bad, "imports from a higher layer:\n" + "\n".join(bad)


def test_no_module_imports_the_root_package() -> None:
    bad = [m for m, deps in GRAPH.items() if "perfmod" in deps and m not in TOP]
    assert not bad, f"import from the root package (import the module itself instead): {bad}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_circles() -> None:
    # a package's __init__ re-exporting its submodules is not a circle unless a submodule imports the package back
    cycles = _cycles(GRAPH)
    assert not cycles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_cycle_finder_finds_a_planted_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
