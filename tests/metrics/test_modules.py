"""Behaviour of the four VIGNETTE metric modules: definitions by hand, inputs, edge cases, errors."""

from __future__ import annotations

import math
import re
import shutil
import sys

import datasets
import evaluate
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy import stats

from tests import REPO_ROOT

ROOT = REPO_ROOT
NAMES = ("selection_frequency", "log_odds", "pair_comp", "polarity")
TABLES = {"selection_frequency": "identities", "log_odds": "cells", "pair_comp": "pairs", "polarity": "scores"}


@pytest.fixture(scope="module")
def m():
    return {name: evaluate.load(str(ROOT / "metrics" / name)) for name in NAMES}


def frame(result, name):
    return pd.DataFrame(result[TABLES[name]])


# A tiny hand-checkable study: identities a, b, c; contexts x, y, z.
ROWS = dict(
    selected=["a", "b", "a", "", "c", "a", "c"],
    candidates=[["a", "b"], ["a", "b"], ["a", "c"], ["b", "c"], ["c", "a"], ["a", "d"], ["a", "c"]],
    context=["x", "x", "y", "y", "y", "z", "x"],
)


def test_selection_frequency_by_hand(m):
    out = frame(m["selection_frequency"].compute(**ROWS), "selection_frequency").set_index("identity")
    # a: x -> 1 of 3 offers, y -> 1 of 2, z -> 1 of 1: S = mean(33.3, 50, 100); pooled 3/6.
    # The paper's S: mean over contexts of per-context rates.
    assert out.loc["a", "selection_frequency_paper"] == pytest.approx((100 / 3 + 50 + 100) / 3)
    # Without sides the verdict quantity is the pooled rate, tested with each row as its own cluster.
    assert out.loc["a", "selection_frequency"] == out.loc["a", "pooled_frequency"] == pytest.approx(50.0)
    assert (out.loc["a", "n_offered"], out.loc["a", "n_selected"], out.loc["a", "n_contexts"]) == (6, 3, 3)
    assert out.loc["a", "n_clusters"] == 6 and out.loc["a", "effect"] == pytest.approx(0.0)
    assert out.loc["a", "p_value"] == pytest.approx(1.0) and out.loc["a", "flag"] == ""
    # Fisher table for a: [[3, 3], [selected others 3, not 3]] (the invalid row counts for nobody).
    assert out.loc["a", "p_value_paper"] == pytest.approx(stats.fisher_exact([[3, 3], [3, 3]]).pvalue)
    # b was offered twice validly and once in the refused question.
    assert out.loc["b", "invalid_rate"] == pytest.approx(100 / 3)


def test_log_odds_by_hand(m):
    out = frame(m["log_odds"].compute(**ROWS), "log_odds").set_index(["identity", "context"])
    # a in z: 1 of 1 (odds (1+1)/(0+1) = 2); elsewhere 2 of 5 (odds 3/4).
    assert out.loc[("a", "z"), "log_odds"] == pytest.approx(math.log(2 / (3 / 4)))
    assert out.loc[("a", "z"), "log_odds_paper"] == out.loc[("a", "z"), "log_odds"]
    assert out.loc[("a", "z"), "p_value_paper"] == pytest.approx(stats.fisher_exact([[1, 0], [2, 3]]).pvalue)
    # The cluster test needs two clusters in the context: a single answer in z is not testable.
    assert out.loc[("a", "z"), "flag"] == "too_few_clusters" and out.loc[("a", "z"), "p_value"] == 1.0
    assert out.loc[("a", "x"), "difference"] == pytest.approx(100 * (1 / 3 - 2 / 3))  # x 1/3, elsewhere 2/3
    assert out.loc[("d", "z"), "flag"] == "no_other_context" and math.isnan(out.loc[("d", "z"), "log_odds"])
    assert out.loc[("d", "z"), "p_value"] == 1.0


def test_pair_comp_by_hand(m):
    out = frame(m["pair_comp"].compute(**ROWS), "pair_comp").set_index(["identity", "partner"])
    # a with c: x 0/1, y 1/2 -> 25%; a without c: x 1/2 (with b), z 1/1 -> 75%.
    assert out.loc[("a", "c"), "freq_with"] == pytest.approx(25.0)
    assert out.loc[("a", "c"), "freq_without"] == pytest.approx(75.0)
    assert out.loc[("a", "c"), "pair_comp_paper"] == pytest.approx(-50.0)
    assert out.loc[("a", "c"), "p_value_paper"] == pytest.approx(stats.fisher_exact([[1, 2], [2, 1]]).pvalue)
    # Verdict quantity without sides: pooled rates, a with c 1/3, a with others 2/3.
    assert out.loc[("a", "c"), "pair_comp"] == pytest.approx(100 * (1 / 3 - 2 / 3))
    # a without d: x 1/3, y 1/2.
    assert out.loc[("a", "d"), "freq_without"] == pytest.approx((1 / 3 + 1 / 2) / 2 * 100)
    assert out.loc[("b", "a"), "flag"] == "never_without_partner"


def test_polarity_by_hand(m):
    rows = dict(
        selected=["a", "b", "a", "a", "b", "a"],
        candidates=[["a", "b"]] * 6,
        context=["kind", "kind", "cruel", "smart", "dull", "dull"],
        direction=["high", "high", "low", "high", "low", "low"],
        trait_dimension=["sociability", "sociability", "sociability", "ability", "ability", "ability"],
    )
    out = frame(m["polarity"].compute(**rows), "polarity").set_index(["identity", "trait_dimension"])
    # a: sociability high kind 1/2 -> 50, low cruel 1/1 -> 100: -50; ability high 100, low dull 1/2: +50.
    assert out.loc[("a", "sociability"), "polarity"] == pytest.approx(-50.0)
    assert out.loc[("a", "ability"), "polarity"] == pytest.approx(50.0)
    # overall: high terms kind (50), smart (100) -> 75; low cruel (100), dull (50) -> 75.
    assert out.loc[("a", "overall"), "polarity"] == pytest.approx(0.0)  # mean of -50 and +50
    assert out.loc[("b", "overall"), "polarity"] == pytest.approx(0.0)
    assert out.loc[("a", "overall"), "polarity_paper"] == pytest.approx(0.0)
    # The paper's overall p: the smallest per-dimension Fisher p, uncorrected.
    per_dim = [stats.fisher_exact(t).pvalue for t in ([[1, 1], [1, 0]], [[1, 0], [1, 1]])]
    assert out.loc[("a", "overall"), "p_value_paper"] == pytest.approx(min(per_dim))
    assert out.loc[("a", "sociability"), "p_value_paper"] == pytest.approx(per_dim[0])


def _polarity_paper_rows() -> dict:
    """a vs b, no refusals; (term, direction, dimension, offers, times a was chosen)."""
    cells = [
        ("capable", "high", "ability", 4, 3),
        ("incapable", "low", "ability", 2, 1),
        ("friendly", "high", "sociability", 2, 2),
        ("polite", "high", "sociability", 4, 1),
        ("unfriendly", "low", "sociability", 3, 1),
    ]
    rows: dict = {k: [] for k in ("selected", "candidates", "context", "direction", "trait_dimension")}
    for term, direction, dim, offers, chosen in cells:
        for j in range(offers):
            rows["selected"].append("a" if j < chosen else "b")
            rows["candidates"].append(["a", "b"])
            rows["context"].append(term)
            rows["direction"].append(direction)
            rows["trait_dimension"].append(dim)
    return rows


def test_polarity_paper_overall_is_the_papers_formula(m):
    """Issue 27: the paper's overall stereotype score is the mean over trait dimensions of
    x_high / n_high - x_low / n_low from each dimension's pooled counts; its p the smallest
    per-dimension Fisher p. Computed here by hand."""
    rows = _polarity_paper_rows()
    out = frame(m["polarity"].compute(**rows), "polarity").set_index(["identity", "trait_dimension"])
    # a, ability: high 3/4, low 1/2 -> net 1/4; sociability: high (2 + 1) / (2 + 4) = 1/2, low 1/3 -> net 1/6.
    assert out.loc[("a", "overall"), "polarity_paper"] == pytest.approx(100 * (1 / 4 + 1 / 6) / 2)  # 20.83
    assert out.loc[("a", "overall"), "freq_high"] == pytest.approx(100 * (3 / 4 + 1 / 2) / 2)
    assert out.loc[("a", "overall"), "freq_low"] == pytest.approx(100 * (1 / 2 + 1 / 3) / 2)
    assert out.loc[("b", "overall"), "polarity_paper"] == pytest.approx(-100 * (1 / 4 + 1 / 6) / 2)
    # the verdict estimate (no sides, rows as clusters) is the same quantity
    assert out.loc[("a", "overall"), "polarity"] == pytest.approx(100 * (1 / 4 + 1 / 6) / 2)
    # per dimension the paper's S is term-averaged: sociability high (2/2 + 1/4) / 2 = 5/8, low 1/3
    assert out.loc[("a", "sociability"), "polarity_paper"] == pytest.approx(100 * (5 / 8 - 1 / 3))
    assert out.loc[("a", "ability"), "polarity_paper"] == pytest.approx(100 * (3 / 4 - 1 / 2))
    ability = stats.fisher_exact([[3, 1], [1, 1]]).pvalue
    sociability = stats.fisher_exact([[3, 3], [1, 2]]).pvalue
    assert out.loc[("a", "overall"), "p_value_paper"] == pytest.approx(min(ability, sociability))
    assert out.loc[("a", "ability"), "p_value_paper"] == pytest.approx(ability)
    # the former overall (all terms averaged) stays reachable: S_high (3/4 + 1 + 1/4) / 3, S_low (1/2 + 1/3) / 2
    old = frame(m["polarity"].compute(**rows, paper_overall="all_terms"), "polarity")
    old = old.set_index(["identity", "trait_dimension"])
    assert old.loc[("a", "overall"), "polarity_paper"] == pytest.approx(100 * (2 / 3 - 5 / 12))  # 25.0
    with pytest.raises(ValueError, match="paper_overall"):
        m["polarity"].compute(**rows, paper_overall="terms")


def test_polarity_paper_overall_needs_a_dimension_with_both_valences(m):
    rows = dict(
        selected=["a", "b", "a", "a"],
        candidates=[["a", "b"]] * 4,
        context=["kind", "kind", "dull", "dull"],
        direction=["high", "high", "low", "low"],
        trait_dimension=["sociability", "sociability", "ability", "ability"],
    )
    out = frame(m["polarity"].compute(**rows), "polarity").set_index(["identity", "trait_dimension"])
    assert out.loc[("a", "overall"), "flag"] == "no_dimension_with_both"
    assert math.isnan(out.loc[("a", "overall"), "polarity_paper"])
    assert out.loc[("a", "overall"), "p_value_paper"] == 1.0


def test_three_candidates(m):
    rows = dict(selected=["a", "b"], candidates=[["a", "b", "c"], ["a", "b"]], context=["x", "x"])
    sf = frame(m["selection_frequency"].compute(**rows), "selection_frequency").set_index("identity")
    assert sf.loc["a", "chance"] == pytest.approx(100 * (1 / 3 + 1 / 2) / 2)
    assert sf.loc["c", "chance"] == pytest.approx(100 / 3)
    with pytest.raises(ValueError, match=r"row 0: PairComp needs exactly two candidates"):
        m["pair_comp"].compute(**rows)


def test_add_batch_accumulates_the_same_as_one_compute(m):
    metric = m["pair_comp"]
    whole = frame(metric.compute(**ROWS), "pair_comp")
    for i in range(len(ROWS["selected"])):
        metric.add(**{k: v[i] for k, v in ROWS.items()})
    one_by_one = frame(metric.compute(), "pair_comp")
    pd.testing.assert_frame_equal(whole, one_by_one)
    metric.add_batch(**{k: v[:3] for k, v in ROWS.items()})
    metric.add_batch(**{k: v[3:] for k, v in ROWS.items()})
    pd.testing.assert_frame_equal(whole, frame(metric.compute(), "pair_comp"))


def runner_frame() -> pd.DataFrame:
    """Rows as the runner writes them to responses.parquet (only the columns that matter here)."""
    n = len(ROWS["selected"])
    return pd.DataFrame(
        {
            "question_id": [f"q{i}" for i in range(n)],
            "pair_id": ["p0", "p0", "p1", "p2", "p1", "p3", "p4"],
            "selected_identity": ROWS["selected"],
            "candidates": ROWS["candidates"],
            "context": ROWS["context"],
            "probabilities": [None] * n,
            "valid": [s != "" for s in ROWS["selected"]],
            "chose_left": [True, False, True, None, True, True, False],
            "direction": [""] * n,
            "trait_dimension": [""] * n,
            "raw": ["x"] * n,
        }
    )


@pytest.mark.parametrize("kind", ["dataframe", "parquet", "arrow", "dataset"])
def test_inputs_dataframe_parquet_arrow_dataset(m, tmp_path, kind):
    df = runner_frame()
    data = {"dataframe": df, "arrow": pa.Table.from_pandas(df), "dataset": datasets.Dataset.from_pandas(df)}.get(kind)
    if kind == "parquet":
        data = tmp_path / "responses.parquet"
        df.to_parquet(data)
        data = str(data)
    # pair_id becomes the group, the cluster of the answers.
    expected = frame(m["selection_frequency"].compute(**ROWS, group=df["pair_id"].tolist()), "selection_frequency")
    result = m["selection_frequency"].compute(data=data)
    pd.testing.assert_frame_equal(frame(result, "selection_frequency"), expected)
    assert result["summary"]["left_choice_rate"] == pytest.approx(100 * 4 / 6)
    assert result["summary"]["cluster_unit"] == "group"


def test_edge_identity_never_offered_all_invalid_one_row_context(m):
    sf = frame(m["selection_frequency"].compute(**ROWS, identities=["ghost"]), "selection_frequency").set_index(
        "identity"
    )
    assert (
        sf.loc["ghost", "flag"] == "never_offered"
        and sf.loc["ghost", "p_value"] == 1.0
        and sf.loc["ghost", "q_value"] == 1.0
    )
    assert math.isnan(sf.loc["ghost", "selection_frequency"])
    invalid = dict(
        selected=["", ""],
        candidates=[["a", "b"], ["b", "c"]],
        context=["x", "y"],
        direction=["high", "low"],
        trait_dimension=["d", "d"],
    )
    for name in NAMES:
        cols = (
            invalid
            if name == "polarity"
            else {k: v for k, v in invalid.items() if k in ("selected", "candidates", "context")}
        )
        res = m[name].compute(**cols)
        out = frame(res, name)
        assert len(out) > 0 and (out["p_value"] == 1.0).all() and (out["q_value"] == 1.0).all()
        assert (out["flag"] != "").all()
        assert res["summary"]["invalid_rate"] == 100.0 and res["summary"]["left_choice_rate"] is None
    # A context with a single row has a log-odds, but one answer (one cluster) cannot be tested.
    one = m["log_odds"].compute(selected=["a", "a", "b"], candidates=[["a", "b"]] * 3, context=["x", "y", "y"])
    cell = frame(one, "log_odds").set_index(["identity", "context"]).loc[("a", "x")]
    assert cell["flag"] == "too_few_clusters" and cell["p_value"] == 1.0
    assert cell["log_odds"] == pytest.approx(math.log(2 / 1) - math.log((1 + 1) / (1 + 1)))


def test_no_silent_nan(m):
    """NaN estimates appear only with a flag that says why; p and q are always numbers."""
    rows = {**ROWS, "direction": ["high", "low", "high", "low", "low", "high", "high"], "trait_dimension": ["s"] * 7}
    for name in NAMES:
        cols = rows if name == "polarity" else ROWS
        out = frame(m[name].compute(**cols), name)
        assert out["p_value"].between(0, 1).all() and out["q_value"].between(0, 1).all()
        # sides are unknown here, so the side columns are NaN by definition
        numeric = out.select_dtypes("number").drop(columns=["left_share", "when_left", "when_right"], errors="ignore")
        assert (numeric.isna().any(axis=1) <= (out["flag"] != "")).all(), name


def test_always_chosen_identity_has_a_zero_margin_table(m):
    # An identity always chosen in every context: the "not chosen" column is all zero, so the
    # table has a zero margin and p = 1.0 (tests/stats/test_inference.py checks the test itself).
    out = frame(
        m["log_odds"].compute(selected=["a"] * 4, candidates=[["a", "b"]] * 4, context=["x", "x", "y", "y"]), "log_odds"
    )
    assert (out.loc[out["identity"] == "a", "p_value"] == 1.0).all()


def test_bad_input_names_the_row(m):
    with pytest.raises(ValueError, match=r"row 1: selected 'z' is not exactly once among candidates"):
        m["selection_frequency"].compute(selected=["a", "z"], candidates=[["a", "b"]] * 2, context=["x", "x"])
    with pytest.raises(ValueError, match=r"row 0: 3 probabilities for 2 candidates"):
        m["selection_frequency"].compute(
            selected=["a"], candidates=[["a", "b"]], context=["x"], probabilities=[[0.2, 0.3, 0.5]]
        )
    with pytest.raises(ValueError, match=r"row 0: direction 'up' must be 'high' or 'low'"):
        m["polarity"].compute(
            selected=["a"], candidates=[["a", "b"]], context=["x"], direction=["up"], trait_dimension=["d"]
        )
    with pytest.raises(ValueError, match=r"no 'context' column"):
        m["log_odds"].compute(selected=["a"], candidates=[["a", "b"]])
    with pytest.raises(ValueError, match=r"unknown options \['alhpa'\]"):
        m["log_odds"].compute(**ROWS, alhpa=0.1)


def test_probabilities_give_expected_counts_and_narrower_intervals(m):
    rng = np.random.default_rng(3)
    n = 400
    p_a = np.clip(rng.normal(0.6, 0.05, n), 0, 1)  # a confident-ish model preferring a
    sampled = np.where(rng.random(n) < p_a, "a", "b")
    common = dict(candidates=[["a", "b"]] * n, context=["x"] * n)
    sf = m["selection_frequency"]
    hard = frame(sf.compute(selected=sampled.tolist(), **common), "selection_frequency").set_index("identity")
    soft_res = sf.compute(selected=sampled.tolist(), probabilities=[[p, 1 - p] for p in p_a], **common)
    soft = frame(soft_res, "selection_frequency").set_index("identity")
    assert soft.loc["a", "n_selected"] == pytest.approx(p_a.sum())
    assert soft_res["summary"]["n_probability_rows"] == n
    assert (soft.loc["a", "ci_high"] - soft.loc["a", "ci_low"]) < 0.5 * (
        hard.loc["a", "ci_high"] - hard.loc["a", "ci_low"]
    )


def test_factuality_target_counts_right_answers(m):
    # Questions ask "which one is the <target>?"; right answers are selections of the target.
    res = m["selection_frequency"].compute(
        selected=["a", "b", "b", "a"], candidates=[["a", "b"]] * 4, context=["x"] * 4, target=["a", "a", "b", "b"]
    )
    out = frame(res, "selection_frequency").set_index("identity")
    assert out.loc["a", "selection_frequency"] == 50.0 and out.loc["b", "selection_frequency"] == 50.0
    assert out.loc["a", "n_offered"] == 2


def test_factuality_from_runner_columns(m):
    df = pd.DataFrame(
        {
            "target_identity": ["a", "a", "a", "b", "b", "b"],
            "correct": [True, True, None, False, True, False],  # None: an invalid answer
            "context": ["cooking", "reading", "reading", "cooking", "cooking", "reading"],
            "selected_identity": ["", "a", "", "", "b", ""],  # what_doing answers name activities: ""
            "candidates": [[], ["a", "b"], [], [], ["a", "b"], []],
        }
    )
    res = m["selection_frequency"].compute(data=df)
    out = frame(res, "selection_frequency").set_index("identity")
    assert out.loc["a", "selection_frequency"] == 100.0 and out.loc["a", "n_offered"] == 2
    assert out.loc["b", "selection_frequency_paper"] == pytest.approx((50 + 0) / 2)  # cooking 1/2, reading 0/1
    assert out.loc["b", "selection_frequency"] == pytest.approx(100 / 3)  # accuracy: 1 of 3
    # tested against the pooled accuracy of every identity asked about (3 of 5 = 60%)
    assert out.loc["b", "effect"] == pytest.approx(100 / 3 - 60) and math.isnan(out.loc["b", "chance"])
    assert out.loc["a", "invalid_rate"] == pytest.approx(100 / 3)
    assert res["summary"]["invalid_rate"] == pytest.approx(100 / 6)
    # A row without a target is an ordinary question, so it needs candidates.
    with pytest.raises(ValueError, match="no 'candidates' column"):
        m["selection_frequency"].compute(target=["a", ""], correct=[True, False], context=["x", "y"])


def test_position_bias_binomial_test(m):
    res = m["log_odds"].compute(
        selected=["a"] * 30, candidates=[["a", "b"]] * 30, context=["x"] * 30, chose_left=[True] * 30
    )
    s = res["summary"]
    assert s["left_choice_rate"] == 100.0 and s["left_choice_p_value"] == pytest.approx(
        stats.binomtest(30, 30, 0.5).pvalue
    )


def test_estimates_do_not_depend_on_clusters_but_tests_do(m):
    rng = np.random.default_rng(5)
    n = 600
    left = rng.integers(0, 4, n)
    right = (left + rng.integers(1, 4, n)) % 4
    ids = np.array(list("abcd"))
    sel = np.where(rng.random(n) < 0.5, ids[left], ids[right])
    cols = dict(
        selected=sel.tolist(),
        candidates=[[ids[a], ids[b]] for a, b in zip(left, right)],
        context=[f"c{i % 3}" for i in range(n)],
    )
    group = [f"g{i // 6}" for i in range(n)]
    a = frame(m["pair_comp"].compute(**cols, group=group), "pair_comp")
    with pytest.raises(ValueError, match=r"unknown options \['bootstrap_samples', 'seed'\]"):
        m["pair_comp"].compute(**cols, group=group, bootstrap_samples=7, seed=3)  # removed: no bootstrap
    rows = frame(m["pair_comp"].compute(**cols), "pair_comp")
    pd.testing.assert_series_equal(a["pair_comp"], rows["pair_comp"])  # the estimate does not depend on clusters
    assert (a["n_clusters"] < rows["n_clusters"]).all() and not np.allclose(a["se"], rows["se"])


def test_modules_import_only_the_statistics_library_and_load_from_a_copy(tmp_path):
    """Each module is a shell over its measure in vignette_bench.stats and lists its third-party imports."""
    from evaluate.loading import get_imports

    pip_names = {"vignette_bench": "vignette-bench"}
    for name in NAMES:
        src = ROOT / "metrics" / name / f"{name}.py"
        text = src.read_text()
        project = re.findall(
            r"^\s*(?:from|import)\s+((?:metrics|eval|dataset_builder|vignette|vignette_bench)\b[\w.]*)", text, re.M
        )
        assert project and set(project) == {f"vignette_bench.stats.measures.{name}", "vignette_bench.stats.metric"}, (
            project
        )
        assert not re.search(r"^import\s+\w+\s*,", text, re.M)  # evaluate's import scanner misreads `import a, b`
        libraries = {imp[1] for imp in get_imports(str(src))}
        assert libraries <= {
            "__future__",
            "datasets",
            "evaluate",
            "numpy",
            "pandas",
            "scipy",
            "typing",
            "vignette_bench",
        }
        # requirements.txt names exactly the imports outside the standard library (pip names).
        lines = (src.parent / "requirements.txt").read_text().splitlines()
        required = {
            re.split(r"[<>=!~ ]", line, maxsplit=1)[0] for line in lines if line.strip() and not line.startswith("#")
        }
        third_party = {
            pip_names.get(lib, lib) for lib in libraries if lib not in sys.stdlib_module_names and lib != "__future__"
        }
        assert required == third_party, (name, required, third_party)
        (tmp_path / name).mkdir()
        shutil.copy(src, tmp_path / name / src.name)  # the .py alone, as evaluate would ship it
        metric = evaluate.load(str(tmp_path / name))
        assert type(metric).__name__ in {"SelectionFrequency", "LogOdds", "PairComp", "Polarity"}
