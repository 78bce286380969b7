"""Names of what the builder writes into a source, below its writers and the card.

The card lists what shard and pair_specs wrote, and both call the card when they finish; the names
live here so the card imports neither of them back. The render index's path is the format's own
(vignette_bench/formats/render_index.py).
"""

from __future__ import annotations

EXTENSION: dict[str, str] = {"jpeg": "jpg", "webp": "webp"}  # a shard member's suffix by image format
SPECS_DIR = "pairs"  # the pair spec tables, one folder per pair config


def specs_config(config: str) -> str:
    """The card's config name for a pair config's spec table."""
    return f"{config}_specs"
