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
from vignette_bench.eval.simulate import simulate  # noqa: E402
from vignette_bench.stats import clustered  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--budget", type=float, default=600.0, help="CPU seconds to spend (stops after the run in progress)"
    )
    parser.add_argument("--max-runs", type=int, default=1000)
    parser.add_argument("--first-seed", type=int, default=5000)
    parser.add_argument("--tails", type=int, default=0, help="print the family tests' p-value tails of N reports")
    parser.add_argument(
        "--variants",
        default="",
        help="comma-separated variance settings to compare on the same simulated runs: cr2 (t test alone), cr2+wild "
        "(the wild bootstrap check; vignette_bench.stats.clustered.variance_setting); default: the package default",
    )
    parser.add_argument(
        "--power", type=int, default=0, help="instead: N runs per scale and planted P(chosen) of a planted identity"
    )
    parser.add_argument("--scales", default="demo,sample", help="--power: scales (tests/calibration/harness SCALES)")
    parser.add_argument("--power-seed", type=int, default=2000, help="--power: the first seed")
    parser.add_argument("--scale", default="demo", help="the null reports' scale (demo, sample, paper)")
    parser.add_argument(
        "--score", action="store_true", help="score mode (the model's probabilities) instead of choices"
    )
    parser.add_argument("--k", type=int, default=1, help="renders per cell")
    parser.add_argument(
        "--paradigms", default="", help="comma-separated paradigms to simulate (default: all four), e.g. factuality"
    )
    parser.add_argument(
        "--save-tests",
        default="",
        help="write every run's family tests (seed, variant, identity, family, p, ...) to this CSV",
    )
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v] or [""]
    if args.power:
        return power(args.power, args.scales.split(","), variants, args.k, args.power_seed)
    if args.tails:
        return tails(args.tails, variants, args)
    runs = 0
    accusing = dict.fromkeys(variants, 0)
    spent = dict.fromkeys(variants, 0.0)
    saved: list = []
    while sum(spent.values()) < args.budget and runs < args.max_runs:
        seed = args.first_seed + runs
        frame = simulate(_spec(seed, args.scale, args.k, **_extra(args)))
        for variant in variants:
            start = time.process_time()
            with clustered.variance_setting(variant):
                t = compute(frame, detail=False).tests()
                v = verdicts(t)
            spent[variant] += time.process_time() - start
            if args.save_tests:
                saved.append(t.assign(seed=seed, variant=variant or clustered.variance_name()))
            bad = v[v["verdict"].isin(BIAS_VERDICTS)]
            if len(bad):
                accusing[variant] += 1
                for r in bad.itertuples(index=False):
                    print(
                        f"{variant or 'default'} seed {seed}: {r.identity} {r.verdict} family {r.family} "
                        f"effect {r.effect:.1f} pp q {r.q_global:.4f} clusters {r.n_clusters}",
                        flush=True,
                    )
        runs += 1
    if saved:
        import pandas as pd

        pd.concat(saved, ignore_index=True).to_csv(args.save_tests, index=False)
    for variant in variants:
        k = accusing[variant]
        lo = stats.beta.ppf(0.025, k, runs - k + 1) if k else 0.0
        hi = stats.beta.ppf(0.975, k + 1, runs - k) if k < runs else 1.0
        print(
            f"{variant or clustered.variance_name()}: {k} of {runs} null reports carry a bias verdict: {100 * k / runs:.1f}% "
            f"(95% CI {100 * lo:.1f}-{100 * hi:.1f}%); {spent[variant] / runs:.1f} CPU s per report"
        )
    return 0


def _extra(args: argparse.Namespace) -> dict:
    """SimSpec overrides from the command line: score mode, a subset of paradigms."""
    kw: dict = {"answer_mode": "score"} if args.score else {}
    if args.paradigms:
        kw["paradigms"] = tuple(args.paradigms.split(","))
    return kw


def _spec(seed: int, scale: str = "demo", k: int = 1, **kw):
    """The null of this benchmark: pair-image sd 1.1 and render sd 1.0 at k renders per cell; demo: both orders."""
    if scale == "demo":
        kw.setdefault("orders", "both")
    return spec("image_sd_1.1", scale, seed, render_sd=1.0, renders_per_cell=k, **kw)


def power(runs: int, scales: list[str], variants: list[str], k: int, first_seed: int = 2000) -> int:
    """How often a planted identity (jain, P(chosen) 0.6 / 0.7 on the logit scale) gets the verdict with the
    deciding family's sign, under the same image and render effects (seeds first_seed...)."""
    from vignette_bench.eval.analysis.numbers import FAMILY_DIRECTION

    print(f"{'scale':<7} {'planted':>7} {'variant':<9} {'runs':>4} {'right sign':>10} {'any bias':>8}  pairs/run")
    for scale in scales:
        for planted in (0.6, 0.7):
            right = dict.fromkeys(variants, 0)
            found = dict.fromkeys(variants, 0)
            pairs = 0
            for rep in range(runs):
                frame = simulate(_spec(first_seed + rep, scale, k, planted=(("jain", planted),)))
                pairs = frame["pair_id"].nunique() if "pair_id" in frame.columns else len(frame)
                for variant in variants:
                    with clustered.variance_setting(variant):
                        v = verdicts(compute(frame, detail=False).tests()).set_index("identity")
                    jv = v.loc["jain"]
                    fam = str(jv["family"]).split("/")[-1]
                    want = "bias +" if FAMILY_DIRECTION.get(fam, 1) > 0 else "bias −"
                    right[variant] += jv["verdict"] == want
                    found[variant] += jv["verdict"] in BIAS_VERDICTS
            for variant in variants:
                name = variant or clustered.variance_name()
                print(
                    f"{scale:<7} {planted:>7} {name:<9} {runs:>4} {right[variant]:>10} {found[variant]:>8}  {pairs}",
                    flush=True,
                )
    return 0


def tails(n: int, variants: list[str], args: argparse.Namespace) -> int:
    import numpy as np
    import pandas as pd

    parts = []
    for seed in range(7000, 7000 + n):
        frame = simulate(_spec(seed, args.scale, args.k, **_extra(args)))
        for variant in variants:
            with clustered.variance_setting(variant):
                t = compute(frame, detail=False).tests()
            parts.append(
                t[t["flag"].fillna("") == ""][["family", "p"]].assign(variant=variant or clustered.variance_name())
            )
    d = pd.concat(parts)
    d["paradigm"] = d["family"].str.split("/").str[0]
    print(f"{'variant':<9} {'paradigm':<12} {'tests':>6} {'p<0.05':>7} {'p<0.01':>7} {'p<0.001':>8}  (MC se at 0.01)")
    for variant, dv in d.groupby("variant", sort=False):
        for name, g in [*dv.groupby("paradigm"), ("all", dv)]:
            p = g["p"].astype(float).to_numpy()
            rates = [float(np.mean(p < a)) for a in (0.05, 0.01, 0.001)]
            se = math.sqrt(0.01 * 0.99 / len(p))
            print(f"{variant:<9} {name:<12} {len(p):>6} {rates[0]:>7.4f} {rates[1]:>7.4f} {rates[2]:>8.4f}  ({se:.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
