"""A published file is parsed in vignette_bench/formats/ only: every other module calls a `read_*` there.

The scan reads the package's source (ast, no import) and flags, in any function outside formats/:

* a parse of a catalog class (``Cls.from_json``/``Cls.upgrade``/``Cls.model_validate*`` with ``Cls`` one of
  formats/catalog.py) in a function that also reads a file (``.read_text()``, ``.read_bytes()``, ``open``,
  ``scan_part``, ``read_capped``, ``json.load``): the reader of that format lives outside formats/;
* a read or parse (the calls above, and ``json.loads``) of a value that comes from a published file's name:
  a string naming one (``PUBLISHED``), a module constant holding such a string, or a variable assigned from
  either in the same function.

Parsing data that did not come from such a file (a reply, a log's embedded settings) is not flagged.
Covered: the JSON records (every catalog format, and the files named in PUBLISHED). Not yet: the parquet
tables (responses.parquet, the render index), whose one checked reader is formats/responses.py
`read_responses` but which the runtime's RunFolder, the loader and the report still open themselves.
"""

from __future__ import annotations

import ast
from pathlib import Path

from vignette_bench.formats.catalog import FORMATS

PACKAGE = Path(__file__).resolve().parents[2] / "vignette_bench"
FORMATS_DIR = PACKAGE / "formats"
# Names of the JSON files one stage writes and another (or another person) reads.
PUBLISHED = (
    "run.json",
    "answers.jsonl",
    "answers_provenance.json",
    "_judges.json",
    "maintainers.json",
    "items.json",
    "annotations-",
)
CATALOG = {name.rpartition(":")[2] for name in FORMATS}
PARSE_METHODS = {"from_json", "upgrade", "model_validate", "model_validate_json"}
FILE_READS = {"read_text", "read_bytes", "scan_part", "read_capped"}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if FORMATS_DIR not in p.parents)


def _names_published(text: str) -> bool:
    return any(name in text for name in PUBLISHED)


def published_constants(paths: list[Path]) -> set[str]:
    """Module-level names bound to a string that names a published file (e.g. ANSWERS_FILE)."""
    out = set()
    for path in paths:
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant):
                if isinstance(node.value.value, str) and _names_published(node.value.value):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    out |= {t.id for t in targets if isinstance(t, ast.Name)}
    return out


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _is_file_read(call: ast.Call) -> bool:
    name = _call_name(call)
    if name in FILE_READS or (name == "open" and isinstance(call.func, ast.Name)):
        return True
    return name in ("load", "open") and isinstance(call.func, ast.Attribute) and _root(call.func) in ("json", "fsspec")


def _is_parse(call: ast.Call) -> bool:
    return _is_file_read(call) or (_call_name(call) == "loads" and _root(call.func) == "json")


def _root(node: ast.AST) -> str:
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _functions(tree: ast.Module) -> list[ast.AST]:
    return [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))]


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of one function (or the module), not those of functions nested in it."""
    out, stack = [], list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))
    return out


def _mentions(node: ast.AST, tainted: set[str]) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and _names_published(n.value):
            return True
        if isinstance(n, ast.Name) and n.id in tainted:
            return True
        if isinstance(n, ast.Attribute) and n.attr in tainted:
            return True
    return False


def violations(paths: list[Path] | None = None) -> list[str]:
    paths = _modules() if paths is None else paths
    constants = published_constants(paths)
    found = []
    for path in paths:
        rel = path.relative_to(PACKAGE.parent) if PACKAGE in path.parents else path
        for scope in _functions(ast.parse(path.read_text())):
            nodes = _own_nodes(scope)
            calls = [n for n in nodes if isinstance(n, ast.Call)]
            where = f"{rel}:{getattr(scope, 'name', '<module>')}"
            parses = [
                c
                for c in calls
                if isinstance(c.func, ast.Attribute)
                and c.func.attr in PARSE_METHODS
                and isinstance(c.func.value, ast.Name)
                and c.func.value.id in CATALOG
            ]
            if parses and any(_is_file_read(c) for c in calls):
                found.append(f"{where}: reads a file and parses it as {parses[0].func.value.id}")  # type: ignore[attr-defined]
            tainted = set(constants)
            for node in sorted((n for n in nodes if isinstance(n, ast.Assign | ast.AnnAssign)), key=lambda n: n.lineno):
                if node.value is not None and _mentions(node.value, tainted):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    tainted |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            for call in calls:
                if _is_parse(call) and _mentions(call, tainted):
                    found.append(f"{where}: line {call.lineno}: {_call_name(call)} of a published file")
    return found


def test_no_reader_outside_formats():
    found = violations()
    assert not found, "parse these in vignette_bench/formats (a read_* there), call it here:\n" + "\n".join(found)


def test_the_scan_finds_a_reader(tmp_path):
    """The scan is not blind: a module that reads run.json itself, or a catalog format from a file, is named."""
    module = tmp_path / "reader.py"
    module.write_text(
        "import json\n"
        "RECORD = 'run.json'\n"
        "def settings(folder):\n"
        "    path = folder / RECORD\n"
        "    return json.loads(path.read_text())['settings']\n"
        "def entry(path):\n"
        "    return Entry.from_json(path.read_bytes(), str(path))\n"
        "def reply(text):\n"
        "    return json.loads(text)\n"
    )
    found = violations([module])
    assert any(":settings: line 5: loads" in f for f in found)
    assert any(":entry: reads a file and parses it as Entry" in f for f in found)
    assert not any(":reply" in f for f in found)
