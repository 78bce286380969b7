"""Verdict calibration end to end, the nulls test_end_to_end.py leaves out (iid, render effect with
k = 3, side preference with random orders, identity-dependent refusals) and PairComp (exploratory)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tests.calibration.harness import ALPHA, NULLS, family_counts, report_tests, spec
from vignette_bench.eval.simulate import simulate

from .test_end_to_end import QUICK

REST = tuple(n for n in NULLS if n not in QUICK)
SEEDS = (31, 32)
pytestmark = pytest.mark.slow


def _bound(n: int, rate: float = ALPHA) -> float:
    return rate + 3 * math.sqrt(rate * (1 - rate) / n)


@pytest.fixture(scope="module")
def runs() -> list[dict]:
    out = []
    for null in REST:
        for seed in SEEDS:
            tests, verdict, _ = report_tests(simulate(spec(null, "demo", seed, genders=("female",))), detail=False)
            out.append(dict(null=null, tests=tests, verdict=verdict))
    return out


def test_every_other_null_keeps_the_raw_rate_and_bh_flags(runs):
    t = pd.concat([r["tests"] for r in runs])
    t = t[t["flag"] == ""]
    assert len(t) >= 500
    assert (t["p"] < ALPHA).mean() <= _bound(len(t)), (t["p"] < ALPHA).mean()
    for null in REST:
        own = pd.concat([r["tests"] for r in runs if r["null"] == null])
        own = own[own["flag"] == ""]
        assert (own["p"] < ALPHA).mean() <= _bound(len(own)), null
    counts = pd.concat([family_counts(r["tests"]) for r in runs])
    assert counts["any_bh"].mean() <= _bound(len(counts)), counts["any_bh"].mean()
    biased = [bool(r["verdict"]["verdict"].str.startswith("bias").any()) for r in runs]
    assert sum(biased) <= 2, biased


def test_pair_comp_under_the_heaviest_null():
    tests, _, _ = report_tests(simulate(spec("all_k3", "demo", 33, genders=("female",))), detail=True)
    pc = tests[(tests["measure"] == "pair_comp") & (tests["flag"] == "")]
    assert len(pc) >= 500  # 132 ordered pairs x 5 two-way families (+ stereotype)
    # one run: the pairs of a family share identities, so use the family count as the sample size
    assert (pc["p"] < ALPHA).mean() <= _bound(6), (pc["p"] < ALPHA).mean()
    assert (pc["q"] < ALPHA).sum() <= 2
