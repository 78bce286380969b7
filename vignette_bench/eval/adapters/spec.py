"""Model spec strings → adapters. One string names a backend, a model and its settings:

    hf:PATH_OR_ID[@REVISION][?mode=score&batch_size=16&dtype=bfloat16&device=cuda]
    tiny:FAMILY[?mode=generate]                 a tiny random VLM built locally (tests, demo)
    openai:MODEL@http://HOST:PORT/v1[?concurrency=8&temperature=0&probe=false]   probe: see OpenAIAdapter.probe
    vllm:MODEL[@REVISION][?temperature=0.7&tensor_parallel_size=2]
    random[:seed=N]   always-left                 reference responders (eval.adapters.reference)

Query values are read as int, float, true/false or text; each key must be a parameter of the
backend's constructor. Backends are imported only when named, so a missing optional package
(vllm, openai) only matters to the spec that needs it.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from .base import ModelAdapter

FORMS = (
    "hf:PATH_OR_ID[@REVISION][?key=value&...]",
    "tiny:FAMILY[?key=value&...]",
    "openai:MODEL@BASE_URL[?key=value&...]",
    "vllm:MODEL[@REVISION][?key=value&...]",
    "random[:seed=N]",
    "always-left",
)
TINY_CACHE_ENV = "VIGNETTE_TINY_DIR"  # where tiny: models are built (default ~/.cache/vignette/tiny)


@dataclass(frozen=True)
class ModelSpec:
    backend: str  # hf | tiny | openai | vllm | reference
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


def _invalid(spec: str, why: str) -> ValueError:
    return ValueError(f"model spec {spec!r}: {why}. Valid forms: " + "; ".join(FORMS))


def parse_spec(spec: str) -> ModelSpec:
    spec = spec.strip()
    head, _, rest = spec.partition(":")
    if head in ("random", "always-left"):
        return ModelSpec("reference", spec)
    if head not in ("hf", "tiny", "openai", "vllm") or not rest:
        raise _invalid(spec, "unknown backend" if head not in ("hf", "tiny", "openai", "vllm") else "no model named")
    body, _, query = rest.partition("?")
    try:
        options = {k: _value(v) for k, v in parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))}
    except ValueError as e:
        raise _invalid(spec, f"bad query string {query!r} ({e})") from e
    target, sep, at = body.partition("@")
    if not target or (sep and not at):
        raise _invalid(spec, "empty model or empty text after '@'")
    if head == "openai" and not at:
        raise _invalid(spec, "openai needs the server's base URL after '@', e.g. openai:MODEL@http://127.0.0.1:8000/v1")
    if head == "tiny" and at:
        raise _invalid(spec, "tiny takes no revision")
    return ModelSpec(head, target, at or None, options)


def _construct(spec: str, cls: type, args: tuple[Any, ...], options: dict[str, Any], defaults: dict[str, Any]) -> Any:
    params = inspect.signature(cls).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    accepted = [n for n, p in params.items() if n != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD]
    unknown = [k for k in options if k not in accepted and not takes_any]
    if unknown:
        raise _invalid(spec, f"unknown option(s) {unknown} for {cls.__name__}; it takes {accepted}")
    kwargs = {k: v for k, v in defaults.items() if k in accepted}  # caller's defaults only where they apply
    kwargs.update(options)
    return cls(*args, **kwargs)


def tiny_dir() -> Path:
    return Path(os.environ.get(TINY_CACHE_ENV) or Path.home() / ".cache" / "vignette" / "tiny")


def build_adapter(spec: str, **defaults: Any) -> ModelAdapter:
    """The adapter a spec names. `defaults` (e.g. seed, batch_size from a CLI) apply where the backend
    takes them; options written in the spec win."""
    parsed = parse_spec(spec)
    if parsed.options.get("record_attention") and parsed.backend in ("openai", "vllm"):
        from vignette_bench.eval.explain.attention import unavailable_for_api

        raise unavailable_for_api(parsed.backend)
    if parsed.backend == "reference":
        from .reference import reference_adapter

        adapter = reference_adapter(parsed.target, int(defaults.get("seed", 0)))
        if adapter is None:
            raise _invalid(spec, "unknown reference responder")
        return adapter
    if parsed.backend in ("hf", "tiny"):
        from .transformers_adapter import TransformersAdapter

        target = parsed.target
        if parsed.backend == "tiny":
            from .tiny import FAMILIES, build_tiny_vlm

            if target not in FAMILIES:
                raise _invalid(spec, f"unknown tiny family {target!r} (one of {', '.join(FAMILIES)})")
            target = str(build_tiny_vlm(target, tiny_dir() / target))
        options = dict(parsed.options)
        if parsed.at:
            options["revision"] = parsed.at
        return _construct(spec, TransformersAdapter, (target,), options, defaults)
    if parsed.backend == "openai":
        try:
            from .openai_adapter import OpenAIAdapter
        except ImportError as e:
            raise ImportError(
                f"model spec {spec!r} needs eval/adapters/openai_adapter.py and the `openai` package: {e}"
            ) from e
        options = dict(parsed.options)
        probe = options.pop("probe", True)
        if not isinstance(probe, bool):
            raise _invalid(spec, f"probe={probe!r}: expected true or false")
        adapter = _construct(spec, OpenAIAdapter, (parsed.target, parsed.at), options, defaults)
        if probe:  # before any answer: a server that cannot serve the run fails here, with what to change
            adapter.probe()
        return adapter
    from .vllm_adapter import VLLMAdapter  # raises with the install hint when vllm is missing

    options = dict(parsed.options)
    if parsed.at:
        options["revision"] = parsed.at
    return _construct(spec, VLLMAdapter, (parsed.target,), options, defaults)
