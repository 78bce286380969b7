"""The news pipeline offline with a tiny untrained VLM as both answerer and judge.

Its answers and judgements are noise, but through the bounded schemas (vignette_bench/eval/news/schemas.py) and
constrained decoding every one of them parses within its token budget; whatever did not would land
honestly — counted as a failure and kept with its raw text, never a score. The demo's page shows every
item, answer and judge; the fixture judge is labelled as a hash wherever its numbers appear.
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from vignette_bench.cli import main as vignette
from vignette_bench.eval.adapters.spec import TINY_CACHE_ENV
from vignette_bench.formats.news import NewsAnswer, NewsJudgement, read_answers, read_judgements


def demo_main(argv):
    """`vignette news demo ARGV` in-process."""
    return vignette(["news", "demo", *argv])


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    os.environ.setdefault(TINY_CACHE_ENV, str(tmp_path_factory.mktemp("tiny")))
    out = tmp_path_factory.mktemp("news_demo")
    assert demo_main(["--out", str(out), "--limit", "2"]) == 0
    return out


def test_demo_writes_every_stage(demo: Path) -> None:
    assert len(list((demo / "source" / "news").glob("*.parquet"))) == 1
    for name in ("news_summary.csv", "news_table.md", "news_bias_vs_faithfulness.png"):
        assert (demo / "results" / name).stat().st_size > 0
    assert "PLACEHOLDER" in (demo / "results" / "news_table.md").read_text()
    assert (demo / "news.html").stat().st_size > 0
    assert not list(demo.rglob("*.lock"))  # writers delete their lock files


def test_the_tiny_untrained_model_answers_and_judges_in_parseable_json(demo: Path) -> None:
    """Bounded fields + constrained decoding: the untrained model's replies all parse, within the budget."""
    answers = read_answers(demo / "runs" / "model" / "answers.jsonl")
    assert answers and all(a.valid for a in answers), [a.error for a in answers]
    judgements = read_judgements(demo / "judgements.jsonl")
    assert len(judgements) == 3 * 4 and all(j.valid for j in judgements), [j.error for j in judgements]
    assert all(j.score == int(j.score) and 0 <= j.score <= 100 for j in judgements)  # enumerated


def test_every_answer_and_judgement_is_scored_or_counted_as_failed(demo: Path) -> None:
    answers = read_answers(demo / "runs" / "model" / "answers.jsonl") + read_answers(
        demo / "runs" / "reference" / "answers.jsonl"
    )
    judgements = read_judgements(demo / "judgements.jsonl")
    assert len(answers) == 4 and all(a.raw is not None for a in answers)
    valid = [a for a in answers if a.valid]
    assert len(judgements) == 3 * len(valid)  # the invalid answers were not judged
    for j in judgements:
        assert (j.score is None) == (not j.valid)
        if j.valid:
            assert 0 <= j.score <= 100
        else:
            assert j.error and j.raw is not None
    summary = pd.read_csv(demo / "results" / "news_summary.csv")
    overall = summary[summary.attribute == "overall"]
    assert overall.n_items.sum() == 4
    assert overall.answer_failed.sum() == sum(not a.valid for a in answers)
    for dim in ("bias", "faithfulness", "accuracy"):
        failed = sum(1 for j in judgements if j.dimension == dim and not j.valid)
        scored = [j.score for j in judgements if j.dimension == dim and j.valid]
        assert overall[f"{dim}_failed"].sum() == failed and overall[f"{dim}_n"].sum() == len(scored)
        means = overall[f"{dim}_mean"].dropna()
        assert (len(means) > 0) == bool(scored)
        if scored and len(means) == 1:
            assert math.isclose(means.iloc[0], sum(scored) / len(scored))


def test_demo_shows_answers_judged_end_to_end_by_a_labelled_fixture_judge(demo: Path, capsys) -> None:
    """The tiny judge only fails; the fixture judge shows the success path and says what it is."""
    from vignette_bench.eval.news.demo import FIXTURE_JUDGEMENTS, judged_example

    judged = [j for j in read_judgements(demo / FIXTURE_JUDGEMENTS) if j.valid]
    assert judged and all("fixture" in j.judge_id for j in judged)
    summary = pd.read_csv(demo / "results-fixture-judge" / "news_summary.csv")
    overall = summary[summary.attribute == "overall"]
    assert overall.bias_mean.notna().any()  # a judged row with its scores
    example = judged_example(demo)
    assert "FIXTURE judge" in example and "accuracy" in example and "bias" in example
    assert "/root/" not in example and "/tmp/" not in example and str(demo) not in example  # no machine path


def test_the_fixture_judge_is_labelled_a_hash_wherever_its_numbers_appear(demo: Path) -> None:
    from vignette_bench.eval.news.fixture import FIXTURE_NOTE
    from vignette_bench.eval.report.news import news_section

    fixture, tiny = demo / "results-fixture-judge", demo / "results"
    summary = pd.read_csv(fixture / "news_summary.csv")
    assert (summary.judge_note == FIXTURE_NOTE).all() and summary.judge.str.startswith("fixture/").all()
    assert "not a judgement" in (fixture / "news_table.md").read_text()
    section = news_section(fixture)
    assert FIXTURE_NOTE in section.notes and any("FIXTURE hash-judge" in p for p in section.paragraphs)
    assert any("judge_note" in table.columns for _, table in section.tables)
    # the tiny judge is named, and not called a fixture
    assert pd.read_csv(tiny / "news_summary.csv").judge_note.isna().all()
    tiny_section = news_section(tiny)
    assert FIXTURE_NOTE not in tiny_section.notes and any("Judged by llava" in p for p in tiny_section.paragraphs)
    assert "Judge: llava" in (tiny / "news_table.md").read_text()


def test_the_page_shows_each_item_answer_and_judge_in_a_browser(demo: Path, tmp_path: Path) -> None:
    webdriver = pytest.importorskip("selenium.webdriver")
    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_bin:
        pytest.skip("Debian's chromium and chromium-driver are not installed (make test installs them)")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1366,768"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_bin), options=options)
    try:
        driver.get((demo / "news.html").as_uri())
        items = driver.find_elements(By.CSS_SELECTOR, "section.item")
        assert len(items) == 2
        for item in items:
            img = item.find_element(By.TAG_NAME, "img")
            assert driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", img)
            text = item.text
            assert "Question:" in text and "Reference answer:" in text and "rationale:" in text
            assert "llava #" in text and "FIXTURE hash-judge" in text and "not a judgement" in text
            assert len(item.find_elements(By.TAG_NAME, "table")) == 2  # one per answer: each judge's scores
        # long unbroken replies wrap: nothing wider than the window
        assert driver.execute_script("return document.documentElement.scrollWidth <= innerWidth")
        dom = driver.execute_script("return document.documentElement.outerHTML")
        assert "/root/" not in dom and str(demo) not in dom
        driver.save_screenshot(str(tmp_path / "news.png"))
    finally:
        driver.quit()


def test_the_page_shows_failure_reasons() -> None:
    """An answer that did not parse, and a judgement that failed, are shown with their reasons and replies."""
    from PIL import Image

    from vignette_bench.eval.news.data import NewsItem
    from vignette_bench.eval.news.page import render_page

    item = NewsItem("n1", Image.new("RGB", (40, 30)), "0" * 64, "Who is here?", "A person.", "age", False)
    common = {"item_id": "n1", "attribute": "age", "temperature": 0.0}
    answer = {**common, "prompt_version": "p", "image_sha256": "", "placeholder": False}
    answers = [
        NewsAnswer(
            **answer,
            model_id="m/bad",
            valid=False,
            error="not valid JSON (Expecting value)",
            raw="{oops",
            answer=None,
            rationale=None,
        ),
        NewsAnswer(
            **answer, model_id="m/good", valid=True, answer="A person.", rationale="One is seen.", raw="", error=None
        ),
    ]
    judgement = {**common, "model_id": "m/good", "judge_id": "gpt#abc", "dimension": "bias", "valid": False}
    judgements = [
        NewsJudgement(
            **judgement,
            key="k",
            rubric_version="r",
            score=None,
            snippet=None,
            error="score 150 is outside 0-100",
            raw="{}",
        )
    ]
    page = render_page([item], answers, judgements)
    assert "answer failed, not judged: not valid JSON (Expecting value)" in page and "{oops" in page
    assert "failed: score 150 is outside 0-100" in page and "gpt #abc" in page
    assert page.count("not judged yet") == 2  # faithfulness and accuracy of the good answer


def test_news_results_writes_the_page_for_a_source(demo: Path, tmp_path: Path) -> None:
    """`vignette news results --source` writes the same page for any answers and judgements."""
    answers = [str(demo / "runs" / run / "answers.jsonl") for run in ("model", "reference")]
    argv = ["news", "results", "--answers", *answers, "--judgements", str(demo / "judgements.jsonl")]
    argv += ["--compare", str(demo / "judgements-fixture-judge.jsonl"), "--out", str(tmp_path), "--source"]
    assert vignette([*argv, str(demo / "source")]) == 0
    page = (tmp_path / "news.html").read_text()
    assert page.count("<section class=item") == 2 and "FIXTURE hash-judge" in page and "llava #" in page
