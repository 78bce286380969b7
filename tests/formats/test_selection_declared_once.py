"""The pair selection is declared once: `PairFilters`/`PairConfig` in vignette_bench/formats/pair_config.py.

Read from the source by AST: no other module of the package (vignette.py included) declares the filter fields
again, as a function's parameters, a class's fields (dataclass, TypedDict, pydantic) or a dict literal's keys.
Single names like `gender` or `identities` mean other things elsewhere (a pair's gender, a taxonomy's
identities), so a scope counts as a second declaration of the selection when it names three or more of them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from vignette_bench.formats.pair_config import FILTER_FIELDS, PairConfig, PairFilters
from vignette_bench.formats.vocabulary import FILTER_KEYS

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / "vignette_bench" / "formats" / "pair_config.py"
AT_MOST = 2  # filter names one scope may use for its own meaning
# Scopes that name more for a meaning of their own, each with why it is not the pair selection.
OTHER_MEANING = {
    ("vignette_bench/dataset_builder/records.py", "parameters of plan_renders"): "which renders to build, not pairs",
}


def declared(tree: ast.AST) -> Iterator[tuple[int, str, set[str]]]:
    """(line, what, names) for every parameter list, class body and dict literal, with the filter names it declares."""
    names = set(FILTER_FIELDS)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            a = node.args
            params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
            yield node.lineno, f"parameters of {getattr(node, 'name', 'lambda')}", params & names
        elif isinstance(node, ast.ClassDef):
            fields = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
            yield node.lineno, f"fields of class {node.name}", fields & names
        elif isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            yield node.lineno, "dict keys", keys & names


def modules() -> list[Path]:
    return [ROOT / "vignette.py", *sorted((ROOT / "vignette_bench").rglob("*.py"))]


def test_no_module_but_pair_config_declares_the_selection() -> None:
    found = []
    for path in modules():
        if path == HOME:
            continue
        for line, what, names in declared(ast.parse(path.read_text(encoding="utf-8"))):
            if len(names) > AT_MOST and (str(path.relative_to(ROOT)), what) not in OTHER_MEANING:
                found.append(f"{path.relative_to(ROOT)}:{line}: {what} {sorted(names)}")
    assert not found, "the selection is declared again; derive it from PairConfig/PairFilters:\n" + "\n".join(found)


def test_the_check_finds_a_second_declaration() -> None:
    # what the loader had before: PairSpace's keyword parameters and its filters dict
    again = ast.parse(
        "def space(taxonomy, config, *, gender=None, dimensions=None, identities=None, coverage=None): ...\n"
        "f = {'gender': 1, 'time_use': 2, 'activities': 3}\n"
        "class SelectionFilters:\n    gender: str\n    dimensions: str\n    identity_match: str\n"
    )
    assert [len(n) for _, _, n in declared(again) if len(n) > AT_MOST] == [3, 3, 3]
    home = [n for _, what, n in declared(ast.parse(HOME.read_text())) if what == "fields of class PairFilters"]
    assert home == [set(FILTER_FIELDS)]


def test_the_cli_keys_are_the_fields() -> None:
    # the parsers print `--filter` keys without importing pydantic: vocabulary.py writes them out
    assert FILTER_KEYS == FILTER_FIELDS == tuple(PairFilters.model_fields)
    assert set(FILTER_FIELDS) <= set(PairConfig.model_fields)


@pytest.mark.parametrize("key", FILTER_FIELDS)
def test_every_filter_key_reads_from_the_cli(key: str) -> None:
    # a key `run --help` offers is one the settings read (the symptom of issue 37: help offered a refused key)
    from vignette_bench.formats.run_record import RunSettings, parse_filters

    value = {"identity_match": "any", "exclude_near_synonyms": "true"}.get(key, "a,b")
    settings = RunSettings(source="s", config="portraits", model="m", filters=parse_filters([f"{key}={value}"]))
    got = getattr(settings.pair_config(), key)
    assert got == {"identity_match": "any", "exclude_near_synonyms": True}.get(key, ("a", "b"))
