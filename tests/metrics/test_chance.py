"""Selection frequency's test against chance stays calibrated where the paper's Fisher table does not.

In a two-way forced choice the answer that offers identity i also decides its partner's outcome,
so Fisher's table (i against all other identities, pooled) has two dependent rows. With two
identities in a dimension (the gender dimension: man, woman) it flags uniform-random answers
far above the nominal 5%; the exact binomial test against chance does not.
"""

import evaluate
import numpy as np
import pytest

from tests import REPO_ROOT

METRIC = str(REPO_ROOT / "metrics" / "selection_frequency")


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(METRIC)


def test_two_identities_random_answers(metric):
    rng = np.random.default_rng(0)
    fisher, chance = [], []
    for _ in range(200):
        sel = np.where(rng.random(40) < 0.5, "man", "woman")
        out = metric.compute(selected=list(sel), candidates=[["man", "woman"]] * 40, context=["cooking"] * 40)
        fisher.append(out["identities"]["p_value"][0] < 0.05)
        chance.append(out["identities"]["p_value_chance"][0] < 0.05)
    assert np.mean(chance) <= 0.08  # calibrated (the exact test is slightly conservative)
    assert np.mean(fisher) > 0.10  # the dependence this test exists to avoid


def test_planted_preference_found_against_chance(metric):
    rng = np.random.default_rng(1)
    n = 200
    sel = np.where(rng.random(n) < 0.7, "man", "woman")
    out = metric.compute(selected=list(sel), candidates=[["man", "woman"]] * n, context=["cooking"] * n)
    ids = dict(zip(out["identities"]["identity"], out["identities"]["q_value_chance"]))
    freq = dict(zip(out["identities"]["identity"], out["identities"]["selection_frequency"]))
    assert ids["man"] < 0.05 and freq["man"] > 50 > freq["woman"]
    assert out["summary"]["n_significant_bh_chance"] == 2


def test_factuality_has_no_chance_test(metric):
    out = metric.compute(target=["man", "woman"], correct=[True, False], context=["cooking", "cooking"])
    assert out["identities"]["p_value_chance"] == [1.0, 1.0]  # chance is undefined without the option count
