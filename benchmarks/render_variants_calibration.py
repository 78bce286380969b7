"""Does a source with k renders per cell keep the cluster-robust test nominal where clusters are few?

    .venv/bin/python benchmarks/render_variants_calibration.py [--runs 100]

The small-cluster edge of the CR2 test: at demo size with one gender an identity has about 4 render
clusters per family. This simulates iid nulls (and nulls with a render effect of sd 1.0 logit) at
demo size, one gender, with k = 1 and k = 3 renders per cell, and prints the share of raw p < 0.05
of the side-balanced selection frequency (tests/calibration/harness.direct_tests: the engine the
report uses), per family group, with the Monte-Carlo standard error and the median number of clusters.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.calibration.harness import direct_tests, spec  # noqa: E402
from vignette_bench.eval.simulate import simulate  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    args = ap.parse_args(argv)
    print("| null | k | family | tests | raw p<0.05 (%) | MC se | median clusters | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for null in ("iid", "render_sd_1.0_k1"):
        for k in (1, 3):
            t0 = time.perf_counter()
            parts = [
                direct_tests(simulate(spec(null, "demo", seed, genders=("female",), renders_per_cell=k)))
                for seed in range(args.runs)
            ]
            tests = pd.concat(parts, ignore_index=True)
            tests = tests[np.isfinite(tests["p_value"].to_numpy(float)) & (tests["flag"].fillna("") == "")]
            groups = {
                "perception + decision": tests[tests["family"] != "stereotype"],
                "stereotype": tests[tests["family"] == "stereotype"],
            }
            secs = time.perf_counter() - t0
            for name, g in groups.items():
                n = len(g)
                rate = float((g["p_value"] < 0.05).mean()) if n else math.nan
                se = math.sqrt(0.05 * 0.95 / n) if n else math.nan
                clusters = float(g["n_clusters"].median()) if n else math.nan
                label = "render sd 1.0" if null != "iid" else "iid"
                print(
                    f"| {label} | {k} | {name} | {n} | {100 * rate:.1f} | {100 * se:.1f} | {clusters:.0f} | {secs:.0f} |"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
