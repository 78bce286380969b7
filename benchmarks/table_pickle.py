"""A full-scale map-style pair table: load time, memory and what a DataLoader worker receives.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/table_pickle.py [--config activity_contrast]

The source is an index covering every render of the packaged taxonomy (both genders, every identity,
every activity and portrait; 25k renders) with no image bytes behind it: loading a map-style table reads
only the index, so this measures the table itself. Both settings run in this one process:
`keep_in_memory=True` (the table in memory, as before) and the default (an Arrow file memory-mapped
from the cache, named by its contents). For each: load seconds, the pickle a spawned DataLoader worker
receives, and the time to unpickle it.
"""

from __future__ import annotations

import argparse
import os
import pickle
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import vignette  # noqa: E402
from vignette_bench.dataset_builder.records import plan_renders  # noqa: E402
from vignette_bench.taxonomy import DATA_DIR, TAXONOMY_FILES, load_taxonomy  # noqa: E402


def full_index_source(out: Path) -> int:
    """A source folder whose index lists every render of the packaged taxonomy (no shards written)."""
    specs = plan_renders(load_taxonomy())
    rows = {
        "key": [s.key for s in specs],
        "shard": ["renders/full-000000.tar"] * len(specs),
        "offset": [512 * (2 * i + 1) for i in range(len(specs))],
        "length": [600_000] * len(specs),
        "sha256": ["0" * 64] * len(specs),
        "format": ["jpeg"] * len(specs),
        "gender": [s.gender for s in specs],
        "dimension": [s.dimension for s in specs],
        "identity": [s.identity for s in specs],
        "activity": [s.activity for s in specs],
        "kind": [s.kind for s in specs],
        "variant": [s.variant for s in specs],
    }
    (out / "renders").mkdir(parents=True)
    pq.write_table(pa.table(rows), out / "renders" / "index.parquet")
    (out / "taxonomy").mkdir()
    for name in TAXONOMY_FILES:
        shutil.copyfile(DATA_DIR / name, out / "taxonomy" / name)
    return len(specs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="activity_contrast")
    ap.add_argument("--max-rows", type=int, default=5_000_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        n = full_index_source(src)
        print(f"source: index of {n:,} renders (full taxonomy), no image bytes; config {args.config}")
        for label, kwargs in (
            ("keep_in_memory=True", dict(keep_in_memory=True)),
            ("memory-mapped (default)", dict(cache_dir=Path(tmp) / "cache")),
        ):
            start = time.perf_counter()
            ds = vignette.load_dataset(src, args.config, max_rows=args.max_rows, **kwargs)  # type: ignore[arg-type]
            load = time.perf_counter() - start
            start = time.perf_counter()
            blob = pickle.dumps(ds)
            dump = time.perf_counter() - start
            start = time.perf_counter()
            back = pickle.loads(blob)
            undump = time.perf_counter() - start
            last = len(ds) - 1
            assert back.select_columns(["pair_id"])[last] == ds.select_columns(["pair_id"])[last]
            on_disk = sum(os.path.getsize(f["filename"]) for f in ds.cache_files)
            print(
                f"  {label:<24} {len(ds):>10,} rows  load {load:6.2f} s  pickle {len(blob) / 1e6:9.3f} MB "
                f"({dump:.2f} s, unpickle {undump:.2f} s)  table file {on_disk / 1e6:.1f} MB"
            )


if __name__ == "__main__":
    main()
