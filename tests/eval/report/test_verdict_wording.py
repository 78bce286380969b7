"""Verdict wording (issue 27): refusal-fragile directions and position-confounded identities."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vignette_bench.eval.analysis.numbers import POSITION_CONFOUNDED, TEST_COLUMNS, Numbers
from vignette_bench.eval.report.build import BIAS_VERDICTS, verdicts


def _tests(rows) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "identity": i,
                "dimension": "religion",
                "family": f,
                "effect": e,
                "se": 2.0,
                "ci_low": e - 4.0,
                "ci_high": e + 4.0,
                "p": p,
                "q": p,
                "n_clusters": 8,
                "detectable_effect": 5.6,
                "flag": flag,
                "robust": robust,
                "answer_mode": "choice",
            }
            for i, f, e, p, flag, robust in rows
        ]
    )


def test_a_direction_the_refusal_bounds_can_change_is_not_a_signed_verdict():
    t = _tests(
        [
            ("a", "decision", 12.0, 1e-6, "", True),
            ("b", "decision", -12.0, 1e-6, "", False),  # the bounds erase or reverse it
            ("c", "decision", 12.0, 1e-6, "", np.nan),  # not computed (e.g. polarity): signed as before
        ]
    )
    v = verdicts(t).set_index("identity")["verdict"].to_dict()
    assert v == {"a": "bias +", "b": "bias (not robust to refusals)", "c": "bias +"}
    assert set(v.values()) <= set(BIAS_VERDICTS)


def test_identities_seen_on_one_side_only_are_position_confounded_not_accused():
    t = _tests(
        [
            ("a", "decision", 30.0, np.nan, POSITION_CONFOUNDED, True),  # always left: pooled rate
            ("b", "decision", 30.0, np.nan, POSITION_CONFOUNDED, True),
            ("b", "perception/struggle", -12.0, 1e-6, "", True),  # b's other family is balanced
        ]
    )
    v = verdicts(t).set_index("identity")
    assert v.loc["a", "verdict"] == "position-confounded" and np.isnan(v.loc["a", "q_global"])
    assert v.loc["b", "verdict"] == "bias −" and v.loc["b", "family"] == "perception/struggle"
    assert v.loc["b", "n_families"] == 1


def test_numbers_flags_one_sided_selection_tests():
    sel = pd.DataFrame(
        {
            "family": ["decision"] * 3,
            "dimension": "age",
            "identity": ["old", "young", "adult"],
            "effect": [-20.0, 20.0, 1.0],
            "effect_low": [-25.0, 15.0, -1.0],
            "effect_high": [-15.0, 25.0, 3.0],
            "se": 3.0,
            "p": [1e-4, 1e-4, 0.5],
            "q": [1e-4, 1e-4, 0.5],
            "n_clusters": 8,
            "detectable_effect": 8.0,
            "flag": "",
            "robust": True,
            "left_share": [100.0, 0.0, 50.0],
        }
    )
    empty = pd.DataFrame()
    n = Numbers("m", empty, sel, empty, empty, empty, pd.DataFrame(columns=["trait_dimension"]))
    t = n.tests().set_index("identity")
    assert list(t.columns) == [c for c in TEST_COLUMNS if c != "identity"]
    assert t.loc["old", "flag"] == POSITION_CONFOUNDED and t.loc["young", "flag"] == POSITION_CONFOUNDED
    assert t.loc["adult", "flag"] == ""
    v = verdicts(n.tests()).set_index("identity")["verdict"].to_dict()
    assert v == {"old": "position-confounded", "young": "position-confounded", "adult": "no evidence of bias"}


def test_design_table_names_the_clustering():
    from vignette_bench.eval.analysis.numbers import compute
    from vignette_bench.eval.simulate import SimSpec, simulate

    frame = simulate(SimSpec(seed=3, dimensions=("religion",), n_activities=2, n_traits=4))
    d = compute(frame, detail=False).design.set_index("family")["cluster_unit"]
    assert d["decision"] == "two-way (own × partner render)"
    assert d["perception/struggle"] == "two-way (own × partner render)"
    assert d["stereotype"] == "one-way (pair image)"  # one portrait per identity and gender
    assert d["factuality"] == "one-way (render of the person asked about)"
