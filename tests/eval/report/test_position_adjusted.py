"""The report on a fixed-order pairing (issue 27 item 5, issue 33): one-sided identities are adjusted.

A simulated run keeps only the questions whose left person comes first in the dimension's order
(the original VIGNETTE pairing), with a 0.31 left preference: the first identity stood left in all
of its pairs, the last one right. Since issue 33 such a design is tested per gender (the simulator's
genders), every identity partner- and side-balanced from the side model (which fits: the simulator is
additive), with a "both genders" combination; a planted effect on the always-left identity is a verdict
in each gender and in both.
"""

from __future__ import annotations

import pandas as pd
import pytest

from vignette_bench.eval.analysis.numbers import compute
from vignette_bench.eval.analysis.verdicts import BIAS_VERDICTS, verdicts
from vignette_bench.eval.pages.findings import findings_section
from vignette_bench.eval.report.build import verdict_section
from vignette_bench.eval.simulate import SimSpec, simulate


def fixed_order(frame: pd.DataFrame) -> pd.DataFrame:
    """The questions whose left person comes first in alphabetical order (factuality kept whole)."""
    order = {n: i for i, n in enumerate(sorted(set(frame["identity_left"]) | set(frame["identity_right"])))}
    first = frame["identity_left"].map(order) < frame["identity_right"].map(order)
    return frame[first | (frame["paradigm"] == "factuality")]


@pytest.fixture(scope="module")
def planted():
    spec = SimSpec(
        seed=1,
        dimensions=("religion",),
        n_activities=4,
        n_traits=4,
        p_left=0.31,
        renders_per_cell=3,
        paradigms=("perception", "decision"),
        planted=(("buddhist", 0.8),),  # first in the order: always left
    )
    n = compute(fixed_order(simulate(spec)), detail=False)
    return n, verdicts(n.tests())


BALANCED = "partner- and side-balanced (side model)"
STRATA = ("religion · female", "religion · male", "religion · both genders")


def test_one_sided_identities_are_partner_balanced_per_gender_in_every_two_person_family(planted):
    n, _ = planted
    sel = n.selection.set_index(["family", "dimension", "identity"])
    for family in ("decision", "perception/struggle", "perception/capability"):
        for dim in STRATA:
            assert sel.loc[(family, dim, "buddhist"), "left_share"] == 100.0
            assert sel.loc[(family, dim, "zoroastrian"), "left_share"] == 0.0
            for who in ("buddhist", "zoroastrian", "hindu"):
                assert sel.loc[(family, dim, who), "position"] == BALANCED
    t = n.tests()
    one_sided = t[t["identity"].isin(["buddhist", "zoroastrian"])]
    assert (one_sided["flag"] == "").all()  # tested, not position-confounded
    assert (one_sided["position"] == BALANCED).all()


def test_planted_always_left_identity_is_a_verdict_in_each_gender_and_both(planted):
    n, v = planted
    rows = v[v["identity"] == "buddhist"].set_index("dimension")
    for dim in STRATA:
        assert rows.loc[dim, "position"] == BALANCED and rows.loc[dim, "effect"] > 15
    # the median-partner centre's variance (median partners held fixed) is conservative: in this small
    # fixture (4 activities) the male stratum alone no longer reaches q < 0.05; female and both do
    for dim in ("religion · female", "religion · both genders"):
        assert rows.loc[dim, "verdict"] == "bias +"
    # planted 80%: partner- and side-balanced 74-78% (decision); the pooled rates (the paper's S) were 53-69%
    assert rows.loc["religion · both genders", "effect"] > 15
    assert not v[v["identity"] == "zoroastrian"]["verdict"].isin(BIAS_VERDICTS).any()
    table = dict(verdict_section(n, v, 5.0).tables)
    shown = next(t for title, t in table.items() if title.startswith("Verdict per identity"))
    assert (shown[shown["identity"] == "buddhist"]["position"] == BALANCED).all()
    s = findings_section(
        "m",
        n,
        v,
        answers=1,
        run_names=["r"],
        min_effect=5.0,
        placeholder=False,
        simulated=True,
        variant=None,
        links={},
        draw=False,
    )
    text = "\n".join(s.items)
    assert "**buddhist** (religion · both genders) — bias +" in text


def test_numbers_and_the_module_use_the_same_label():
    from vignette_bench.eval.analysis import numbers
    from vignette_bench.stats import position

    assert numbers.POSITION_ADJUSTED == position.POSITION_ADJUSTED


def test_two_identities_in_a_fixed_order_stay_position_confounded():
    spec = SimSpec(seed=2, dimensions=("gender",), n_activities=4, p_left=0.31, paradigms=("decision",))
    n = compute(fixed_order(simulate(spec)), detail=False)
    sel = n.selection[n.selection["family"] == "decision"]
    assert len(sel) == 2 and (sel["position"] == "position-confounded").all()  # gender: two identities
    v = verdicts(n.tests()).set_index("identity")
    assert (v["verdict"] == "position-confounded").all() and (v["position"] == "position-confounded").all()
