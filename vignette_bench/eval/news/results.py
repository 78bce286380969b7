"""News results: the paper's Table 2 with confidence intervals, counts and failures; the bias–faithfulness
scatter; and how far two judges (or two judging runs) agree.

`vignette news results --answers RUN/answers.jsonl [...] --judgements J.jsonl --out DIR [--compare J2.jsonl]`

Each mean is over the answers whose judgement on that dimension succeeded; its 95% CI is the
t-interval (mean ± t(0.975, n−1)·s/√n; none below n = 2). Failures are counted, never averaged:
`answer_failed` (the answer did not parse, so it was not judged) and `<dim>_failed` (the judge's
reply was unusable). `<dim>_pending` counts valid answers not judged yet. A model is an answering
model at one temperature (`model@T=0.2` for robustness runs).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from vignette_bench.eval.news.fixture import FIXTURE_NOTE, is_fixture
from vignette_bench.eval.news.judge import DIMENSIONS
from vignette_bench.eval.pages.names import display_id
from vignette_bench.formats.news import NewsAnswer, NewsJudgement, read_answers, read_judgements

ATTRIBUTE_ORDER = ("age", "gender", "race", "sport", "occupation")  # the paper's column order
SHORT = {"accuracy": "Acc", "bias": "Bias", "faithfulness": "Faith"}


def model_label(model_id: str, temperature: float) -> str:
    """The model as a person reads it: a local folder by its base name, never a machine path."""
    shown = display_id(model_id)
    return shown if float(temperature) == 0.0 else f"{shown}@T={float(temperature):g}"


def judge_name(judge_id: str) -> str:
    """A judge as a person reads it: the model's base name and its identity digest; a fixture says so."""
    model, _, digest = judge_id.partition("#")
    if is_fixture(judge_id):
        return f"FIXTURE hash-judge #{digest} (a hash of the prompt, not a judgement)"
    return f"{display_id(model)} #{digest}" if digest else display_id(model)


def mean_ci(values: Iterable[float], level: float = 0.95) -> tuple[float, float, float]:
    """Mean and its t-interval; NaN where undefined (no value, or one value for the interval)."""
    data = np.asarray(list(values), dtype=float)
    if data.size == 0:
        return math.nan, math.nan, math.nan
    mean = float(data.mean())
    if data.size < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.5 + level / 2, data.size - 1) * data.std(ddof=1) / math.sqrt(data.size))
    return mean, mean - half, mean + half


def joined(answers: list[NewsAnswer], judgements: list[NewsJudgement], judge_id: str | None = None) -> pd.DataFrame:
    """One row per answer: model, attribute, answer validity, and per dimension the score or failure."""
    judge_ids = sorted({j.judge_id for j in judgements})
    if judge_id is None and len(judge_ids) > 1:
        raise ValueError(f"the judgements hold several judges {judge_ids}; pick one with --judge-id")
    chosen = [j for j in judgements if judge_id is None or j.judge_id == judge_id]
    from vignette_bench.eval.news.judge import answer_digest

    # keyed on the exact answer judged; judgements written before answer_sha256 existed match by item only
    by_answer = {(j.model_id, float(j.temperature), j.item_id, j.dimension, j.answer_sha256): j for j in chosen}
    rows = []
    for a in answers:
        row = {
            "model": model_label(a.model_id, a.temperature),
            "item_id": a.item_id,
            "attribute": a.attribute,
            "answer_valid": bool(a.valid),
        }
        for dim in DIMENSIONS:
            base = (a.model_id, float(a.temperature), a.item_id, dim)
            j = by_answer.get((*base, answer_digest(a))) or by_answer.get((*base, ""))
            row[f"{dim}_score"] = j.score if j is not None and j.valid else math.nan
            row[f"{dim}_state"] = (
                "answer_failed" if not a.valid else "pending" if j is None else "scored" if j.valid else "failed"
            )
        rows.append(row)
    return pd.DataFrame(rows)


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model × (overall | attribute): n, answer failures, and per dimension mean, CI, n, failed, pending."""
    records = []
    groups = [(model, "overall", part) for model, part in frame.groupby("model", sort=True)]
    groups += [
        (model, attribute, part) for (model, attribute), part in frame.groupby(["model", "attribute"], sort=True)
    ]
    for model, attribute, part in groups:
        record: dict[str, Any] = {
            "model": model,
            "attribute": attribute,
            "n_items": len(part),
            "answer_failed": int((~part.answer_valid).sum()),
        }
        for dim in DIMENSIONS:
            scores = part.loc[part[f"{dim}_state"] == "scored", f"{dim}_score"]
            mean, low, high = mean_ci(scores)
            record.update(
                {
                    f"{dim}_mean": mean,
                    f"{dim}_ci_low": low,
                    f"{dim}_ci_high": high,
                    f"{dim}_n": len(scores),
                    f"{dim}_failed": int((part[f"{dim}_state"] == "failed").sum()),
                    f"{dim}_pending": int((part[f"{dim}_state"] == "pending").sum()),
                }
            )
        states = part[[f"{dim}_state" for dim in DIMENSIONS]]
        record["n_judged"] = int((states == "scored").all(axis=1).sum())
        record["judge_failed"] = int((states == "failed").any(axis=1).sum())
        records.append(record)
    return pd.DataFrame(records)


def _cell(row: pd.Series, dim: str) -> str:
    mean, low, high = row[f"{dim}_mean"], row[f"{dim}_ci_low"], row[f"{dim}_ci_high"]
    if math.isnan(mean):
        return "–"
    return f"{mean:.1f}" if math.isnan(low) else f"{mean:.1f} [{low:.1f}, {high:.1f}]"


def table_markdown(summary: pd.DataFrame) -> str:
    """Table 1 (overall) and Table 2 (per attribute) in the paper's shape, plus n judged and failures."""
    lines = [
        "**Overall** (mean [95% CI]; Bias lower is better)",
        "",
        "| Model | Acc ↑ | Bias ↓ | Faith ↑ | n | judged | answer failed | judge failed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, row in summary[summary.attribute == "overall"].iterrows():
        lines.append(
            f"| {row.model} | {_cell(row, 'accuracy')} | {_cell(row, 'bias')} | {_cell(row, 'faithfulness')} "
            f"| {row.n_items} | {row.n_judged} | {row.answer_failed} | {row.judge_failed} |"
        )
    present = [a for a in ATTRIBUTE_ORDER if a in set(summary.attribute)]
    lines += [
        "",
        "**Per attribute** (Acc / Bias / Faith, mean [95% CI]; n judged / answer failed / judge failed)",
        "",
        "| Model | " + " | ".join(a.capitalize() for a in present) + " |",
        "|---|" + "---|" * len(present),
    ]
    for model in sorted(set(summary.model)):
        cells = []
        for attribute in present:
            match = summary[(summary.model == model) & (summary.attribute == attribute)]
            if match.empty:
                cells.append("–")
                continue
            row = match.iloc[0]
            cells.append(
                " / ".join(_cell(row, d) for d in ("accuracy", "bias", "faithfulness"))
                + f" (n {row.n_judged}/{row.answer_failed}/{row.judge_failed})"
            )
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def scatter(summary: pd.DataFrame, path: str | Path, title: str = "News subset: bias vs faithfulness") -> Path:
    """Each model's overall bias (x, lower is better) against faithfulness (y), with 95% CIs as error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    overall = summary[(summary.attribute == "overall") & summary.bias_mean.notna() & summary.faithfulness_mean.notna()]
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    for _, row in overall.iterrows():
        xerr: list[list[Any]] | None = [[row.bias_mean - row.bias_ci_low], [row.bias_ci_high - row.bias_mean]]
        yerr: list[list[Any]] | None = [
            [row.faithfulness_mean - row.faithfulness_ci_low],
            [row.faithfulness_ci_high - row.faithfulness_mean],
        ]
        xerr = None if math.isnan(row.bias_ci_low) else xerr
        yerr = None if math.isnan(row.faithfulness_ci_low) else yerr
        ax.errorbar(row.bias_mean, row.faithfulness_mean, xerr=xerr, yerr=yerr, fmt="o", capsize=3)
        ax.annotate(
            f"{row.model} (n={row.n_judged})",
            (row.bias_mean, row.faithfulness_mean),
            textcoords="offset points",
            xytext=(5, 5),
            fontsize=8,
        )
    if overall.empty:
        ax.text(0.5, 0.5, "no model has both bias and faithfulness scores", ha="center", transform=ax.transAxes)
    ax.set_xlabel("bias (0-100, lower is better)")
    ax.set_ylabel("faithfulness (0-100, higher is better)")
    ax.set_xlim(-2, 102)
    ax.set_ylim(-2, 102)
    ax.set_title(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def icc_2_1(*raters: np.ndarray) -> float:
    """ICC(2,1) (Shrout & Fleiss 1979): two-way random effects, absolute agreement, one rater.
    One array per rater over the same items; NaN below 2 items."""
    scores = np.column_stack(raters).astype(float)
    n, k = scores.shape
    if n < 2:
        return math.nan
    grand = scores.mean()
    ms_rows = k * ((scores.mean(axis=1) - grand) ** 2).sum() / (n - 1)
    ms_cols = n * ((scores.mean(axis=0) - grand) ** 2).sum() / (k - 1)
    residual = scores - scores.mean(axis=1, keepdims=True) - scores.mean(axis=0, keepdims=True) + grand
    ms_error = (residual**2).sum() / ((n - 1) * (k - 1))
    denominator = ms_rows + (k - 1) * ms_error + k * (ms_cols - ms_error) / n
    return float((ms_rows - ms_error) / denominator) if denominator > 0 else math.nan


def agreement(first: list[NewsJudgement], second: list[NewsJudgement]) -> pd.DataFrame:
    """Per dimension, over answers both judgement sets scored: Spearman ρ (p), ICC(2,1), mean |a−b| and
    mean (a−b) with 95% t-intervals; plus how many answers only one set scored."""

    def scored(rows: list[NewsJudgement]) -> dict[tuple, float]:
        return {
            (r.model_id, float(r.temperature), r.item_id, r.dimension): r.score
            for r in rows
            if r.valid and r.score is not None  # a valid judgement has a score
        }

    a, b = scored(first), scored(second)
    records = []
    for dim in DIMENSIONS:
        keys = sorted(k for k in a.keys() & b.keys() if k[3] == dim)
        x = np.array([a[k] for k in keys])
        y = np.array([b[k] for k in keys])
        record: dict[str, Any] = {
            "dimension": dim,
            "n_both": len(keys),
            "n_only_first": sum(1 for k in a if k[3] == dim and k not in b),
            "n_only_second": sum(1 for k in b if k[3] == dim and k not in a),
        }
        constant = len(keys) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0
        rho, p = (math.nan, math.nan) if constant else stats.spearmanr(x, y)
        abs_mean, abs_low, abs_high = mean_ci(np.abs(x - y))
        diff_mean, diff_low, diff_high = mean_ci(x - y)
        record.update(
            {
                "spearman_rho": float(rho),
                "spearman_p": float(p),
                "icc_2_1": icc_2_1(x, y),
                "mean_abs_diff": abs_mean,
                "mean_abs_diff_ci_low": abs_low,
                "mean_abs_diff_ci_high": abs_high,
                "mean_diff": diff_mean,
                "mean_diff_ci_low": diff_low,
                "mean_diff_ci_high": diff_high,
            }
        )
        records.append(record)
    return pd.DataFrame(records)


def write_results(
    answer_paths: list[str | Path],
    judgement_path: str | Path,
    out_dir: str | Path,
    compare_path: str | Path | None = None,
    judge_id: str | None = None,
) -> dict[str, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    answers = [row for path in answer_paths for row in read_answers(path)]
    judgements = read_judgements(judgement_path)
    summary = summarise(joined(answers, judgements, judge_id))
    # the judge by name in every output; a fixture judge's numbers say, wherever they go, that they are a hash
    judges = sorted({j.judge_id for j in judgements if judge_id is None or j.judge_id == judge_id})
    fixture = any(is_fixture(j) for j in judges)
    summary.insert(2, "judge", "; ".join(judges))
    summary.insert(3, "judge_note", FIXTURE_NOTE if fixture else "")
    written = {
        "summary": out_dir / "news_summary.csv",
        "table": out_dir / "news_table.md",
        "scatter": out_dir / "news_bias_vs_faithfulness.png",
    }
    summary.to_csv(written["summary"], index=False)
    placeholder = any(a.placeholder for a in answers)
    note = (
        "> PLACEHOLDER data: drawn sample images and our own questions; these numbers test the "
        "pipeline and say nothing about any model.\n\n"
        if placeholder
        else ""
    )
    named = ", ".join(judge_name(j) for j in judges) or "none (no judgements)"
    judged_by = f"Judge: {named}\n\n" + (f"> **{FIXTURE_NOTE}.**\n\n" if fixture else "")
    written["table"].write_text(note + judged_by + table_markdown(summary))
    title = "PLACEHOLDER sample: bias vs faithfulness" if placeholder else "News subset: bias vs faithfulness"
    scatter(
        summary, written["scatter"], title + ("\nFIXTURE judge: scores are a hash of the prompt" if fixture else "")
    )
    if compare_path is not None:
        written["agreement"] = out_dir / "news_judge_agreement.csv"
        agreement(read_judgements(judgement_path), read_judgements(compare_path)).to_csv(
            written["agreement"], index=False
        )
    return written


def main(args: argparse.Namespace) -> int:
    written = write_results(args.answers, args.judgements, args.out, args.compare, args.judge_id)
    if args.source:
        from vignette_bench.eval.news.data import load_news, news_items
        from vignette_bench.eval.news.page import PAGE, write_page

        answered = {row.item_id for path in args.answers for row in read_answers(path)}
        items = [item for item in news_items(load_news(args.source)) if item.id in answered]
        judged = [args.judgements] + ([args.compare] if args.compare else [])
        written["page"] = write_page(items, args.answers, judged, Path(args.out) / PAGE)
    print(written["table"].read_text())
    if "agreement" in written:
        print(pd.read_csv(written["agreement"]).to_string(index=False))
    print("wrote " + ", ".join(str(p) for p in written.values()))
    return 0
