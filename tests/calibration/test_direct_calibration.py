"""Simulator + statistics engine, without the metric modules or the report: every null of
harness.NULLS aggregated into cells here and tested with `cluster_contrasts` (side-balanced
selection frequency vs 1/2, clustered by the candidate's render) stays at the nominal 5%."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tests.calibration.harness import ALPHA, NULLS, direct_tests, render_null_k1, spec, with_planted
from vignette_bench.eval.simulate import simulate

SEEDS = (1, 2)


def _null_tests(null: str) -> pd.DataFrame:
    parts = []
    for seed in SEEDS:
        # both genders: 8 renders per identity and family (with one gender, 4 clusters per identity, the
        # engine's raw rate is ~0.06 at iid over 2160 tests: at its small-sample edge)
        s = spec(null, "demo", seed)
        t = direct_tests(simulate(s)).assign(seed=seed)
        if render_null_k1(s):  # one portrait per identity: its effect is the identity's (harness.render_null_k1)
            t = t[t["family"] != "stereotype"]
        parts.append(t)
    t = pd.concat(parts, ignore_index=True)
    return t[t["flag"].fillna("") == ""]


@pytest.fixture(scope="module")
def null_tests() -> dict[str, pd.DataFrame]:
    return {null: _null_tests(null) for null in NULLS}


def _bound(n: int, rate: float = ALPHA) -> float:
    return rate + 3 * math.sqrt(rate * (1 - rate) / n)


@pytest.mark.parametrize("null", list(NULLS))
def test_raw_false_positive_rate_per_null(null_tests, null):
    t = null_tests[null]
    assert len(t) >= 100  # 12 identities x 5-6 families x 2 seeds
    rate = float((t["p_value"] < ALPHA).mean())
    assert rate <= _bound(len(t)), (null, rate, len(t))


def test_pooled_raw_rate_and_bh_flags_over_all_nulls(null_tests):
    t = pd.concat(null_tests, names=["null", "row"]).reset_index("null")
    rate = float((t["p_value"] < ALPHA).mean())
    assert rate <= _bound(len(t)), rate  # ~1300 tests: bound ~0.068
    # a family (one run's identities of one family and dimension) with any BH flag at q < 0.05
    flagged = t.groupby(["null", "seed", "family", "dimension"])["q"].apply(lambda q: bool((q < ALPHA).any()))
    assert len(flagged) >= 100 and flagged.mean() <= _bound(len(flagged)), (flagged.mean(), len(flagged))


def test_planted_identity_is_found_with_the_right_sign():
    s = with_planted(spec("image_sd_1.1", "demo", 3), "jain", 0.7)
    t = direct_tests(simulate(s))
    jain = t[(t["target"] == "jain") & (t["family"] != "stereotype")].set_index("family")
    assert (jain["estimate"] > 0.55).all(), jain["estimate"]  # 70% on the logit scale, ~67% after the image effect
    assert jain.loc["decision", "q"] < ALPHA and (jain["q"] < ALPHA).sum() >= 3, jain["q"]  # 8 clusters per family
