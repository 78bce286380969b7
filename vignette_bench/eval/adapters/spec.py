"""Model spec strings → adapters. One string names a backend, a model and its settings:

    hf:PATH_OR_ID[@REVISION][?mode=score&batch_size=16&dtype=bfloat16&device=cuda]
    tiny:FAMILY[?mode=generate]                 a tiny random VLM built locally (tests, demo)
    openai:MODEL@http://HOST:PORT/v1[?concurrency=8&temperature=0&probe=false]   probe: see OpenAIAdapter.probe
    vllm:MODEL[@REVISION][?temperature=0.7&tensor_parallel_size=2]
    random[:seed=N]   always-left                 reference responders (eval.adapters.reference)

The backends, their grammar, install extras and capabilities are one table, `backends.BACKENDS`
(`spec_help()` prints it). Query values are read as int, float, true/false or text; each key must
be a parameter of the backend's constructor. Backends are imported only when named, so a missing
optional package (vllm, openai) only matters to the spec that needs it.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from vignette_bench.errors import VignetteError

from .backends import BACKENDS, FORMS, attention_refusal, spec_help
from .base import ModelAdapter
from .tiny import TINY_CACHE_ENV, tiny_dir  # stdlib-only at import; kept importable from here

__all__ = ["FORMS", "TINY_CACHE_ENV", "ModelSpec", "SpecError", "build_adapter", "parse_spec", "spec_help", "tiny_dir"]


class SpecError(VignetteError):
    """A model spec that names no backend, breaks its grammar, or sets an option it does not take."""


@dataclass(frozen=True)
class ModelSpec:
    backend: str  # a name in backends.BACKENDS
    target: str  # path, model id, family, or the reference spec itself
    at: str | None = None  # revision (hf, vllm) or base URL (openai)
    options: dict[str, Any] = field(default_factory=dict)


def _value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def invalid(spec: str, why: str) -> SpecError:
    """The error for a bad spec: what is wrong, then every valid form (from the backend table)."""
    return SpecError(f"model spec {spec!r}: {why}. Valid forms: " + "; ".join(FORMS))


def parse_spec(spec: str) -> ModelSpec:
    spec = spec.strip()
    head, _, rest = spec.partition(":")
    backend = BACKENDS.get(head)
    if backend is None:
        raise invalid(spec, "unknown backend")
    if backend.whole:
        return ModelSpec(backend.name, spec)
    if not rest:
        raise invalid(spec, "no model named")
    body, _, query = rest.partition("?")
    try:
        options = {k: _value(v) for k, v in parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))}
    except ValueError as e:
        raise invalid(spec, f"bad query string {query!r} ({e})") from e
    target, sep, at = body.partition("@")
    if not target or (sep and not at):
        raise invalid(spec, "empty model or empty text after '@'")
    if backend.at == "url" and not at:
        raise invalid(spec, f"{backend.name} needs the server's base URL after '@', e.g. {backend.example}")
    if backend.at is None and at:
        raise invalid(spec, f"{backend.name} takes no revision")
    return ModelSpec(backend.name, target, at or None, options)


def construct(spec: str, cls: type, args: tuple[Any, ...], options: dict[str, Any], defaults: dict[str, Any]) -> Any:
    """`cls(*args, **options)`, plus the caller's `defaults` where `cls` takes them; unknown options are refused."""
    params = inspect.signature(cls).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    accepted = [n for n, p in params.items() if n != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD]
    unknown = [k for k in options if k not in accepted and not takes_any]
    if unknown:
        raise invalid(spec, f"unknown option(s) {unknown} for {cls.__name__}; it takes {accepted}")
    kwargs = {k: v for k, v in defaults.items() if k in accepted}  # caller's defaults only where they apply
    kwargs.update(options)
    return cls(*args, **kwargs)


def with_revision(parsed: ModelSpec) -> dict[str, Any]:
    """The spec's options, plus revision= when the spec wrote one after '@'."""
    return {**parsed.options, **({"revision": parsed.at} if parsed.at else {})}


def build_adapter(spec: str, **defaults: Any) -> ModelAdapter:
    """The adapter a spec names. `defaults` (e.g. seed, batch_size from a CLI) apply where the backend
    takes them; options written in the spec win."""
    parsed = parse_spec(spec)
    backend = BACKENDS[parsed.backend]
    if parsed.options.get("record_attention") and not backend.attention:
        raise attention_refusal(backend)
    adapter: ModelAdapter = backend.load_factory()(spec, parsed, defaults)
    return adapter
