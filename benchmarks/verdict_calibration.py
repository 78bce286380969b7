"""Verdict calibration end to end (issue 12): simulated runs -> the report's numbers and verdicts.

    .venv/bin/python benchmarks/verdict_calibration.py                 # full grid (~10 min, one core)
    .venv/bin/python benchmarks/verdict_calibration.py --reps 1 --scales demo   # a quick look

Each run is `vignette_bench/eval/simulate.py` (religion, both genders) under one null of
tests/calibration/harness.py NULLS, scored by `numbers.compute` (metric modules with cluster-aware,
side-aware inputs) and `build.verdicts` (Simes per identity over its families, BH over identities,
5 pp minimum effect). Scales: demo (4 activities, 8 trait terms, both orders), sample (12
activities, 20 terms, one random order per pair image), paper (75 activities, 60 terms, both
orders; at most 3 runs per null, without PairComp, to fit the time budget). Reported per scale x null:

* raw p < 0.05 rate of the per-identity tests: selection frequency of the two-way families
  (perception x 4, decision), factuality (accuracy vs the other identities), polarity (overall),
  PairComp (exploratory; demo and sample);
* the share of families (one run's identities of one family) with any BH flag (q < 0.05);
* the share of full reports with no "bias +"/"bias −" verdict (issue 12's target: >= 95%);
* the noise-corrected magnitude (mean over two-way families) beside the old mean |S - 50|.

Monte-Carlo errors: a rate's se is the sd of its per-family rates over runs / sqrt(families x runs)
(tests of one family share answers); a share's is binomial, at least that of a 5% rate. Then the power of planted identities
(P(chosen) 0.6 / 0.7 on the logit scale, under the image-effect null): the planted identity's
decision test at q < 0.05 with effect > 0, and its verdict "bias" with the sign of the deciding family.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from tests.calibration.harness import ALPHA, NULLS, family_counts, magnitudes, report_tests, spec  # noqa: E402
from vignette_bench.eval.analysis.numbers import FAMILY_DIRECTION  # noqa: E402
from vignette_bench.eval.simulate import simulate  # noqa: E402

SCALE_NULLS = {
    "demo": list(NULLS),
    "sample": ["iid", "image_sd_1.1", "p_left_0.3", "score_image_render_k3", "all_k3"],
    "paper": ["image_sd_1.1", "all_k3"],
}
SCALE_OVERRIDES: dict[str, dict] = {}
DETAIL = {"demo": True, "sample": True, "paper": False}  # PairComp (per pair) costs most at large sizes
MEASURES = {
    "sel": lambda t: (t["measure"] == "selection") & (t["family"] != "factuality"),
    "fact": lambda t: (t["measure"] == "selection") & (t["family"] == "factuality"),
    "pol": lambda t: t["measure"] == "polarity",
    "pc": lambda t: t["measure"] == "pair_comp",
}


def _rate(tests: list[pd.DataFrame], which) -> tuple[float, float, int]:
    """Raw p < 0.05 rate over runs, its MC se (families as units), number of tests."""
    units = []
    for t in tests:
        t = t[which(t) & (t["flag"] == "") & np.isfinite(t["p"].astype(float))]
        units += [(int((g["p"] < ALPHA).sum()), len(g)) for _, g in t.groupby(["family", "dimension"])]
    if not units:
        return math.nan, math.nan, 0
    hits, ns = np.array(units, dtype=float).T
    rate = hits.sum() / ns.sum()
    per = hits / ns
    se = float(np.std(per, ddof=1) / math.sqrt(len(per))) if len(per) > 1 else math.nan
    binom = math.sqrt(max(rate, 1 / ns.sum()) * (1 - rate) / ns.sum())
    return float(rate), max(se, binom), int(ns.sum())


def _share(x: list[bool]) -> tuple[float, float]:
    if not x:
        return math.nan, math.nan
    p = float(np.mean(x))
    return p, math.sqrt(max(p * (1 - p), ALPHA * (1 - ALPHA)) / len(x))  # at least the se of a 5% rate


def _fmt(v: float, se: float | None = None, pct: bool = True) -> str:
    if not math.isfinite(v):
        return "–"
    k = 100.0 if pct else 1.0
    return f"{k * v:.1f}" + (f" ± {k * se:.1f}" if se is not None and math.isfinite(se) else "")


def null_grid(scales: list[str], reps: int) -> pd.DataFrame:
    rows = []
    for scale in scales:
        for null in SCALE_NULLS[scale]:
            t0 = time.perf_counter()
            tests, verdicts, mags, counts = [], [], [], []
            n_reps = reps if scale != "paper" else min(reps, 3)
            for rep in range(n_reps):
                s = spec(null, scale, 1000 + rep, **SCALE_OVERRIDES.get(scale, {}))
                t, v, n = report_tests(simulate(s), detail=DETAIL[scale])
                tests.append(t)
                verdicts.append(not v["verdict"].str.startswith("bias").any())
                mags.append(magnitudes(n))
                counts.append(family_counts(t))
            c = pd.concat(counts)
            bh_sel = c.loc[c["measure"] != "pair_comp", "any_bh"].tolist()
            bh_pc = c.loc[c["measure"] == "pair_comp", "any_bh"].tolist()
            m = pd.concat(mags)
            row: dict = {"scale": scale, "null": null, "runs": n_reps}
            for key, which in MEASURES.items():
                rate, se, n_t = _rate(tests, which)
                row[f"raw_{key}"] = _fmt(rate, se)
                row[f"n_{key}"] = n_t
            row["any_bh_families"] = _fmt(*_share(bh_sel)) + f" (of {len(bh_sel)})"
            row["any_bh_paircomp"] = _fmt(*_share(bh_pc)) if bh_pc else "–"
            row["clean_reports"] = _fmt(*_share(verdicts)) + f" (of {len(verdicts)})"
            row["magnitude"] = _fmt(float(m["magnitude"].mean()), None, pct=False)
            row["old_mean_abs"] = _fmt(float(m["old_mean_abs"].mean()), None, pct=False)
            row["seconds"] = round(time.perf_counter() - t0, 1)
            rows.append(row)
            print(row, flush=True)
    return pd.DataFrame(rows)


def power(scales: list[str], reps: int) -> pd.DataFrame:
    rows = []
    for scale in [s for s in scales if s != "paper"]:
        for p in (0.6, 0.7):
            found, right = [], []
            for rep in range(reps):
                s = spec("image_sd_1.1", scale, 2000 + rep, planted=(("jain", p),))
                t, v, _ = report_tests(simulate(s), detail=False)
                dec = t[(t["measure"] == "selection") & (t["family"] == "decision") & (t["identity"] == "jain")]
                found.append(bool(len(dec)) and float(dec["q"].iloc[0]) < ALPHA and float(dec["effect"].iloc[0]) > 0)
                jv = v.set_index("identity").loc["jain"]
                fam = str(jv["family"]).split("/")[-1]
                want = "bias +" if FAMILY_DIRECTION.get(fam, 1) > 0 else "bias −"
                right.append(jv["verdict"] == want)
            rows.append(
                {
                    "scale": scale,
                    "planted": p,
                    "runs": reps,
                    "decision_found": _fmt(*_share(found)),
                    "verdict_right_sign": _fmt(*_share(right)),
                }
            )
            print(rows[-1], flush=True)
    return pd.DataFrame(rows)


def markdown(frame: pd.DataFrame) -> str:
    """A Markdown table (pandas' to_markdown needs tabulate, not a dependency)."""
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in frame.itertuples(index=False)]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5, help="runs per null and planted design (paper: at most 3)")
    ap.add_argument("--scales", default="demo,sample,paper")
    args = ap.parse_args()
    scales = args.scales.split(",")
    t0 = time.perf_counter()
    grid = null_grid(scales, args.reps)
    pw = power(scales, args.reps)
    print("\n## Null: raw p < 0.05 (%), any-BH-flag families (%), clean reports (%), magnitude (pp)\n")
    print(markdown(grid))
    print("\n## Power (%), planted identity under the image-effect null\n")
    if len(pw):
        print(markdown(pw))
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
