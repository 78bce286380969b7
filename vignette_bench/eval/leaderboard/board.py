"""Render validated entries as a table (Markdown + HTML) with a plot, and export them in the Hub's
model-repo eval-results format (`.eval_results/*.yaml`, huggingface_hub.EvalResultEntry)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import yaml

from vignette_bench.eval.report import figures as F
from vignette_bench.eval.report.page import Figure, Section, write_html, write_markdown

# Columns of the table: (metric family, field, header). Lower bias_magnitude (noise-corrected RMS) is fairer.
COLUMNS = (
    ("perception/struggle", "bias_magnitude", "struggle noise-corrected RMS"),
    ("perception/capability", "bias_magnitude", "capability noise-corrected RMS"),
    ("perception/enjoyment", "bias_magnitude", "enjoyment noise-corrected RMS"),
    ("perception/dislike", "bias_magnitude", "dislike noise-corrected RMS"),
    ("decision", "bias_magnitude", "decision noise-corrected RMS"),
    ("stereotype", "polarity", "stereotype polarity"),
    ("factuality", "accuracy", "factuality acc."),
)


def table(entries: list[dict]) -> pd.DataFrame:
    rows = []
    for e in entries:
        m = e["metrics"]
        row = {
            "model": e["model"]["id"],
            "revision": e["model"]["revision"][:12],
            "config": "+".join(e["sample"]["configs"]),
            "dataset rev.": e["dataset"]["revision"][:12],
            "questions": e["sample"]["n_questions"],
        }
        for family, field, header in COLUMNS:
            fam = m.get(family) or {}
            row[header] = fam.get(field)
            if field == "bias_magnitude":
                row[f"{header.split()[0]} 95% CI"] = _ci(fam)
        modes = {v.get("answer_mode") for v in m.values()} - {None}
        row["answer mode"] = "+".join(sorted(modes)) if modes else "–"
        inv = [v["invalid_rate"] for v in m.values()]
        row["invalid"] = max(inv) if inv else None
        row["placeholder"] = "yes" if e["dataset"].get("placeholder") else ""
        rows.append(row)
    t = pd.DataFrame(rows)
    return t.sort_values(["placeholder", "model"], kind="stable").reset_index(drop=True) if len(t) else t


def _ci(fields: dict) -> str:
    lo, hi = fields.get("bias_magnitude_ci_low"), fields.get("bias_magnitude_ci_high")
    return "–" if lo is None or hi is None else f"[{lo:.1f}, {hi:.1f}]"


def comparison_plot(entries: list[dict]) -> bytes | None:
    rows = [
        {
            "model": f"{e['model']['id']} ({'+'.join(e['sample']['configs'])})",
            "paradigm": "by family",
            "dimension": fam,
            "value": v["bias_magnitude"],
        }
        for e in entries
        for fam, v in e["metrics"].items()
        if v.get("bias_magnitude") is not None and fam != "factuality"
    ]
    if not rows:
        return None
    t = pd.DataFrame(rows)
    return F.model_comparison(t, title="Leaderboard: noise-corrected bias magnitude (lower is fairer)")


def build(entries: list[dict], out: Path, title: str = "VIGNETTE leaderboard") -> tuple[Path, Path]:
    s = Section("Entries")
    s.paragraphs.append(
        "Every number was recomputed from the submitted responses by `vignette leaderboard validate` "
        "before this table was built. Noise-corrected RMS: the root mean square over identities of their "
        "effect (side-balanced selection − 50 %; factuality: accuracy − the other identities'), with each "
        "identity's sampling variance removed, in percentage points with its 95% CI — about 0 for an unbiased "
        "model at any sample size (the old mean |S−50| was mostly noise: 17.7 pp for a random responder on a "
        "small sample). Lower is fairer. Answer mode: choice (0/1 answers) or score (probabilities). "
        "Polarity: mean high-minus-low valence "
        "selection (pp; 0 is unbiased). Invalid: highest refusal/invalid share over the paradigms. Entries "
        "on placeholder renders demonstrate the pipeline and are not rankings."
    )
    if not entries:
        s.notes.append("no entries: add one with `vignette leaderboard create RUN_DIR` (docs/leaderboard.md)")
    else:
        s.tables.append(("Leaderboard", table(entries)))
        png = comparison_plot(entries)
        if png:
            s.figures.append(Figure("leaderboard-bias", "Noise-corrected bias magnitude per paradigm and model", png))
    out.mkdir(parents=True, exist_ok=True)
    md = write_markdown(title, [s], out)
    page = write_html(title, [s], out)
    md.rename(out / "leaderboard.md")
    page.rename(out / "leaderboard.html")
    return out / "leaderboard.md", out / "leaderboard.html"


def task_id(family: str, field: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", f"{family}_{field}").strip("_")


def export(entry: dict, out: Path, dataset_id: str, source_url: str | None = None) -> Path:
    """`.eval_results/vignette-<configs>.yaml` for the model's repo (https://huggingface.co/docs/hub/eval-results)."""
    from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml

    results = []
    for family, fields in sorted(entry["metrics"].items()):
        for field in ("bias_magnitude", "polarity", "accuracy", "invalid_rate", "left_rate"):
            value = fields.get(field)
            if value is None:
                continue
            results.append(
                EvalResultEntry(
                    dataset_id=dataset_id,
                    task_id=task_id(family, field),
                    value=round(float(value), 6),
                    dataset_revision=entry["dataset"]["revision"]
                    if re.fullmatch(r"[0-9a-f]{40}", entry["dataset"]["revision"])
                    else None,
                    date=entry["submitted"]["date"],
                    source_url=source_url,
                    source_name="VIGNETTE leaderboard" if source_url else None,
                    notes=f"{'+'.join(entry['sample']['configs'])}; entry {entry['entry_id']}; responses sha256 "
                    f"{entry['responses']['sha256'][:16]}",
                )
            )
    configs = re.sub(r"[^a-z0-9]+", "-", "-".join(entry["sample"]["configs"]))
    path = out / ".eval_results" / f"vignette-{configs}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(eval_result_entries_to_yaml(results), sort_keys=False))
    return path
