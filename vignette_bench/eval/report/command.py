"""vignette report RUN [RUN ...] [--out DIR] [--news NEWS_RESULTS_DIR] [--min-effect 5]
                 [--label RUN=NAME ...] [--figures none|findings|all]

Writes DIR/report.md (+ DIR/figures/*.png) and DIR/report.html (one self-contained page), and the
report's tables as DIR/selection.csv (every identity, with the paper's columns) and DIR/verdicts.csv.
Runs of the same model (e.g. its identity_contrast and portraits runs) are read together;
two or more models add a model comparison. --min-effect: the smallest effect (percentage points,
default 5) a verdict calls bias; a significant smaller one is "below minimum effect".
The page opens with the findings per model; the rest is in collapsible sections. --label names a run's
model (default: its id@revision from run.json, "random (seed 0)", or a local folder's base name);
--figures: none, findings (default: forest plots and the model comparison; small and fast) or all
(every heatmap too).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from vignette_bench import atomic
from vignette_bench.eval.pages.names import parse_labels
from vignette_bench.eval.pages.page import write_html, write_markdown
from vignette_bench.eval.report.build import MIN_EFFECT, build
from vignette_bench.eval.report.tables import write_tables
from vignette_bench.eval.runs import RunError, load_run


def make_report(
    run_dirs: Sequence[str | Path],
    out: str | Path,
    news: str | Path | None = None,
    min_effect: float = MIN_EFFECT,
    labels: dict[str, str] | None = None,
    figures: str = "findings",
) -> tuple[Path, Path]:
    """Write DIR/report.md, DIR/report.html, DIR/findings.txt (the findings as plain text) and the tables as
    DIR/selection.csv and DIR/verdicts.csv (`report.tables`)."""
    runs = [load_run(d) for d in run_dirs]
    tables: list = []
    title, sections = build(runs, min_effect, labels=labels, figures=figures, tables=tables)
    if news is not None:
        from vignette_bench.eval.report.news import news_section

        sections.append(news_section(news))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_text(out / "findings.txt", "\n".join(line for s in sections for line in s.plain) + "\n")
    write_tables(out, tables)
    return write_markdown(title, sections, out), write_html(title, sections, out)


def main(args: argparse.Namespace) -> int:
    if not args.min_effect >= 0:
        print("error: --min-effect must be a number >= 0", file=sys.stderr)
        return 2
    try:
        labels = parse_labels(args.label)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        md, page = make_report(args.runs, args.out, args.news, args.min_effect, labels, args.figures)
    except RunError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {md} and {page}")
    return 0
