"""``vignette build specs --source SOURCE``: the pair configs' rows, without images, as parquet files.

Every pair of a config as one row (ids, keys of both renders, identities, surface forms, activities;
``vignette.features()`` minus the image), written to ``pairs/<config>/test-NNNNN-of-MMMMM.parquet``
so that plain ``datasets.load_dataset(SOURCE, "<config>_specs")`` reads them with no code of ours (the
card declares one parquet config per folder). The rows are exactly ``vignette.load_dataset(SOURCE,
config, images=False)``'s, in the same order, written slice by slice so a 30M-row config never sits in
memory. Each config's folder is built beside the target and renamed into place.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

from vignette_bench.dataset_builder.arguments import ROWS_PER_FILE
from vignette_bench.dataset_builder.layout import SPECS_DIR


def write_pair_specs(
    root: str | Path, configs: tuple[str, ...] | None = None, rows_per_file: int = ROWS_PER_FILE
) -> dict[str, int]:
    """Write every config's spec table under ``root/pairs/``; returns rows per config written (a config
    with no pairs in this source is left out)."""
    import vignette

    root = Path(root)
    written = {}
    for config in configs or vignette.CONFIGS:
        n = _rows(root, config)
        final = root / SPECS_DIR / config
        if n == 0:  # e.g. activity_contrast of a source with one activity: no config to declare
            shutil.rmtree(final, ignore_errors=True)
            continue
        files = -(-n // rows_per_file)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{config}-", dir=final.parent))
        try:
            for k in range(files):
                lo, hi = k * rows_per_file, min(n, (k + 1) * rows_per_file)
                part = vignette.load_dataset(
                    root, config, images=False, keep_in_memory=True, split=f"test[{lo}:{hi}]", max_rows=rows_per_file
                )
                pq.write_table(part.data.table, tmp / f"test-{k:05d}-of-{files:05d}.parquet")
            if final.exists():
                shutil.rmtree(final)
            tmp.rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        written[config] = n
    return written


def _rows(root: Path, config: str) -> int:
    """How many pairs `config` has in this source (the pair space is arithmetic: nothing is enumerated)."""
    import vignette

    source = vignette.Source(root)
    index = vignette.RenderIndex.load(source)
    taxonomy = vignette.load_taxonomy(source.url("taxonomy"))
    return len(vignette.PairSpace(taxonomy, config, coverage=index.coverage))


def main(args: argparse.Namespace) -> int:
    from vignette_bench.dataset_builder.card import write_card

    configs = tuple(c.strip() for c in args.configs.split(",")) if args.configs else None
    for config, n in write_pair_specs(args.source, configs, args.rows_per_shard).items():
        print(f"{SPECS_DIR}/{config}: {n:,} pairs")
    write_card(args.source)  # declares the new configs
    return 0
