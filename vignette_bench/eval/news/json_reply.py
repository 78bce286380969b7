"""Read a model's JSON reply: one object with the keys asked for, or the reason it is not."""

from __future__ import annotations

import json
import re
from typing import Any

# Chat models often wrap JSON in a ```json fence even when told not to; that is tolerated.
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def parse_json_object(text: str, keys: tuple[str, ...]) -> tuple[dict[str, Any] | None, str | None]:
    """(object, None) when text is a JSON object holding every key; else (None, why not)."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        value = json.loads(body)
    except json.JSONDecodeError as error:
        return None, f"not valid JSON ({error.msg})"
    if not isinstance(value, dict):
        return None, f"expected a JSON object, got {type(value).__name__}"
    missing = [key for key in keys if key not in value]
    if missing:
        return None, f"missing key(s) {missing}"
    return value, None
