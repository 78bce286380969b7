"""``vignette build verify --source SOURCE [--decode]``: check everything the loader trusts.

The index is well formed (`vignette_bench.formats.render_index`: types, ranges, keys that match their own metadata); each
row's bytes lie in its shard at its offset with its sha256, under a member named for its key; the
index's metadata equals the shard's own record, which the source's taxonomy plans; the image sha256
stored in the record (shards written since it was added) matches; every shard image is indexed; and
with ``--decode`` every image decodes, in the format the index names, within the size limit.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import tarfile
from dataclasses import dataclass
from pathlib import Path

import fsspec
import pandas as pd
from tqdm.auto import tqdm

from vignette_bench.dataset_builder.records import validate_record
from vignette_bench.dataset_builder.shard import ShardError, read_image_bytes, scan_shard
from vignette_bench.formats.render_index import INDEX_PATH
from vignette_bench.formats.render_record import RecordError, RenderRecord
from vignette_bench.loader.reader import MAX_INDEX_BYTES
from vignette_bench.remote import http_options, read_url


@dataclass(frozen=True)
class Problem:
    shard: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.shard}: key {self.key!r}: {self.message}"


META_COLUMNS = ("gender", "dimension", "identity", "surface_form", "activity", "kind", "prompt", "seed", "variant")


def _decode_problem(data: bytes, fmt: str) -> str:
    import io
    import warnings

    from PIL import Image

    from vignette_bench.formats.render_index import MAX_RENDER_BYTES

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = Image.open(io.BytesIO(data))
        with im:
            if im.format != {"jpeg": "JPEG", "webp": "WEBP"}[fmt]:
                return f"the image is {im.format}, the index says {fmt}"
            if im.width * im.height > MAX_RENDER_BYTES:  # pixels: the same cap keeps decoding bounded
                return f"{im.width}x{im.height} is too large to be a render"
            im.load()
    except Image.DecompressionBombError:
        return "the header claims an image too large to be a render"
    except Exception as e:  # any decoder failure of untrusted bytes
        return f"the image cannot be decoded ({type(e).__name__}: {e})"
    return ""


def verify_source(root: str, progress: bool = True, decode: bool = False) -> list[Problem]:
    """Check that the index and the shards agree byte for byte; return every disagreement.

    For each index row: the shard holds ``<key>.<ext>`` at exactly that offset and length, and
    the bytes there (read by range, as a user would) have the recorded sha256. Every image in
    a shard must be in the index, and no key may appear twice.
    """
    root = str(root).rstrip("/")
    reindex_hint = f"rebuild the index with `vignette build shard --reindex --out {root}`"
    try:
        data = read_url(f"{root}/{INDEX_PATH}", MAX_INDEX_BYTES)  # a deadline and a byte cap, as the loader's
    except FileNotFoundError:
        return [Problem(INDEX_PATH, "", f"index missing; {reindex_hint}")]
    try:
        index = pd.read_parquet(io.BytesIO(data))
    except FileNotFoundError:
        return [Problem(INDEX_PATH, "", f"index missing; {reindex_hint}")]
    except Exception as e:  # a garbage or truncated file: report it, do not crash
        return [Problem(INDEX_PATH, "", f"index unreadable ({type(e).__name__}); {reindex_hint}")]
    if len(index) == 0:  # "ok: all 0 index rows match" would pass a source that serves nothing
        return [Problem(INDEX_PATH, "", f"the index has no rows; {reindex_hint}")]
    problems: list[Problem] = []
    import pyarrow as pa

    from vignette_bench.formats.render_index import index_problems, structure_problems

    table = pa.Table.from_pandas(index, preserve_index=False)
    for text in index_problems(table, f"{root}/{INDEX_PATH}"):
        problems.append(Problem(INDEX_PATH, "", f"{text}; {reindex_hint}"))
    if structure_problems(table):  # a column missing or mistyped: the shards cannot be compared row by row
        return problems
    taxonomy = _source_taxonomy(root)
    if "variant" not in index:
        index = index.assign(variant=0)
    dup = index[index.key.duplicated(keep=False)]
    for key, g in dup.groupby("key"):
        problems.append(
            Problem(
                ",".join(sorted(set(g.shard))), str(key), f"key appears {len(g)} times in the index; {reindex_hint}"
            )
        )
    fs, base = fsspec.core.url_to_fs(root, **http_options(root))
    shards = sorted(set(index.shard))
    if "file" in fs.protocol:  # a local folder: also catch shards the index forgot
        shards = sorted(set(shards) | {f"renders/{Path(p).name}" for p in fs.glob(f"{base}/renders/*.tar")})
    for shard in tqdm(shards, desc="verify", unit="shard", disable=not progress):
        try:
            actual = {r.key: r for r in scan_shard(root, shard, with_sha=False)}
        except (FileNotFoundError, ShardError, RecordError, tarfile.TarError) as e:
            problems.append(
                Problem(shard, "", f"cannot read shard ({e}); re-download it, or delete it and re-run shard")
            )
            continue
        rows = index[index.shard == shard]
        for row in rows.itertuples(index=False):
            a = actual.get(row.key)
            if a is None:
                problems.append(Problem(shard, row.key, f"in the index but not in the shard; {reindex_hint}"))
                continue
            if (a.offset, a.length, a.format) != (row.offset, row.length, row.format):
                problems.append(
                    Problem(
                        shard,
                        row.key,
                        f"index says offset {row.offset}, length {row.length}, {row.format}; shard has {a.offset}, {a.length}, {a.format}; {reindex_hint}",
                    )
                )
                continue
            for col in META_COLUMNS:
                if getattr(a, col) != getattr(row, col):
                    problems.append(
                        Problem(
                            shard,
                            row.key,
                            f"index says {col} {getattr(row, col)!r}, the shard's record says {getattr(a, col)!r}; {reindex_hint}",
                        )
                    )
                    break
            if a.sha256 and a.sha256 != row.sha256:
                problems.append(
                    Problem(shard, row.key, f"the record's image sha256 differs from the index's; {reindex_hint}")
                )
            if taxonomy is not None:
                try:
                    validate_record(_record_of(a), taxonomy, f"{shard}:{row.key}.json")
                except RecordError as e:
                    problems.append(Problem(shard, row.key, f"not planned by the source's taxonomy: {e}"))
            data = read_image_bytes(root, shard, int(row.offset), int(row.length))
            if decode and (why := _decode_problem(data, row.format)):
                problems.append(Problem(shard, row.key, f"{why}; re-render it and re-run shard"))
            if hashlib.sha256(data).hexdigest() != row.sha256:
                problems.append(
                    Problem(
                        shard,
                        row.key,
                        f"bytes at offset {row.offset} do not match the index sha256; the shard is corrupt: re-download it, or delete it and re-run shard",
                    )
                )
        for key in sorted(set(actual) - set(rows.key)):
            problems.append(Problem(shard, key, f"in the shard but not in the index; {reindex_hint}"))
    if "reduced_shard" in index:
        problems += _reduced_problems(root, index, decode)
    return problems


def _reduced_problems(root: str, index: pd.DataFrame, decode: bool) -> list[Problem]:
    """Each reduced copy (vignette_bench/dataset_builder/reduced.py): its tar member names the key, its bytes have the
    indexed sha256 and (``decode``) decode to the indexed size."""
    import io

    from PIL import Image

    hint = f"rebuild them with `vignette build reduce --source {root}`"
    problems = []
    for row in index[index.reduced_shard.notna()].itertuples(index=False):
        shard, offset, length = row.reduced_shard, int(row.reduced_offset), int(row.reduced_length)
        try:
            blob = read_image_bytes(root, shard, offset - 512, length + 512)
        except (FileNotFoundError, OSError) as e:
            problems.append(Problem(shard, row.key, f"reduced copy unreadable ({e}); {hint}"))
            continue
        name = blob[:100].split(b"\0")[0].decode("utf-8", "replace")
        if name != f"{row.key}.jpg":
            problems.append(Problem(shard, row.key, f"the tar member at byte {offset} is {name!r}; {hint}"))
        elif hashlib.sha256(blob[512:]).hexdigest() != row.reduced_sha256:
            problems.append(Problem(shard, row.key, f"reduced copy bytes do not match the index sha256; {hint}"))
        elif decode:
            try:
                with Image.open(io.BytesIO(blob[512:])) as im:
                    im.load()
                    size = im.size
            except (OSError, SyntaxError) as e:
                problems.append(Problem(shard, row.key, f"reduced copy cannot be decoded ({e}); {hint}"))
                continue
            if size != (row.reduced_width, row.reduced_height):
                problems.append(
                    Problem(
                        shard,
                        row.key,
                        f"reduced copy is {size}, the index says {row.reduced_width}x{row.reduced_height}; {hint}",
                    )
                )
    return problems


def _source_taxonomy(root: str):
    from vignette_bench.taxonomy import TaxonomyError, load_taxonomy

    try:
        return load_taxonomy(f"{root}/taxonomy")
    except (TaxonomyError, FileNotFoundError):
        return None  # a source without its taxonomy: the metadata is still checked against the records


def _record_of(row) -> RenderRecord:
    """The fields validate_record looks at, from a scanned index row."""
    return RenderRecord(
        key=row.key,
        gender=row.gender,
        dimension=row.dimension,
        identity=row.identity,
        surface_form=row.surface_form,
        activity=row.activity,
        kind=row.kind,
        prompt=row.prompt,
        seed=int(row.seed),
        model_id=row.model_id,
        model_revision="",
        scheduler="",
        steps=0,
        guidance=0.0,
        width=int(row.width),
        height=int(row.height),
        dtype="",
        variant=int(row.variant),
    )


def main(args: argparse.Namespace) -> int:
    problems = verify_source(args.source, decode=args.decode)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) in {args.source}")
        return 1
    data = read_url(f"{str(args.source).rstrip('/')}/{INDEX_PATH}", MAX_INDEX_BYTES)
    n = len(pd.read_parquet(io.BytesIO(data)))
    what = "offset, length, sha256, member names, metadata" + (", decoding" if args.decode else "")
    print(f"ok: all {n} index rows match their shards ({what})")
    return 0
