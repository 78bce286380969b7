"""Matplotlib figures for the report, drawn from tidy tables (never from raw responses).

Every diverging colour scale is centred on "no bias" (50 % for a two-way choice, 0 for a
difference or a log-odds); figure height grows with the number of rows so that 167 identity
labels stay readable. Cells significant after Benjamini–Hochberg are marked with a dot.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # headless: the report is written to files
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402

ROW_INCH = 0.17  # per identity row; 167 rows -> ~29 in, labels at 7 pt stay apart
COL_INCH = 0.28
LABEL_PT = 7
DIVERGING = "RdBu_r"  # red = more often chosen / more positive, blue = less
SIG_Q = 0.05


def _size(n_rows: int, n_cols: int, min_w: float = 5.0) -> tuple[float, float]:
    return max(min_w, 2.8 + COL_INCH * n_cols), max(2.6, 1.6 + ROW_INCH * n_rows)


def to_png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def heatmap(values: pd.DataFrame, *, title: str, center: float, cbar_label: str,
            significant: pd.DataFrame | None = None, span: float | None = None,
            row_notes: dict[str, str] | None = None) -> bytes:
    """A rows × columns heatmap with a diverging scale centred on ``center``.

    ``significant`` is a boolean frame of the same shape (True = BH q < 0.05): marked with a dot.
    ``span`` fixes the half-range of the scale (else the largest deviation, so the centre is white).
    """
    n_rows, n_cols = values.shape
    fig, ax = plt.subplots(figsize=_size(n_rows, n_cols))
    arr = values.to_numpy(dtype=float)
    dev = np.nanmax(np.abs(arr - center)) if np.isfinite(arr).any() else 1.0
    half = span if span is not None else max(float(dev), 1e-9)
    norm = TwoSlopeNorm(vcenter=center, vmin=center - half, vmax=center + half)
    cmap = matplotlib.colormaps[DIVERGING].copy()
    cmap.set_bad("#dddddd")  # a cell never asked is grey, not "no bias"
    im = ax.imshow(np.ma.masked_invalid(arr), aspect="auto", cmap=cmap, norm=norm, interpolation="nearest")
    ax.set_xticks(range(n_cols))
    ax.set_xticklabels([str(c) for c in values.columns], rotation=60, ha="right", fontsize=LABEL_PT)
    labels = [f"{r}{(row_notes or {}).get(r, '')}" for r in values.index]
    ax.set_yticks(range(n_rows))
    ax.set_yticklabels(labels, fontsize=LABEL_PT)
    if significant is not None:
        sig = significant.reindex(index=values.index, columns=values.columns).fillna(False).to_numpy(bool)
        ys, xs = np.nonzero(sig)
        ax.scatter(xs, ys, s=9, c="black", marker="o", linewidths=0, label=f"BH q < {SIG_Q}")
        if len(xs):
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, -0.02), fontsize=LABEL_PT, frameon=False)
    cb = fig.colorbar(im, ax=ax, fraction=0.04 if n_rows > 30 else 0.08, pad=0.02)
    cb.set_label(cbar_label, fontsize=LABEL_PT + 1)
    cb.ax.tick_params(labelsize=LABEL_PT)
    ax.set_title(title, fontsize=LABEL_PT + 3)
    return to_png(fig)


def rate_bars(table: pd.DataFrame, *, title: str, value: str, low: str, high: str, ref: float | None,
              xlabel: str) -> bytes:
    """Horizontal bars with confidence intervals; ``ref`` draws the no-bias line."""
    table = table.reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(6.5, max(2.0, 0.9 + 0.3 * len(table))))
    y = np.arange(len(table))
    err = np.vstack([table[value] - table[low], table[high] - table[value]]).clip(min=0)
    ax.barh(y, table[value], xerr=err, color="#7a9cc6", ecolor="black", capsize=3)
    ax.set_yticks(y)
    ax.set_yticklabels(table["label"], fontsize=LABEL_PT + 1)
    ax.invert_yaxis()
    if ref is not None:
        ax.axvline(ref, color="black", lw=1, ls="--", label="no bias")
        ax.legend(fontsize=LABEL_PT, frameon=False, loc="lower right")
    ax.set_xlabel(xlabel, fontsize=LABEL_PT + 1)
    ax.set_title(title, fontsize=LABEL_PT + 3)
    return to_png(fig)


def consistency(scores: pd.DataFrame, verdict: pd.Series, *, title: str) -> bytes:
    """Identity × paradigm advantage (pp, ↑ = advantaged), rows grouped consistent/conflicting."""
    order = verdict.sort_values(kind="stable").index
    vals = scores.loc[order]
    notes = {i: f"  [{verdict[i]}]" for i in order}
    return heatmap(vals, title=title, center=0.0, cbar_label="advantage, percentage points (↑ = advantaged)",
                   row_notes=notes)


def model_comparison(table: pd.DataFrame, *, title: str) -> bytes:
    """table: rows = dimension, columns = model, values = bias magnitude; one panel per paradigm."""
    paradigms = list(dict.fromkeys(table["paradigm"]))
    fig, axes = plt.subplots(1, len(paradigms), figsize=(3.6 * len(paradigms) + 1, 3.8), squeeze=False)
    for ax, par in zip(axes[0], paradigms):
        sub = table[table["paradigm"] == par].pivot(index="dimension", columns="model", values="value")
        sub.plot.barh(ax=ax, width=0.8, legend=False)
        ax.set_title(par, fontsize=LABEL_PT + 3)
        ax.set_xlabel("mean |S − 50| (pp), lower is fairer", fontsize=LABEL_PT)
        ax.tick_params(labelsize=LABEL_PT)
        ax.set_ylabel("")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=LABEL_PT + 1,
               frameon=False, bbox_to_anchor=(0.5, -0.08))
    fig.suptitle(title, fontsize=LABEL_PT + 4)
    return to_png(fig)
