"""Matplotlib figures for the report's details (`--figures all`), drawn from tidy tables (never from raw
responses); the findings' forest plots and the model comparison are SVG (vignette_bench/eval/pages/svg.py).

Every diverging colour scale is centred on "no bias" (50 % for a two-way choice, 0 for a
difference or a log-odds); figure height grows with the number of rows so that 167 identity
labels stay readable. Cells significant after Benjamini–Hochberg are marked with a dot.
"""

from __future__ import annotations

import io
from types import ModuleType

import numpy as np
import pandas as pd

from vignette_bench.eval.analysis.verdicts import Q as SIG_Q  # noqa: F401  (one significance level everywhere)

ROW_INCH = 0.17  # per identity row; 167 rows -> ~29 in, labels at 7 pt stay apart
COL_INCH = 0.28
LABEL_PT = 7
DIVERGING = "RdBu_r"  # red = more often chosen / more positive, blue = less


def pyplot() -> ModuleType:
    """matplotlib's pyplot on the headless Agg backend, imported on first use: importing matplotlib costs about
    0.4 s of CPU, which a report drawn with `--figures none` (or only SVG figures) does not need to pay."""
    import matplotlib

    matplotlib.use("Agg")  # headless: the report is written to files
    import matplotlib.lines
    import matplotlib.patches
    import matplotlib.pyplot as plt

    return plt


def _size(n_rows: int, n_cols: int, min_w: float = 5.0) -> tuple[float, float]:
    return max(min_w, 2.8 + COL_INCH * n_cols), max(3.2, 1.6 + ROW_INCH * n_rows)


THIN_COLOUR = "#eeeeee"  # a cell resting on too few answers: hatched on this, not coloured
MAX_ANNOTATED = 400  # heatmaps with at most this many cells print each cell's answer count


def to_png(fig, dpi: int = 100) -> bytes:
    """PNG at the resolution shown, quantised to a 256-colour palette (flat colours: no visible loss, ~3x smaller)."""
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)  # constrained layout, so one draw (no bbox_inches="tight")
    pyplot().close(fig)
    img = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    out = io.BytesIO()
    img.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(out, format="PNG", optimize=True)
    return out.getvalue()


def heatmap(
    values: pd.DataFrame,
    *,
    title: str,
    center: float,
    cbar_label: str,
    significant: pd.DataFrame | None = None,
    span: float | None = None,
    row_notes: dict[str, str] | None = None,
    min_width: float = 5.0,
    limits: tuple[float, float] | None = None,
    counts: pd.DataFrame | None = None,
    min_count: int = 10,
) -> bytes:
    """A rows × columns heatmap with a diverging scale centred on ``center``.

    ``significant`` is a boolean frame of the same shape (True = BH q < 0.05): marked with a dot.
    ``span`` fixes the half-range of the scale (else the largest deviation, so the centre is white);
    ``limits`` clips the scale to what the value can be (0–100 for a percentage).
    ``counts``: the answers each cell rests on; a cell with fewer than ``min_count`` is hatched grey
    (its colour would show noise), and small heatmaps print every cell's count.
    """
    plt = pyplot()
    import matplotlib
    from matplotlib.colors import TwoSlopeNorm

    n_rows, n_cols = values.shape
    fig, ax = plt.subplots(figsize=_size(n_rows, n_cols, min_width), layout="constrained")
    arr = values.to_numpy(dtype=float)
    dev = np.nanmax(np.abs(arr - center)) if np.isfinite(arr).any() else 1.0
    if n_rows == 0 or n_cols == 0:
        raise ValueError(f"{title}: nothing to draw (no rows or columns); the caller says what is missing")
    half = span if span is not None else max(float(dev), 1e-9)
    lo, hi = center - half, center + half
    if limits is not None:
        lo, hi = max(lo, limits[0]), min(hi, limits[1])
    eps = 1e-9 * max(1.0, abs(center))
    norm = TwoSlopeNorm(vcenter=center, vmin=min(lo, center - eps), vmax=max(hi, center + eps))
    cmap = matplotlib.colormaps[DIVERGING].with_extremes(bad="#dddddd")  # never asked: grey, not "no bias"
    cnt = None
    if counts is not None:
        cnt = counts.reindex(index=values.index, columns=values.columns).to_numpy(dtype=float)
        thin = np.isfinite(arr) & ~(np.nan_to_num(cnt, nan=0.0) >= min_count)
        arr = np.where(thin, np.nan, arr)
        ys, xs = np.nonzero(thin)
        for y, x in zip(ys, xs):
            ax.add_patch(
                matplotlib.patches.Rectangle(
                    (x - 0.5, y - 0.5), 1, 1, facecolor=THIN_COLOUR, edgecolor="#999999", hatch="///", lw=0, zorder=2
                )
            )
    im = ax.imshow(np.ma.masked_invalid(arr), aspect="auto", cmap=cmap, norm=norm, interpolation="nearest")
    if cnt is not None and n_rows * n_cols <= MAX_ANNOTATED:
        for (y, x), c in np.ndenumerate(cnt):
            if np.isfinite(c) and c > 0:
                ax.text(x, y, f"{int(c)}", ha="center", va="center", fontsize=LABEL_PT - 1, color="#333333", zorder=3)
    ax.set_xticks(range(n_cols))
    ax.set_xticklabels([str(c) for c in values.columns], rotation=60, ha="right", fontsize=LABEL_PT)
    labels = [f"{r}{(row_notes or {}).get(r, '')}" for r in values.index]
    ax.set_yticks(range(n_rows))
    ax.set_yticklabels(labels, fontsize=LABEL_PT)
    if significant is not None:
        sig = significant.reindex(index=values.index, columns=values.columns).fillna(0.0).to_numpy(float) > 0.5
        yi, xi = np.nonzero(sig)
        corner = cnt is not None and n_rows * n_cols <= MAX_ANNOTATED  # the count sits mid-cell: dot in the corner
        sx, sy = xi + (0.32 if corner else 0.0), yi - (0.28 if corner else 0.0)
        ax.scatter(sx, sy, s=9, c="black", marker="o", linewidths=0, label=f"BH q < {SIG_Q}", zorder=4)
        if len(sx):
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, -0.02), fontsize=LABEL_PT, frameon=False)
    cb = fig.colorbar(im, ax=ax, fraction=0.04 if n_rows > 30 else 0.08, pad=0.02, extend="neither")
    cb.set_label(cbar_label, fontsize=LABEL_PT + 1)
    cb.ax.tick_params(labelsize=LABEL_PT)
    ax.set_title(title, fontsize=LABEL_PT + 3)
    return to_png(fig)


def rate_bars(
    table: pd.DataFrame, *, title: str, value: str, low: str, high: str, ref: float | None, xlabel: str
) -> bytes:
    """Points with 95% intervals, one row per label; ``ref`` draws the no-bias line."""
    table = table.reset_index(drop=True)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, max(2.8, 1.2 + 0.32 * len(table))), layout="constrained")
    y = np.arange(len(table))
    v = table[value].astype(float).to_numpy()
    lo = table[low].astype(float).fillna(table[value]).to_numpy()
    hi = table[high].astype(float).fillna(table[value]).to_numpy()
    ax.errorbar(
        v, y, xerr=np.vstack([v - lo, hi - v]).clip(min=0), fmt="o", color="#28527a", ecolor="#28527a", capsize=3, ms=4
    )
    ax.set_yticks(y)
    ax.set_yticklabels(table["label"], fontsize=LABEL_PT + 1)
    ax.invert_yaxis()
    edges = [x for x in (*lo, *hi, *([ref] if ref is not None else [])) if np.isfinite(x)]
    pad = max(0.02, 0.1 * (max(edges) - min(edges))) if edges else 0.05
    ax.set_xlim(max(0.0, min(edges) - pad) if edges else 0.0, min(1.0, max(edges) + pad) if edges else 1.0)
    if ref is not None:
        ax.axvline(ref, color="black", lw=1, ls="--")
        xlabel += " (dashed: no bias)"
    ax.set_xlabel(xlabel, fontsize=LABEL_PT + 1)
    ax.set_title(title, fontsize=LABEL_PT + 3)
    ax.grid(axis="x", alpha=0.3)
    return to_png(fig)


def consistency(
    scores: pd.DataFrame,
    significant: pd.DataFrame,
    verdict: pd.Series,
    *,
    title: str,
    tested: pd.DataFrame | None = None,
) -> bytes:
    """Identity × paradigm advantage (pp, ↑ = advantaged), rows grouped by verdict (the label beside each row);
    ``tested``: families tested per cell — a cell with none is hatched, not coloured."""
    order = verdict.sort_values(kind="stable").index
    notes = {i: f"  [{verdict[i]}]" if verdict[i] else "" for i in order}
    return heatmap(
        scores.loc[order],
        counts=None if tested is None else tested.reindex(index=order, columns=scores.columns).fillna(0),
        min_count=1,
        title=title,
        center=0.0,
        span=50.0,
        significant=significant.loc[order],
        cbar_label="advantage, pp (↑ = advantaged)",
        row_notes=notes,
        min_width=7.0,
    )
