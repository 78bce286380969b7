"""Null full-taxonomy reports: how often does a report with no identity effect accuse anyone?

Issue 12's target: a null report over the whole taxonomy (all 8 dimensions, 167 identities, both
genders) gives no "bias +"/"bias −" verdict in at least 95% of reports. Each replicate simulates a
run with the nuisance effects real models show (pair-image effect sd 1.1 logit, render effect
sd 1.0, left preference 0.3 with one random order per pair image, identity-dependent refusals) and
no identity effect, puts it through the report's numbers and verdicts, and counts the identities
that received a verdict.

    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 .venv/bin/python benchmarks/full_taxonomy_null.py [--runs N]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.calibration.harness import REFUSERS  # noqa: E402
from vignette_bench.eval.analysis.numbers import compute  # noqa: E402
from vignette_bench.eval.report.build import BIAS_VERDICTS, verdicts  # noqa: E402
from vignette_bench.eval.simulate import SimSpec, simulate  # noqa: E402
from vignette_bench.taxonomy import load_taxonomy  # noqa: E402

NUISANCE = dict(pair_image_sd=1.1, render_sd=1.0, p_left=0.3, orders="random", refusal_by_identity=REFUSERS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--activities", type=int, default=4, help="activities per run (demo scale: 4)")
    parser.add_argument("--traits", type=int, default=8)
    args = parser.parse_args()
    dims = tuple(load_taxonomy().dimensions)
    clean, accused, identities, seconds = 0, 0, 0, 0.0
    for seed in range(args.runs):
        start = time.perf_counter()
        spec = SimSpec(seed=1000 + seed, dimensions=dims, genders=("female", "male"), n_activities=args.activities,
                       n_traits=args.traits, **NUISANCE)  # fmt: skip
        frame = simulate(spec)
        v = verdicts(compute(frame, detail=False).tests())
        biased = v[v["verdict"].isin(BIAS_VERDICTS)]
        clean += biased.empty
        accused += len(biased)
        identities = len(v)
        seconds += time.perf_counter() - start
        print(f"run {seed}: {len(frame):,} answers, {len(v)} identities, {len(biased)} verdicts "
              f"({time.perf_counter() - start:.0f} s)", flush=True)  # fmt: skip
    share = clean / args.runs
    se = math.sqrt(max(share * (1 - share), 1e-9) / args.runs)
    print(
        f"\nnull full-taxonomy reports with no bias verdict: {clean}/{args.runs} = {100 * share:.0f}% (± {100 * se:.0f})"
    )
    print(f"identities accused over all runs: {accused} of {identities * args.runs} identity-runs")
    print(f"dimensions {len(dims)}, {args.activities} activities, {args.traits} trait terms; nuisance {NUISANCE}")
    print(f"{seconds / args.runs:.0f} s per run on one core")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
