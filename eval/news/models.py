"""Model specs for the news tools: the project's spec parser, plus `openai:MODEL@BASE_URL`.

The spec parser (eval/adapters/spec.py) knows every local backend; an OpenAI-compatible server is
named here too so the news tools work before and beside it: `openai:gpt-4o` (base URL from
OPENAI_BASE_URL or api.openai.com) or `openai:MODEL@http://127.0.0.1:8000/v1`. The key comes from
OPENAI_API_KEY, never from the spec (specs are recorded in provenance).
"""

from __future__ import annotations

from eval.adapters.base import ModelAdapter


def load_adapter(spec: str) -> ModelAdapter:
    if spec.startswith("openai:"):
        from eval.adapters.openai_adapter import OpenAIAdapter

        model, _, base_url = spec[len("openai:"):].partition("@")
        if not model:
            raise ValueError(f"model spec {spec!r} names no model: use openai:MODEL or openai:MODEL@BASE_URL")
        return OpenAIAdapter(model, base_url=base_url or None)
    try:
        from eval.adapters import spec as specs
    except ImportError as error:
        raise ValueError(f"model spec {spec!r}: the local spec parser (eval/adapters/spec.py) is not available "
                         f"({error}); use openai:MODEL@BASE_URL") from error
    return specs.load_adapter(spec)
