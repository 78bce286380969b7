"""``vignette build photos``: your own (real) photos as a source in the renders' layout.

A labels table (CSV or parquet) names one photo per row: ``image`` (a path relative to the table,
or the image bytes in a parquet column), ``gender`` (male | female), ``identity``, ``activity``
(empty for a portrait) and optionally ``dimension`` (checked). Every row is validated against the
taxonomy (the packaged one, or ``--taxonomy DIR`` for your own), each photo becomes a render record
(key, prompt and metadata exactly as a render of that cell would have; ``model_id = "photo"``,
``model_revision`` = sha256 of the original file), several photos of one cell become its variants
(k renders per cell), and ``write_shards`` packs them into the same shards + index + taxonomy +
card as a rendered source. The loader, the runner and the report then treat the photos exactly
as renders: pairs are composed and asked the same way.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image, ImageOps, UnidentifiedImageError

from vignette_bench.dataset_builder.arguments import photos_add_arguments as add_arguments  # noqa: F401 (the parser lives in a light module)
from vignette_bench.dataset_builder.card import write_card
from vignette_bench.dataset_builder.records import spec_for
from vignette_bench.dataset_builder.shard import write_shards
from vignette_bench.errors import VignetteError
from vignette_bench.formats.render_record import RenderRecord, write_render_record
from vignette_bench.taxonomy import DATA_DIR, GENDERS, TAXONOMY_FILES, Taxonomy, load_taxonomy

PHOTO_MODEL = "photo"
REQUIRED = ("image", "gender", "identity", "activity")
MAX_PIXELS = 40_000_000  # a labelled photo larger than this is refused before decoding


class PhotoError(VignetteError):
    """A labels table or a photo is unusable; the message names the table, the row and the fix."""


def read_labels(path: Path) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise PhotoError(f"{path}: labels table not found")
    try:
        table = (
            pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path, dtype=str, keep_default_na=False)
        )
    except Exception as e:  # pandas raises many types for a malformed file
        raise PhotoError(f"{path}: cannot read the labels table ({e}); give a CSV or parquet file") from e
    missing = [c for c in REQUIRED if c not in table.columns]
    if missing:
        raise PhotoError(f"{path}: missing column(s) {missing}; columns are {list(REQUIRED)} (+ optional dimension)")
    if table.empty:
        raise PhotoError(f"{path}: no rows")
    return table


def _image_bytes(value: Any, base: Path, where: str) -> tuple[bytes, str]:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value), "bytes"
    if isinstance(value, dict) and isinstance(value.get("bytes"), (bytes, bytearray)):  # a datasets Image cell
        return bytes(value["bytes"]), str(value.get("path") or "bytes")
    if not isinstance(value, str) or not value:
        raise PhotoError(f"{where}: 'image' must be a file path or image bytes")
    file = (base / value).resolve()
    if not file.is_file():
        raise PhotoError(f"{where}: image file {file} not found")
    return file.read_bytes(), str(file)


def _decode(data: bytes, where: str) -> Image.Image:
    try:
        with Image.open(io.BytesIO(data)) as probe:
            if probe.width * probe.height > MAX_PIXELS:
                raise PhotoError(f"{where}: {probe.width}x{probe.height} is above {MAX_PIXELS:,} pixels; downscale it")
        image = ImageOps.exif_transpose(Image.open(io.BytesIO(data)))
        return image.convert("RGB")
    except (UnidentifiedImageError, OSError, SyntaxError) as e:
        raise PhotoError(f"{where}: the image cannot be decoded ({e})") from e


def _spec(row: Any, taxonomy: Taxonomy, variant: int, where: str):
    gender, identity, activity = (str(row[c]).strip() for c in ("gender", "identity", "activity"))
    if gender not in GENDERS:
        raise PhotoError(f"{where}: gender {gender!r} is not one of {GENDERS}")
    try:
        spec = spec_for(taxonomy, gender, identity, activity, variant)
    except KeyError as e:
        raise PhotoError(f"{where}: {e.args[0]}; fix the label or pass --taxonomy with your own lists") from e
    dimension = str(row.get("dimension", "") or "").strip()
    if dimension and dimension != spec.dimension:
        raise PhotoError(f"{where}: identity {identity!r} is in dimension {spec.dimension!r}, not {dimension!r}")
    return spec


def build_photo_source(
    labels: Path, out: Path, taxonomy_dir: Path | None = None, quality: int = 90, progress: bool = False
) -> Path:
    """Validate every row, then write the source at ``out`` (its renders/ is replaced). Nothing is
    written when any row is bad: all problems are reported together."""
    table = read_labels(labels)
    taxonomy = load_taxonomy(taxonomy_dir)
    base = Path(labels).resolve().parent
    seen: dict[tuple[str, str, str], int] = defaultdict(int)
    problems: list[str] = []
    photos = []
    for n, row in enumerate(table.to_dict("records")):
        where = f"{labels}, row {n + 2 if Path(labels).suffix != '.parquet' else n}"
        try:
            cell = (str(row["gender"]).strip(), str(row["identity"]).strip(), str(row["activity"]).strip())
            spec = _spec(row, taxonomy, seen[cell], where)
            data, origin = _image_bytes(row["image"], base, where)
            image = _decode(data, f"{where} ({origin})")
            seen[cell] += 1
            photos.append((spec, image, hashlib.sha256(data).hexdigest()))
        except PhotoError as e:
            problems.append(str(e))
    if problems:
        head = "\n  ".join(problems[:50])
        raise PhotoError(f"{len(problems)} problem(s) in {labels}; nothing was written:\n  {head}")
    out = Path(out)
    if (out / "renders").exists():
        shutil.rmtree(out / "renders")  # a photo source is rebuilt whole
    (out / "taxonomy").mkdir(parents=True, exist_ok=True)
    for name in TAXONOMY_FILES:
        shutil.copyfile(Path(taxonomy_dir or DATA_DIR) / name, out / "taxonomy" / name)
    with tempfile.TemporaryDirectory(prefix="vignette-photos-") as tmp:
        for spec, image, digest in photos:
            image.save(Path(tmp) / f"{spec.key}.png")
            record = RenderRecord.from_spec(
                spec,
                model_id=PHOTO_MODEL,
                model_revision=f"sha256:{digest}",
                scheduler="",
                steps=0,
                guidance=0.0,
                width=image.width,
                height=image.height,
                dtype="",
            )
            write_render_record(Path(tmp) / f"{spec.key}.json", record)
        write_shards(Path(tmp), out, quality=quality, taxonomy=taxonomy, progress=progress)
    write_card(out)
    return out


def main(args: argparse.Namespace) -> int:
    try:
        out = build_photo_source(args.rows, args.out, args.taxonomy, args.quality, progress=sys.stderr.isatty())
    except PhotoError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote the photo source {out} ({sum(1 for _ in (out / 'renders').glob('*.tar'))} shard(s))")
    return 0
