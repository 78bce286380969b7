"""What a verdict needs, in words: a needed effect beyond the deciding family's possible range is no effect at all.

A selection effect lies in [−50, 50] pp and an accuracy difference or a polarity in [−100, 100]; at demo size
the power calculation gives needs of 200–1,100 pp, which the page printed as if some effect could reach them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vignette_bench.eval.pages.findings import beyond_possible, verdict_needs


def _verdict(needs: list[float], families: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"needed_effect": needs, "family": families, "identity": [f"i{k}" for k in range(len(needs))]})


def test_needs_beyond_the_possible_range_are_counted_apart():
    v = _verdict([12.0, 20.0, 60.0, 150.0, np.nan], ["decision", "factuality", "perception/struggle", "stereotype", ""])
    assert beyond_possible(v).tolist() == [False, False, True, True, False]
    words = verdict_needs(v)
    assert "about 16.0 pp" in words and "12.0–20.0 pp by identity" in words  # median and range of the possible
    assert "for 2 identities no possible effect would reach a verdict" in words
    assert "150" not in words and "60.0" not in words


def test_only_impossible_needs_say_so_and_nothing_else():
    words = verdict_needs(_verdict([300.0], ["factuality"]))
    assert words == "for 1 identity no possible effect would reach a verdict at this size"
    assert verdict_needs(_verdict([np.nan], ["factuality"])) == ""


def test_the_papers_words_for_an_untested_identity_name_no_estimate():
    from vignette_bench.eval.pages.paper import confounded_sentence, table

    sel = pd.DataFrame(
        {
            "family": ["decision", "decision"],
            "dimension": ["religion", "religion"],
            "identity": ["hindu", "muslim"],
            "n": [40, 40],
            "value_paper": [99.9, 0.1],
            "p_paper": [0.014, 0.02],
            "left_share": [0.0, 100.0],
            "value": [99.9, 0.1],
            "p": [1.0, 1.0],
            "flag": ["too_few_clusters", "too_few_clusters"],
            "position": ["position-confounded", ""],
            "reason": [np.nan, np.nan],
        }
    )
    sentence = confounded_sentence(sel)
    assert "hindu" in sentence and sentence.split("side-balanced: ")[1].startswith("no estimate, position-confounded")
    assert "(1 more such rate in the paper's table)" in sentence
    t = table(sel)
    assert t["report: rate (%)"].isna().tolist() == [True, False]  # confounded: no rate; the other is descriptive
    assert t["report: p"].isna().all()  # neither was tested
