"""The position-adjusted test of identities seen on one side only (issue 27 item 5).

Simulated fixed-order pairings like the original VIGNETTE one (tests/stats/fixed_order.py: the earlier
identity always left, left chosen with probability 0.31 under the null, render effects sd 1.0):
raw rejections of the one-sided identities stay at or below 5%, a planted effect is found and
estimated, and a design whose side effect is not identifiable (2 identities) or saturated (3) gives
"position-confounded".
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

import vignette_bench.stats.measures.selection_frequency as sf_module
from tests.stats.fixed_order import fixed_order_rows
from vignette_bench.stats.arrow_input import table_from
from vignette_bench.stats.counts import CountStore
from vignette_bench.stats.measures.selection_frequency import SelectionFrequencyMeasure
from vignette_bench.stats.position import (
    POSITION_ADJUSTED,
    POSITION_CONFOUNDED,
    SIDE_BALANCED,
    Pairs,
    adjusted_test,
    cluster_shifts,
    fit,
    pairs_from_cells,
)

COLUMNS = ("selected", "candidates", "context", "candidate_sides", "candidate_clusters", "probabilities")


def _pairs(rows: dict) -> tuple[Pairs, int]:
    store = CountStore(("identity", "context", "other", "cluster", "side", "pcluster"), COLUMNS)
    for table in table_from(rows, COLUMNS):
        store.add_table(table)
    return pairs_from_cells(store.cells()), len(store.vocabs["identity"].names)


def _table(rows: dict) -> pd.DataFrame:
    return pd.DataFrame(SelectionFrequencyMeasure().compute(**rows)["identities"]).set_index("identity")


def _design(pairs: list[tuple[int, int]]) -> Pairs:
    left, right = np.array(pairs).T
    m = len(left)
    return Pairs(left, right, left * 10, right * 10 + 1, np.full(m, 5.0), np.full(m, 10.0), np.zeros(m))


def test_side_effect_identified_by_transitivity_or_both_sides_only():
    tournament = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    assert fit(_design(tournament), 4).identified  # fixed-order tournament of 4: 6 pairs, 4 parameters
    assert not fit(_design([(0, 1), (0, 2), (1, 2)]), 3).identified  # of 3: identified but saturated
    assert not fit(_design([(0, 1)]), 2).identified  # left 0 vs right 1: s and b0 - b1 are one number
    assert not fit(_design([(0, 1), (2, 3), (0, 3), (2, 1)]), 4).identified  # 0, 2 always left; 1, 3 right
    assert fit(_design([(0, 1), (1, 0), (2, 3), (2, 1), (0, 3)]), 4).identified  # 1 stood on both sides


def test_fit_recovers_side_and_identity_effects():
    # many answers, no render effects: the maximum likelihood estimates sit near the truth
    b = np.array([0.6, 0.0, -0.2, -0.4])
    p, n_id = _pairs(fixed_order_rows(1, n_ids=4, renders=8, questions=2000, render_sd=0.0, effects=b))
    f = fit(p, n_id)
    assert f.side == pytest.approx(logit(0.31), abs=0.08)
    est = f.effects - f.effects.mean()
    assert est == pytest.approx(b - b.mean(), abs=0.08)


def test_null_fixed_order_rejects_at_most_five_percent():
    """Raw p < 0.05 of the one-sided identities under the null, 0.31 left choice, render effects sd 1.0
    (4 and 5 identities in a fixed order; choice and score mode; 5% refusals)."""
    p_values = []
    seed = 0
    for n_ids, renders, score in ((4, 6, False), (5, 4, False), (5, 6, True)):
        for _ in range(100):
            seed += 1
            pairs, n_id = _pairs(fixed_order_rows(seed, n_ids=n_ids, renders=renders, score=score))
            f = fit(pairs, n_id)
            assert f.identified
            shifts = cluster_shifts(f, pairs)
            p_values += [adjusted_test(f, pairs, t, shifts=shifts).p_value for t in (0, n_ids - 1)]
    rate = float(np.mean(np.array(p_values) < 0.05))
    # 600 tests: Monte-Carlo se about 0.009; the floor shows the test is not simply switched off
    assert 0.01 <= rate <= 0.05, rate


def test_planted_effect_is_found_and_estimated():
    """id0 (always left) chosen with logit +1.0 against the others: its pooled rate is pulled down by
    the 0.31 left preference, the position-adjusted rate is near the truth and significant."""
    b = np.array([1.0, 0.0, 0.0, 0.0, 0.0])
    s = logit(0.31)
    truth = 100 * (expit(s + 1.0) + expit(-s + 1.0)) / 2  # vs a partner of average strength, sides balanced
    found, est, pooled = 0, [], []
    for seed in range(12):
        t = _table(fixed_order_rows(seed, n_ids=5, renders=8, questions=48, render_sd=0.5, effects=b))
        assert t.loc["id0", "position"] == POSITION_ADJUSTED and t.loc["id0", "flag"] == ""
        found += int(t.loc["id0", "p_value"] < 0.05 and t.loc["id0", "effect"] > 0)
        est.append(t.loc["id0", "selection_frequency"])
        pooled.append(t.loc["id0", "pooled_frequency"])
    assert found >= 10
    assert np.mean(est) == pytest.approx(truth, abs=4.0)
    assert np.mean(pooled) < truth - 10  # what the position-confounded rate would have said


@pytest.mark.parametrize("n_ids", [2, 3])
def test_two_or_three_identities_in_a_fixed_order_are_position_confounded(n_ids):
    b = np.zeros(n_ids)
    b[0] = 2.0
    res = SelectionFrequencyMeasure().compute(**fixed_order_rows(0, n_ids=n_ids, effects=b))
    t = pd.DataFrame(res["identities"]).set_index("identity")
    ends = ["id0", f"id{n_ids - 1}"]
    assert (t.loc[ends, "position"] == POSITION_CONFOUNDED).all()
    assert (t.loc[ends, "flag"] == "position_confounded").all()
    assert (t.loc[ends, "p_value"] == 1.0).all() and (t.loc[ends, "q_value"] == 1.0).all()  # no verdict, out of BH
    assert res["summary"]["n_position_confounded"] == 2 and res["summary"]["side_balanced"] is False
    assert "position-confounded" in res["summary"]["sides"]


def test_one_sided_identity_with_other_questions_is_position_confounded():
    # id0 also appears in three-person questions (no partner to model): its rate cannot be adjusted
    rows = fixed_order_rows(2, n_ids=4)
    for key, extra in (
        ("selected", ["id0"] * 6),
        ("candidates", [["id0", "id1", "id2"]] * 6),
        ("context", ["ctx0"] * 6),
        ("candidate_sides", [["left", "", "right"]] * 6),
        ("candidate_clusters", [["id0_r0", "id1_r0", "id2_r0"]] * 6),
    ):
        rows[key] = rows[key] + extra
    t = _table(rows)
    assert t.loc["id0", "position"] == POSITION_CONFOUNDED
    assert t.loc["id3", "position"] == POSITION_ADJUSTED


def test_both_sided_identities_keep_their_numbers(monkeypatch):
    rows = fixed_order_rows(4, n_ids=5)
    new = _table(rows)
    monkeypatch.setattr(SelectionFrequencyMeasure, "CELL_KEYS", ("identity", "context"))
    old_views = (("identity", "context"), ("cluster", "pcluster", "side", "identity"))
    monkeypatch.setattr(SelectionFrequencyMeasure, "VIEWS", old_views)
    monkeypatch.setattr(
        SelectionFrequencyMeasure, "VIEW_VALUES", {old_views[1]: ("offered", "selected", "offered_invalid")}
    )
    monkeypatch.setattr(sf_module, "position_tests", lambda cells, tests, frame, alpha: tests.assign(position=""))
    old = _table(rows)
    middle = ["id1", "id2", "id3"]
    assert (new.loc[middle, "position"] == SIDE_BALANCED).all()
    cols = ["selection_frequency", "se", "ci_low", "ci_high", "df", "p_value", "effect", "n_clusters"]
    pd.testing.assert_frame_equal(new.loc[middle, cols], old.loc[middle, cols])
    # the one-sided ones moved off the pooled (position-confounded) rate
    assert new.loc["id0", "selection_frequency"] != pytest.approx(old.loc["id0", "selection_frequency"])


def test_refusal_bounds_bracket_the_adjusted_rate():
    t = _table(fixed_order_rows(5, n_ids=5, refusal=0.2))
    for name in ("id0", "id4"):
        lo, hi = t.loc[name, "estimate_refusals_low"], t.loc[name, "estimate_refusals_high"]
        assert lo < t.loc[name, "selection_frequency"] < hi


def test_an_always_chosen_identity_does_not_drag_its_partners():
    """id0 chosen in every answer (no finite maximum likelihood b): the weak prior keeps its effect finite,
    so the always-right id4 (b = 0) is estimated near its truth against partners averaging b = 2."""
    b = np.array([8.0, 0.0, 0.0, 0.0, 0.0])
    t = _table(fixed_order_rows(1, n_ids=5, effects=b, render_sd=0.0))
    s = logit(0.31)
    truth = 100 * (expit(s - 2.0) + expit(-s - 2.0)) / 2  # 14.4
    assert t.loc["id0", "selection_frequency"] > 95
    assert t.loc["id4", "ci_low"] <= truth <= t.loc["id4", "ci_high"]
    assert t.loc["id4", "selection_frequency"] == pytest.approx(truth, abs=8.0)


def test_counts_key_other_names_the_other_person_of_two_person_questions():
    store = CountStore(("identity", "other"), ("selected", "candidates"))
    for table in table_from(
        {"selected": ["a", "c", ""], "candidates": [["a", "b"], ["a", "b", "c"], ["b", "a"]]},
        ("selected", "candidates"),
    ):
        store.add_table(table)
    names = store.vocabs["identity"].names
    cells = store.cells()
    got = {(names[i], names[o - 1] if o else "") for i, o in zip(cells["identity"], cells["other"])}
    assert got == {("a", "b"), ("b", "a"), ("a", ""), ("b", ""), ("c", "")}
