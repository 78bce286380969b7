"""Calibration of the report's verdicts on the original VIGNETTE design (issue 33 item 8).

Simulated runs of the age dimension in the original code's CSV layout (tests/calibration/original_design.py:
one fixed order per pair and gender, gendered identities, right-side preference 0.72 women / 0.56 men,
pair-specific effects, per-image effects), each brought in with the import code and measured with the
report's code (`numbers.compute`, `verdicts`). Prints, per scenario:

* null: the share of reports carrying any bias verdict (target <= 5%), the share of identities tested,
  and the paper's method on the same answers (identities with the paper's p < 0.05, per report);
* single: one real effect on "young" (both genders): the share of reports accusing any OTHER identity
  (target <= 5%) and how often young itself is found;
* power: on the additive design (no pair-specific effect, where the side model fits), the effect the
  report says a verdict needs for an identity (its `needed_effect`, read from a first null run) planted
  on that identity; the share of reports with a verdict on it (target >= 80%).

    .venv/bin/python benchmarks/original_design_calibration.py --runs 50 [--designs issue,mild,additive]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.calibration.original_design import Design, logit_effect, report  # noqa: E402
from vignette_bench.eval.analysis.verdicts import BIAS_VERDICTS  # noqa: E402

BOTH = "age · both genders"


def _paper_accusations(sel) -> tuple[float, float]:
    """Identities the paper's test (p < 0.05) accuses: per gender (summed over genders) and pooled."""
    per = sel[sel["dimension"] != BOTH]
    pooled = sel[sel["dimension"] == BOTH]
    return float((per["p_paper"] < 0.05).sum()), float((pooled["p_paper"] < 0.05).sum())


def null(design: Design, runs: int, seed0: int) -> None:
    any_verdict, tested, paper_g, paper_p = 0, [], [], []
    for r in range(runs):
        sel, v = report(design, seed0 + r)
        any_verdict += int(v["verdict"].isin(BIAS_VERDICTS).any())
        tested.append(float((sel["flag"] == "").mean()))
        g, p = _paper_accusations(sel)
        paper_g.append(g)
        paper_p.append(p)
    print(
        f"  null reports with any verdict: {any_verdict}/{runs} ({100 * any_verdict / runs:.1f}%); "
        f"identity rows tested: {100 * np.mean(tested):.0f}%"
    )
    print(
        f"  paper's method (p < 0.05) on the same answers: {np.mean(paper_g):.1f} of 18 per-gender identities and "
        f"{np.mean(paper_p):.1f} of 9 pooled identities accused per report; reports with any: "
        f"{100 * np.mean(np.array(paper_g) + np.array(paper_p) > 0):.0f}%"
    )


def single(design: Design, runs: int, seed0: int, pp: float) -> None:
    d = replace(design, effects={"young": logit_effect(pp)})
    other, found = 0, 0
    for r in range(runs):
        _, v = report(d, seed0 + r)
        bias = v[v["verdict"].isin(BIAS_VERDICTS)]
        other += int((bias["identity"] != "young").any())
        found += int((bias["identity"] == "young").any())
    print(
        f"  one real effect (young, +{pp:g} pp): reports accusing another identity {other}/{runs} "
        f"({100 * other / runs:.1f}%); young found in {found}/{runs}"
    )


def power(design: Design, runs: int, seed0: int, who: list[str]) -> None:
    sel, v = report(design, seed0 - 1)
    for name in who:
        rows = v[(v["identity"] == name) & (v["dimension"] == BOTH)]
        need = float(rows["needed_effect"].iloc[0]) if len(rows) else float("nan")
        sides = tuple(sel.groupby("stratum")["side_term"].first().dropna().astype(float))
        if not np.isfinite(need):
            print(f"  power {name}: the report states no needed effect (not tested)")
            continue
        d = replace(design, effects={name: logit_effect(need, sides, design.image_sd)})
        hit = tested = 0
        est, se = [], []
        for r in range(runs):
            ss, vv = report(d, seed0 + r)
            got = vv[(vv["identity"] == name) & (vv["dimension"] == BOTH)]
            found = int(got["verdict"].isin(BIAS_VERDICTS).any())
            hit += found
            tested += int(got["needed_effect"].notna().any())
            row = ss[(ss["identity"] == name) & (ss["dimension"] == BOTH)]
            est.append(abs(float(row["effect"].iloc[0])))
            se.append(float(row["se"].iloc[0]))
        print(
            f"  power {name} (both genders) at its stated needed effect {need:.1f} pp: {hit}/{runs} "
            f"({100 * hit / runs:.0f}%); among the {tested} reports that tested it (the side model fitted both "
            f"genders; elsewhere the page states no needed effect): {100 * hit / max(tested, 1):.0f}%",
            flush=True,
        )
        e = np.array(est)
        print(
            f"    its estimate where tested: mean |effect| {np.nanmean(e):.2f} pp (sd {np.nanstd(e):.2f}) against "
            f"{need:.2f} planted; mean reported se {np.nanmean(se):.2f} pp",
            flush=True,
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--effect", type=float, default=10.0, help="the single real effect, pp")
    ap.add_argument("--power", default="young,adult", help="identities whose stated needed effect is planted")
    ap.add_argument("--power-only", action="store_true", help="only the additive design's power runs")
    ap.add_argument(
        "--designs", default="issue,additive", help="comma-separated: issue, mild (pair sd 0.3), additive (+ power)"
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    designs = {
        "issue": ("issue design: pair sd 1.0, image sd 0.5, right 0.72 / 0.56", Design()),
        "mild": ("milder non-additivity: pair sd 0.3", Design(pair_sd=0.3)),
        "additive": ("additive: pair sd 0, image sd 0.5", Design(pair_sd=0.0)),
    }
    for name in args.designs.split(","):
        label, d = designs[name]
        print(label, flush=True)
        if not args.power_only:
            null(d, args.runs, args.seed)
            single(d, args.runs, args.seed + 10_000, args.effect)
        if name == "additive":
            power(d, args.runs, args.seed + 20_000, args.power.split(","))
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
