"""The report's tables as CSV beside the page (issue 33 item 4): checks and reviewers need no HTML parsing.

selection.csv: one row per model x family x dimension (per gender, "· both genders" where the design is
stratified) x identity, with the paper's columns (pooled rate, its p and q), the left share, the report's
rate and test, how sides were handled, why an identity is position-confounded, and the stratum's side
model (side term with its 95% CI, lack-of-fit X², df and p, the observed left-choice rate).
verdicts.csv: one row per model x identity x dimension (`analysis.verdicts.VERDICT_COLUMNS`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from vignette_bench import atomic
from vignette_bench.eval.analysis.numbers import Numbers
from vignette_bench.eval.analysis.verdicts import VERDICT_COLUMNS
from vignette_bench.eval.pages import paper

SELECTION_COLUMNS = [
    "family",
    "dimension",
    "stratum",
    "identity",
    "n",
    "value_paper",
    "p_paper",
    "q_paper",
    "left_share",
    "value",
    "se",
    "ci_low",
    "ci_high",
    "effect",
    "effect_low",
    "effect_high",
    "p",
    "q",
    "flag",
    "position",
    "reason",
    "detectable_effect",
    "side_term",
    "side_low",
    "side_high",
    "fit_x2",
    "fit_df",
    "fit_p",
    "left_rate",
]


def write_tables(out: Path, tables: list[tuple[str, Numbers, pd.DataFrame]]) -> list[Path]:
    """Write selection.csv and verdicts.csv under `out` from build's (model, numbers, verdicts)."""
    sel = [
        paper.untested_blank(n.selection.reindex(columns=SELECTION_COLUMNS)).assign(model=name) for name, n, _ in tables
    ]
    ver = [v.reindex(columns=VERDICT_COLUMNS).assign(model=name) for name, _, v in tables]
    paths = []
    for fname, parts, cols in (("selection.csv", sel, SELECTION_COLUMNS), ("verdicts.csv", ver, VERDICT_COLUMNS)):
        frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)
        frame = frame[["model", *cols]] if "model" in frame else frame.reindex(columns=["model", *cols])
        path = out / fname
        atomic.write_text(path, frame.to_csv(index=False))  # a full disk leaves no truncated table
        paths.append(path)
    return paths
