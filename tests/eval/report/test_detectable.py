"""What a run could have found (issue 23): the detectable effect comes from the design under the null
(vignette_bench/eval/analysis/power.py), not from how much the answers varied, so a model that always
answers alike is not told it "could not have found effects smaller than 0.11 pp"."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from vignette_bench.eval.analysis.numbers import compute, family_inputs, metric
from vignette_bench.eval.analysis.power import detectable_pp, null_se, polarity_detectable
from vignette_bench.eval.pages.findings import could_not_find
from vignette_bench.eval.simulate import SimSpec, simulate
from vignette_bench.stats.planning import detectable_effect

DESIGN = dict(dimensions=("religion", "age"), genders=("female", "male"), n_activities=4, n_traits=8)


def test_null_se_is_the_binomial_se_of_the_side_balanced_or_pooled_rate():
    parts = pd.DataFrame(
        {
            "identity": ["a", "a", "b", "b"],
            "part": 0,
            "w": 1.0,
            "side": ["left", "right", "left", ""],
            "n": [10, 30, 20, 5],
        }
    )
    se = null_se(parts, pd.Series({"a": 0.5, "b": 0.25}))
    assert se["a"] == pytest.approx(0.5 * math.sqrt(0.25 * (1 / 10 + 1 / 30)))  # ½ (R_left + R_right)
    assert se["b"] == pytest.approx(math.sqrt(0.25 * 0.75 / 25))  # never right: pooled over its 25 offers
    assert detectable_pp(se["a"], 5)[0] == pytest.approx(100 * detectable_effect(se["a"], df=4))
    assert math.isnan(detectable_pp(se["a"], 1)[0])  # one cluster: no test is possible
    assert math.isnan(detectable_pp(se["a"], 5, "too_few_clusters")[0])
    assert detectable_pp(se["a"], 5, "zero_variance")[0] > 0  # the design could test; the answers did not vary


def test_polarity_weights_each_trait_dimension_and_their_mean():
    rows = [
        {
            "candidates": ["x", "y"] if side == "left" else ["y", "x"],
            "candidate_sides": ["left", "right"],
            "selected": "x",
            "trait_dimension": dim,
            "direction": direction,
        }
        for dim in ("warmth", "competence")
        for direction in ("high", "low")
        for side in ("left", "right")
        for _ in range(10)
    ]
    scores = pd.DataFrame(
        {"identity": "x", "trait_dimension": ["warmth", "competence", "overall"], "n_clusters": 5, "flag": ""}
    )
    got = polarity_detectable(pd.DataFrame(rows), scores)
    one = 0.5 * math.sqrt(2 * 0.25 * (1 / 10 + 1 / 10))  # high − low, each side-balanced over 10 + 10 offers
    both = 0.5 * math.sqrt(4 * 0.5**2 * 0.25 * (1 / 10 + 1 / 10))  # the mean of two such nets
    expected = 100 * detectable_effect(1.0, df=4) * np.array([one, one, both])
    assert got == pytest.approx(expected) and both == pytest.approx(one / math.sqrt(2))


def _flat(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """A near-constant score answerer: every two-way probability 0.5 ± 0.0001 (the tiny demo LLaVA's kind)."""
    rng = np.random.default_rng(seed)
    out = frame.copy()
    probs, chosen = [], []
    for cands, p in zip(out["candidates"], out["probabilities"]):
        if p is None or len(p) != 2:
            probs.append(p)
            chosen.append(None)
            continue
        a = 0.5 + 1e-4 * rng.uniform(-1, 1)
        probs.append([a, 1.0 - a])
        chosen.append(cands[0] if a > 0.5 else cands[1])
    out["probabilities"] = probs
    two = out["probabilities"].map(lambda p: p is not None and len(p) == 2)
    out.loc[two, "selected_identity"] = [c for c, t in zip(chosen, two) if t]
    return out


def _by_family(n) -> pd.Series:
    d = n.design.assign(paradigm=n.design["family"].str.split("/").str[0])
    return d.groupby("paradigm")["detectable_effect"].median()


def test_a_near_constant_answerer_gets_the_designs_detectable_effect_not_a_tiny_one():
    flat = _flat(simulate(SimSpec(seed=3, answer_mode="score", **DESIGN)), seed=3)
    n_flat = compute(flat, detail=False)
    n_random = compute(simulate(SimSpec(seed=3, **DESIGN)), detail=False)
    two_way = n_flat.selection[n_flat.selection["family"] != "factuality"]
    assert two_way["se"].median() < 0.1  # the answers hardly vary: an observed-se detectable effect would be ~0
    flat_de, random_de = _by_family(n_flat), _by_family(n_random)
    for paradigm in ("decision", "perception", "stereotype"):
        assert flat_de[paradigm] > 3.0
        assert 0.8 < flat_de[paradigm] / random_de[paradigm] < 1.25  # one design, one detectable effect
    sentence = could_not_find(n_flat)
    smallest = min(float(x) for x in re.findall(r"(\d+(?:\.\d+)?) pp", sentence))
    assert smallest > 3.0, sentence


def test_an_exactly_constant_answerer_is_said_to_have_answers_that_did_not_vary():
    n = compute(simulate(SimSpec(seed=4, answer_mode="score", **DESIGN)), detail=False)  # every probability 0.5
    decision = n.design[n.design["family"] == "decision"]
    assert (decision["n_tested"] == 0).all() and (decision["detectable_effect"] > 3.0).all()
    assert re.search(r"anything in [^;(]*decision[^;(]* \(the answers did not vary", could_not_find(n))


def test_a_random_answerers_detectable_effect_is_about_the_observed_se_one():
    frame = simulate(SimSpec(seed=5, **DESIGN))
    n = compute(frame, detail=False)
    ratios = []
    for family, inputs in family_inputs(frame).items():
        if family in ("factuality", "stereotype"):
            continue
        for dim, part in inputs.groupby("dimension"):
            cols = [c for c in part.columns if c != "dimension" and part[c].notna().any()]
            module = pd.DataFrame(
                metric("selection_frequency").compute(data=part[cols].reset_index(drop=True))["identities"]
            )
            ours = n.selection[(n.selection["family"] == family) & (n.selection["dimension"] == dim)]
            both = ours.merge(module[["identity", "detectable_effect"]], on="identity", suffixes=("", "_observed"))
            ratios += list(both["detectable_effect"] / both["detectable_effect_observed"])
    ratios = np.asarray(ratios, float)
    ratios = ratios[np.isfinite(ratios)]
    assert len(ratios) > 20 and 0.85 < float(np.median(ratios)) < 1.25
