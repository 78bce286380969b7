"""Write a source's README.md (dataset card with YAML ``configs:``) from vignette_bench/cards/dataset_card_template.md.

The numbers in the card are read from the source's own index, so the card cannot drift from
the data. A config is declared only when its files exist (``index``; ``news`` with ``news/*.parquet``;
``<config>_specs`` with ``pairs/<config>/*.parquet``), because ``datasets`` resolves every declared
config's files.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pandas as pd

from vignette_bench.dataset_builder.shard import EXTENSION, INDEX_PATH

TEMPLATE = Path(__file__).resolve().parent.parent / "cards" / "dataset_card_template.md"


def data_configs(root: Path) -> list[tuple[str, str]]:
    """(config name, data_files path) of every config plain ``datasets`` can load from this source.

    All of them are parquet: ``datasets`` picks ONE builder for a repo, from the first config's files,
    and applies it to every config (a webdataset ``renders`` config first made ``news`` fail with "bad
    checksum"). The renders themselves load with the explicit ``webdataset`` builder (see the card)."""
    from vignette_bench.dataset_builder.pair_specs import SPECS_DIR, specs_config

    out = [("index", INDEX_PATH)]
    if any((root / "news").glob("*.parquet")):
        out.append(("news", "news/*.parquet"))
    for folder in sorted((root / SPECS_DIR).iterdir()) if (root / SPECS_DIR).is_dir() else ():
        if folder.is_dir() and any(folder.glob("*.parquet")):
            out.append((specs_config(folder.name), f"{SPECS_DIR}/{folder.name}/*.parquet"))
    return out


def files_digest(root: Path, pattern: str) -> str:
    """sha256 over the names and bytes of the files `pattern` matches under `root`."""
    h = hashlib.sha256()
    for f in sorted(root.glob(pattern)):
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def configs_yaml(root: Path) -> str:
    """The card's ``configs:`` items. Each carries the digest of its files in ``description``: datasets
    names a local folder's cache after the folder's base name and the config's (relative) patterns, so
    two sources called ``src`` served each other's rows; the description enters that cache key."""
    return "".join(
        f"- config_name: {name}\n  description: 'VIGNETTE {name}, files sha256 {files_digest(root, path)}'\n"
        f"  data_files:\n  - split: test\n    path: {path}\n"
        for name, path in data_configs(root)
    )


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
        "configs": configs_yaml(root),
        "config_list": ", ".join(f"`{name}`" for name, _ in data_configs(root)),
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
