"""Pack checked renders into WebDataset shards with a byte-offset index; verify a source.

Input: a render folder (``<key>.png|.jpg|.webp`` + ``<key>.json`` per render, as written by
``render``). Output: ``renders/{gender}-{dimension}-{NNNNN}.tar`` and ``renders/index.parquet``
(docs/FORMATS.md). Every shard is written to a hidden temporary file and renamed when complete,
so a crash never leaves half a shard; a rerun keeps the finished shards and packs only the
renders that are not in one yet. The index is rebuilt from the shards themselves, so it can
never describe bytes that are not there.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import tarfile
from collections import defaultdict
from collections.abc import Collection
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Literal

import fsspec
import pandas as pd
from PIL import Image, UnidentifiedImageError
from tqdm.auto import tqdm

from vignette_bench.dataset_builder.arguments import DEFAULT_MAX_SHARD_BYTES
from vignette_bench.dataset_builder.layout import EXTENSION
from vignette_bench.dataset_builder.records import plan_order, read_record
from vignette_bench.errors import VignetteError
from vignette_bench.formats.render_index import INDEX_PATH
from vignette_bench.formats.render_record import RecordError, RenderRecord, read_shard_member
from vignette_bench.remote import http_options
from vignette_bench.taxonomy import DATA_DIR, Taxonomy, load_taxonomy, slug

Format = Literal["jpeg", "webp"]
FORMAT_OF_EXTENSION = {v: k for k, v in EXTENSION.items()}
INPUT_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
SHARD_RE = re.compile(r"^(?P<gender>[a-z]+)-(?P<dimension>[a-z0-9_]+)-(?P<number>\d{5})\.tar$")
# Fixed tar header fields make a shard's bytes a function of its contents alone.
TAR_MTIME = 0


class ShardError(VignetteError):
    """Bad input or a shard that disagrees with its index; the message names file, key and fix."""


@dataclass(frozen=True)
class IndexRow:
    key: str
    shard: str
    offset: int
    length: int
    sha256: str
    format: str
    quality: int
    gender: str
    dimension: str
    identity: str
    surface_form: str
    activity: str
    kind: str
    prompt: str
    seed: int
    variant: int
    model_id: str
    placeholder: bool
    width: int
    height: int


# The index's copy of each render record: every IndexRow field after where-and-how-encoded.
_INDEX_FIELDS = tuple(f.name for f in fields(IndexRow))
METADATA_COLUMNS = _INDEX_FIELDS[_INDEX_FIELDS.index("gender") :]


@dataclass(frozen=True)
class ShardReport:
    written: tuple[str, ...]  # shards written in this run
    kept: tuple[str, ...]  # finished shards found from an earlier run
    packed: int  # renders packed in this run
    total: int  # rows in the index


def shard_name(gender: str, dimension: str, number: int) -> str:
    return f"renders/{gender}-{slug(dimension)}-{number:05d}.tar"


def encode_image(image: Image.Image, fmt: Format, quality: int) -> bytes:
    """Re-encode at a recorded quality; the same pixels and settings give the same bytes."""
    buf = io.BytesIO()
    rgb = image.convert("RGB")
    if fmt == "jpeg":
        rgb.save(buf, format="JPEG", quality=quality, optimize=True)
    elif fmt == "webp":
        rgb.save(buf, format="WEBP", quality=quality, method=4)
    else:
        raise ValueError(f"unknown image format {fmt!r}; use jpeg or webp")
    return buf.getvalue()


def _load_image(path: Path, key: str) -> Image.Image:
    try:
        with Image.open(path) as im:
            im.load()
            return im.copy()
    except (UnidentifiedImageError, OSError, SyntaxError, Image.DecompressionBombError) as e:
        raise ShardError(
            f"{path}: key {key!r}: image cannot be decoded ({e}); delete it and its .json, then re-run render for this key"
        ) from e


def collect_renders(
    render_dir: Path, taxonomy: Taxonomy, skip: Collection[str] = ()
) -> list[tuple[RenderRecord, Path]]:
    """Every render in a folder, validated; all problems are reported together, nothing is written.

    Checks: one image per key, a JSON record per image (and no record without an image),
    a well-formed record that the taxonomy plans, and an image of the recorded size.
    Keys in ``skip`` (e.g. renders that failed ``check``) are left out before any validation.
    """
    render_dir = Path(render_dir)
    if not render_dir.is_dir():
        raise ShardError(f"{render_dir}: render folder not found; run `vignette build render --out {render_dir}` first")
    images: dict[str, Path] = {}
    problems: list[str] = []
    for p in sorted(render_dir.iterdir()):
        if p.name.startswith(".") or p.suffix.lower() not in INPUT_IMAGE_SUFFIXES:
            continue
        key = p.name[: -len(p.suffix)]
        if key in skip:
            continue
        if key in images:
            problems.append(
                f"{p}: duplicate key {key!r} (also {images[key].name}); keep one image per key and delete the other"
            )
            continue
        images[key] = p
    for p in sorted(render_dir.glob("*.json")):
        key = p.name[: -len(".json")]
        if key not in images and key not in skip:
            problems.append(f"{p}: record for key {key!r} has no image; re-render this key or delete the record")
    out: list[tuple[RenderRecord, Path]] = []
    for key, image_path in images.items():
        try:
            record = read_record(render_dir / f"{key}.json", taxonomy)
            with Image.open(image_path) as im:
                size = im.size
                im.verify()  # catches truncated or corrupt files without decoding all pixels twice
            if size != (record.width, record.height):
                raise ShardError(
                    f"{image_path}: key {key!r}: image is {size[0]}x{size[1]} but the record says {record.width}x{record.height}; re-render this key"
                )
            out.append((record, image_path))
        except (RecordError, ShardError) as e:
            problems.append(str(e))
        except (UnidentifiedImageError, OSError, SyntaxError, Image.DecompressionBombError) as e:
            problems.append(
                f"{image_path}: key {key!r}: image cannot be decoded ({e}); delete it and its .json, then re-run render for this key"
            )
    if problems:
        head = "\n  ".join(problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        raise ShardError(f"{len(problems)} problem(s) in {render_dir}; nothing was written:\n  {head}{more}")
    return out


def _member_bytes(data: bytes) -> int:
    return 512 + -(-len(data) // 512) * 512


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), TAR_MTIME, 0o644
    info.uname = info.gname = ""
    tar.addfile(info, io.BytesIO(data))


class _ShardWriter:
    """A shard streamed into a hidden temp file; ``commit`` fsyncs it and renames it into place."""

    def __init__(self, root: Path, name: str):
        self.name, self.path = name, root / name
        self.tmp = self.path.parent / f".{self.path.name}.tmp-{os.getpid()}"
        self.file = open(self.tmp, "wb")
        self.tar = tarfile.open(fileobj=self.file, mode="w", format=tarfile.USTAR_FORMAT)
        self.size, self.count = 1024, 0  # 1024: the two zero blocks that end a tar

    def add(self, key: str, image: bytes, ext: str, record: bytes) -> None:
        _add(self.tar, f"{key}.{ext}", image)
        _add(self.tar, f"{key}.json", record)
        self.size += _member_bytes(image) + _member_bytes(record)
        self.count += 1

    def commit(self) -> str:
        self.tar.close()
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        os.replace(self.tmp, self.path)
        return self.name

    def abort(self) -> None:
        self.file.close()
        self.tmp.unlink(missing_ok=True)


MAX_MEMBER_BYTES = 256 * 2**20  # one render's image or record; far above any real one


def scan_shard(root: str, shard: str, with_sha: bool = True) -> list[IndexRow]:
    """Index rows for one shard, read from its own bytes (any fsspec root).

    Each sample must have exactly one image member and one JSON member, in that order.
    """
    url = f"{str(root).rstrip('/')}/{shard}"
    try:
        return _scan_shard(url, shard, with_sha)
    except tarfile.TarError as e:  # a header that lies (a member of 8 GiB in a small file), a truncated tar
        raise ShardError(
            f"{url}: not a readable tar ({type(e).__name__}: {e}); delete the shard and re-run shard"
        ) from None
    except ShardError:
        raise
    except Exception as e:  # a network read that failed (aiohttp: a Content-Length the body does not fill)
        from vignette_bench.errors import known_failure

        why = known_failure(e)
        if why is None or isinstance(e, OSError):  # a bug; or a missing file, which callers report themselves
            raise
        raise ShardError(f"{url}: cannot be read ({why}); check the source and the network, then try again") from e


def _scan_shard(url: str, shard: str, with_sha: bool) -> list[IndexRow]:
    rows: list[IndexRow] = []
    with fsspec.open(url, "rb", **http_options(url)) as f, tarfile.open(fileobj=f, mode="r:") as tar:
        pending: tuple[str, str, int, int, str] | None = None  # key, ext, offset, length, sha
        for m in tar:
            if not m.isfile():
                raise ShardError(f"{url}: member {m.name!r} is not a regular file; rebuild this shard")
            if m.size > MAX_MEMBER_BYTES:  # read whole below: a header claiming 8 GiB is refused, not read
                raise ShardError(
                    f"{url}: member {m.name!r} claims {m.size} bytes (more than {MAX_MEMBER_BYTES}); "
                    "the shard is corrupt: delete it and re-run shard"
                )
            key, _, ext = m.name.partition(".")
            if ext in FORMAT_OF_EXTENSION:
                if pending is not None:
                    raise ShardError(
                        f"{url}: key {pending[0]!r} has an image but no JSON record; delete the shard and re-run shard"
                    )
                sha = ""
                if with_sha:
                    data = tar.extractfile(m).read()  # type: ignore[union-attr]
                    sha = hashlib.sha256(data).hexdigest()
                pending = (key, ext, m.offset_data, m.size, sha)
            elif ext == "json":
                if pending is None or pending[0] != key:
                    raise ShardError(
                        f"{url}: key {key!r} has a JSON record but no image before it; delete the shard and re-run shard"
                    )
                text = tar.extractfile(m).read()  # type: ignore[union-attr]
                record, stored_sha, quality = read_shard_member(text, f"{url}:{m.name}")
                if record.key != key:  # the member name is what the index and the loader go by
                    raise ShardError(
                        f"{url}: member {m.name!r} holds the record of key {record.key!r}; the shard is corrupt: "
                        "delete it and re-run shard"
                    )
                if with_sha and stored_sha is not None and stored_sha != pending[4]:
                    raise ShardError(
                        f"{url}: key {key!r}: image bytes do not match the sha256 in its record; the shard is corrupt: "
                        "delete it and re-run shard"
                    )
                if not isinstance(quality, int):
                    raise ShardError(
                        f"{url}: key {key!r}: record has no integer 'quality'; delete the shard and re-run shard"
                    )
                sha = pending[4] or (stored_sha if isinstance(stored_sha, str) else "")  # unread bytes: the record's
                rows.append(_row(record, shard, pending[2], pending[3], sha, FORMAT_OF_EXTENSION[pending[1]], quality))
                pending = None
            else:
                raise ShardError(
                    f"{url}: unexpected member {m.name!r}; samples hold <key>.jpg|.webp and <key>.json only"
                )
        if pending is not None:
            raise ShardError(
                f"{url}: key {pending[0]!r} has an image but no JSON record; delete the shard and re-run shard"
            )
    return rows


def _row(record: RenderRecord, shard: str, offset: int, length: int, sha: str, fmt: str, quality: int) -> IndexRow:
    meta = {c: getattr(record, c) for c in METADATA_COLUMNS}
    return IndexRow(
        key=record.key, shard=shard, offset=offset, length=length, sha256=sha, format=fmt, quality=quality, **meta
    )


def write_index(root: Path, rows: list[IndexRow]) -> Path:
    """Write ``renders/index.parquet`` atomically; refuse duplicate keys."""
    seen: dict[str, str] = {}
    for r in rows:
        if r.key in seen:
            raise ShardError(
                f"duplicate key {r.key!r} in {seen[r.key]} and {r.shard}; delete one of the shards and re-run shard"
            )
        seen[r.key] = r.shard
    path = Path(root) / INDEX_PATH
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    df = pd.DataFrame([asdict(r) for r in rows], columns=[f for f in IndexRow.__dataclass_fields__])
    df = df.astype(
        {
            "offset": "int64",
            "length": "int64",
            "quality": "int64",
            "seed": "int64",
            "width": "int64",
            "height": "int64",
            "placeholder": "bool",
        }
    )
    try:
        df.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def existing_shards(root: Path) -> list[str]:
    """Finished shards under ``root/renders`` (relative names); removes temp files of crashed runs."""
    renders = Path(root) / "renders"
    for tmp in renders.glob(".*.tar.tmp-*"):
        tmp.unlink()
    return sorted(f"renders/{p.name}" for p in renders.glob("*.tar") if SHARD_RE.match(p.name))


def write_shards(
    render_dir: Path,
    out: Path,
    fmt: Format = "jpeg",
    quality: int = 90,
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    taxonomy: Taxonomy | None = None,
    progress: bool = True,
    skip: Collection[str] = (),
) -> ShardReport:
    """Pack every render of ``render_dir`` not yet in a shard of ``out`` (except ``skip``); rebuild the index."""
    if not 1 <= quality <= 100:
        raise ValueError(f"quality {quality} out of range 1..100")
    taxonomy = taxonomy or load_taxonomy()
    renders = collect_renders(Path(render_dir), taxonomy, skip)
    out = Path(out)
    (out / "renders").mkdir(parents=True, exist_ok=True)
    kept = existing_shards(out)
    old_rows = [r for s in kept for r in scan_shard(str(out), s)]
    packed_keys = {r.key: r for r in old_rows}
    ext = EXTENSION[fmt]
    for r in old_rows:
        if r.format != fmt:
            raise ShardError(
                f"{out / r.shard}: holds {r.format} images but this run asks for {fmt}; every sample "
                f"must have the same file set, so use --image-format {r.format} or start a new output folder"
            )

    order = plan_order(taxonomy)
    groups: dict[tuple[str, str], list[tuple[RenderRecord, Path]]] = defaultdict(list)
    for record, path in sorted(renders, key=lambda rp: order(rp[0])):
        if record.key in packed_keys:
            old = packed_keys[record.key]
            if old.seed != record.seed or old.model_id != record.model_id:
                raise ShardError(
                    f"{out / old.shard}: key {record.key!r} was packed from an older render (seed {old.seed}, now {record.seed}); "
                    f"delete {old.shard} and re-run shard to repack its group"
                )
            continue
        groups[(record.gender, slug(record.dimension))].append((record, path))

    written: list[str] = []
    bar = tqdm(total=sum(len(v) for v in groups.values()), desc="shard", unit="render", disable=not progress)
    for (gender, dim), items in groups.items():
        numbers = [
            int(m["number"])
            for s in kept
            if Path(s).name.startswith(f"{gender}-{dim}-") and (m := SHARD_RE.match(Path(s).name)) is not None
        ]
        number = max(numbers, default=-1) + 1
        writer: _ShardWriter | None = None
        try:
            for record, path in items:
                image = encode_image(_load_image(path, record.key), fmt, quality)
                # The shard's record also says how its image was encoded, so the shard alone rebuilds the index.
                # ... and the sha256 of its image, so a corrupted image is caught from the shard alone (verify, reindex).
                body = json.dumps(
                    {
                        **record.record_json(),
                        "format": fmt,
                        "quality": quality,
                        "image_sha256": hashlib.sha256(image).hexdigest(),
                    },
                    ensure_ascii=False,
                    sort_keys=True,
                ).encode()
                if writer is not None and writer.size + _member_bytes(image) + _member_bytes(body) > max_shard_bytes:
                    written.append(writer.commit())
                    writer, number = None, number + 1
                if writer is None:
                    writer = _ShardWriter(out, shard_name(gender, dim, number))
                writer.add(record.key, image, ext, body)
                bar.update()
            if writer is not None:
                written.append(writer.commit())
                writer = None
        finally:
            if writer is not None:  # an error or interrupt mid-shard: no half shard is left behind
                writer.abort()
    bar.close()
    rows = old_rows + [r for s in written for r in scan_shard(str(out), s)]
    rows.sort(key=order)
    write_index(out, rows)
    return ShardReport(tuple(written), tuple(kept), sum(len(v) for v in groups.values()), len(rows))


def reindex(root: Path) -> Path:
    """Rebuild ``renders/index.parquet`` from the shards alone (after a lost or stale index)."""
    rows = [r for s in existing_shards(Path(root)) for r in scan_shard(str(root), s)]
    return write_index(Path(root), rows)


def read_image_bytes(root: str, shard: str, offset: int, length: int) -> bytes:
    """One render's image bytes with one ranged read (local folder or any fsspec URL)."""
    url = f"{str(root).rstrip('/')}/{shard}"
    fs, path = fsspec.core.url_to_fs(url, **http_options(url))
    return fs.cat_file(path, start=offset, end=offset + length)


def failed_in_check(table: Path, render_dir: Path) -> set[str]:
    """Keys that failed ``check``; every render in the folder must have been checked."""
    df = pd.read_csv(table) if Path(table).suffix == ".csv" else pd.read_parquet(table)
    present = {
        p.name[: -len(p.suffix)]
        for p in Path(render_dir).iterdir()
        if not p.name.startswith(".") and p.suffix.lower() in INPUT_IMAGE_SUFFIXES
    }
    unchecked = sorted(present - set(df.key))
    if unchecked:
        raise ShardError(
            f"{table}: {len(unchecked)} render(s) were not checked (e.g. {unchecked[0]!r}); "
            f"run `vignette build check {render_dir}` again"
        )
    return set(df.loc[~df.ok.astype(bool), "key"])


def main(args: argparse.Namespace) -> int:
    if args.reindex:
        print(f"wrote {reindex(args.out)}")
        return 0
    if args.renders is None:
        raise SystemExit("shard: give the render folder (or --reindex)")
    taxonomy = load_taxonomy(args.taxonomy)
    skip = failed_in_check(args.check, args.renders) if args.check else set()
    for key in sorted(skip):
        print(f"skipped (failed check): {key}")
    report = write_shards(
        args.renders, args.out, args.image_format, args.quality, int(args.max_shard_mb * 1024**2), taxonomy, skip=skip
    )
    print(
        f"packed {report.packed} renders into {len(report.written)} new shard(s); kept {len(report.kept)}; index has {report.total} rows"
    )
    if args.card:
        import shutil

        from vignette_bench.dataset_builder.card import write_card
        from vignette_bench.taxonomy import TAXONOMY_FILES

        (args.out / "taxonomy").mkdir(exist_ok=True)
        for name in TAXONOMY_FILES:
            shutil.copyfile(f"{args.taxonomy or DATA_DIR}/{name}", args.out / "taxonomy" / name)
        print(f"wrote {write_card(args.out, args.repo, args.license)}")
    return 0
