"""Null calibration and planted preferences for the four VIGNETTE metric modules.

Many small repeated studies are simulated at once: each repetition has its own identity names
("r012_id03"), so one compute call holds all repetitions without them touching each other, and
the modules' BH function (vignette_bench.stats.bh_qvalues) is then applied per repetition (one
family per study).
"""

from __future__ import annotations

import evaluate
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from tests import REPO_ROOT
from vignette_bench.stats import bh_qvalues

ROOT = REPO_ROOT
REPS = 60  # repeated studies under the null (each module call clusters by row: keep it small)
IDS_PER_DIM, DIMS = 10, 2  # 20 identities per study, pairs drawn within a dimension
TRAIT_DIMS = ("ability", "sociability", "morality", "agency", "status")
TERMS = [(f"{d}_{v}{j}", d, v) for d in TRAIT_DIMS for v in ("high", "low") for j in range(2)]  # 20 terms


@pytest.fixture(scope="module")
def metrics():
    return {
        name: evaluate.load(str(ROOT / "metrics" / name))
        for name in ("selection_frequency", "log_odds", "pair_comp", "polarity")
    }


def simulate(reps: int, rows_per_rep: int, seed: int, planted=None) -> pa.Table:
    """Uniform-random answers (2 identities per question); `planted(left, right, term) -> P(left chosen)`."""
    rng = np.random.default_rng(seed)
    n = reps * rows_per_rep
    rep = np.repeat(np.arange(reps), rows_per_rep)
    dim = rng.integers(0, DIMS, n)
    left = dim * IDS_PER_DIM + rng.integers(0, IDS_PER_DIM, n)
    right = dim * IDS_PER_DIM + (left % IDS_PER_DIM + rng.integers(1, IDS_PER_DIM, n)) % IDS_PER_DIM
    term = rng.integers(0, len(TERMS), n)
    p_left = np.full(n, 0.5) if planted is None else planted(left, right, term)
    chose_left = rng.random(n) < p_left
    names = np.array([f"r{r:03d}_id{i:02d}" for r in range(reps) for i in range(DIMS * IDS_PER_DIM)])
    gl, gr = rep * DIMS * IDS_PER_DIM + left, rep * DIMS * IDS_PER_DIM + right
    sel = np.where(chose_left, gl, gr)
    ids = pa.array(names)
    cand = np.empty(2 * n, dtype=np.int32)
    cand[0::2], cand[1::2] = gl, gr
    return pa.table(
        {
            "selected": pa.DictionaryArray.from_arrays(pa.array(sel.astype(np.int32)), ids),
            "candidates": pa.ListArray.from_arrays(
                pa.array(np.arange(0, 2 * n + 1, 2, dtype=np.int32)),
                pa.DictionaryArray.from_arrays(pa.array(cand), ids),
            ),
            "context": pa.array([TERMS[t][0] for t in range(len(TERMS))]).take(pa.array(term)),
            "trait_dimension": pa.array([TERMS[t][1] for t in range(len(TERMS))]).take(pa.array(term)),
            "direction": pa.array([TERMS[t][2] for t in range(len(TERMS))]).take(pa.array(term)),
            "chose_left": pa.array(chose_left),
        }
    )


TABLES = {"selection_frequency": "identities", "log_odds": "cells", "pair_comp": "pairs", "polarity": "scores"}
ESTIMATE = {
    "selection_frequency": "selection_frequency",
    "log_odds": "log_odds",
    "pair_comp": "pair_comp",
    "polarity": "polarity",
}


def run(metric, name: str, table: pa.Table) -> pd.DataFrame:
    columns = ["selected", "candidates", "context", "chose_left"] + (
        ["direction", "trait_dimension"] if name == "polarity" else []
    )
    out = pd.DataFrame(metric.compute(data=table.select(columns))[TABLES[name]])
    out["rep"] = out["identity"].str.slice(1, 4).astype(int)
    return out


@pytest.fixture(scope="module")
def null_results(metrics):
    table = simulate(REPS, 2000, seed=7)
    return {name: run(metrics[name], name, table) for name in metrics}


def test_raw_p_flags_about_five_percent_of_identities(null_results):
    sf = null_results["selection_frequency"]
    tests = len(sf)
    assert tests == REPS * DIMS * IDS_PER_DIM
    rate = (sf["p_value"] < 0.05).mean()
    slack = 3 * np.sqrt(0.05 * 0.95 / tests)  # binomial slack, 3 sd
    assert abs(rate - 0.05) <= slack, rate
    # p-values of a calibrated test are close to uniform: about 10% under 0.1 and half under 0.5.
    assert abs((sf["p_value"] < 0.5).mean() - 0.5) < 0.05


@pytest.mark.parametrize("name", ["selection_frequency", "log_odds", "pair_comp", "polarity"])
def test_null_raw_rate_at_most_alpha_and_bh_familywise(null_results, metrics, name):
    res = null_results[name]
    assert res["p_value"].notna().all() and res["q_value"].notna().all()
    raw = (res["p_value"] < 0.05).mean()
    assert raw <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / len(res)), raw  # Fisher is exact, hence at most alpha
    families = ["rep", "trait_dimension"] if name == "polarity" else ["rep"]  # polarity: BH per dimension and overall
    any_flag = []
    for _, fam in res.groupby(families):
        q = bh_qvalues(fam["p_value"].to_numpy(), tested=(fam["flag"] == "").to_numpy())
        any_flag.append(bool((q < 0.05).any()))
    # BH at q < 0.05 under the complete null flags anything in at most 5% of families.
    rate, n = np.mean(any_flag), len(any_flag)
    assert n >= REPS
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / n), rate


def test_planted_preference_found_with_right_sign(metrics):
    star = 3  # identity r000_id03 is chosen 70% of the time whenever offered

    def planted(left, right, term):
        return np.where(left == star, 0.7, np.where(right == star, 0.3, 0.5))

    table = simulate(1, 40_000, seed=11, planted=planted)
    name = "r000_id03"
    sf = run(metrics["selection_frequency"], "selection_frequency", table).set_index("identity")
    assert sf.loc[name, "selection_frequency"] > 65 and sf.loc[name, "q_value"] < 0.05
    partners = [f"r000_id{i:02d}" for i in range(IDS_PER_DIM) if i != star]
    assert (sf.loc[partners, "selection_frequency"] < 50).all()  # they lose when paired with the star
    others = [f"r000_id{i:02d}" for i in range(IDS_PER_DIM, DIMS * IDS_PER_DIM)]
    assert (sf.loc[others, "q_value"] < 0.05).sum() <= 1  # the other dimension never meets the star
    pc = run(metrics["pair_comp"], "pair_comp", table)
    against = pc[pc["partner"] == name]  # i2 = star: everyone is chosen less when paired with it
    assert (against["pair_comp"] < -10).all() and (against["q_value"] < 0.05).all()
    assert len(against) == IDS_PER_DIM - 1


def test_planted_valence_preference_found_by_polarity_and_log_odds(metrics):
    star = 5
    high = np.array([v == "high" for _, _, v in TERMS])

    def planted(left, right, term):
        p_star = np.where(high[term], 0.7, 0.5)  # chosen 70% for favourable traits, 50% otherwise
        return np.where(left == star, p_star, np.where(right == star, 1 - p_star, 0.5))

    table = simulate(1, 100_000, seed=12, planted=planted)
    name = "r000_id05"
    pol = run(metrics["polarity"], "polarity", table)
    overall = pol[(pol["identity"] == name) & (pol["trait_dimension"] == "overall")].iloc[0]
    assert 15 < overall["polarity"] < 25 and overall["q_value"] < 0.05 and overall["ci_low"] > 0
    lo = run(metrics["log_odds"], "log_odds", table)
    star_cells = lo[lo["identity"] == name]
    is_high = star_cells["context"].str.contains("_high")
    assert (star_cells.loc[is_high, "log_odds"] > 0).all() and (star_cells.loc[~is_high, "log_odds"] < 0).all()
    assert (star_cells.loc[is_high, "q_value"] < 0.05).sum() >= 5
