"""The news pipeline offline with a tiny untrained VLM as both answerer and judge.

Its answers and judgements are noise: whatever it produces must land honestly — a reply that does
not parse is an answer failure or a judge failure, counted and kept with its raw text, never a score.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd
import pytest

from vignette_bench.cli import main as vignette
from vignette_bench.eval.adapters.spec import TINY_CACHE_ENV
from vignette_bench.eval.news.answer import read_answers
from vignette_bench.eval.news.judge import read_judgements


def demo_main(argv):
    """`vignette news demo ARGV` in-process."""
    return vignette(["news", "demo", *argv])


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    os.environ.setdefault(TINY_CACHE_ENV, str(tmp_path_factory.mktemp("tiny")))
    out = tmp_path_factory.mktemp("news_demo")
    assert demo_main(["--out", str(out), "--limit", "2", "--judge-max-new-tokens", "24"]) == 0
    return out


def test_demo_writes_every_stage(demo: Path) -> None:
    assert len(list((demo / "source" / "news").glob("*.parquet"))) == 1
    for name in ("news_summary.csv", "news_table.md", "news_bias_vs_faithfulness.png"):
        assert (demo / "results" / name).stat().st_size > 0
    assert "PLACEHOLDER" in (demo / "results" / "news_table.md").read_text()


def test_every_answer_and_judgement_is_scored_or_counted_as_failed(demo: Path) -> None:
    answers = read_answers(demo / "runs" / "model" / "answers.jsonl") + read_answers(
        demo / "runs" / "reference" / "answers.jsonl"
    )
    judgements = read_judgements(demo / "judgements.jsonl")
    assert len(answers) == 4 and all(a["raw"] is not None for a in answers)
    valid = [a for a in answers if a["valid"]]
    assert len(judgements) == 3 * len(valid)  # the invalid answers were not judged
    for j in judgements:
        assert (j["score"] is None) == (not j["valid"])
        if j["valid"]:
            assert 0 <= j["score"] <= 100
        else:
            assert j["error"] and j["raw"] is not None
    summary = pd.read_csv(demo / "results" / "news_summary.csv")
    overall = summary[summary.attribute == "overall"]
    assert overall.n_items.sum() == 4
    assert overall.answer_failed.sum() == sum(not a["valid"] for a in answers)
    for dim in ("bias", "faithfulness", "accuracy"):
        failed = sum(1 for j in judgements if j["dimension"] == dim and not j["valid"])
        scored = [j["score"] for j in judgements if j["dimension"] == dim and j["valid"]]
        assert overall[f"{dim}_failed"].sum() == failed and overall[f"{dim}_n"].sum() == len(scored)
        means = overall[f"{dim}_mean"].dropna()
        assert (len(means) > 0) == bool(scored)
        if scored and len(means) == 1:
            assert math.isclose(means.iloc[0], sum(scored) / len(scored))


def test_demo_shows_answers_judged_end_to_end_by_a_labelled_fixture_judge(demo: Path, capsys) -> None:
    """The tiny judge only fails; the fixture judge shows the success path and says what it is."""
    from vignette_bench.eval.news.demo import FIXTURE_JUDGEMENTS, judged_example

    judged = [j for j in read_judgements(demo / FIXTURE_JUDGEMENTS) if j["valid"]]
    assert judged and all("fixture" in j["judge_id"] for j in judged)
    summary = pd.read_csv(demo / "results-fixture-judge" / "news_summary.csv")
    overall = summary[summary.attribute == "overall"]
    assert overall.bias_mean.notna().any()  # a judged row with its scores
    example = judged_example(demo)
    assert "FIXTURE judge" in example and "accuracy" in example and "bias" in example
    assert "/root/" not in example and "/tmp/" not in example and str(demo) not in example  # no machine path
