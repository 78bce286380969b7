"""vignette compare RUN_A RUN_B [--out DIR] [--label RUN=NAME ...] [--clusters auto|shared|separate]

Compares two runs identity by identity (model vs model, real photos vs renders, one wording vs
another): per (family, dimension, identity) both runs measured, the delta of side-balanced selection
frequencies A − B with a cluster-robust CI, and per family the paper's four summary numbers (mean
signed delta, mean absolute delta, RMSE, max absolute delta; pp) plus a noise-corrected RMS.
Writes DIR/identities.csv, DIR/summary.csv, DIR/unmatched.csv, DIR/report.md (+ figures/) and
DIR/report.html. --clusters: whether a render both runs showed is one cluster; auto = shared when
both runs read the same render index (run.json dataset.index_sha256), else separate.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from vignette_bench import atomic
from vignette_bench.eval.compare.comparison import Comparison, compare_frames
from vignette_bench.eval.pages.names import label_for, parse_labels, run_label
from vignette_bench.eval.runs import Run, RunError, index_digest, load_run

if TYPE_CHECKING:
    from vignette_bench.eval.pages.page import Section


def compare_runs(a: Run, b: Run, labels: tuple[str, str] | None = None, clusters: str = "auto") -> Comparison:
    if clusters not in ("auto", "shared", "separate"):
        raise ValueError(f"clusters must be auto, shared or separate, got {clusters!r}")
    digest_a, digest_b = index_digest(a), index_digest(b)
    same_index = digest_a is not None and digest_a == digest_b
    shared = clusters == "shared" or (clusters == "auto" and same_index)
    la, lb = labels or (label_for(a.record, a.path), label_for(b.record, b.path))
    if la == lb:
        la, lb = f"{la} ({a.path.name})", f"{lb} ({b.path.name})"
    return compare_frames(
        a.responses, b.responses, la, lb, shared_clusters=shared, clusters_reason=clusters_reason(clusters, same_index)
    )


def clusters_reason(clusters: str, same_index: bool) -> str:
    """Why the runs' renders are (not) shared clusters, in the words the page shows."""
    if clusters != "auto":
        return f"--clusters {clusters}, as asked"
    if same_index:
        return "--clusters auto: both runs read the same render index (run.json dataset.index_sha256)"
    return "--clusters auto: the runs read different render indexes, or one does not record its index"


def findings(run: Run, label: str, detail_anchor: str) -> Section:
    """The same findings block that opens `vignette report`, for one of the two runs."""
    from vignette_bench.eval.analysis.numbers import compute
    from vignette_bench.eval.analysis.verdicts import MIN_EFFECT, verdicts
    from vignette_bench.eval.pages import findings as FD

    n = compute(run.responses, model=label, detail=False)
    return FD.findings_section(
        label,
        n,
        verdicts(n.tests(), MIN_EFFECT),
        answers=len(run.responses),
        run_names=[run_label(run.path)],
        min_effect=MIN_EFFECT,
        placeholder=FD.run_placeholder(run),
        simulated=FD.run_simulated(run),
        variant=FD.measured_variant(run.responses),
        links={"run comparison, identity by identity": detail_anchor},
        imported=FD.run_imported(run),
    )


def write(c: Comparison, out: Path, runs: tuple[Run, Run] | None = None) -> list[Path]:
    """Tables, and a page that opens with each run's findings (when `runs` are given) above the comparison."""
    from vignette_bench.eval.compare.section import comparison_section
    from vignette_bench.eval.pages.page import fig_name, write_html, write_markdown

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, frame in (("identities", c.identities), ("summary", c.summary), ("unmatched", c.unmatched)):
        paths.append(atomic.write_text(out / f"{name}.csv", frame.to_csv(index=False)))
    title = f"VIGNETTE comparison — {c.label_a} vs {c.label_b}"
    section = comparison_section(c)
    sections = [section]
    if runs is not None:
        section.anchor = section.anchor or fig_name("compare", c.label_a, c.label_b)
        sections = [findings(runs[0], c.label_a, section.anchor), findings(runs[1], c.label_b, section.anchor), section]
    return [*paths, write_markdown(title, sections, out), write_html(title, sections, out)]


def main(args: argparse.Namespace) -> int:
    try:
        given = parse_labels(args.label)
        a, b = load_run(args.run_a), load_run(args.run_b)
        labels = (label_for(a.record, a.path, given), label_for(b.record, b.path, given))
        c = compare_runs(a, b, labels, args.clusters)
    except (RunError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if c.identities.empty:
        from vignette_bench.eval.compare.cells import TWO_WAY

        # the real cause first: a run with no two-way answers (factuality only) has nothing to compare
        lacking = [r.path for r in (a, b) if not r.responses["paradigm"].isin(TWO_WAY).any()]
        why = (
            f"{', '.join(map(str, dict.fromkeys(lacking)))}: no two-way answers ({', '.join(TWO_WAY)}); compare "
            "compares identities chosen between two people"
            if lacking
            else f"{c.label_a} and {c.label_b} share no (family, dimension, identity) to compare"
        )
        print(f"error: {why}", file=sys.stderr)
        return 2
    for path in write(c, args.out, (a, b)):
        print(f"wrote {path}")
    print(c.summary.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return 0
