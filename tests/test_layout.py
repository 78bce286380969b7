"""Imports point down (docs/layout.md): the package's import graph, read from the source by AST.

Every `import` and `from ... import` in vignette.py and vignette_bench/**/*.py counts, including the
lazy ones inside functions (they run when that code runs) and relative ones (resolved against the
module's package). Modules are grouped into layers; the assertions below are the layering rules.
Between modules: no import cycle among the imports that run at import time, and no circle closed by
a lazy import except the listed ones (LAZY_CIRCLES).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "vignette_bench"

# Longest matching prefix wins. The bottom layers are libraries every stage may use.
LAYERS: dict[str, str] = {
    "vignette": "loader",
    f"{PACKAGE}.loader": "loader",
    f"{PACKAGE}.formats": "formats",
    f"{PACKAGE}.errors": "errors",
    f"{PACKAGE}.remote": "io",  # whole reads of a URL with one deadline and byte cap
    f"{PACKAGE}.atomic": "io",  # whole files written atomically
    f"{PACKAGE}.cli_options": "options",  # argparse helpers, standard library only
    f"{PACKAGE}.stats": "stats",
    f"{PACKAGE}.taxonomy": "taxonomy",
    f"{PACKAGE}.dataset_builder": "dataset_builder",
    f"{PACKAGE}.eval": "eval",  # the eval package's own __init__ (a docstring)
    f"{PACKAGE}.eval.adapters": "eval.adapters",
    f"{PACKAGE}.eval.runs": "eval.analysis",  # the one run loader, below report, compare and leaderboard
    f"{PACKAGE}.eval.analysis": "eval.analysis",
    f"{PACKAGE}.eval.pages": "eval.pages",  # sections, figures, findings: the pieces every page is built from
    f"{PACKAGE}.eval.runtime": "eval.runtime",
    f"{PACKAGE}.eval.importing": "eval.importing",  # `vignette import`: runtime's records from others' files
    f"{PACKAGE}.eval.report": "eval.report",
    f"{PACKAGE}.eval.compare": "eval.compare",
    f"{PACKAGE}.eval.leaderboard": "eval.leaderboard",
    f"{PACKAGE}.eval.explain": "eval.explain",
    f"{PACKAGE}.eval.news": "eval.news",
    f"{PACKAGE}.eval.serve": "eval.serve",
    f"{PACKAGE}.eval.demo": "eval.demo",
    f"{PACKAGE}.eval.simulate": "eval.simulate",  # seeded simulated runs: a second writer of run folders
    f"{PACKAGE}.metrics": "metrics",
    f"{PACKAGE}.annotate": "annotate",
    f"{PACKAGE}.upload": "upload",
    f"{PACKAGE}.inspect_tasks": "inspect_tasks",  # the inspect_ai task: the runtime's questions and the loader
    f"{PACKAGE}.lmms_eval_tasks": "lmms_eval_tasks",  # the lmms-eval tasks: the runtime's questions and the loader
    f"{PACKAGE}.inspect_provider": "inspect_tasks",  # the vignette/SPEC inspect model: the adapters
    f"{PACKAGE}.inspect_registry": "inspect_tasks",  # what the inspect_ai entry point loads
    f"{PACKAGE}.cli": "cli",
    f"{PACKAGE}.__main__": "cli",
    PACKAGE: "cli",  # the package __init__: a version string, nothing else
}
BOTTOM = frozenset({"formats", "errors", "options", "io", "stats", "taxonomy"})

LATER = pytest.mark.xfail(strict=True, reason="fixed by the formats/loader branches of issue 22")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    found = {_module_name(p): p for p in (ROOT / PACKAGE).rglob("*.py")}
    found["vignette"] = ROOT / "vignette.py"
    return found


def _resolve(name: str) -> str | None:
    """The module of ours that `name` (a module, or a module's attribute) lives in, or None if not ours."""
    known = modules()
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def _imported(module: str, nodes: Iterable[ast.AST]) -> Iterator[tuple[str, int]]:
    is_package = modules()[module].name == "__init__.py"
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                yield f"{stem}.{alias.name}", node.lineno


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def run_at_import(node: ast.AST, lazy: bool = False) -> Iterator[ast.AST]:
    """The nodes under `node` that run when their module is imported: not inside a function (unless `lazy`:
    then function bodies count too, as they run when called) and never under `if TYPE_CHECKING:`."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and not lazy:
            continue
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.orelse:
                yield stmt
                yield from run_at_import(stmt, lazy)
            continue
        yield child
        yield from run_at_import(child, lazy)


@cache
def _trees() -> dict[str, ast.Module]:
    return {m: ast.parse(p.read_text(encoding="utf-8"), str(p)) for m, p in modules().items()}


def _edges(nodes_of: Callable[[ast.Module], Iterable[ast.AST]]) -> frozenset[tuple[str, str, int]]:
    out = set()
    for module, tree in _trees().items():
        for name, line in _imported(module, nodes_of(tree)):
            target = _resolve(name)
            if target is not None and target != module:
                out.add((module, target, line))
    return frozenset(out)


@cache
def edges() -> frozenset[tuple[str, str, int]]:
    """(importer, imported, line) over our modules: every import, wherever it is (the layering rules)."""
    return _edges(ast.walk)


@cache
def import_time_edges() -> frozenset[tuple[str, str, int]]:
    """The imports that run when the importer is imported (module level, not under `if TYPE_CHECKING:`)."""
    return _edges(run_at_import)


@cache
def runtime_edges() -> frozenset[tuple[str, str, int]]:
    """Every import that can run: module level and inside functions (lazy), not under `if TYPE_CHECKING:`."""
    return _edges(lambda tree: run_at_import(tree, lazy=True))


def layer(module: str) -> str:
    for prefix in sorted(LAYERS, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            return LAYERS[prefix]
    raise AssertionError(f"{module} is in no layer: add its part to LAYERS in tests/test_layout.py")


def layer_edges() -> dict[tuple[str, str], list[str]]:
    """(from layer, to layer) -> the import statements behind it, as 'module:line -> module'."""
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    for src, dst, line in sorted(edges()):
        a, b = layer(src), layer(dst)
        if a != b:
            out[a, b].append(f"{src}:{line} -> {dst}")
    return out


def _offending(allowed: object) -> list[str]:
    assert callable(allowed)
    return [e for (a, b), found in layer_edges().items() if not allowed(a, b) for e in found]


def test_every_module_is_in_a_layer_and_the_graph_is_seen() -> None:
    for module in modules():
        layer(module)
    # the parser sees lazy and relative imports (the backend table's factories are strings, not imports)
    seen = {(s, d) for s, d, _ in edges()}
    assert ("vignette_bench.eval.adapters.spec", "vignette_bench.eval.adapters.backends") in seen
    assert ("vignette_bench.eval.adapters.tiny", "vignette_bench.eval.adapters.transformers_adapter") in seen


def test_bottom_layers_import_no_stage() -> None:
    assert _offending(lambda a, b: a not in BOTTOM or b in BOTTOM) == []


def test_runtime_and_adapters_never_import_explain() -> None:
    assert _offending(lambda a, b: not (a in ("eval.runtime", "eval.adapters") and b == "eval.explain")) == []


def test_compare_does_not_import_report() -> None:
    """The report shows a comparison of its models (eval.compare's engine); compare never reads the report."""
    assert _offending(lambda a, b: (a, b) != ("eval.compare", "eval.report")) == []


def test_leaderboard_does_not_import_report() -> None:
    assert _offending(lambda a, b: (a, b) != ("eval.leaderboard", "eval.report")) == []


def test_loader_imports_only_formats_errors_taxonomy() -> None:
    assert _offending(lambda a, b: a != "loader" or b in {"formats", "errors", "options", "io", "taxonomy"}) == []


def test_builder_card_imports_no_writer_that_calls_it() -> None:
    """shard, pair_specs and protocol_sample call write_card when they finish; the card takes the names it
    lists from dataset_builder/layout.py, protocol_manifest.py and formats, so none forms an import circle."""
    builder = f"{PACKAGE}.dataset_builder"
    card_imports = {dst for src, dst, _ in edges() if src == f"{builder}.card"}
    assert card_imports & {f"{builder}.shard", f"{builder}.pair_specs", f"{builder}.protocol_sample"} == set()
    assert (f"{builder}.shard", f"{builder}.card") in {(s, d) for s, d, _ in edges()}  # the call it guards


def _cycles() -> list[list[str]]:
    """Strongly connected components of the layer graph with more than one layer."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in layer_edges():
        graph[a].add(b)
    return _components(graph)


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each sorted: the cycles of `graph`."""
    graph = defaultdict(set, graph)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(set(graph) | {b for bs in graph.values() for b in bs}):
        if v not in index:
            visit(v)
    return found


def test_no_cycle_between_layers() -> None:
    cycles = _cycles()
    detail = {
        " <-> ".join(c): [e for (a, b), found in layer_edges().items() if a in c and b in c for e in found]
        for c in cycles
    }
    assert cycles == [], detail


def test_cycle_finder_finds_a_cycle() -> None:
    """The SCC check itself works: a made-up edge closing a loop is reported."""
    import unittest.mock

    fake = {("a", "b"): ["x"], ("b", "c"): ["y"], ("c", "a"): ["z"], ("c", "d"): ["w"]}
    with unittest.mock.patch(f"{__name__}.layer_edges", return_value=fake):
        assert _cycles() == [["a", "b", "c"]]


# Circles closed only by an import inside a function. Each is deliberate; a new one is a design smell to
# fix (move what both sides need below them, as dataset_builder/layout.py and protocol_manifest.py do).
LAZY_CIRCLES: dict[tuple[str, ...], str] = {
    (
        "vignette_bench.eval.adapters.spec",
        "vignette_bench.eval.adapters.tiny",
        "vignette_bench.eval.adapters.transformers_adapter",
    ): "the backend table's factories (tiny/hf from_spec) build through spec.construct; spec re-exports tiny_dir",
    (
        "vignette_bench.eval.news.page",
        "vignette_bench.eval.news.results",
    ): "`vignette news results --source` draws the page, which labels models and judges as the results do",
    (
        "vignette_bench.inspect_provider",
        "vignette_bench.inspect_tasks",
    ): "the task's scorer reads the vignette/SPEC provider's verdict only when that provider answered",
}


def _circle_detail(graph_edges: frozenset[tuple[str, str, int]], circles: list[list[str]]) -> dict[str, list[str]]:
    """Each circle with the import statements inside it, as 'module:line -> module'."""
    return {
        " <-> ".join(c): [f"{a}:{line} -> {b}" for a, b, line in sorted(graph_edges) if a in c and b in c]
        for c in circles
    }


def _module_cycles(graph_edges: frozenset[tuple[str, str, int]]) -> list[list[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b, _ in graph_edges:
        graph[a].add(b)
    return sorted(_components(graph))


def test_no_import_cycle_between_modules_at_import_time() -> None:
    """A module-level circle fails (or half-initialises a module) depending on which side is imported first."""
    cycles = _module_cycles(import_time_edges())
    assert cycles == [], _circle_detail(import_time_edges(), cycles)


def test_no_import_circle_through_a_lazy_import_but_the_listed() -> None:
    """A function-level import that closes a circle hides it from the check above; each one left is listed
    with its reason, and a listed circle that is gone must leave the list."""
    cycles = _module_cycles(runtime_edges())
    unlisted = [c for c in cycles if tuple(c) not in LAZY_CIRCLES]
    assert unlisted == [], _circle_detail(runtime_edges(), unlisted)
    assert sorted(LAZY_CIRCLES) == [tuple(c) for c in cycles], "a listed circle is gone: remove it from LAZY_CIRCLES"


def test_the_import_parser_tells_import_time_from_lazy() -> None:
    tree = ast.parse(
        "import a\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import b\nelse:\n    import c\n"
        "try:\n    import d\nexcept ImportError:\n    import e\n"
        "class K:\n    import f\n"
        "def g():\n    import h\n"
    )

    def names(lazy: bool) -> set[str]:
        return {a.name for n in run_at_import(tree, lazy) if isinstance(n, ast.Import) for a in n.names}

    assert names(lazy=False) == {"a", "c", "d", "e", "f"}
    assert names(lazy=True) == {"a", "c", "d", "e", "f", "h"}
    # on the package itself: the builder's writers call the card from inside a function
    builder = f"{PACKAGE}.dataset_builder"
    call = (f"{builder}.shard", f"{builder}.card")
    assert call in {(a, b) for a, b, _ in runtime_edges()} - {(a, b) for a, b, _ in import_time_edges()}


def test_the_module_cycle_finder_finds_a_cycle() -> None:
    fake = frozenset({("a", "b", 1), ("b", "a", 2), ("b", "c", 3), ("c", "d", 4), ("d", "c", 5), ("d", "e", 6)})
    assert _module_cycles(fake) == [["a", "b"], ["c", "d"]]
    assert _circle_detail(fake, [["a", "b"]]) == {"a <-> b": ["a:1 -> b", "b:2 -> a"]}
