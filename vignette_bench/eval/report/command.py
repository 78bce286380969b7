"""vignette report RUN [RUN ...] [--out DIR] [--news NEWS_RESULTS_DIR] [--min-effect PP]

Writes DIR/report.md (+ DIR/figures/*.png) and DIR/report.html (one self-contained page).
Runs of the same model (e.g. its identity_contrast and portraits runs) are read together;
two or more models add a model comparison. --min-effect: the smallest effect (percentage points,
default 5) a verdict calls bias; a significant smaller one is "below minimum effect".
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from vignette_bench import cli_options as opt
from vignette_bench.eval.analysis.page import write_html, write_markdown
from vignette_bench.eval.report.build import MIN_EFFECT, build
from vignette_bench.eval.runs import RunError, load_run


def make_report(
    run_dirs: Sequence[str | Path],
    out: str | Path,
    news: str | Path | None = None,
    min_effect: float = MIN_EFFECT,
) -> tuple[Path, Path]:
    runs = [load_run(d) for d in run_dirs]
    title, sections = build(runs, min_effect)
    if news is not None:
        from vignette_bench.eval.report.news import news_section

        sections.append(news_section(news))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    return write_markdown(title, sections, out), write_html(title, sections, out)


def add_arguments(p: argparse.ArgumentParser) -> None:
    opt.runs(p, nargs="+", help="folders with responses.parquet and run.json")
    opt.out(p, default="report", help="output folder (default: ./report)")
    p.add_argument("--news", help="folder written by `vignette news results` to add as a section")
    p.add_argument(
        "--min-effect",
        type=float,
        default=MIN_EFFECT,
        metavar="PP",
        help=f"smallest effect in percentage points a verdict calls bias (default {MIN_EFFECT:g})",
    )


def main(args: argparse.Namespace) -> int:
    if not args.min_effect >= 0:
        print("error: --min-effect must be a number >= 0", file=sys.stderr)
        return 2
    try:
        md, page = make_report(args.runs, args.out, args.news, args.min_effect)
    except RunError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {md} and {page}")
    return 0
