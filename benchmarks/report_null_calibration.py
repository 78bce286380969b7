"""Null full reports at demo size (issue 27, item 2): how many carry a bias verdict?

Each seed simulates an independent religion run at demo scale (12 identities, both genders, 4
activities, 8 trait terms, both orders of every pair image) with a pair-image effect (sd 1.1 logit)
and a render effect (sd 1.0) at one render per cell and no identity effect, puts it through the
report's numbers (the metric modules, two-way clustering where the partner's render is known) and
verdicts (Simes per identity over its families, BH over identities, 5 pp minimum effect), and
counts the reports with any accusing verdict (`build.BIAS_VERDICTS`). Prints each accusing
verdict, the share with its exact (Clopper-Pearson) 95% interval, and seconds per report.

    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 .venv/bin/python benchmarks/report_null_calibration.py --budget 600
    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 .venv/bin/python benchmarks/report_null_calibration.py --tails 200

--tails N: instead, the raw p-values of every family test of N null reports (seeds 7000...), by
paradigm: the share below 0.05, 0.01 and 0.001 (nominal), i.e. how the tail that BH and Simes use
is calibrated.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.calibration.harness import spec  # noqa: E402
from vignette_bench.eval.analysis.numbers import compute  # noqa: E402
from vignette_bench.eval.report.build import BIAS_VERDICTS, verdicts  # noqa: E402
from vignette_bench.eval.report.simulate import simulate  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--budget", type=float, default=600.0, help="CPU seconds to spend (stops after the run in progress)"
    )
    parser.add_argument("--max-runs", type=int, default=1000)
    parser.add_argument("--first-seed", type=int, default=5000)
    parser.add_argument("--tails", type=int, default=0, help="print the family tests' p-value tails of N reports")
    args = parser.parse_args()
    if args.tails:
        return tails(args.tails)
    runs = accusing = 0
    spent = 0.0
    while spent < args.budget and runs < args.max_runs:
        seed = args.first_seed + runs
        start = time.process_time()
        v = verdicts(compute(simulate(_spec(seed)), detail=False).tests())
        spent += time.process_time() - start
        runs += 1
        bad = v[v["verdict"].isin(BIAS_VERDICTS)]
        if len(bad):
            accusing += 1
            for r in bad.itertuples(index=False):
                print(
                    f"seed {seed}: {r.identity} {r.verdict} family {r.family} effect {r.effect:.1f} pp "
                    f"q {r.q_global:.4f} clusters {r.n_clusters}",
                    flush=True,
                )
    lo = stats.beta.ppf(0.025, accusing, runs - accusing + 1) if accusing else 0.0
    hi = stats.beta.ppf(0.975, accusing + 1, runs - accusing) if accusing < runs else 1.0
    print(
        f"{accusing} of {runs} null reports carry a bias verdict: {100 * accusing / runs:.1f}% "
        f"(95% CI {100 * lo:.1f}-{100 * hi:.1f}%); {spent / runs:.1f} CPU s per report"
    )
    return 0


def _spec(seed: int):
    return spec("image_sd_1.1", "demo", seed, render_sd=1.0, renders_per_cell=1, orders="both")


def tails(n: int) -> int:
    import numpy as np
    import pandas as pd

    parts = []
    for seed in range(7000, 7000 + n):
        t = compute(simulate(_spec(seed)), detail=False).tests()
        parts.append(t[t["flag"].fillna("") == ""][["family", "p"]])
    d = pd.concat(parts)
    d["paradigm"] = d["family"].str.split("/").str[0]
    print(f"{'paradigm':<12} {'tests':>6} {'p<0.05':>7} {'p<0.01':>7} {'p<0.001':>8}  (MC se at 0.01)")
    for name, g in [*d.groupby("paradigm"), ("all", d)]:
        p = g["p"].astype(float).to_numpy()
        rates = [float(np.mean(p < a)) for a in (0.05, 0.01, 0.001)]
        se = math.sqrt(0.01 * 0.99 / len(p))
        print(f"{name:<12} {len(p):>6} {rates[0]:>7.4f} {rates[1]:>7.4f} {rates[2]:>8.4f}  ({se:.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
