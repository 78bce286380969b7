"""The loader's failures: each derives from `vignette_bench.errors.VignetteError` (the CLI's clean exit)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any

from vignette_bench.errors import VignetteError

__all__ = ["CorruptRenderError", "MissingRenderError", "VignetteError", "as_tuple", "unknown"]


class MissingRenderError(VignetteError, LookupError):
    """A pair needs a render that the source does not have (also a LookupError, as it always was)."""


class CorruptRenderError(VignetteError):
    """A render's bytes cannot be decoded, or the shard disagrees with the index."""


def unknown(kind: str, name: Any, valid: Iterable[str]) -> VignetteError:
    """An unknown name, with the closest valid one and the full list."""
    valid = list(valid)
    close = difflib.get_close_matches(str(name), valid, n=1)
    hint = f" Closest match: {close[0]!r}." if close else ""
    return VignetteError(f"unknown {kind} {name!r}.{hint} Valid {kind} names: {', '.join(valid)}")


def as_tuple(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return (value,) if isinstance(value, str) else tuple(value)
