"""The model backends, one row each: the only place a backend's name, spec grammar, install extra and
capabilities are written. `spec.py` parses, explains and builds from this table; `spec_help()` is
the text a CLI shows for `--model`.

A row's `factory` is a "module:attr" string, imported only when a spec names the backend, so a
missing optional package matters only to the spec that needs it; the callable takes
``(spec_text, parsed_spec, defaults)`` and returns the adapter. Before importing it the row's
`requires` are looked up, and a missing one is a `MissingDependency` naming the extra to install.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from vignette_bench.errors import MissingExtra, install_hint


class MissingDependency(MissingExtra):
    """A backend's optional package is not installed; the message says what to `pip install`.

    Also an `ImportError`, so code written as ``except ImportError`` around an optional backend keeps working."""


@dataclass(frozen=True)
class Backend:
    name: str  # the spec's prefix: `name:...` (or the whole spec, for the reference responders)
    form: str  # the grammar, as shown in help and errors
    example: str  # one spec that works (given the model or server it names)
    summary: str  # what it is, in a few words
    factory: str  # "module:attr" of a callable (spec_text, ModelSpec, defaults) -> ModelAdapter
    install: str  # the command that installs what it needs ("" when the core package suffices)
    requires: tuple[str, ...] = ()  # import names looked up before the factory is imported
    at: Literal["revision", "url"] | None = None  # what follows '@' after the model: a revision, a base URL, or nothing
    whole: bool = False  # the spec is the responder's own text (random:seed=3), no model or query string
    score: bool = False  # gives a probability per option (mode=score)
    generate: bool = True  # answers free text (news subset, judge prompts, generate mode)
    attention: bool = False  # can record attention over the image (record_attention=true)

    def capabilities(self) -> tuple[str, ...]:
        flags = {"score": self.score, "generate": self.generate, "attention": self.attention}
        return ("choose", *(k for k, v in flags.items() if v))

    def load_factory(self) -> Callable[..., Any]:
        """The factory callable; a `MissingDependency` naming `install` when a required package is absent."""
        missing = [m for m in self.requires if importlib.util.find_spec(m) is None]
        module, _, attr = self.factory.partition(":")
        try:
            if missing:
                raise ModuleNotFoundError(f"No module named {missing[0]!r}", name=missing[0])
            return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]
        except ModuleNotFoundError as e:
            if e.name is None or e.name.startswith("vignette_bench"):
                raise  # our own module missing is a bug, not an install step
            hint = f"; install it with: {self.install}" if self.install else ""
            raise MissingDependency(f"the {self.name} backend needs the `{e.name}` package{hint}") from e


_ADAPTERS = "vignette_bench.eval.adapters"
_HF_EXTRA = install_hint("hf")
_MODEL_REQUIRES = ("torch", "transformers")

BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend(
            "hf",
            "hf:PATH_OR_ID[@REVISION][?key=value&...]",
            "hf:Qwen/Qwen2.5-VL-3B-Instruct@main?mode=score&batch_size=16&dtype=bfloat16",
            "a local transformers VLM (Hub id or folder)",
            f"{_ADAPTERS}.transformers_adapter:from_spec",
            _HF_EXTRA,
            _MODEL_REQUIRES,
            at="revision",
            score=True,
            attention=True,
        ),
        Backend(
            "tiny",
            "tiny:FAMILY[?key=value&...]",
            "tiny:llava?mode=generate",
            "a tiny random VLM built locally (tests, demo)",
            f"{_ADAPTERS}.tiny:from_spec",
            _HF_EXTRA,
            (*_MODEL_REQUIRES, "tokenizers"),
            score=True,
            attention=True,
        ),
        Backend(
            "openai",
            "openai:MODEL@BASE_URL[?key=value&...]",
            "openai:gpt-4o@http://127.0.0.1:8000/v1?concurrency=8&probe=false",
            "any OpenAI-compatible chat server",
            f"{_ADAPTERS}.openai_adapter:from_spec",
            install_hint("openai"),
            ("openai",),
            at="url",
        ),
        Backend(
            "vllm",
            "vllm:MODEL[@REVISION][?key=value&...]",
            "vllm:Qwen/Qwen2.5-VL-3B-Instruct?temperature=0.7&tensor_parallel_size=2",
            "vLLM's offline engine (CUDA GPU only; generate mode)",
            f"{_ADAPTERS}.vllm_adapter:from_spec",
            # vllm installs only on CUDA machines; the adapter checks for it when it starts,
            # after refusing launch settings it cannot honour (those errors show on any machine)
            install_hint("vllm") + "  (on a CUDA GPU machine)",
            at="revision",
        ),
        Backend(
            "random",
            "random[:seed=N]",
            "random:seed=3",
            "reference: a uniformly random option (a null model)",
            f"{_ADAPTERS}.reference:from_spec",
            "",
            whole=True,
            generate=False,
        ),
        Backend(
            "always-left",
            "always-left",
            "always-left",
            "reference: always the left person (maximal position bias)",
            f"{_ADAPTERS}.reference:from_spec",
            "",
            whole=True,
            generate=False,
        ),
    )
}

FORMS: tuple[str, ...] = tuple(b.form for b in BACKENDS.values())


def spec_help() -> str:
    """One line per backend: its form, what it is, what it can do and what it needs installed."""
    width = max(len(b.form) for b in BACKENDS.values())
    lines = [
        f"{b.form:<{width}}  {b.summary}; {', '.join(b.capabilities())}" + (f"; needs {b.install}" if b.install else "")
        for b in BACKENDS.values()
    ]
    return "\n".join(lines)


def attention_refusal(backend: Backend) -> ValueError:
    """The error for record_attention=true on a backend without the attention capability. Only a spec
    with options can ask, so in practice an API backend (openai, vllm): they return text, not weights."""
    from .attention import unavailable_for_api

    return unavailable_for_api(backend.name)
