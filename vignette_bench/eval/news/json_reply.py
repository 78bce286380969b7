"""Read a model's JSON reply: one object with the keys asked for, or the reason it is not."""

from __future__ import annotations

import json
import re
from typing import Any

from vignette_bench.errors import VignetteError

# Chat models often wrap JSON in a ```json fence even when told not to; that is tolerated.
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


class _DuplicateKey(VignetteError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json.loads keeps the last of two equal keys silently ({"score": 150, "score": 50} -> 50): refuse."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def parse_json_object(text: str, keys: tuple[str, ...]) -> tuple[dict[str, Any] | None, str | None]:
    """(object, None) when text is a JSON object holding every key; else (None, why not)."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        value = json.loads(body, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as error:
        return None, f"not valid JSON ({error.msg})"
    except _DuplicateKey as error:
        return None, f"key {error.args[0]!r} appears twice (which value was meant is unknowable)"
    if not isinstance(value, dict):
        return None, f"expected a JSON object, got {type(value).__name__}"
    missing = [key for key in keys if key not in value]
    if missing:
        return None, f"missing key(s) {missing}"
    return value, None
