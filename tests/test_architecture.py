"""The package's floors (docs/architecture.md): a layer package imports only from floors below, no circles.

A floor holds layer packages side by side: a package may import from its own
package and from every floor below, never from another package of its own
floor (``apps``, ``replay`` and ``measure`` know nothing of one another) and
never from a floor above.

Every import counts, including those inside functions (only ``if TYPE_CHECKING:``
blocks are left out, as they never run).  There is no exceptions list.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import perfmod

ROOT = Path(perfmod.__file__).parent

#: Bottom to top: each floor's layer packages, side by side.
FLOORS = [
    ["core"],  # datasets, paths, paper tables, argument checks, the result protocol
    ["machine", "trace"],  # rank mapping, grids, platforms, devices | the Trace, recorder, file formats
    ["models"],  # comm, roofline, regression, bsp, endtoend, compute
    ["apps", "replay", "measure", "viz"],  # paper applications | trace replay | running on the machine | figures
    ["campaign"],  # what measuring studies share: run orders, raw records, validity flags, headline figures
    ["studies"],  # one module per study notebook; papers/: what one paper's studies share
    ["workflow"],  # running notebooks, the command line
]
LAYERS = [p for floor in FLOORS for p in floor]
FLOOR = {p: i for i, floor in enumerate(FLOORS) for p in floor}


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


def package_of(module: str) -> str:
    """The layer package of ``module`` (``"api"`` for the root package ``perfmod`` and ``perfmod.__main__``,
    above every floor)."""
    if module in TOP:
        return "api"
    top = module.split(".")[1]
    if top not in LAYERS:
        raise AssertionError(f"{module}: not inside a layer package (one of {', '.join(LAYERS)})")
    return top


def floor_of(module: str) -> int:
    """Index into :data:`FLOORS` (the root package ``perfmod`` is above them all)."""
    top = package_of(module)
    return len(FLOORS) if top == "api" else FLOOR[top]


def forbidden(module: str, target: str) -> bool:
    """True when ``module`` may not import ``target``: a floor above, or another package of its floor."""
    if target == "perfmod":
        return module != "perfmod"
    a, b = package_of(module), package_of(target)
    return FLOOR[b] > floor_of(module) or (a != b and FLOOR[b] == floor_of(module))


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


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Which layer packages each layer package imports (its own left out)."""
    out: dict[str, set[str]] = {p: set() for p in [*LAYERS, "api"]}
    for m, deps in graph.items():
        for t in deps:
            if package_of(t) != package_of(m):
                out[package_of(m)].add(package_of(t))
    return out


def test_every_module_is_in_a_layer_and_prints_the_graph(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [(m, package_of(m)) for m in MODULES]
    pg = package_graph(GRAPH)
    with capsys.disabled():
        print("\nfloor  package    imports")
        for i, floor in enumerate(FLOORS):
            for p in floor:
                print(f"{i:<6} {p:<10} {', '.join(sorted(pg[p], key=LAYERS.index)) or '-'}")
        print("\nfloor  package    module")
        for m, p in sorted(rows, key=lambda r: (floor_of(r[0]), r[1], r[0])):
            print(f"{floor_of(m):<6} {p:<10} {m}")
    assert {p for _, p in rows} >= set(LAYERS) - {"workflow"} | {"api"}


def test_the_floor_rule_flags_sideways_and_upward_imports() -> None:
    assert forbidden("perfmod.apps.x", "perfmod.replay.y") and forbidden("perfmod.measure.x", "perfmod.apps.y")
    assert forbidden("perfmod.replay.x", "perfmod.measure.y") and forbidden("perfmod.machine.x", "perfmod.trace.y")
    assert forbidden("perfmod.models.x", "perfmod.apps.y") and forbidden("perfmod.core.x", "perfmod.machine.y")
    assert not forbidden("perfmod.apps.x", "perfmod.models.y") and not forbidden("perfmod.apps.x", "perfmod.apps.y")
    assert not forbidden("perfmod.studies.x", "perfmod.measure.y") and not forbidden("perfmod", "perfmod.viz.y")


def test_imports_go_down_the_floors_never_sideways() -> None:
    bad = [f"{m} (floor {floor_of(m)}) imports {t} (floor {floor_of(t)})"
           for m, deps in GRAPH.items() for t in sorted(deps)
           if t != "perfmod" and forbidden(m, t)]
    assert not bad, "imports from a higher floor or a neighbour on the same floor:\n" + "\n".join(bad)


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


# ---- the floor plan of studies/ (perfmod/studies/__init__.py) --------------------------------------------------

def floor_plan_errors(graph: dict[str, set[str]], studies: set[str]) -> list[str]:
    """Breaches of the studies' floor plan in an import graph.

    ``studies`` are the study modules (one per notebook).  A study module imports no other study module; a
    paper module (``perfmod.studies.papers.*``) imports no study module; any other module under
    ``perfmod.studies`` is one study's helper: it imports no study module and at most one study imports it.
    """
    inside = {m for m in graph if m.startswith("perfmod.studies.") and m != "perfmod.studies.papers"}
    bad = [f"{m} imports the study module {t}" for m in sorted(inside) for t in sorted(graph[m] & studies)]
    for helper in sorted(inside - studies):
        if helper.startswith("perfmod.studies.papers."):
            continue
        users = sorted(m for m in studies if helper in graph[m])
        if len(users) > 1:
            bad.append(f"{helper} is used by {', '.join(users)}: move it to the module of their paper "
                       "(perfmod.studies.papers) or to perfmod.campaign")
    return bad


def test_no_study_module_imports_another() -> None:
    from perfmod.workflow.catalog import studies

    names = {s.module for s in studies()}
    assert names <= set(MODULES), f"a study notebook without its module: {sorted(names - set(MODULES))}"
    assert not floor_plan_errors(GRAPH, names), "\n".join(floor_plan_errors(GRAPH, names))


def test_floor_plan_finds_planted_breaches() -> None:
    s = "perfmod.studies."
    graph = {f"{s}a": {f"{s}b", f"{s}h"}, f"{s}b": {f"{s}h", f"{s}papers.p"}, f"{s}h": set(),
             f"{s}papers.p": {f"{s}a"}}
    assert floor_plan_errors(graph, {f"{s}a", f"{s}b"}) == [
        f"{s}a imports the study module {s}b", f"{s}papers.p imports the study module {s}a",
        f"{s}h is used by {s}a, {s}b: move it to the module of their paper (perfmod.studies.papers) or to "
        "perfmod.campaign"]
    assert floor_plan_errors({f"{s}a": {f"{s}papers.p"}, f"{s}b": {f"{s}papers.p"}, f"{s}papers.p": set()},
                             {f"{s}a", f"{s}b"}) == []
