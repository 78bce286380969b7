"""The render index (``renders/index.parquet``): its schema, and the rule that names each render.

Written by the builder (``vignette build shard``, ``reduce``) and read by the loader
(`vignette_bench.loader.reader`), ``vignette build verify`` and the upload. The index is a parquet
table, not a JSON `Format`: this module is its schema, checked row by row.

What a render index row must be before anything trusts it (loader, verify, upload).

``index_problems`` checks columns, types, nulls, ranges, patterns, uniqueness and that every key
is the key its own metadata names (``gender, dimension, identity, activity, variant``), so a row
relabelled as another identity, an empty sha256 or a length of 8 GiB is refused with the row, the
key and the column named, instead of serving another render's bytes or failing deep inside.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pyarrow as pa

from vignette_bench.taxonomy import slug

INDEX_PATH = "renders/index.parquet"  # in a source (docs/FORMATS.md)
PORTRAIT = "portrait"  # the activity slug of a portrait's key
IMAGE_EXTENSIONS = {"jpeg": ("jpg", "jpeg"), "webp": ("webp",)}  # a shard member's name: KEY.EXT


def render_key(gender: str, dimension: str, identity: str, activity: str = "", variant: int = 0) -> str:
    """``{gender}-{dimension_slug}-{identity_slug}-{activity_slug|portrait}[-v{variant}]``.

    Variant 0 has the paper's key; further renders of the same cell (another seed) add ``-v{n}``.
    """
    base = f"{gender}-{slug(dimension)}-{slug(identity)}-{slug(activity) if activity else PORTRAIT}"
    return variant_key(base, variant)


def variant_key(base: str, variant: int) -> str:
    """The key of render ``variant`` of the cell whose variant-0 key is ``base``.

    The render-picking rule: the loader (`vignette_bench.loader.space.choose_variant`) and the builder
    both name a cell's k renders with it, so it decides which pixels a pair shows.
    """
    if variant < 0:
        raise ValueError(f"render variant must be >= 0, got {variant}")
    return base if variant == 0 else f"{base}-v{variant}"


REQUIRED = (
    "key",
    "shard",
    "offset",
    "length",
    "sha256",
    "format",
    "gender",
    "dimension",
    "identity",
    "activity",
    "kind",
)
STRING_COLUMNS = ("key", "shard", "sha256", "format", "gender", "dimension", "identity", "activity", "kind")
INT_COLUMNS = ("offset", "length")
MAX_RENDER_BYTES = 64 * 1024**2  # a 1024² JPEG is ~0.6 MB; anything this large is not a render
KEY_RE = re.compile(r"^[a-z0-9_-]+$")
SHARD_RE = re.compile(r"^renders/[a-z0-9_-]+\.tar$")
SHA_RE = re.compile(r"^[0-9a-f]{64}$")
FORMATS = ("jpeg", "webp")
KINDS = ("activity", "portrait")
GENDERS = ("male", "female")
TAR_BLOCK = 512


def _type_problems(table: pa.Table) -> Iterator[str]:
    for name in STRING_COLUMNS:
        t = table.schema.field(name).type
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            yield f"column {name!r} has type {t}, expected string"
    for name in INT_COLUMNS + (("variant",) if "variant" in table.column_names else ()):
        t = table.schema.field(name).type
        if not pa.types.is_integer(t):
            yield f"column {name!r} has type {t}, expected an integer"


def _row_problem(r: dict) -> str:
    for name in REQUIRED:
        if r.get(name) is None:
            return f"column {name!r} is null"
    if not KEY_RE.match(r["key"]):
        return "key is not [a-z0-9_-]"
    if not SHARD_RE.match(r["shard"]):
        return f"shard {r['shard']!r} is not renders/<name>.tar"
    if r["offset"] < TAR_BLOCK or r["offset"] % TAR_BLOCK:
        return f"offset {r['offset']} is not a tar data offset (a multiple of 512, at least 512)"
    if not 0 < r["length"] <= MAX_RENDER_BYTES:
        return f"length {r['length']} is outside 1..{MAX_RENDER_BYTES:,} bytes"
    if not SHA_RE.match(r["sha256"]):
        return f"sha256 {r['sha256']!r} is not 64 lowercase hex digits"
    if r["format"] not in FORMATS:
        return f"format {r['format']!r} is not one of {list(FORMATS)}"
    if r["gender"] not in GENDERS:
        return f"gender {r['gender']!r} is not one of {list(GENDERS)}"
    if r["kind"] not in KINDS:
        return f"kind {r['kind']!r} is not one of {list(KINDS)}"
    if (r["kind"] == "portrait") != (r["activity"] == ""):
        return f"kind {r['kind']!r} with activity {r['activity']!r}: portraits, and only portraits, have no activity"
    variant = r.get("variant", 0)
    if variant is None or variant < 0:
        return f"variant {variant!r} is not a whole number >= 0"
    want = render_key(r["gender"], r["dimension"], r["identity"], r["activity"], variant)
    if r["key"] != want:
        return f"key does not match its metadata, which names {want!r} (relabelled or stale row)"
    return ""


# Optional: a reduced copy of each render, sized for composition (vignette_bench/dataset_builder/reduced.py).
REDUCED_COLUMNS = (
    "reduced_shard",
    "reduced_offset",
    "reduced_length",
    "reduced_sha256",
    "reduced_width",
    "reduced_height",
)
REDUCED_SHARD_RE = re.compile(r"^reduced/[a-z0-9_-]+\.tar$")


def _reduced_problem(r: dict) -> str:
    if r.get("reduced_shard") is None:  # this render has no reduced copy: every reduced column is null
        extra = [c for c in REDUCED_COLUMNS[1:] if r.get(c) is not None]
        return f"reduced_shard is null but {extra} are not" if extra else ""
    if not REDUCED_SHARD_RE.match(r["reduced_shard"]):
        return f"reduced_shard {r['reduced_shard']!r} is not reduced/<name>.tar"
    for c in REDUCED_COLUMNS[1:]:
        if r.get(c) is None:
            return f"{c} is null where reduced_shard is set"
    if r["reduced_offset"] < TAR_BLOCK or r["reduced_offset"] % TAR_BLOCK:
        return f"reduced_offset {r['reduced_offset']} is not a tar data offset (a multiple of 512, at least 512)"
    if not 0 < r["reduced_length"] <= MAX_RENDER_BYTES:
        return f"reduced_length {r['reduced_length']} is outside 1..{MAX_RENDER_BYTES:,} bytes"
    if not SHA_RE.match(r["reduced_sha256"]):
        return f"reduced_sha256 {r['reduced_sha256']!r} is not 64 lowercase hex digits"
    if not (0 < r["reduced_width"] <= 8192 and 0 < r["reduced_height"] <= 8192):
        return f"reduced size {r['reduced_width']}x{r['reduced_height']} is not a plausible image size"
    return ""


def structure_problems(table: pa.Table) -> list[str]:
    """Missing columns or columns of the wrong type: an index no row-by-row check can go through."""
    missing = [c for c in REQUIRED if c not in table.column_names]
    return [f"missing column(s) {missing}"] if missing else list(_type_problems(table))


def index_problems(table: pa.Table, where: str, limit: int = 20) -> list[str]:
    """Every problem of an index table (up to ``limit``), each naming the file, row, key and column."""
    missing = [c for c in REQUIRED if c not in table.column_names]
    if missing:
        return [f"{where}: missing column(s) {missing}"]
    problems = [f"{where}: {p}" for p in _type_problems(table)]
    if problems:
        return problems
    reduced = [c for c in REDUCED_COLUMNS if c in table.column_names]
    if reduced and len(reduced) != len(REDUCED_COLUMNS):
        return [
            f"{where}: reduced-copy column(s) {sorted(set(REDUCED_COLUMNS) - set(reduced))} missing beside {reduced}"
        ]
    seen: dict[str, int] = {}
    for n, r in enumerate(table.to_pylist()):
        problem = _row_problem(r) or (_reduced_problem(r) if reduced else "")
        if not problem and r["key"] in seen:
            problem = f"duplicate key (also row {seen[r['key']]})"
        if problem:
            problems.append(f"{where}, row {n} (key {r.get('key')!r}): {problem}")
            if len(problems) >= limit:
                break
        else:
            seen[r["key"]] = n
    return problems
