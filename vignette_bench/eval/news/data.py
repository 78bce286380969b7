"""Load the news subset of a source (local folder, Hub repo id or URL) as a `datasets.Dataset`."""

from __future__ import annotations

import hashlib
import io
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from vignette_bench.dataset_builder.news import MANIFEST, NEWS_SPLIT


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
    offline); a base URL (http(s)://) through news/manifest.json; a Hub id or hf://datasets/ID
    through `datasets.load_dataset(ID, "news")`."""
    text = str(source)
    path = Path(text)
    if "://" not in text and path.is_dir():
        files = sorted((path / "news").glob("*.parquet"))
        if not files:
            raise FileNotFoundError(f"{path / 'news'} holds no *.parquet: build it with `vignette build news`")
        dataset = datasets.Dataset(pa.concat_tables([pq.read_table(f) for f in files]))
    elif text.startswith(("http://", "https://")):
        dataset = datasets.Dataset(_read_url_source(text.rstrip("/")))
    else:
        dataset = datasets.load_dataset(text.removeprefix("hf://datasets/"), "news", split=NEWS_SPLIT)
    if limit is not None:
        dataset = dataset.select(range(min(limit, len(dataset))))
    return dataset


def _read_url_source(root: str) -> pa.Table:
    import fsspec

    try:
        with fsspec.open(f"{root}/news/{MANIFEST}") as handle:
            names = json.load(handle)["files"]
    except FileNotFoundError as error:
        raise FileNotFoundError(
            f"{root}/news/{MANIFEST} not found: a URL source needs the manifest that `vignette build news` writes"
        ) from error
    tables = []
    for name in names:
        with fsspec.open(f"{root}/news/{name}") as handle:
            tables.append(pq.read_table(handle))
    return pa.concat_tables(tables)


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
        items.append(
            NewsItem(
                row["id"],
                image,
                hashlib.sha256(data).hexdigest(),
                row["question"],
                row["reference_answer"],
                row["attribute"],
                bool(row.get("placeholder", False)),
            )
        )
    return items
