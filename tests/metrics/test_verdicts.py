"""The modules' verdict columns: side balancing, clusters, score mode, and calibration under a clustered null.

The null simulation follows tests/stats/test_clustered.py's `simulate_cells`, but makes answer
rows for the modules: every render (one identity's picture) has a random effect of sd 1.1 on the
logit scale and recurs in several pair images, the model picks the left person with probability
0.3 whatever the identities, and identities stand on the left in unbalanced shares (0.25-0.75).
"""

from __future__ import annotations

import math

import evaluate
import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from tests import REPO_ROOT

NAMES = ("selection_frequency", "pair_comp", "polarity")
TERMS = [(f"{d}_{v}", d, v) for d in ("ability", "morality", "status") for v in ("high", "low")]


@pytest.fixture(scope="module")
def m():
    return {name: evaluate.load(str(REPO_ROOT / "metrics" / name)) for name in NAMES}


def by_identity(result: dict, table: str = "identities") -> pd.DataFrame:
    return pd.DataFrame(result[table]).set_index("identity")


# Identity a: left 3 times (chosen 2), right once (chosen once); b the complement.
SIDED = dict(
    selected=["a", "a", "b", "a"],
    candidates=[["a", "b"], ["a", "b"], ["a", "b"], ["b", "a"]],
    context=["x"] * 4,
    candidate_sides=[["left", "right"]] * 4,
    candidate_clusters=[["a1", "b1"], ["a2", "b2"], ["a1", "b2"], ["b1", "a2"]],
)


def test_side_balanced_rate_by_hand(m):
    out = by_identity(m["selection_frequency"].compute(**SIDED))
    a = out.loc["a"]
    assert (a["when_left"], a["when_right"], a["left_share"]) == pytest.approx((200 / 3, 100.0, 75.0))
    assert a["selection_frequency"] == pytest.approx((200 / 3 + 100) / 2)  # not the pooled 75
    assert a["pooled_frequency"] == pytest.approx(75.0) and a["effect"] == pytest.approx(a["selection_frequency"] - 50)
    assert a["n_clusters"] == 2 and a["chance"] == 50.0
    b = out.loc["b"]
    assert b["selection_frequency"] == pytest.approx((0 + 100 / 3) / 2)


def test_sides_unknown_fall_back_to_the_pooled_rate(m):
    res = m["selection_frequency"].compute(**{k: v for k, v in SIDED.items() if k != "candidate_sides"})
    assert by_identity(res).loc["a", "selection_frequency"] == pytest.approx(75.0)
    assert res["summary"]["side_balanced"] is False and math.isnan(by_identity(res).loc["a", "left_share"])


def random_rows(n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    ids = np.array(list("abcd"))
    left = rng.integers(0, 4, n)
    right = (left + rng.integers(1, 4, n)) % 4
    pick_left = rng.random(n) < 0.45
    return dict(
        selected=np.where(pick_left, ids[left], ids[right]).tolist(),
        candidates=[[ids[a], ids[b]] for a, b in zip(left, right)],
        context=["x"] * n,
        candidate_sides=[["left", "right"]] * n,
        candidate_clusters=[[f"{ids[a]}{r % 5}", f"{ids[b]}{(r + 1) % 5}"] for a, b, r in zip(left, right, range(n))],
    )


def test_duplicating_answers_inside_their_clusters_does_not_shrink_the_se(m):
    rows = random_rows(300, 1)
    twice = {k: v + v for k, v in rows.items()}  # every answer again, in the same cluster
    for name, table in (("selection_frequency", "identities"), ("pair_comp", "pairs")):
        once = pd.DataFrame(m[name].compute(**rows)[table])
        dup = pd.DataFrame(m[name].compute(**twice)[table])
        assert (once["flag"] == "").all()
        est = "selection_frequency" if name == "selection_frequency" else "pair_comp"
        np.testing.assert_allclose(dup[est], once[est])
        # answers repeated inside a cluster add no information: the se stays (within rounding of df)
        assert (dup["se"] >= 0.95 * once["se"]).all(), name
    # ... whereas with each row as its own cluster (independence assumed) it shrinks by about sqrt(2)
    plain = {k: v for k, v in rows.items() if k != "candidate_clusters"}
    once = by_identity(m["selection_frequency"].compute(**plain))["se"]
    dup = by_identity(m["selection_frequency"].compute(**{k: v + v for k, v in plain.items()}))["se"]
    assert (dup < 0.75 * once).all()


def test_score_mode_uses_the_probabilities(m):
    rows = random_rows(200, 2)
    rng = np.random.default_rng(3)
    p = rng.uniform(0.2, 0.9, 200)
    probs = [[float(x), float(1 - x)] for x in p]
    res = m["selection_frequency"].compute(**rows, probabilities=probs)
    assert res["summary"]["answer_mode"] == "score"
    out = by_identity(res)
    cands = rows["candidates"]
    # a's side-balanced rate from the probabilities, by hand
    y = {
        s: [pr[c.index("a")] for c, pr in zip(cands, probs) if "a" in c and (c.index("a") == 0) == (s == "L")]
        for s in "LR"
    }
    assert out.loc["a", "selection_frequency"] == pytest.approx(50 * (np.mean(y["L"]) + np.mean(y["R"])))
    assert m["selection_frequency"].compute(**rows)["summary"]["answer_mode"] == "choice"


def simulate_null(reps: int, seed: int, n_ids: int = 6, renders: int = 12, images: int = 150, questions: int = 8):
    """Answer rows of `reps` independent studies under the null (see the module docstring)."""
    rng = np.random.default_rng(seed)
    rows: dict[str, list] = {k: [] for k in ("selected", "candidates", "context", "direction", "trait_dimension")}
    rows |= {"candidate_sides": [], "candidate_clusters": []}
    for r in range(reps):
        names = np.array([f"r{r:03d}_id{i}" for i in range(n_ids)])
        share = rng.uniform(0.25, 0.75, n_ids)
        u = rng.normal(0.0, 1.1, (n_ids, renders))
        i = rng.integers(0, n_ids, images)
        j = (i + rng.integers(1, n_ids, images)) % n_ids
        i_left = rng.random(images) < share[i] / (share[i] + share[j]) * 1.0
        ri, rj = rng.integers(0, renders, images), rng.integers(0, renders, images)
        for g in range(images):
            lft, rgt = (i[g], j[g]) if i_left[g] else (j[g], i[g])
            rl, rr = (ri[g], rj[g]) if i_left[g] else (rj[g], ri[g])
            eta = logit(0.3) + u[lft, rl] - u[rgt, rr]
            chose_left = rng.random(questions) < expit(eta)
            term = rng.integers(0, len(TERMS), questions)
            for q in range(questions):
                rows["selected"].append(names[lft] if chose_left[q] else names[rgt])
                rows["candidates"].append([names[lft], names[rgt]])
                rows["candidate_sides"].append(["left", "right"])
                rows["candidate_clusters"].append([f"{names[lft]}/r{rl}", f"{names[rgt]}/r{rr}"])
                rows["context"].append(TERMS[term[q]][0])
                rows["trait_dimension"].append(TERMS[term[q]][1])
                rows["direction"].append(TERMS[term[q]][2])
    return rows


@pytest.mark.slow
def test_null_with_image_effects_and_side_preference_is_calibrated(m):
    # 12 renders per identity: with only ~4 the partners' render effects, shared across an identity's
    # clusters (cross-classification), push the raw rate to ~0.07 (measured; see the metric cards)
    rows = simulate_null(60, seed=11, renders=12, images=150)
    plain = {k: v for k, v in rows.items() if k not in ("direction", "trait_dimension")}
    rates = {}
    for name, table, cols in (
        ("selection_frequency", "identities", plain),
        ("pair_comp", "pairs", plain),
        ("polarity", "scores", rows),
    ):
        out = pd.DataFrame(m[name].compute(**cols)[table])
        if name == "polarity":
            out = out[out["trait_dimension"] == "overall"]
        tested = out["flag"] == ""
        assert tested.mean() > 0.8, (name, out["flag"].value_counts())
        rates[name] = (out["p_value"] < 0.05).mean()
        limit = 0.05 + 3 * math.sqrt(0.05 * 0.95 / len(out))
        assert rates[name] <= limit, (name, rates[name], limit)
    # the paper's pooled, unbalanced Fisher test is fooled by the side preference and the renders
    sf = pd.DataFrame(m["selection_frequency"].compute(**plain)["identities"])
    assert (sf["p_value_paper"] < 0.05).mean() > 0.15
