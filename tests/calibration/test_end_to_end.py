"""Verdict calibration end to end: simulated runs under nulls -> the report's numbers
(`numbers.compute`: the metric modules, cluster-aware and side-balanced) -> its verdicts (Simes per
identity, BH over identities). Quick version: four of harness.NULLS (the heaviest nuisances, choice
and score mode) x two seeds, one dimension and gender at demo size; tests/calibration/
test_end_to_end_slow.py runs every null."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tests.calibration.harness import ALPHA, family_counts, magnitudes, report_tests, spec, with_planted
from vignette_bench.eval.analysis.numbers import FAMILY_DIRECTION
from vignette_bench.eval.simulate import simulate

QUICK = ("image_sd_1.1", "render_sd_1.0_k1", "all_k3", "score_image_render_k3")
SEEDS = (11, 12)


def _bound(n: int, rate: float = ALPHA) -> float:
    return rate + 3 * math.sqrt(rate * (1 - rate) / n)


@pytest.fixture(scope="module")
def runs() -> list[dict]:
    out = []
    for null in QUICK:
        for seed in SEEDS:
            tests, verdict, n = report_tests(simulate(spec(null, "demo", seed, genders=("female",))), detail=False)
            # a render effect with k = 1 leaves the stereotype selection frequency non-null (harness.render_null_k1);
            # it is not a verdict test (polarity is, and stays null), so nothing is dropped here
            out.append(dict(null=null, seed=seed, tests=tests, verdict=verdict, numbers=n))
    return out


def test_selection_frequency_raw_false_positive_rate(runs):
    t = pd.concat([r["tests"] for r in runs])
    t = t[(t["measure"] == "selection") & (t["flag"] == "")]
    two_way = t[t["family"] != "factuality"]
    assert len(two_way) >= 300  # 8 runs x 5 families x 12 identities
    rate = float((two_way["p"] < ALPHA).mean())
    assert rate <= _bound(len(two_way)), rate
    for null in QUICK:  # each null on its own (weaker bound: ~120 tests)
        own = pd.concat([r["tests"] for r in runs if r["null"] == null])
        own = own[(own["measure"] == "selection") & (own["flag"] == "")]
        assert (own["p"] < ALPHA).mean() <= _bound(len(own)), null


def test_polarity_and_factuality_raw_false_positive_rate(runs):
    t = pd.concat([r["tests"] for r in runs])
    for measure, family in (("polarity", "stereotype"), ("selection", "factuality")):
        own = t[(t["measure"] == measure) & (t["family"] == family) & (t["flag"] == "")]
        assert len(own) >= 60, (measure, len(own))
        assert (own["p"] < ALPHA).mean() <= _bound(len(own)), (measure, (own["p"] < ALPHA).mean())


def test_any_bh_flag_within_a_family_is_rare(runs):
    counts = pd.concat([family_counts(r["tests"]) for r in runs])
    counts = counts[counts["measure"] != "pair_comp"]
    assert len(counts) >= 50
    assert counts["any_bh"].mean() <= _bound(len(counts)), counts["any_bh"].mean()


def test_null_reports_say_no_bias(runs):
    biased = [bool(r["verdict"]["verdict"].str.startswith("bias").any()) for r in runs]
    assert sum(biased) <= 2, biased  # the target is >= 95% clean reports; 8 reports allow little more
    for r in runs:
        allowed = {"no evidence of bias", "below minimum effect", "bias +", "bias −", "bias (not robust to refusals)"}
        assert set(r["verdict"]["verdict"]) <= allowed


def test_noise_corrected_magnitude_is_below_the_old_mean_abs_deviation(runs):
    m = pd.concat([magnitudes(r["numbers"]) for r in runs])
    assert m["magnitude"].mean() < 0.6 * m["old_mean_abs"].mean(), m.mean(numeric_only=True)


def test_planted_70_percent_is_found_with_the_right_sign():
    s = with_planted(spec("image_sd_1.1", "demo", 21, paradigms=("perception", "decision")), "jain", 0.7)
    tests, verdict, _ = report_tests(simulate(s), detail=False)
    sel = tests[tests["measure"] == "selection"].set_index(["family", "identity"])
    assert sel.loc[("decision", "jain"), "effect"] > 5 and sel.loc[("decision", "jain"), "q"] < ALPHA
    assert (sel.xs("jain", level="identity")["effect"] > 0).all()  # chosen more often in every family
    v = verdict.set_index("identity").loc["jain"]
    # the sign is the deciding family's: chosen more often is favoured for capability, disfavoured for struggle
    want = "bias +" if FAMILY_DIRECTION[v["family"].split("/")[-1]] > 0 else "bias −"
    assert v["verdict"] == want, v.to_dict()
    others = verdict[verdict["identity"] != "jain"]
    assert np.mean(others["verdict"].str.startswith("bias")) <= 0.2  # the others lose ~1/11 of their picks each
