"""Report and leaderboard numbers under a null model, and the cost of a full-taxonomy report.

    python benchmarks/report.py [--seeds 10] [--skip-full]

1. Null calibration: a uniform-random responder (vignette_bench/eval/report/simulate.py) over religion + age
   (21 identities), decision + perception + stereotype + factuality; for each seed, the share of
   identities whose verdict is "bias +"/"bias −" (Simes over families, BH over identities, 5 pp
   minimum effect), the share with global q < 0.05, the number of families with an exploratory
   per-family flag, and the decision bias magnitude (noise-corrected RMS) beside the old mean
   |S − 50|. Then the same with one planted identity.
2. Cost: simulate a run over all 167 identities (decision + stereotype, 2 activities, 2 terms) and
   time `numbers.compute` and the whole report (figures included), in one process.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from vignette_bench.eval.analysis.numbers import compute, summaries  # noqa: E402
from vignette_bench.eval.report.build import verdicts  # noqa: E402
from vignette_bench.eval.report.simulate import SimSpec, simulate, write_run  # noqa: E402

DESIGN = dict(dimensions=("religion", "age"), genders=("female", "male"), n_activities=4, n_traits=8)


def null_rates(seeds: int, planted=()) -> pd.DataFrame:
    rows = []
    for seed in range(seeds):
        frame = simulate(SimSpec(seed=seed, planted=planted, **DESIGN))
        n = compute(frame, detail=False)
        v = verdicts(n.tests())
        flagged = n.selection[n.selection["q"] < 0.05].groupby("family").size()
        dec = n.selection[n.selection["family"] == "decision"]
        rows.append(
            {
                "seed": seed,
                "identities": len(v),
                "flagged_share": float(v["verdict"].str.startswith("bias").mean()),
                "q_share": float((v["q_global"] < 0.05).mean()),
                "families_with_a_flag": int((flagged > 0).sum()),
                "decision_bias_magnitude": summaries(frame)["decision"]["bias_magnitude"],
                "decision_old_magnitude": float((dec["value_paper"] - 50.0).abs().mean()),
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--skip-full", action="store_true")
    args = p.parse_args()
    null = null_rates(args.seeds)
    print(f"NULL (uniform random, {args.seeds} seeds, {null['identities'].iloc[0]} identities):")
    print(
        f"  share of identities with a 'bias' verdict: mean {null['flagged_share'].mean():.3f}, "
        f"max {null['flagged_share'].max():.3f}; with global q < 0.05: mean {null['q_share'].mean():.3f}"
    )
    print(
        f"  seeds with any identity flagged (per-family q, exploratory): {(null['families_with_a_flag'] > 0).sum()} "
        f"/ {len(null)}"
    )
    print(
        f"  decision bias magnitude, pp: noise-corrected RMS mean {null['decision_bias_magnitude'].mean():.2f}; "
        f"old mean |S-50| {null['decision_old_magnitude'].mean():.2f}"
    )
    planted = null_rates(min(args.seeds, 3), planted=(("hindu", 0.7),))
    print(
        f"PLANTED (hindu chosen 70% when offered): decision bias magnitude mean "
        f"{planted['decision_bias_magnitude'].mean():.2f} pp; 'bias' verdict share mean "
        f"{planted['flagged_share'].mean():.3f}"
    )
    if args.skip_full:
        return
    from vignette_bench.eval.report.command import make_report
    from vignette_bench.eval.runs import load_run
    from vignette_bench.taxonomy import load_taxonomy

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        run = write_run(
            Path(tmp) / "run",
            SimSpec(
                seed=1,
                dimensions=tuple(load_taxonomy().dimensions),
                n_activities=2,
                n_traits=2,
                paradigms=("decision", "stereotype"),
            ),
        )
        t_sim = time.perf_counter() - t
        rows = len(load_run(run).responses)
        t = time.perf_counter()
        compute(load_run(run).responses)
        t_numbers = time.perf_counter() - t
        t = time.perf_counter()
        make_report([run], Path(tmp) / "report")
        t_report = time.perf_counter() - t
        n_figs = len(list((Path(tmp) / "report" / "figures").glob("*.png")))
    print(
        f"FULL TAXONOMY: {rows:,} answers, 167 identities: simulate {t_sim:.1f} s, numbers {t_numbers:.1f} s, "
        f"whole report {t_report:.1f} s ({n_figs} figures; numbers are recomputed inside the report)"
    )


if __name__ == "__main__":
    main()
