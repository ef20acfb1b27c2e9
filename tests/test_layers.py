"""The import graph of gradmc is layered: no cycle between its top-level packages and modules.

A top-level unit is ``gradmc.<name>`` with everything under it (``gradmc.samplers`` holds
``gradmc.samplers.discrete.gwg``; ``gradmc.config`` is a unit of its own). Imports between units go down
the layers of docs/DESIGN.md ("Layers") only, so the units and their imports form a DAG; a cycle fails
here, naming its units and one import (file and line) per edge. What two units in a cycle share moves to
a unit below both (as ``gradmc.core`` holds what samplers and targets share).
"""

from __future__ import annotations

import importlib.util
from collections import defaultdict

import grimp
import pytest

PACKAGE = "gradmc"


def _unit(module: str) -> str:
    """The top-level unit of a gradmc module: ``gradmc.a.b`` -> ``a``; the package itself -> ``gradmc``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph(PACKAGE, cache_dir=None)


def unit_edges(graph) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(importer unit, imported unit) -> the direct module imports behind that edge, sorted."""
    edges: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            a, b = _unit(module), _unit(imported)
            if a != b:
                edges[a, b].append((module, imported))
    return {edge: sorted(imports) for edge, imports in edges.items()}


def strongly_connected(nodes, edges) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative), each sorted."""
    succ = defaultdict(list)
    for a, b in edges:
        succ[a].append(b)
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(succ[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(succ[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _where(graph, importer: str, imported: str) -> str:
    details = graph.get_import_details(importer=importer, imported=imported)
    line = f":{details[0]['line_number']}" if details else ""
    return f"{importer}{line} imports {imported}"


def test_strongly_connected_finds_cycles():
    edges = {("a", "b"): [], ("b", "c"): [], ("c", "a"): [], ("c", "d"): [], ("d", "e"): [], ("e", "d"): []}
    assert strongly_connected({"a", "b", "c", "d", "e", "f"}, edges) == [["d", "e"], ["a", "b", "c"]]
    assert strongly_connected({"a", "b"}, {("a", "b"): []}) == []


def test_no_cycle_between_top_level_units(graph):
    edges = unit_edges(graph)
    units = {_unit(m) for m in graph.modules}
    cycles = strongly_connected(units, edges)
    report = []
    for component in cycles:
        report.append(f"cycle between {', '.join(component)}:")
        for (a, b), imports in sorted(edges.items()):
            if a in component and b in component:
                report.append(f"  {a} -> {b}: {_where(graph, *imports[0])}"
                              + (f" (and {len(imports) - 1} more)" if len(imports) > 1 else ""))
    assert not cycles, "imports must go down the layers (docs/DESIGN.md, Layers):\n" + "\n".join(report)


def imported_when_loading(graph, module: str) -> dict[str, str]:
    """Every gradmc module that importing ``module`` runs, mapped to the module that pulls it in: its imports,
    transitively, and the packages above each (Python runs ``gradmc.a/__init__`` to import ``gradmc.a.b``,
    an edge the import graph does not hold)."""
    via = {module: ""}
    todo = [module]
    while todo:
        current = todo.pop()
        parent = current.rpartition(".")[0]
        for nxt in [*sorted(graph.find_modules_directly_imported_by(current)), *([parent] if parent else [])]:
            if nxt not in via:
                via[nxt] = current
                todo.append(nxt)
    return via


def _chain(via: dict[str, str], module: str) -> str:
    chain = [module]
    while via[chain[-1]]:
        chain.append(via[chain[-1]])
    return " <- ".join(chain)


def test_config_imports_no_experiment(graph):
    """The config check is below the experiments: it reads shared tables from gradmc.specs, never an experiment."""
    via = imported_when_loading(graph, "gradmc.config")
    bad = sorted(m for m in via if m == "gradmc.experiments" or m.startswith("gradmc.experiments."))
    assert not bad, "gradmc.config imports experiment modules:\n" + "\n".join(_chain(via, m) for m in bad[:3])


def test_experiment_uses_name_existing_modules():
    """Every ``META["uses"]`` entry (a module an experiment's shards run besides its own) exists."""
    from gradmc.registry import experiments

    missing = [(name, used) for name, entry in experiments().items() for used in entry.uses
               if importlib.util.find_spec(used) is None]
    assert not missing, f"META uses names modules that do not exist: {missing}"


def test_an_experiments_figure_and_claims_import_no_run_code(graph):
    """In an experiment folder the figure may import the folder's claims, and nothing else of any experiment: not
    its run code (so the figure's code digest is its figure and claims only), not another experiment."""
    bad = []
    for module in sorted(graph.modules):
        parts = module.split(".")
        if len(parts) != 4 or parts[1] != "experiments" or parts[3] not in ("figure", "claims"):
            continue
        allowed = {f"gradmc.experiments.{parts[2]}.claims"} if parts[3] == "figure" else set()
        for imported in graph.find_modules_directly_imported_by(module):
            if _unit(imported) == "experiments" and imported not in allowed:
                bad.append(_where(graph, module, imported))
    assert not bad, "an experiment's figure or claims imports experiment code:\n" + "\n".join(bad)
