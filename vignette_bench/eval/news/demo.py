"""The news pipeline end to end, offline: placeholder sample → answers → judge → results.

`vignette news demo --out demo_out/news [--limit 5] [--model tiny:llava] [--judge tiny:llava]`

Answerers: the tiny untrained VLM and the reference answerer (it repeats the annotated reference).
Judges: the same tiny VLM, and a FIXTURE judge whose scores are a hash of the prompt (labelled so in its
id, its table, summary, plot and on the page). Answers and judgements are decoded under their bounded
JSON schemas (vignette_bench/eval/news/schemas.py), so even the untrained model's replies parse within the budget;
they are noise all the same. `news.html` shows every item: its image, question, each answer (or why it
failed), and each judge's scores (or why it failed). Everything here is a PLACEHOLDER: drawn images, our
own questions, untrained models; the numbers test the pipeline only.
A real run puts a real VLM behind --model and a GPT-4o-class judge behind --judge (docs/news.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vignette_bench.dataset_builder.news import build_news_sample
from vignette_bench.eval.adapters.spec import build_adapter
from vignette_bench.eval.news.answer import ANSWERS_FILE, answer_news
from vignette_bench.eval.news.data import load_news, news_items
from vignette_bench.eval.news.fixture import FixtureJudge
from vignette_bench.eval.news.judge import judge_answers
from vignette_bench.eval.news.page import PAGE, write_page
from vignette_bench.eval.news.reference import ReferenceAnswerer
from vignette_bench.eval.news.results import write_results
from vignette_bench.eval.pages.names import display_id
from vignette_bench.formats.news import read_answers, read_judgements

FIXTURE_JUDGEMENTS = "judgements-fixture-judge.jsonl"


def one_per_attribute(items: list, count: int) -> list:
    """The first `count` items, taking attributes in turn so a short demo still covers all five."""
    by_attribute: dict[str, list] = {}
    for item in items:
        by_attribute.setdefault(item.attribute, []).append(item)
    ordered = [
        group[i]
        for i in range(max(map(len, by_attribute.values())))
        for group in by_attribute.values()
        if i < len(group)
    ]
    return ordered[:count]


def run_demo(out: Path, items_count: int, model_spec: str, judge_spec: str, judge_max_new_tokens: int) -> dict:
    source = out / "source"
    build_news_sample(source)
    items = one_per_attribute(news_items(load_news(source)), items_count)
    model = build_adapter(model_spec)
    runs = {"model": out / "runs" / "model", "reference": out / "runs" / "reference"}
    answer_news(items, model, runs["model"], source=str(source))
    answer_news(items, ReferenceAnswerer(items), runs["reference"], source=str(source))
    judge = model if judge_spec == model_spec else build_adapter(judge_spec)
    answers = [row for run in runs.values() for row in read_answers(run / ANSWERS_FILE)]
    judge_answers(items, answers, judge, out / "judgements.jsonl", max_new_tokens=judge_max_new_tokens)
    answer_files: list[str | Path] = [run / ANSWERS_FILE for run in runs.values()]
    written = write_results(answer_files, out / "judgements.jsonl", out / "results")
    # The success path, shown with a FIXTURE judge (its scores are a hash of the prompt), so a newcomer
    # sees answers judged end to end beside the tiny judge's failures.
    judge_answers(items, answers, FixtureJudge(), out / FIXTURE_JUDGEMENTS, max_new_tokens=judge_max_new_tokens)
    fixture = write_results(answer_files, out / FIXTURE_JUDGEMENTS, out / "results-fixture-judge")
    page = write_page(items, answer_files, [out / "judgements.jsonl", out / FIXTURE_JUDGEMENTS], out / PAGE)
    return {**written, **{f"fixture_{k}": v for k, v in fixture.items()}, "page": page}


def judged_example(out: Path) -> str:
    """One answer judged end to end by the fixture judge: question, answer, a score per dimension."""
    items = {item.id: item for item in news_items(load_news(out / "source"))}
    answers = {
        (a.item_id, a.model_id): a
        for run in ("model", "reference")
        for a in read_answers(out / "runs" / run / ANSWERS_FILE)
        if a.valid
    }
    scores: dict[tuple[str, str], dict[str, float]] = {}
    for row in read_judgements(out / FIXTURE_JUDGEMENTS):
        if row.valid and row.score is not None and (row.item_id, row.model_id) in answers:
            scores.setdefault((row.item_id, row.model_id), {})[row.dimension] = row.score
    if not scores:
        return "no answer was judged (every answer failed to parse)"
    key, by_dimension = next(iter(scores.items()))
    answer = answers[key]
    return "\n".join(
        [
            f"question ({answer.item_id}): {items[answer.item_id].question}",
            f"answer by {display_id(answer.model_id)}: {answer.answer}",
            "scores by the FIXTURE judge (a hash of the prompt, not a judgement): "
            + ", ".join(f"{d} {v:g}" for d, v in sorted(by_dimension.items())),
        ]
    )


def main(args: argparse.Namespace) -> int:
    print("news demo: PLACEHOLDER images and questions, untrained tiny models — the numbers test the pipeline only")
    written = run_demo(Path(args.out), args.limit, args.model, args.judge, args.judge_max_new_tokens)
    print(
        "judged by the tiny untrained VLM (constrained to the judgement's bounded schema; untrained: its scores mean nothing):"
    )
    print(written["table"].read_text())
    print("\njudged by a FIXTURE judge (schema-following, deterministic; its scores are a hash of the prompt):")
    print(written["fixture_table"].read_text())
    print("\none answer judged end to end (fixture judge):")
    print(judged_example(Path(args.out)))
    print("\nwrote " + ", ".join(str(p) for p in written.values()))
    print(f"open {written['page']} in a browser: every item with its image, answers, judges and scores")
    print(
        "real run: vignette news answer --source SRC --model hf:Qwen/Qwen2.5-VL-7B-Instruct?mode=generate"
        "&device=cuda --out runs/qwen; vignette news judge --source SRC --answers runs/qwen/answers.jsonl "
        "--out judgements.jsonl  (judge: openai:gpt-4o, key from OPENAI_API_KEY)"
    )
    return 0
