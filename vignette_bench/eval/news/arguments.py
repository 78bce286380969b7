"""The parsers of this package's `vignette` commands, apart from the jobs: building one imports nothing heavy
(no datasets, pandas, pyarrow, scipy, torch, matplotlib, transformers), so `vignette COMMAND --help` starts fast
(vignette_bench/cli.py imports a job's module only once its arguments parse; tests/test_startup.py)."""

from __future__ import annotations

import argparse

from vignette_bench import cli_options as opt
from vignette_bench.eval.news.schemas import JUDGE_MAX_NEW_TOKENS

ROBUSTNESS_TEMPERATURE = 0.2


DEFAULT_JUDGE = "openai:gpt-4o@https://api.openai.com/v1"  # a GPT-4o-class judge, as in the paper


def answer_add_arguments(parser: argparse.ArgumentParser) -> None:
    opt.source(parser, required=True, help="source folder, Hub repo id or URL holding news/*.parquet")
    opt.model(parser, required=True, help="model spec (see docs/news.md)")
    opt.out(parser, required=True, help="run folder: answers.jsonl and answers_provenance.json")
    parser.add_argument("--robustness", action="store_true", help=f"temperature {ROBUSTNESS_TEMPERATURE} instead of 0")
    parser.add_argument("--batch-size", type=int, default=4, help="questions per model call (default 4)")
    opt.limit(parser, default=None, help="only the first N items")
    parser.add_argument(
        "--retry-invalid", action="store_true", help="ask again where the answer is invalid (did not parse)"
    )


def judge_add_arguments(parser: argparse.ArgumentParser) -> None:
    opt.source(parser, required=True, help="the source the answers were made from")
    parser.add_argument("--answers", required=True, nargs="+", help="one or more RUN_DIR/answers.jsonl")
    parser.add_argument(
        "--judge",
        default=DEFAULT_JUDGE,
        help=f"judge model spec (default {DEFAULT_JUDGE}, key from OPENAI_API_KEY; any "
        "openai:MODEL@URL, or a local spec such as hf:PATH?mode=generate)",
    )
    opt.out(parser, required=True, help="judgements jsonl (appended to; reruns resume)")
    parser.add_argument("--batch-size", type=int, default=4, help="questions per model call (default 4)")
    parser.add_argument(
        "--judge-max-new-tokens",
        type=int,
        default=JUDGE_MAX_NEW_TOKENS,
        help=f"token budget of a judgement (default {JUDGE_MAX_NEW_TOKENS}: the longest reply its bounded schema allows)",
    )
    parser.add_argument(
        "--retry-invalid", action="store_true", help="judge again where the judgement is invalid (the judge failed)"
    )


def results_add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--answers", required=True, nargs="+", help="RUN_DIR/answers.jsonl of each model")
    parser.add_argument("--judgements", required=True, help="judgements jsonl from vignette news judge")
    parser.add_argument("--judge-id", default=None, help="which judge, when the file holds several")
    parser.add_argument("--compare", default=None, help="a second judgements jsonl (another judge or run)")
    opt.out(parser, required=True, help="folder for the table, summary csv and scatter")
    opt.source(
        parser,
        help="the source the answers were made from: also write OUT/news.html, each item's image, question, "
        "answers and every judge's scores or failure reasons",
    )


def demo_add_arguments(parser: argparse.ArgumentParser) -> None:
    opt.out(parser, default="demo_out/news", help="folder for everything the demo writes (default demo_out/news)")
    opt.limit(parser, default=5, help="sample items to use (10 in the sample; 5 = one per attribute)")
    opt.model(parser, default="tiny:llava?mode=generate", help="answering model spec")
    parser.add_argument("--judge", default="tiny:llava?mode=generate", help="judge model spec")
    parser.add_argument(
        "--judge-max-new-tokens",
        type=int,
        default=JUDGE_MAX_NEW_TOKENS,
        help=f"token budget of a judgement (default {JUDGE_MAX_NEW_TOKENS}: the longest reply its bounded schema allows)",
    )
