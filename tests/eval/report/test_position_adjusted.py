"""The report on a fixed-order pairing (issue 27 item 5): one-sided identities are position-adjusted.

A simulated run keeps only the questions whose left person comes first in the dimension's order
(the original VIGNETTE pairing), with a 0.31 left preference: the first identity stood left in all
of its pairs, the last one right. Their rates are adjusted for the side preference, labelled
"position-adjusted" in the selection table, the verdict table and the findings, and a planted
effect on the always-left identity is a verdict.
"""

from __future__ import annotations

import pandas as pd
import pytest

from vignette_bench.eval.analysis.findings import findings_section
from vignette_bench.eval.analysis.numbers import compute
from vignette_bench.eval.analysis.verdicts import BIAS_VERDICTS, verdicts
from vignette_bench.eval.report.build import design_table, verdict_section
from vignette_bench.eval.report.simulate import SimSpec, simulate


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


def test_one_sided_identities_are_position_adjusted_in_every_two_person_family(planted):
    n, _ = planted
    sel = n.selection.set_index(["family", "identity"])
    for family in ("decision", "perception/struggle", "perception/capability"):
        assert sel.loc[(family, "buddhist"), "left_share"] == 100.0
        assert sel.loc[(family, "zoroastrian"), "left_share"] == 0.0
        assert sel.loc[(family, "buddhist"), "position"] == "position-adjusted"
        assert sel.loc[(family, "zoroastrian"), "position"] == "position-adjusted"
        assert sel.loc[(family, "hindu"), "position"] == "side-balanced"
    d = design_table(n).set_index("family")["side-balanced"]
    assert d["decision"] == "no (2 position-adjusted)"
    t = n.tests()
    one_sided = t[t["identity"].isin(["buddhist", "zoroastrian"])]
    assert (one_sided["flag"] == "").all()  # tested, no longer position-confounded
    assert (one_sided["position"] == "position-adjusted").all()


def test_planted_always_left_identity_is_a_position_adjusted_verdict(planted):
    n, v = planted
    row = v.set_index("identity").loc["buddhist"]
    assert row["verdict"] == "bias +" and row["position"] == "position-adjusted"
    # planted 80%: position-adjusted 70-79% in its five families; the pooled rates (the paper's S) were 53-69%
    assert row["effect"] > 15
    assert v.set_index("identity").loc["zoroastrian", "verdict"] not in BIAS_VERDICTS
    table = dict(verdict_section(n, v, 5.0).tables)
    shown = next(t for title, t in table.items() if title.startswith("Verdict per identity")).set_index("identity")
    assert shown.loc["buddhist", "position"] == "position-adjusted"
    assert shown.loc["hindu", "position"] == "side-balanced"
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
    assert "**buddhist** (religion) — bias +" in text and "position-adjusted (seen on one side only)" in text


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
