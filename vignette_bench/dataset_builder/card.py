"""Write a source's README.md (dataset card with YAML ``configs:``) from vignette_bench/cards/dataset_card_template.md.

The numbers in the card are read from the source's own index, so the card cannot drift from
the data. A config is declared only when its files exist (``index``; ``news`` with ``news/*.parquet``;
``<config>_specs`` with ``pairs/<config>/*.parquet``; a protocol config such as ``identity_contrast`` with
a complete ``protocol/<config>/manifest.json``), because ``datasets`` resolves every declared config's
files. The protocol configs also get a ``dataset_info`` entry (their features, with ``image`` as an Image,
and their row count), so plain ``datasets`` decodes the image column to PIL.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pandas as pd

from vignette_bench.dataset_builder.layout import EXTENSION, SPECS_DIR, specs_config
from vignette_bench.dataset_builder.protocol_manifest import PROTOCOL_DIR, SPLIT, complete_configs, read_manifest
from vignette_bench.formats.render_index import INDEX_PATH

TEMPLATE = Path(__file__).resolve().parent.parent / "cards" / "dataset_card_template.md"


def data_configs(root: Path) -> list[tuple[str, str]]:
    """(config name, data_files path) of every config plain ``datasets`` can load from this source.

    All of them are parquet: ``datasets`` picks ONE builder for a repo, from the first config's files,
    and applies it to every config (a webdataset ``renders`` config first made ``news`` fail with "bad
    checksum"). The renders themselves load with the explicit ``webdataset`` builder (see the card)."""
    out = [("index", INDEX_PATH)]
    out += [(config, f"{PROTOCOL_DIR}/{config}/*.parquet") for config in complete_configs(root)]
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


def dataset_info_yaml(root: Path) -> str:
    """The card's ``dataset_info:`` block for the protocol configs (empty when there are none)."""
    import yaml

    from vignette_bench.loader.load import features

    items = []
    for config in complete_configs(root):
        manifest = read_manifest(root / PROTOCOL_DIR / config) or {}
        size = sum(int(s["bytes"]) for s in manifest["shards"])
        arrow = sum(int(s["arrow_bytes"]) for s in manifest["shards"])
        items.append(
            {
                "config_name": config,
                "features": features()._to_yaml_list(),
                "splits": [{"name": SPLIT, "num_bytes": arrow, "num_examples": int(manifest["rows"])}],
                "download_size": size,
                "dataset_size": arrow,
            }
        )
    return yaml.safe_dump({"dataset_info": items}, sort_keys=False) if items else ""


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
        "dataset_info": dataset_info_yaml(root),
        "protocol_note": _protocol_note(root),
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


def _protocol_note(root: Path) -> str:
    """The card's first lines: which configs plain `datasets` loads with images, and what needs the package."""
    import vignette
    from vignette_bench.taxonomy import load_taxonomy

    have = complete_configs(root)
    total = vignette.info_table(load_taxonomy())["total"]
    lazy = (
        f"The full pair space ({total:,} pairs over four pair configs for the whole taxonomy) is composed on the "
        "fly and needs the package: `pip install vignette-bench`, then `vignette.load_dataset(...)`."
    )
    if not have:
        return f"**Which is which.** {lazy}\n\n"
    counts = ", ".join(
        f"`{c}` ({int((read_manifest(root / PROTOCOL_DIR / c) or {}).get('rows', 0)):,} pairs)" for c in have
    )
    return (
        f"**Which is which.** `datasets.load_dataset(REPO, NAME)` with NAME one of {counts} gives the "
        "leaderboard protocol's sample (`vignette-protocol/1`: the pairs and side orders a protocol run asks "
        "about) with its images, from parquet, with `datasets` alone. "
        f"{lazy}\n\n"
    )


def write_card(root: Path, source: str | None = None, license: str = "cc-by-4.0") -> Path:
    path = Path(root) / "README.md"
    tmp = path.with_name(f".README.md.tmp-{os.getpid()}")
    tmp.write_text(card_text(root, source, license))
    os.replace(tmp, path)
    return path
