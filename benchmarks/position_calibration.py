"""Calibration and power of the position-adjusted test (vignette_bench.stats.position; issue 27 item 5).

    .venv/bin/python benchmarks/position_calibration.py                 # full grid (~4 min, one core)
    .venv/bin/python benchmarks/position_calibration.py --studies 100   # quicker, noisier

Designs: fixed-order pairings like the original VIGNETTE one (tests/stats/fixed_order.py): 4, 5 or
9 identities (3 give a saturated model: position-confounded, not tested) in a fixed order, the
earlier one always left, so the first identity stood left in all of its pairs and the last one
right in all of its pairs; left chosen with probability 0.31 (as
LLaVA-1.6 did) shifted by render effects (sd 0 or 1.0 logit, k renders per identity), 24 questions
per pair, 5% refusals, choice or score mode. Each study is fitted on its own (the answers of one
family x dimension). Reported for the two one-sided identities of every study: the share of raw
p < 0.05 under the null (Monte-Carlo se from the spread over studies), the mean position-adjusted
rate and the mean pooled rate (what the report used before: confounded with the side preference);
then the power for a planted effect on the always-left identity (logit +0.5 / +1.0 against the
others; the truth is the rate against an average partner with sides balanced); then the cost: CPU
seconds of one selection_frequency compute on a fixed-order design and the share spent in the
position model (`position_tests`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import expit, logit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vignette_bench.stats.measures.selection_frequency as sf_module  # noqa: E402
from tests.stats.fixed_order import fixed_order_rows  # noqa: E402
from tests.stats.test_position import _pairs  # noqa: E402
from vignette_bench.stats.position import adjusted_test, cluster_shifts, fit  # noqa: E402

NULL_GRID = [
    (n_ids, renders, sd, score)
    for n_ids in (4, 5, 9)
    for renders in (4, 8)
    for sd in (0.0, 1.0)
    for score in (False, True)
    if sd > 0 or not score  # score mode without render effects has no noise at all (rate exactly 50)
]
POWER_GRID = [(5, 4, 1.0, 0.5), (5, 4, 1.0, 1.0), (5, 8, 1.0, 1.0), (9, 8, 1.0, 1.0)]


def run(seed0: int, studies: int, n_ids: int, renders: int, sd: float, score: bool, planted: float = 0.0):
    """Per study: rejections and estimates (pp) of the two one-sided identities."""
    b = np.zeros(n_ids)
    b[0] = planted
    rej, rate, pooled = np.zeros((studies, 2)), np.zeros((studies, 2)), np.zeros((studies, 2))
    for k in range(studies):
        pairs, n_id = _pairs(
            fixed_order_rows(seed0 + k, n_ids=n_ids, renders=renders, render_sd=sd, score=score, effects=b)
        )
        f = fit(pairs, n_id)
        shifts = cluster_shifts(f, pairs)
        for j, t in enumerate((0, n_ids - 1)):
            a = adjusted_test(f, pairs, t, shifts=shifts)
            rej[k, j] = (a.p_value < 0.05) and (planted == 0 or a.rate > 0.5)
            rate[k, j] = 100 * a.rate
            left = pairs.left == t
            chosen = np.where(left, pairs.y, pairs.n - pairs.y)[left | (pairs.right == t)]
            pooled[k, j] = 100 * chosen.sum() / pairs.n[left | (pairs.right == t)].sum()
    return rej, rate, pooled


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=400, help="studies per null cell (power: a quarter)")
    args = ap.parse_args()
    t0 = time.time()
    print(f"null: raw p < 0.05 of the one-sided identities, {args.studies} studies per row, p_left 0.31")
    print(
        "| identities | renders | render sd | mode  | rejected (MC se) | adjusted rate | pooled rate (left / right) |"
    )
    print("|---|---|---|---|---|---|---|")
    worst = 0.0
    for cell, (n_ids, renders, sd, score) in enumerate(NULL_GRID):
        rej, rate, pooled = run(10_000 * (cell + 1), args.studies, n_ids, renders, sd, score)
        per_study = rej.mean(axis=1)
        r, se = per_study.mean(), per_study.std(ddof=1) / np.sqrt(len(per_study))
        worst = max(worst, r)
        mode = "score" if score else "choice"
        print(
            f"| {n_ids} | {renders} | {sd:.1f} | {mode} | {100 * r:.1f}% ({100 * se:.1f}) | {rate.mean():.1f} | "
            f"{pooled[:, 0].mean():.1f} / {pooled[:, 1].mean():.1f} |"
        )
    print(f"largest null rejection rate: {100 * worst:.1f}%")
    s = logit(0.31)
    print(f"\npower: planted logit effect on the always-left identity, {max(args.studies // 4, 20)} studies per row")
    print(
        "| identities | renders | render sd | planted (logit) | truth (pp) | found (p < 0.05, +) | mean estimate | mean pooled |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for cell, (n_ids, renders, sd, planted) in enumerate(POWER_GRID):
        rej, rate, pooled = run(900_000 + 10_000 * cell, max(args.studies // 4, 20), n_ids, renders, sd, False, planted)
        truth = 100 * (expit(s + planted) + expit(-s + planted)) / 2
        print(
            f"| {n_ids} | {renders} | {sd:.1f} | {planted:+.1f} | {truth:.1f} | {100 * rej[:, 0].mean():.0f}% | "
            f"{rate[:, 0].mean():.1f} | {pooled[:, 0].mean():.1f} |"
        )
    print("\ncost: one selection_frequency compute, fixed order, 5% refusals (CPU s, best of 3)")
    print("| identities | renders | questions per pair | answers | compute | of it position model |")
    print("|---|---|---|---|---|---|")
    spent = [0.0]
    inner = sf_module.position_tests

    def timed(*a, **k):
        c = time.process_time()
        out = inner(*a, **k)
        spent[0] += time.process_time() - c
        return out

    sf_module.position_tests = timed
    for n_ids, renders, questions in ((12, 24, 24), (26, 60, 24), (54, 40, 8)):
        rows = fixed_order_rows(0, n_ids=n_ids, renders=renders, questions=questions)
        best = (np.inf, np.inf)
        for _ in range(3):
            spent[0] = 0.0
            c = time.process_time()
            sf_module.SelectionFrequencyMeasure().compute(**rows)
            best = min(best, (time.process_time() - c, spent[0]))
        print(f"| {n_ids} | {renders} | {questions} | {len(rows['selected']):,} | {best[0]:.2f} | {best[1]:.2f} |")
    sf_module.position_tests = inner
    print(f"\n{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
