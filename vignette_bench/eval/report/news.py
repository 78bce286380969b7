"""The news subset's section: the folder written by `vignette news results` (its summary
table, the bias–faithfulness scatter and, when present, the judge agreement), shown as it is:
the numbers are the news engineer's (t-intervals, failures counted, never averaged)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from vignette_bench.eval.news.fixture import FIXTURE_NOTE, is_fixture
from vignette_bench.eval.pages.page import Figure, Section

SUMMARY, SCATTER, AGREEMENT = "news_summary.csv", "news_bias_vs_faithfulness.png", "news_judge_agreement.csv"
DIMS = ("accuracy", "bias", "faithfulness")


def news_section(folder: str | Path) -> Section:
    folder = Path(folder)
    s = Section("News subset (open-ended answers, LLM judge)")
    if not (folder / SUMMARY).is_file():
        s.notes.append(  # the folder by its base name: no machine path in the page
            f"{folder.name}/{SUMMARY} is missing: write it with `vignette news results --answers ... "
            f"--judgements ... --out {folder.name}`"
        )
        return s
    summary = pd.read_csv(folder / SUMMARY)
    if (folder / "news_table.md").is_file() and "PLACEHOLDER" in (folder / "news_table.md").read_text():
        s.notes.append("placeholder news sample (drawn images, our own questions): these numbers test the pipeline")
    judges = sorted(
        {j for cell in summary.get("judge", pd.Series(dtype=str)).dropna() for j in str(cell).split("; ") if j}
    )
    if judges:
        from vignette_bench.eval.news.results import judge_name

        s.paragraphs.append("Judged by " + ", ".join(judge_name(j) for j in judges) + ".")
    else:
        s.notes.append("the summary does not name its judge (written before judges were recorded): rewrite it")
    if any(is_fixture(j) for j in judges):
        s.notes.append(FIXTURE_NOTE)
    s.paragraphs.append(
        "Judge scores 0–100: accuracy and faithfulness higher is better, bias lower is better; "
        "mean [95% t-interval] over the answers whose judgement succeeded; failures are counted, "
        "never scored."
    )
    for scope, part in (
        ("overall", summary[summary["attribute"] == "overall"]),
        ("per attribute", summary[summary["attribute"] != "overall"]),
    ):
        if part.empty:
            continue
        cols = ["model"] + (["attribute"] if scope != "overall" else []) + ["n_items", "answer_failed", "judge_failed"]
        cols += ["judge_note"] if any(is_fixture(j) for j in judges) else []  # beside the fixture's numbers
        table = part[[c for c in cols if c in part]].copy()
        for d in DIMS:
            if f"{d}_mean" in part:
                table[d] = [
                    f"{m:.1f} [{lo:.1f}, {hi:.1f}]" if pd.notna(lo) else (f"{m:.1f}" if pd.notna(m) else "–")
                    for m, lo, hi in zip(part[f"{d}_mean"], part[f"{d}_ci_low"], part[f"{d}_ci_high"])
                ]
        s.tables.append((f"News results, {scope}", table))
    if (folder / SCATTER).is_file():
        s.figures.append(
            Figure(
                "news-bias-faithfulness", "News subset: bias vs faithfulness per model", (folder / SCATTER).read_bytes()
            )
        )
    if (folder / AGREEMENT).is_file():
        s.tables.append(("Agreement between two judges or judging runs", pd.read_csv(folder / AGREEMENT)))
    return s
