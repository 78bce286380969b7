"""A comparison as a report section: the four summary numbers per family, the identities whose
delta is significant, the unmatched and untested ones, and one delta plot per family.

Every delta is shown with its basis (`sides`: side-balanced, side-matched on one side, pooled), beside
both runs' rates on that same basis; untested identities have no delta and are listed, not drawn."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vignette_bench.eval.compare.comparison import TESTED_FLAGS, Comparison
from vignette_bench.eval.pages.figures import LABEL_PT, pyplot, to_png
from vignette_bench.eval.pages.page import NOT_DRAWN, Figure, Section, fig_name, plural
from vignette_bench.stats.verdicts import BALANCED, SIDES_TEXT

# the basis of a delta in a plot label: nothing when side-balanced (the default), else which side or pooled
BASIS_MARK = {
    SIDES_TEXT[BALANCED]: "",
    "left only (side-matched)": " [left side only]",
    "right only (side-matched)": " [right side only]",
    "pooled (sides unknown)": " [pooled, sides unknown]",
}


# why an identity has no delta, by its flag (`stats.verdicts` and `stats.clustered` flags)
UNTESTED_WHY = {
    "position_confounded": ": seen on the left in one run and on the right in the other, so a delta would be a side "
    "difference",
    "constant_part": ": one run's answers about it all alike, so no variance to test against",
    "zero_variance": ": no variance to test against",
    "too_few_clusters": ": too few clusters",
}


def delta_plot(ident: pd.DataFrame, label_a: str, label_b: str, title: str) -> bytes:
    """Tested deltas with 95% CIs, one row per identity (sorted by delta), dimensions as labels; a delta that is
    not side-balanced says its basis in its label and is drawn hollow."""
    g = ident[ident["flag"].isin(TESTED_FLAGS)].sort_values("delta")
    fig, ax = pyplot().subplots(figsize=(6.0, 0.8 + 0.22 * max(len(g), 1)), layout="constrained")
    y = np.arange(len(g))
    lo = np.clip(np.nan_to_num((g["delta"] - g["ci_low"]).to_numpy(float)), 0.0, None)  # no CI: no bar
    hi = np.clip(np.nan_to_num((g["ci_high"] - g["delta"]).to_numpy(float)), 0.0, None)
    colors = np.where(g["q_value"] < 0.05, "#c0392b", "#34495e")
    balanced = (g["sides"] == SIDES_TEXT[BALANCED]).to_numpy()
    ax.errorbar(g["delta"], y, xerr=[lo, hi], fmt="none", ecolor="#999", elinewidth=1)
    ax.scatter(g["delta"][balanced], y[balanced], c=colors[balanced], s=14, zorder=3)
    ax.scatter(g["delta"][~balanced], y[~balanced], facecolors="white", edgecolors=colors[~balanced], s=16, zorder=3)
    ax.axvline(0, color="#555", lw=0.8)
    labels = [f"{i} ({d}){BASIS_MARK.get(b, '')}" for i, d, b in zip(g["identity"], g["dimension"], g["sides"])]
    ax.set_yticks(y, labels, fontsize=LABEL_PT)
    ax.set_xlabel(f"{label_a} − {label_b}: selection frequency (pp), 95% CI", fontsize=LABEL_PT + 1)
    ax.tick_params(axis="x", labelsize=LABEL_PT)
    ax.set_title(title, fontsize=LABEL_PT + 3)
    return to_png(fig)


def comparison_section(c: Comparison, level: int = 2, draw: bool = True) -> Section:
    """``draw``: False leaves the delta plots out (`vignette report --figures` other than all: not drawn at all)."""
    s = Section(f"Run comparison: {c.label_a} vs {c.label_b}", level=level)
    s.paragraphs.append(
        f"Delta = {c.label_a} − {c.label_b}, in percentage points of each identity's selection frequency, for "
        "identities both runs measured (per family and dimension), like with like: side-balanced in both runs, or "
        "side-matched (the identity was not seen on both sides in both runs: both runs' rates on the side both "
        "showed it on, so a side preference cancels), or pooled where sides are unknown; the *sides* column says which, and *value_a*, *value_b* are "
        "the runs' rates on that same basis. Intervals and p-values are cluster-robust (CR2, Bell–McCaffrey df) "
        "over the stacked answers of both runs, clusters = renders shown; q: BH within each family. Mean signed, "
        "mean absolute, RMSE and max absolute delta are the paper's summary (table 13) over tested identities and "
        "include sampling noise; the noise-corrected RMS is about 0 when the runs agree up to noise."
    )
    s.paragraphs.append(f"**Clustering**: {c.clustering}.")
    if c.identities.empty:
        s.notes.append("the runs have no (family, dimension, identity) in common: nothing to compare")
        return s
    ident = c.identities
    tested = ident["flag"].isin(TESTED_FLAGS)
    one_side = tested & ~ident["sides"].isin([SIDES_TEXT[BALANCED], "pooled (sides unknown)"])
    if one_side.any():
        s.notes.append(
            f"side-matched: {plural(int(one_side.sum()), 'delta')} (the identity was not seen on both sides in both "
            "runs), compared on the side both runs showed it on, not side-balanced — see the sides column"
        )
    untested = ident[~tested]
    if len(untested):
        s.notes.append(
            f"not tested: {plural(len(untested), 'identity')}, no delta and not counted in the summary ("
            + "; ".join(f"{f} {k}{UNTESTED_WHY.get(str(f), '')}" for f, k in untested["flag"].value_counts().items())
            + ")"
        )
    s.tables.append(("Summary per family over tested identities (pp)", c.summary))
    hits = ident[ident["q_value"] < 0.05]
    cols = ["family", "dimension", "identity", "sides", "value_a", "value_b", "delta", "ci_low", "ci_high", "q_value"]
    s.tables.append(
        (
            "Identities whose delta is significant (q < 0.05)" if len(hits) else "No delta is significant (q < 0.05)",
            hits[cols],
        )
    )
    if one_side.any():
        s.tables.append(("Side-matched deltas (compared on one side, not side-balanced)", ident[one_side][cols]))
    if len(untested):
        s.tables.append(("Identities not tested (no delta)", untested[["family", "dimension", "identity", "flag"]]))
    if len(c.unmatched):
        counts = c.unmatched.groupby(["family", "in_run"]).size().rename("identities").reset_index()
        s.notes.append(f"measured by one run only (not compared): {plural(len(c.unmatched), 'identity-family result')}")
        s.tables.append(("Measured by one run only", counts))
    for family, g in ident.groupby("family", sort=True):
        if not draw:
            s.notes.append(NOT_DRAWN)
            break
        if not g["flag"].isin(TESTED_FLAGS).any():
            continue
        s.figures.append(
            Figure(
                fig_name("compare", c.label_a, c.label_b, str(family)),
                f"{family}: {c.label_a} − {c.label_b} per tested identity (red: q < 0.05; hollow, label in brackets: "
                "side-matched or pooled, not side-balanced)",
                delta_plot(g, c.label_a, c.label_b, f"{family}: {c.label_a} − {c.label_b}"),
            )
        )
    return s
