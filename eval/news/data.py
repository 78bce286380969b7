"""Load the news subset of a source (local folder, Hub repo id or URL) as a `datasets.Dataset`."""

from __future__ import annotations

import hashlib
import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from dataset_builder.news import NEWS_SPLIT


@dataclass(frozen=True)
class NewsItem:
    id: str
    image: Image.Image
    image_sha256: str  # of the stored bytes: part of every cache key, so a changed photo is re-asked
    question: str
    reference_answer: str
    attribute: str
    placeholder: bool


def load_news(source: str | Path, limit: int | None = None) -> datasets.Dataset:
    """A local folder is read straight from news/*.parquet (no `datasets` cache, which can go stale
    offline); anything else goes through `datasets.load_dataset(source, "news")`."""
    path = Path(source)
    if path.is_dir():
        files = sorted((path / "news").glob("*.parquet"))
        if not files:
            raise FileNotFoundError(f"{path / 'news'} holds no *.parquet: build it with `python -m dataset_builder news`")
        dataset = datasets.Dataset(pa.concat_tables([pq.read_table(f) for f in files]))
    else:
        dataset = datasets.load_dataset(str(source), "news", split=NEWS_SPLIT)
    if limit is not None:
        dataset = dataset.select(range(min(limit, len(dataset))))
    return dataset


def news_items(dataset: datasets.Dataset) -> list[NewsItem]:
    duplicates = [i for i, n in Counter(dataset["id"]).items() if n > 1]
    if duplicates:
        raise ValueError(f"news ids must be unique; repeated: {sorted(duplicates)[:5]}")
    raw = dataset.cast_column("image", datasets.Image(decode=False))
    items = []
    for row in raw:
        data = row["image"]["bytes"]
        image = Image.open(io.BytesIO(data))
        image.load()
        items.append(NewsItem(row["id"], image, hashlib.sha256(data).hexdigest(), row["question"],
                              row["reference_answer"], row["attribute"], bool(row.get("placeholder", False))))
    return items
