"""Write a source's README.md (dataset card with YAML ``configs:``) from cards/dataset_card_template.md.

The numbers in the card are read from the source's own index, so the card cannot drift from
the data. The ``news`` config is declared only when ``news/*.parquet`` exists, because
``datasets`` resolves every declared config's files.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from vignette_bench.dataset_builder.shard import EXTENSION, INDEX_PATH

TEMPLATE = Path(__file__).resolve().parent.parent / "cards" / "dataset_card_template.md"
NEWS_CONFIG = """- config_name: news
  data_files:
  - split: test
    path: news/*.parquet
"""


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < limit:
            return name
    return "100K<n<1M"


def card_text(root: Path, source: str | None = None, license: str = "cc-by-4.0", template: Path = TEMPLATE) -> str:
    root = Path(root)
    index = pd.read_parquet(root / INDEX_PATH)
    placeholder = bool(index.placeholder.any())
    fmt = str(index.format.iloc[0]) if len(index) else "jpeg"
    shards = sorted(set(index.shard))
    total = sum((root / s).stat().st_size for s in shards)
    sizes = ", ".join(sorted({f"{w}x{h}" for w, h in zip(index.width, index.height)}))
    values = {
        "title_suffix": " (placeholder sample)" if placeholder else "",
        "license": license,
        "size_category": _size_category(len(index)),
        "news_config": NEWS_CONFIG if any((root / "news").glob("*.parquet")) else "",
        "placeholder_notice": (
            "> **Placeholder sample.** Every image here is a *drawn placeholder* (labelled PLACEHOLDER in\n"
            "> the image and `placeholder: true` in its record), made without a text-to-image model so the\n"
            "> tools can be demonstrated and tested offline. It is not benchmark data.\n\n"
            if placeholder
            else ""
        ),
        "n_renders": str(len(index)),
        "n_activity": str(int((index.kind == "activity").sum())),
        "n_portrait": str(int((index.kind == "portrait").sum())),
        "genders": ", ".join(sorted(set(index.gender))),
        "dimensions": ", ".join(dict.fromkeys(index.dimension)),
        "n_identities": str(index.identity.nunique()),
        "n_activities": str(index.loc[index.kind == "activity", "activity"].nunique()),
        "n_shards": str(len(shards)),
        "total_mb": f"{total / 1e6:.1f}",
        "format": fmt,
        "image_ext": EXTENSION.get(fmt, fmt),
        "quality": ", ".join(str(q) for q in sorted(set(index.quality))),
        "sizes": sizes,
        "models": ", ".join(sorted(set(index.model_id))),
        "source": source or str(root),
    }
    text = template.read_text()
    for name, value in values.items():
        text = text.replace("{{" + name + "}}", value)
    return text


def write_card(root: Path, source: str | None = None, license: str = "cc-by-4.0") -> Path:
    path = Path(root) / "README.md"
    tmp = path.with_name(f".README.md.tmp-{os.getpid()}")
    tmp.write_text(card_text(root, source, license))
    os.replace(tmp, path)
    return path
