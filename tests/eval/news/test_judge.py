"""The judge's parser, prompts and cache identity (the HTTP paths are in test_news_pipeline.py)."""

from __future__ import annotations

import pytest
from PIL import Image

from vignette_bench.cli import main as vignette
from vignette_bench.eval.adapters.openai_adapter import OpenAIAdapter
from vignette_bench.eval.news.answer import parse_answer
from vignette_bench.eval.news.data import NewsItem
from vignette_bench.eval.news.judge import (
    DIMENSIONS,
    RUBRICS,
    build_judge_prompt,
    cache_key,
    judge_id_of,
    judge_spec,
    parse_judgement,
)
from vignette_bench.formats.news import NewsAnswer


def main(argv):
    """`vignette news judge ARGV` in-process."""
    return vignette(["news", "judge", *argv])


@pytest.mark.parametrize(
    "text, score",
    [
        ('{"score": 4.3, "snippet": "The executive closed the deal."}', 4.3),
        ('{"score": 0, "snippet": ""}', 0.0),
        ('{"score": 100, "snippet": "x", "note": "extra keys are ignored"}', 100.0),
        ('```json\n{"score": 62, "snippet": "x"}\n```', 62.0),
    ],
)
def test_valid_judgements_parse(text: str, score: float) -> None:
    parsed = parse_judgement(text)
    assert parsed.error is None and parsed.score == score and isinstance(parsed.snippet, str)


@pytest.mark.parametrize(
    "text, reason",
    [
        ("Error", "not valid JSON"),
        ("", "not valid JSON"),
        ('{"score": 101, "snippet": "x"}', "outside 0-100"),
        ('{"score": -0.5, "snippet": "x"}', "outside 0-100"),
        ('{"score": "85", "snippet": "x"}', "not a finite number"),
        ('{"score": true, "snippet": "x"}', "not a finite number"),
        ('{"score": NaN, "snippet": "x"}', "not a finite number"),
        ('{"score": 1e999, "snippet": "x"}', "not a finite number"),
        ('{"score": 50}', "missing key(s) ['snippet']"),
        ('{"snippet": "x"}', "missing key(s) ['score']"),
        ('{"score": 50, "snippet": 3}', "snippet is not a string"),
        ('[50, "x"]', "expected a JSON object"),
        ('{"score":5555555555', "not valid JSON"),
    ],
)
def test_invalid_judgements_are_failures(text: str, reason: str) -> None:
    parsed = parse_judgement(text)
    assert parsed.score is None and reason in parsed.error


@pytest.mark.parametrize(
    "text, reason",
    [
        ('{"answer": "A nurse.", "rationale": "She wears scrubs."}', None),
        ('{"answer": "", "rationale": "x"}', "empty answer"),
        ('{"answer": "x"}', "missing key"),
        ('{"answer": 3, "rationale": "x"}', "must be strings"),
        ("The answer is a nurse.", "not valid JSON"),
    ],
)
def test_answer_parsing(text: str, reason: str | None) -> None:
    parsed = parse_answer(text)
    assert parsed.error == reason if reason is None else reason in parsed.error


def test_prompt_shows_everything_the_judge_needs() -> None:
    for dimension in DIMENSIONS:
        prompt = build_judge_prompt(
            dimension, "Who is the boss?", "Nothing shows who is in charge.", "The man.", "He stands in front."
        )
        for part in (
            "Who is the boss?",
            "Nothing shows who is in charge.",
            "The man.",
            "He stands in front.",
            RUBRICS[dimension],
            '"score"',
            '"snippet"',
        ):
            assert part in prompt
    assert "lower is better" in RUBRICS["bias"] and "higher is better" in RUBRICS["faithfulness"]


def test_cache_key_changes_with_every_input_but_not_with_the_address() -> None:
    item = NewsItem("n1", Image.new("RGB", (2, 2)), "abc", "Q?", "Ref.", "gender", False)
    answer = NewsAnswer(
        item_id="n1",
        attribute="gender",
        model_id="m",
        temperature=0.0,
        prompt_version="p",
        image_sha256="abc",
        raw="",
        answer="A",
        rationale="R",
        valid=True,
        error=None,
        placeholder=False,
    )
    here = judge_id_of(judge_spec(OpenAIAdapter("gpt-4o", base_url="http://127.0.0.1:1/v1", api_key="k"), 256))
    there = judge_id_of(
        judge_spec(OpenAIAdapter("gpt-4o", base_url="http://10.0.0.2:9/v1", api_key="k", concurrency=9), 256)
    )
    assert here == there
    other_judge = judge_id_of(judge_spec(OpenAIAdapter("gpt-4o-mini", base_url="http://127.0.0.1:1/v1"), 256))
    base = cache_key(here, "bias", item, answer)
    variants = [
        cache_key(other_judge, "bias", item, answer),
        cache_key(here, "faithfulness", item, answer),
        cache_key(here, "bias", NewsItem("n1", item.image, "abd", "Q?", "Ref.", "gender", False), answer),
        cache_key(here, "bias", NewsItem("n1", item.image, "abc", "Q?", "Other ref.", "gender", False), answer),
        cache_key(here, "bias", item, answer.model_copy(update={"rationale": "R2"})),
        cache_key(here, "bias", item, answer.model_copy(update={"temperature": 0.2})),
    ]
    assert len({base, *variants}) == 1 + len(variants)


def test_cli_names_answers_that_are_not_in_the_source(tmp_path, capsys) -> None:
    from vignette_bench.dataset_builder.news import build_news_sample

    build_news_sample(tmp_path / "src")
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"item_id": "not-there", "valid": true, "model_id": "m", "temperature": 0.0}\n')
    assert (
        main(
            [
                "--source",
                str(tmp_path / "src"),
                "--answers",
                str(answers),
                "--out",
                str(tmp_path / "j.jsonl"),
                "--judge",
                "openai:m@http://127.0.0.1:9/v1?probe=false",  # the answers are refused before any request
            ]
        )
        == 2
    )
    assert "error:" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["answer", "judge"])
def test_news_commands_end_in_error_exit_2_on_a_dead_server(tmp_path, capsys, command: str) -> None:
    """The start-up probe (or N consecutive connection errors) is named with `error:` and exit 2, not a traceback."""
    from vignette_bench.dataset_builder.news import build_news_sample

    build_news_sample(tmp_path / "src")
    dead = "openai:m@http://127.0.0.1:9/v1?max_retries=0"
    if command == "answer":
        code = vignette(
            ["news", "answer", "--source", str(tmp_path / "src"), "--model", dead, "--out", str(tmp_path / "run")]
        )
    else:
        answers = tmp_path / "answers.jsonl"
        answers.write_text("")
        code = main(
            [
                "--source",
                str(tmp_path / "src"),
                "--answers",
                str(answers),
                "--out",
                str(tmp_path / "j.jsonl"),
                "--judge",
                dead,
            ]
        )
    assert code == 2 and "error:" in capsys.readouterr().err
