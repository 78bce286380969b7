"""``vignette build protocol-sample --source SRC [--out DIR]``: the protocol's pairs, with their images, as parquet.

Most users of a Hub benchmark call ``datasets.load_dataset(REPO, CONFIG)`` in their own harness and expect
an image column; ``datasets`` runs no loading scripts, so the lazy pair space (`vignette.load_dataset`)
cannot serve them. For each config of the leaderboard protocol (``vignette-protocol/1``: identity_contrast
and portraits) this writes exactly the pairs and orders a protocol run asks about, with the composed pair
image stored, to ``protocol/<config>/test-NNNNN-of-MMMMM.parquet``; the card declares them under the
config's own name, so ``datasets.load_dataset(SRC, "identity_contrast")`` returns them with nothing else
installed. Which pairs: the leaderboard's `plan_for` and the run settings' `pair_config` (the code that rebuilds
a protocol run's questions), never a selection of our own. The rows are `vignette.load_dataset(SRC,
pair_config=...)`'s, in its order, every column; each image is that dataset's own decoded image, stored as
lossless WebP (the same pixels; 26-31% smaller than PNG, BENCHMARKS.md).

Resumable: shard by shard, each written to a temporary file and renamed, then recorded (rows, bytes,
sha256) in ``protocol/<config>/manifest.json`` (also written atomically). A rerun skips every shard whose
file has the recorded size and sha256, and starts afresh when the plan changed (other pairs, renders,
composition code, encoding or shard size: ``plan_sha256``). The manifest says ``complete`` only once every
shard is there; only then does the card declare the config.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vignette_bench.dataset_builder.arguments import PROTOCOL_ROWS_PER_SHARD
from vignette_bench.dataset_builder.protocol_manifest import (
    MANIFEST,
    PROTOCOL_DIR,
    SPLIT,
    ProtocolSampleError,
    complete_configs,
    protocol_configs,
    read_manifest,
)

MANIFEST_VERSION = 1  # part of plan_sha256: a manifest of another layout is rebuilt, not trusted
# Lossless WebP at Pillow's default effort (method 4): exactly the pixels, 26-31% smaller than PNG (210 vs
# 306 kB per photographic pair); method 6 saves 0.1-3.5% more at 16-32x the time (benchmarks/protocol_sample_size.py).
IMAGE_FORMAT = "WEBP"
IMAGE_OPTIONS: dict[str, Any] = {"lossless": True}
ROW_GROUP_ROWS = 50  # a streaming reader fetches one row group at a time: ~50 images, a few MB


def protocol_pair_config(source: str, config: str) -> Any:
    """The `PairConfig` of a protocol run of `config` on `source`: the leaderboard's plan, the runner's mapping."""
    from vignette_bench.eval.leaderboard.protocol import plan_for, protocol_settings, source_pairs

    plan = plan_for(config, source_pairs(source, config))
    return protocol_settings(plan, source, "").pair_config()


def lazy_protocol_dataset(source: str, config: str) -> Any:
    """The protocol's pairs as the lazy loader serves them (map-style; images composed when read)."""
    import vignette

    return vignette.load_dataset(source, pair_config=protocol_pair_config(source, config), keep_in_memory=True)


def encode(image: Any) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format=IMAGE_FORMAT, **IMAGE_OPTIONS)
    return buf.getvalue()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


@dataclass(frozen=True)
class ConfigResult:
    config: str
    rows: int
    shards: int
    written: int  # shards written in this call (the others were already there, verified)
    bytes: int


def _problem(folder: Path, shard: dict[str, Any]) -> str | None:
    """Why a recorded shard's file is not the one recorded (missing, size, then sha256), or None."""
    path = folder / shard["file"]
    if not path.is_file():
        return f"{path}: missing"
    if path.stat().st_size != shard["bytes"]:
        return f"{path}: {path.stat().st_size} bytes, the manifest says {shard['bytes']}"
    if sha256_file(path) != shard["sha256"]:
        return f"{path}: sha256 differs from the manifest's"
    return None


def shard_problems(folder: Path, manifest: dict[str, Any]) -> list[str]:
    """Every recorded shard whose file is missing or differs from the manifest."""
    return [p for s in manifest["shards"] if (p := _problem(folder, s)) is not None]


def verify_protocol_sample(root: Path) -> list[str]:
    """Problems of every complete protocol config under `root` (files against their manifests)."""
    return [p for c in complete_configs(root) for p in shard_problems(root / PROTOCOL_DIR / c, _manifest(root, c))]


def _manifest(root: Path, config: str) -> dict[str, Any]:
    manifest = read_manifest(root / PROTOCOL_DIR / config)
    assert manifest is not None  # complete_configs listed it
    return manifest


def _plan_sha256(ds: Any, source: str, rows_per_shard: int) -> str:
    """What decides the files' bytes: the rows, the renders (index digest), the composition code, the encoding."""
    import pyarrow as pa
    from PIL import features as pil_features

    import vignette

    h = hashlib.sha256()
    meta = ds.remove_columns("image").with_format("arrow")[:]
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, meta.schema) as writer:
        writer.write_table(meta)
    h.update(memoryview(sink.getvalue()))
    h.update(hashlib.sha256(vignette.Source(source).read(vignette.INDEX_PATH)).digest())
    h.update(vignette.provenance_digest().encode())
    encoding = [
        MANIFEST_VERSION,
        IMAGE_FORMAT,
        sorted(IMAGE_OPTIONS.items()),
        pil_features.version("webp"),
        rows_per_shard,
    ]
    h.update(json.dumps(encoding, default=str).encode())
    return h.hexdigest()


def _shard_table(ds: Any, lo: int, hi: int) -> Any:
    """Rows [lo, hi) of the lazy dataset with each pair's image as its decoded pixels, losslessly encoded."""
    import pyarrow as pa

    from vignette_bench.loader.load import features

    feats = features()
    meta = ds.remove_columns("image").with_format("arrow")[lo:hi]
    images = [encode(ds[i]["image"]) for i in range(lo, hi)]
    paths = [f"{p}.{IMAGE_FORMAT.lower()}" for p in meta.column("pair_id").to_pylist()]
    column = pa.StructArray.from_arrays(
        [pa.array(images, pa.binary()), pa.array(paths, pa.string())], ["bytes", "path"]
    )
    cols = {name: (column if name == "image" else meta.column(name)) for name in feats}
    return pa.table(cols, schema=feats.arrow_schema)  # the schema carries datasets' Features (Image) metadata


def _parquet_bytes(table: Any) -> bytes:
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=ROW_GROUP_ROWS)
    return sink.getvalue()


def write_config(
    source: str, out: Path, config: str, rows_per_shard: int = PROTOCOL_ROWS_PER_SHARD, progress: bool = False
) -> ConfigResult:
    """Write (or finish) `out/protocol/<config>/`; see the module docstring."""
    from tqdm.auto import tqdm

    if rows_per_shard < 1:
        raise ProtocolSampleError(f"--rows-per-shard {rows_per_shard}: must be at least 1")
    ds = lazy_protocol_dataset(source, config)
    n = len(ds)
    folder = out / PROTOCOL_DIR / config
    folder.mkdir(parents=True, exist_ok=True)
    plan = _plan_sha256(ds, source, rows_per_shard)
    count = -(-n // rows_per_shard)
    names = [f"{SPLIT}-{k:05d}-of-{count:05d}.parquet" for k in range(count)]
    try:
        old = read_manifest(folder)
    except ProtocolSampleError:  # another layout's or a damaged manifest: its shards are rebuilt
        old = None
    done: dict[str, dict[str, Any]] = {}
    if old is not None and old.get("plan_sha256") == plan:
        done = {s["file"]: s for s in old["shards"] if _problem(folder, s) is None}
    for stale in folder.glob("*.parquet"):  # another plan's shards, or a shard that failed its check
        if stale.name not in done:
            stale.unlink()
    manifest: dict[str, Any] = {
        "manifest_version": MANIFEST_VERSION,
        "protocol": _protocol_version(),
        "config": config,
        "source": source,
        "selection": json.loads(ds.info.description),
        "rows": n,
        "rows_per_shard": rows_per_shard,
        "image_format": f"{IMAGE_FORMAT} lossless (Pillow)",
        "plan_sha256": plan,
        "complete": False,
        "shards": [],
    }
    written = 0
    bar = tqdm(total=n, unit="pair", desc=f"protocol/{config}", disable=not progress, dynamic_ncols=True)
    try:
        for k, name in enumerate(names):
            lo, hi = k * rows_per_shard, min(n, (k + 1) * rows_per_shard)
            if name not in done:
                table = _shard_table(ds, lo, hi)
                _atomic_write(folder / name, _parquet_bytes(table))
                path = folder / name
                done[name] = {
                    "file": name,
                    "rows": hi - lo,
                    "bytes": path.stat().st_size,
                    "sha256": sha256_file(path),
                    "arrow_bytes": table.nbytes,  # the card's num_bytes: the rows' size once loaded (Arrow)
                }
                written += 1
            manifest["shards"] = [done[x] for x in names if x in done]
            _atomic_write(folder / MANIFEST, json.dumps(manifest, indent=1).encode())  # after every shard: resumable
            bar.update(hi - lo)
    finally:
        bar.close()
    manifest["complete"] = True
    _atomic_write(folder / MANIFEST, json.dumps(manifest, indent=1).encode())
    return ConfigResult(config, n, count, written, sum(s["bytes"] for s in manifest["shards"]))


def _protocol_version() -> str:
    from vignette_bench.eval.leaderboard.protocol import VERSION

    return VERSION


def write_protocol_sample(
    source: str | Path,
    out: str | Path | None = None,
    configs: tuple[str, ...] | None = None,
    rows_per_shard: int = PROTOCOL_ROWS_PER_SHARD,
    progress: bool = False,
) -> list[ConfigResult]:
    """Every protocol config's sample under `out` (default: the source folder itself)."""
    source = str(source)
    out_dir = Path(out if out is not None else source)
    if out is None and not Path(source).is_dir():
        raise ProtocolSampleError(
            f"--source {source}: no such local folder to write into; for a URL or Hub source pass --out DIR"
        )
    wanted = configs or protocol_configs()
    unknown = [c for c in wanted if c not in protocol_configs()]
    if unknown:
        raise ProtocolSampleError(
            f"--configs {','.join(unknown)}: not in the protocol ({','.join(protocol_configs())})"
        )
    return [write_config(source, out_dir, c, rows_per_shard, progress) for c in wanted]


def main(args: argparse.Namespace) -> int:
    from vignette_bench.dataset_builder.card import write_card

    configs = tuple(c.strip() for c in args.configs.split(",") if c.strip()) if args.configs else None
    out = Path(args.out) if args.out else Path(args.source)
    try:
        results = write_protocol_sample(args.source, args.out, configs, args.rows_per_shard, sys.stderr.isatty())
    except (ProtocolSampleError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for r in results:
        print(
            f"{PROTOCOL_DIR}/{r.config}: {r.rows:,} pairs in {r.shards} shard(s), {r.bytes:,} bytes "
            f"({r.written} written, {r.shards - r.written} already there)"
        )
    if (out / "renders" / "index.parquet").is_file():
        write_card(out)  # declares the configs under their own names
    else:
        print(f"{out} holds no renders/index.parquet: copy {PROTOCOL_DIR}/ into the source and rebuild its card")
    return 0
