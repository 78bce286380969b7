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
from vignette_bench.errors import VignetteError


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

    from vignette_bench.remote import http_options, read_url

    try:
        names = json.loads(read_url(f"{root}/news/{MANIFEST}", 1 << 20))["files"]
    except FileNotFoundError as error:
        raise FileNotFoundError(
            f"{root}/news/{MANIFEST} not found: a URL source needs the manifest that `vignette build news` writes"
        ) from error
    tables = []
    for name in names:
        with fsspec.open(f"{root}/news/{name}", **http_options(root)) as handle:
            tables.append(pq.read_table(handle))
    return pa.concat_tables(tables)


NEWS_COLUMNS = ("id", "image", "question", "reference_answer", "attribute")
MAX_NEWS_PIXELS = 8192 * 8192  # a news photo header claiming more is refused before decoding


class NewsDataError(VignetteError):
    """A news table is unusable; the message names the row (and item id) and the fix."""


def _text(row: dict, name: str, where: str) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        raise NewsDataError(
            f"{where}: {name!r} is {value!r}, expected non-empty text; fix the row and rebuild the news subset"
        )
    return value


def news_items(dataset: datasets.Dataset) -> list[NewsItem]:
    """Every row validated (columns, text fields, attribute, unique ids, a decodable image of sane size)
    before anything is asked: a bad row is named instead of becoming "Question: None" or a KeyError."""
    from vignette_bench.dataset_builder.news import ATTRIBUTES

    missing = [c for c in NEWS_COLUMNS if c not in dataset.column_names]
    if missing:
        raise NewsDataError(f"news table: missing column(s) {missing}; rebuild it with `vignette build news`")
    duplicates = [i for i, n in Counter(dataset["id"]).items() if n > 1]
    if duplicates:
        raise NewsDataError(f"news ids must be unique; repeated: {sorted(map(str, duplicates))[:5]}")
    raw = dataset.cast_column("image", datasets.Image(decode=False))
    items = []
    for n, row in enumerate(raw):
        where = f"news row {n} (id {row.get('id')!r})"
        item_id = _text(row, "id", where)
        question, reference, attribute = (_text(row, c, where) for c in ("question", "reference_answer", "attribute"))
        if attribute not in ATTRIBUTES:
            raise NewsDataError(f"{where}: attribute {attribute!r} is not one of {list(ATTRIBUTES)}")
        data = (row.get("image") or {}).get("bytes")
        if not isinstance(data, (bytes, bytearray)) or not data:
            raise NewsDataError(f"{where}: no image bytes; rebuild the news subset with the image file present")
        try:
            image = Image.open(io.BytesIO(data))
            if image.width * image.height > MAX_NEWS_PIXELS:
                raise NewsDataError(
                    f"{where}: image is {image.width}x{image.height}, above {MAX_NEWS_PIXELS:,} pixels; downscale it"
                )
            image.load()
        except NewsDataError:
            raise
        except Exception as e:  # any decoder failure of the stored bytes
            raise NewsDataError(f"{where}: the image cannot be decoded ({type(e).__name__}: {e})") from None
        items.append(
            NewsItem(
                item_id,
                image,
                hashlib.sha256(data).hexdigest(),
                question,
                reference,
                attribute,
                bool(row.get("placeholder", False)),
            )
        )
    return items
