"""The backend table (vignette_bench/eval/adapters/backends.py): one row per backend, and everything
that names backends (help, errors, build_adapter, the attention refusal) read from it."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from vignette_bench.errors import VignetteError
from vignette_bench.eval.adapters import backends, spec
from vignette_bench.eval.adapters.attention import AttentionUnavailable
from vignette_bench.eval.adapters.backends import BACKENDS, FORMS, MissingDependency, spec_help
from vignette_bench.eval.adapters.spec import build_adapter, parse_spec

ADAPTERS = Path(backends.__file__).parent


@pytest.mark.parametrize("name", list(BACKENDS))
def test_every_factory_resolves_and_every_example_parses(name: str) -> None:
    backend = BACKENDS[name]
    assert callable(backend.load_factory())
    assert backend.name == name and parse_spec(backend.example).backend == name
    assert backend.form.startswith(name)


def test_help_and_errors_list_every_backend() -> None:
    text = spec_help()
    assert all(b.form in text and b.summary in text for b in BACKENDS.values())
    assert FORMS == tuple(b.form for b in BACKENDS.values())
    with pytest.raises(VignetteError, match="unknown backend") as e:
        parse_spec("nope:x")
    assert all(form in str(e.value) for form in FORMS)


def test_backend_names_are_written_once() -> None:
    """spec.py holds no backend name as a string: parsing and building go through the table."""
    tree = ast.parse((ADAPTERS / "spec.py").read_text(encoding="utf-8"))
    docstring = ast.get_docstring(tree)
    strings = {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value != docstring
    }
    assert not strings & set(BACKENDS)


@pytest.mark.parametrize("name", [n for n, b in BACKENDS.items() if not b.attention and not b.whole])
def test_attention_refusal_comes_from_the_capability(name: str) -> None:
    example = BACKENDS[name].example.partition("?")[0]
    with pytest.raises(AttentionUnavailable, match="unavailable for API backends"):
        build_adapter(f"{example}?record_attention=true")


def test_attention_capable_backends_are_not_refused_and_the_check_reads_the_flag(monkeypatch) -> None:
    assert {n for n, b in BACKENDS.items() if b.attention} == {"hf", "tiny"}
    # flip the capability on a row: the refusal follows the flag, not a list of names
    monkeypatch.setitem(BACKENDS, "openai", dataclasses.replace(BACKENDS["openai"], attention=True))
    adapter = build_adapter("openai:m@http://127.0.0.1:9/v1?probe=false&max_retries=0")
    assert type(adapter).__name__ == "OpenAIAdapter"


def test_missing_optional_package_names_the_extra(monkeypatch) -> None:
    row = dataclasses.replace(BACKENDS["openai"], requires=("vignette_no_such_package",))
    monkeypatch.setitem(BACKENDS, "openai", row)
    with pytest.raises(MissingDependency, match=r'pip install "vignette-bench\[openai\]"') as e:
        build_adapter("openai:m@http://127.0.0.1:9/v1?probe=false")
    assert isinstance(e.value, VignetteError) and isinstance(e.value, ImportError)
    assert "vignette_no_such_package" in str(e.value)


def test_each_backend_names_its_own_extra() -> None:
    # an API-only user is never sent to the torch extra
    extras = {name: b.install for name, b in BACKENDS.items()}
    assert extras["hf"] == extras["tiny"] == 'pip install "vignette-bench[hf]"'
    assert extras["openai"] == 'pip install "vignette-bench[openai]"'
    assert extras["vllm"].startswith('pip install "vignette-bench[vllm]"')
    assert extras["random"] == extras["always-left"] == ""


def test_missing_module_of_a_factory_is_named_too(monkeypatch) -> None:
    row = dataclasses.replace(BACKENDS["random"], factory="vignette_no_such_package.adapter:from_spec")
    monkeypatch.setitem(BACKENDS, "random", row)
    with pytest.raises(MissingDependency, match="the random backend needs"):
        build_adapter("random")


def test_adapters_never_import_the_explain_feature() -> None:
    for path in ADAPTERS.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("vignette_bench.eval.explain"), path.name


def test_reference_specs_keep_their_grammar() -> None:
    assert parse_spec("random:seed=3") == spec.ModelSpec("random", "random:seed=3")
    assert type(build_adapter("random:seed=3")).__name__ == "RandomResponder"
    with pytest.raises(VignetteError, match="tiny takes no revision"):
        parse_spec("tiny:llava@main")
