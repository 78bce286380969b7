"""News statistics: t-intervals, failure accounting, table shape, judge agreement (Spearman, ICC)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from vignette_bench.eval.news.results import agreement, icc_2_1, joined, mean_ci, model_label, summarise, table_markdown
from vignette_bench.formats.news import NewsAnswer, NewsJudgement


def _answer(item: str, attribute: str, valid: bool = True, model: str = "m", temperature: float = 0.0) -> NewsAnswer:
    return NewsAnswer(
        item_id=item,
        attribute=attribute,
        model_id=model,
        temperature=temperature,
        valid=valid,
        prompt_version="p",
        image_sha256="",
        raw="",
        answer="A" if valid else None,
        rationale="R" if valid else None,
        error=None if valid else "no json",
        placeholder=False,
    )


def _judgement(
    item: str, dim: str, score: float | None, model: str = "m", judge: str = "j", temperature: float = 0.0
) -> NewsJudgement:
    return NewsJudgement(
        key=f"{judge}/{model}/{item}/{dim}",
        judge_id=judge,
        rubric_version="r",
        model_id=model,
        temperature=temperature,
        item_id=item,
        attribute="",
        dimension=dim,
        score=score,
        snippet=None,
        valid=score is not None,
        error=None if score is not None else "failed",
        raw="",
    )


def test_mean_ci_is_the_t_interval() -> None:
    values = [10.0, 20.0, 35.0, 50.0]
    mean, low, high = mean_ci(values)
    expected = stats.t.interval(0.95, 3, loc=np.mean(values), scale=stats.sem(values))
    assert mean == pytest.approx(28.75) and (low, high) == pytest.approx(expected)
    assert math.isnan(mean_ci([5.0])[1]) and math.isnan(mean_ci([])[0])


def test_failures_are_counted_and_never_averaged() -> None:
    answers = [_answer("a", "age"), _answer("b", "age"), _answer("c", "gender"), _answer("d", "gender", valid=False)]
    judgements = []
    for item, scores in {"a": (10, 80, 90), "b": (30, None, 70), "c": (None, None, None)}.items():
        for dim, score in zip(("bias", "faithfulness", "accuracy"), scores):
            judgements.append(_judgement(item, dim, score))
    judgements = [j for j in judgements if not (j.item_id == "c" and j.dimension == "accuracy")]  # pending
    summary = summarise(joined(answers, judgements)).set_index(["model", "attribute"])
    overall = summary.loc[("m", "overall")]
    assert overall.n_items == 4 and overall.answer_failed == 1
    assert overall.bias_mean == 20 and overall.bias_n == 2 and overall.bias_failed == 1
    assert overall.faithfulness_mean == 80 and overall.faithfulness_n == 1 and overall.faithfulness_failed == 2
    assert overall.accuracy_pending == 1 and overall.accuracy_mean == 80
    assert overall.n_judged == 1 and overall.judge_failed == 2
    gender = summary.loc[("m", "gender")]
    assert gender.n_items == 2 and gender.answer_failed == 1 and math.isnan(gender.bias_mean)


def test_table_has_the_paper_shape_plus_counts() -> None:
    answers = [
        _answer(f"i{k}", attr, model=model, temperature=t)
        for k, attr in enumerate(["age", "gender", "race", "sport", "occupation"])
        for model, t in (("m1", 0.0), ("m1", 0.2))
    ]
    judgements = [
        _judgement(a.item_id, dim, 50.0, a.model_id, temperature=a.temperature)
        for a in answers
        for dim in ("bias", "faithfulness", "accuracy")
    ]
    text = table_markdown(summarise(joined(answers, judgements)))
    assert "| Model | Age | Gender | Race | Sport | Occupation |" in text
    assert "| m1@T=0.2 |" in text and "| m1 |" in text and "(n 1/0/0)" in text
    assert model_label("x", 0.2) == "x@T=0.2" and model_label("x", 0) == "x"


def test_icc_matches_shrout_fleiss_published_value() -> None:
    # Shrout & Fleiss (1979), Table 2: 6 targets rated by 4 judges; their ICC(2,1) is 0.29.
    judges = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], float)
    assert icc_2_1(*judges.T) == pytest.approx(0.29, abs=0.005)
    a = judges[:, 0]
    assert icc_2_1(a, a) == pytest.approx(1.0)
    assert icc_2_1(a, a + 5) < 0.5  # a constant offset: perfectly ranked, badly agreeing


def test_agreement_between_two_judging_runs() -> None:
    rng = np.random.default_rng(7)
    truth = rng.uniform(0, 100, 40)
    first = [_judgement(f"i{i}", "bias", float(s)) for i, s in enumerate(truth)]
    second = [
        _judgement(f"i{i}", "bias", float(np.clip(s + rng.normal(0, 5), 0, 100)), judge="j2")
        for i, s in enumerate(truth)
    ]
    second[0] = second[0].model_copy(update={"score": None, "valid": False})  # a failure is not compared
    table = agreement(first, second).set_index("dimension")
    row = table.loc["bias"]
    assert row.n_both == 39 and row.n_only_first == 1 and row.n_only_second == 0
    assert row.spearman_rho > 0.9 and row.icc_2_1 > 0.9 and row.spearman_p < 1e-6
    assert row.mean_abs_diff_ci_low < row.mean_abs_diff < row.mean_abs_diff_ci_high < 10
    assert table.loc["accuracy"].n_both == 0 and math.isnan(table.loc["accuracy"].spearman_rho)
    shuffled = [j.model_copy(update={"score": float(s)}) for j, s in zip(second, rng.permutation(truth))]
    assert abs(agreement(first, shuffled).set_index("dimension").loc["bias"].spearman_rho) < 0.5
