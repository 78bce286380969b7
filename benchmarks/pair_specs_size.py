"""Size and build time of the pair spec tables (`<config>_specs`, parquet) at full scale.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/pair_specs_size.py [--configs portraits,identity_contrast]

The source is an index of every render of the packaged taxonomy (benchmarks/table_pickle.py's, no image
bytes: only the index is read). `vignette build specs` writes every pair of each config as parquet,
slice by slice; printed per config: pairs, files, bytes on disk, bytes per pair, seconds, peak RSS.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from table_pickle import full_index_source  # noqa: E402

import vignette  # noqa: E402
from vignette_bench.dataset_builder.layout import SPECS_DIR  # noqa: E402
from vignette_bench.dataset_builder.pair_specs import write_pair_specs  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default=",".join(vignette.CONFIGS))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        n = full_index_source(src)
        print(f"source: index of {n:,} renders (full taxonomy)")
        total = 0
        for config in args.configs.split(","):
            start = time.perf_counter()
            rows = write_pair_specs(src, (config,))[config]
            took = time.perf_counter() - start
            files = sorted((src / SPECS_DIR / config).glob("*.parquet"))
            size = sum(f.stat().st_size for f in files)
            total += size
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(
                f"  {config:<28} {rows:>12,} pairs  {len(files):>3} files  {size / 1e6:9.1f} MB  "
                f"{size / rows:6.1f} B/pair  {took:7.1f} s  peak RSS so far {rss:,.0f} MB"
            )
        print(f"  total {total / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
