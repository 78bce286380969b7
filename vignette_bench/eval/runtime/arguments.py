"""The parsers of this package's `vignette` commands, apart from the jobs: building one imports nothing heavy
(no datasets, pandas, pyarrow, scipy, torch, matplotlib, transformers), so `vignette COMMAND --help` starts fast
(vignette_bench/cli.py imports a job's module only once its arguments parse; tests/test_startup.py)."""

from __future__ import annotations

import argparse

from vignette_bench import cli_options as opt
from vignette_bench.formats.vocabulary import CONFIGS, FILTER_KEYS, ORDERS, PARADIGMS, VARIANT_KEYS


def filter_item(text: str) -> str:
    """``KEY=VALUE`` with a known KEY, checked before the job starts; an argparse type."""
    key, sep, _ = text.partition("=")
    if not sep or key.strip() not in FILTER_KEYS:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE with KEY one of {', '.join(FILTER_KEYS)}, got {text!r}")
    return text


def variants_item(text: str) -> str:
    """``all`` or ``KEY=VALUES`` with a known KEY, checked before the job starts; an argparse type."""
    key, sep, _ = text.partition("=")
    if text != "all" and (not sep or key.strip() not in VARIANT_KEYS):
        raise argparse.ArgumentTypeError(
            f"expected all, or KEY=VALUES with KEY one of {', '.join(VARIANT_KEYS)}, got {text!r}"
        )
    return text


def run_add_arguments(p: argparse.ArgumentParser) -> None:
    opt.source(p, required=True, help="Hub dataset repo id, local folder or base URL of the renders")
    p.add_argument("--config", required=True, choices=CONFIGS, help="the pair config to ask about")
    opt.model(
        p,
        required=True,
        help="model spec: random, random:seed=N, always-left, or an adapter spec (docs/eval.md)",
    )
    opt.out(p, required=True, help="run folder; rerunning with the same folder resumes")
    p.add_argument(
        "--sample",
        help="a balanced sample of N pairs, or 'auto': as many as --detectable-effect needs "
        "(default: every pair passing the filters)",
    )
    p.add_argument(
        "--detectable-effect",
        type=float,
        default=10.0,
        metavar="PP",
        help="--sample auto: the shift from chance (percentage points) to detect with 80%% power (default 10)",
    )
    p.add_argument(
        "--icc",
        type=float,
        help="--sample auto: correlation of answers about one image (default 0.269: an image effect of sd 1.1 logit)",
    )
    p.add_argument(
        "--orders",
        choices=ORDERS,
        help="sides of each pair: balanced (default: one order, every identity left within one offer of half), "
        "both (each pair in both orders, twice the cost: for final audits), rule (the fixed rule, as before); "
        "a resumed run keeps its own",
    )
    p.add_argument(
        "--filter",
        action="append",
        default=[],
        type=filter_item,
        metavar="KEY=VALUE",
        help=f"keep the pairs matching KEY=VALUE (lists comma-separated), repeatable; KEY is one of "
        f"{', '.join(FILTER_KEYS)}; e.g. --filter dimensions=religion --filter gender=female",
    )
    p.add_argument("--paradigms", default=",".join(PARADIGMS), help=f"comma-separated subset of {','.join(PARADIGMS)}")
    p.add_argument(
        "--variants",
        action="append",
        default=[],
        type=variants_item,
        metavar="KEY=VALUES",
        help="the wordings to ask: 'all', or KEY=VALUES (values comma-separated), repeatable; KEY is one of "
        f"{', '.join(VARIANT_KEYS)}; e.g. --variants paraphrase=0,1,2 --variants modality=image,text "
        "(default paraphrase=0, option_style=identity, modality=image)",
    )
    p.add_argument("--batch-size", type=int, default=16, help="questions per model call (default 16)")
    opt.size(p, default=(672, 336), help="composed pair image WIDTHxHEIGHT (default: the paper's 672x336)")
    opt.seed(p, help="seed of option order, distractors and the sample")
    p.add_argument("--shard", help="i/N: this process takes the i-th of N shares (default RANK/WORLD_SIZE)")
    p.add_argument(
        "--prefetch",
        type=int,
        default=2,
        help="pair images composed ahead on a worker thread while the model answers (0: none)",
    )
    p.add_argument(
        "--retry-invalid",
        action="store_true",
        help="re-ask questions whose recorded answer is invalid (backend failures are re-asked anyway)",
    )
    p.add_argument(
        "--max-invalid",
        type=float,
        default=0.9,
        metavar="FRACTION",
        # not lower: refusals are invalid answers, and a model that refuses most stereotype questions is
        # a finding to report, not a broken run; a broken setup (schema ignored, dead template) is ~100%
        help="stop with exit 2 when more than this share of the session's answers is invalid (default 0.9; 1: never)",
    )
    p.add_argument(
        "--max-invalid-after",
        type=int,
        default=50,
        metavar="N",
        help="--max-invalid is checked once the session has N answers (default 50)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def merge_add_arguments(parser: argparse.ArgumentParser) -> None:
    opt.runs(parser, help="the --out folder of `vignette run`")
    parser.add_argument(
        "--allow-gaps", action="store_true", help="write the parquet even if planned questions are unanswered"
    )
    parser.add_argument("--dry-run", action="store_true", help="only report; write nothing")
