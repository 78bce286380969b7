"""A comparison as a report section: the four summary numbers per family, the identities whose
delta is significant, the unmatched ones, and one delta plot per family."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vignette_bench.eval.analysis.compare import Comparison
from vignette_bench.eval.analysis.figures import LABEL_PT, pyplot, to_png
from vignette_bench.eval.analysis.page import NOT_DRAWN, Figure, Section, fig_name


def delta_plot(ident: pd.DataFrame, label_a: str, label_b: str, title: str) -> bytes:
    """Deltas with 95% CIs, one row per identity (sorted by delta), dimensions as labels."""
    g = ident.sort_values("delta")
    fig, ax = pyplot().subplots(figsize=(6.0, 0.8 + 0.22 * len(g)), layout="constrained")
    y = np.arange(len(g))
    lo = np.clip(np.nan_to_num((g["delta"] - g["ci_low"]).to_numpy(float)), 0.0, None)  # no CI: no bar
    hi = np.clip(np.nan_to_num((g["ci_high"] - g["delta"]).to_numpy(float)), 0.0, None)
    colors = np.where(g["q_value"] < 0.05, "#c0392b", "#34495e")
    ax.errorbar(g["delta"], y, xerr=[lo, hi], fmt="none", ecolor="#999", elinewidth=1)
    ax.scatter(g["delta"], y, c=colors, s=14, zorder=3)
    ax.axvline(0, color="#555", lw=0.8)
    ax.set_yticks(y, [f"{i} ({d})" for i, d in zip(g["identity"], g["dimension"])], fontsize=LABEL_PT)
    ax.set_xlabel(f"{label_a} − {label_b}: side-balanced selection frequency (pp), 95% CI", fontsize=LABEL_PT + 1)
    ax.tick_params(axis="x", labelsize=LABEL_PT)
    ax.set_title(title, fontsize=LABEL_PT + 3)
    return to_png(fig)


def comparison_section(c: Comparison, level: int = 2, draw: bool = True) -> Section:
    """``draw``: False leaves the delta plots out (`vignette report --figures` other than all: not drawn at all)."""
    s = Section(f"Run comparison: {c.label_a} vs {c.label_b}", level=level)
    s.paragraphs.append(
        f"Delta = {c.label_a} − {c.label_b}, in percentage points of each identity's side-balanced selection "
        "frequency, for identities both runs measured (per family and dimension). Intervals and p-values are "
        "cluster-robust (CR2, Bell–McCaffrey df) over the stacked answers of both runs, clusters = renders shown "
        "(shared by the runs when they used one source); q: BH within each family. Mean signed, mean absolute, "
        "RMSE and max absolute delta are the paper's summary (table 13) and include sampling noise; the "
        "noise-corrected RMS is about 0 when the runs agree up to noise."
    )
    if c.identities.empty:
        s.notes.append("the runs have no (family, dimension, identity) in common: nothing to compare")
        return s
    s.tables.append(("Summary per family (pp)", c.summary))
    hits = c.identities[c.identities["q_value"] < 0.05]
    cols = ["family", "dimension", "identity", "value_a", "value_b", "delta", "ci_low", "ci_high", "q_value"]
    s.tables.append(
        (
            "Identities whose delta is significant (q < 0.05)" if len(hits) else "No delta is significant (q < 0.05)",
            hits[cols],
        )
    )
    if len(c.unmatched):
        counts = c.unmatched.groupby(["family", "in_run"]).size().rename("identities").reset_index()
        s.notes.append(f"{len(c.unmatched)} identity-family result(s) were measured by one run only (not compared)")
        s.tables.append(("Measured by one run only", counts))
    for family, g in c.identities.groupby("family", sort=True):
        if not draw:
            s.notes.append(NOT_DRAWN)
            break
        s.figures.append(
            Figure(
                fig_name("compare", c.label_a, c.label_b, str(family)),
                f"{family}: {c.label_a} − {c.label_b} per identity (red: q < 0.05)",
                delta_plot(g, c.label_a, c.label_b, f"{family}: {c.label_a} − {c.label_b}"),
            )
        )
    return s
