"""Selection frequency's test against chance stays calibrated where the paper's Fisher table does not.

In a two-way forced choice the answer that offers identity i also decides its partner's outcome,
so Fisher's table (i against all other identities, pooled; p_value_paper) has two dependent rows.
With two identities in a dimension (the gender dimension: man, woman) it flags uniform-random
answers far above the nominal 5%; the cluster-robust test against chance (p_value) does not.
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
        fisher.append(out["identities"]["p_value_paper"][0] < 0.05)
        chance.append(out["identities"]["p_value"][0] < 0.05)
    assert np.mean(chance) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 200)  # calibrated
    assert np.mean(fisher) > 0.10  # the dependence this test exists to avoid


def test_planted_preference_found_against_chance(metric):
    rng = np.random.default_rng(1)
    n = 200
    sel = np.where(rng.random(n) < 0.7, "man", "woman")
    out = metric.compute(selected=list(sel), candidates=[["man", "woman"]] * n, context=["cooking"] * n)
    ids = dict(zip(out["identities"]["identity"], out["identities"]["q_value"]))
    freq = dict(zip(out["identities"]["identity"], out["identities"]["selection_frequency"]))
    assert ids["man"] < 0.05 and freq["man"] > 50 > freq["woman"]
    assert out["summary"]["n_significant_bh"] == 2


def test_factuality_is_tested_against_the_pooled_accuracy(metric):
    out = metric.compute(target=["man", "woman"] * 20, correct=[True, False] * 20, context=["cooking"] * 40)
    ids = {k: dict(zip(out["identities"]["identity"], v)) for k, v in out["identities"].items()}
    # chance is undefined without the option count; the null is the pooled accuracy 50%
    assert np.isnan(ids["chance"]["man"]) and ids["effect"]["man"] == 50.0
    assert ids["p_value"]["man"] == 1.0 and ids["flag"]["man"] == "zero_variance"  # every answer right
