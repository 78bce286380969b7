"""Calibration and power of PairComp's side-matched contrasts on fixed-order pairings (issue 27 item 5).

    .venv/bin/python benchmarks/side_matched_calibration.py                 # ~3 min on one core
    .venv/bin/python benchmarks/side_matched_calibration.py --studies 100   # quicker, noisier

Designs: the fixed-order pairing of tests/stats/fixed_order.py (identities in a fixed order, the earlier
one always left; left chosen with probability 0.31 as LLaVA-1.6 did, render effects sd 0 or 1.0 logit,
24 questions per pair, 5% refusals). PairComp's target (i, j) compares i's rate with j against i's rate
with anyone else; in this pairing i stands on one side with j and on both sides with the others, so the
pooled contrast (one_sided="pool", before) measures the side preference, and the side-matched contrast
(one_sided="match", the default) compares i with j against i with the others on the same side. Printed
per design and setting: targets tested, the share with raw p < 0.05 under the null (Monte-Carlo se from
the spread over studies), and those left untested as position-confounded; then the power for a planted
effect (identity 0 more often chosen, logit +1.0): the share of targets (i, 0) found with the right sign.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.stats.fixed_order import fixed_order_rows  # noqa: E402
from vignette_bench.stats.measures.pair_comp import PairCompMeasure  # noqa: E402

NULL_GRID = [(n_ids, renders, sd) for n_ids in (4, 6, 9) for renders in (4, 8) for sd in (0.0, 1.0)]
POWER_GRID = [(6, 8, 1.0, 1.0), (9, 8, 1.0, 1.0), (9, 8, 0.0, 1.0)]


def study(seed: int, n_ids: int, renders: int, sd: float, one_sided: str, planted: float = 0.0) -> dict:
    effects = np.zeros(n_ids)
    effects[0] = planted
    rows = fixed_order_rows(seed, n_ids=n_ids, renders=renders, render_sd=sd, effects=effects)
    return PairCompMeasure().compute(**rows, one_sided=one_sided)["pairs"]


def null_rates(seed0: int, studies: int, n_ids: int, renders: int, sd: float, one_sided: str) -> tuple:
    per_study, tested, confounded = [], 0, 0
    for k in range(studies):
        t = study(seed0 + k, n_ids, renders, sd, one_sided)
        ok = np.array([f == "" for f in t["flag"]])
        p = np.asarray(t["p_value"], float)
        confounded += sum(f == "position_confounded" for f in t["flag"])
        tested += int(ok.sum())
        per_study.append(((p[ok] < 0.05).sum(), ok.sum()))
    rej = np.array([r for r, _ in per_study], float)
    n = np.array([m for _, m in per_study], float)
    rate = rej.sum() / max(n.sum(), 1)
    # Monte-Carlo se of a ratio estimator over independent studies (targets within a study are dependent)
    se = np.sqrt(np.sum((rej - rate * n) ** 2)) / max(n.sum(), 1)
    return rate, se, tested, confounded


def power(
    seed0: int, studies: int, n_ids: int, renders: int, sd: float, planted: float, one_sided: str
) -> tuple[float, float]:
    """Shares of the targets (i, id0) found with the right sign: at raw p < 0.05, and at BH q < 0.05."""
    raw = found = total = 0
    for k in range(studies):
        t = study(seed0 + k, n_ids, renders, sd, one_sided, planted)
        for partner, est, p, q, flag in zip(t["partner"], t["pair_comp"], t["p_value"], t["q_value"], t["flag"]):
            if partner == "id0":
                total += 1
                right = flag == "" and est < 0  # i is chosen less when paired with id0
                raw += right and p < 0.05
                found += right and q < 0.05
    return raw / max(total, 1), found / max(total, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--studies", type=int, default=200)
    ap.add_argument("--seed", type=int, default=4100)
    args = ap.parse_args()
    print(
        f"PairComp on fixed-order pairings, left chosen 0.31, {args.studies} studies per design (seeds {args.seed}...)"
    )
    print("  ids renders render_sd  | match: tested  p<0.05 (MC se)  confounded | pool: tested  p<0.05 (MC se)")
    for n_ids, renders, sd in NULL_GRID:
        m = null_rates(args.seed, args.studies, n_ids, renders, sd, "match")
        p = null_rates(args.seed, args.studies, n_ids, renders, sd, "pool")
        print(
            f"  {n_ids:3d} {renders:7d} {sd:9.1f}  | {m[2]:6d}  {m[0]:7.3f} ({m[1]:.3f})  {m[3]:10d} | "
            f"{p[2]:6d}  {p[0]:7.3f} ({p[1]:.3f})",
            flush=True,
        )
    print(
        "power: planted logit effect on id0; share of targets (i, id0) with the right sign at raw p < 0.05 / BH q < 0.05"
    )
    for n_ids, renders, sd, planted in POWER_GRID:
        m = power(args.seed + 50_000, args.studies // 2, n_ids, renders, sd, planted, "match")
        p = power(args.seed + 50_000, args.studies // 2, n_ids, renders, sd, planted, "pool")
        print(
            f"  ids {n_ids} renders {renders} sd {sd} planted {planted}: match {m[0]:.3f} / {m[1]:.3f}  "
            f"pool {p[0]:.3f} / {p[1]:.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
