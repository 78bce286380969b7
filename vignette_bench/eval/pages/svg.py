"""The findings' figures as SVG text, drawn without matplotlib: the forest plot of each model and the model
comparison. They are the figures every report draws (`--figures findings`, the default); as SVG they cost
milliseconds instead of matplotlib's import and rendering (about 1 s of CPU for the demo), stay sharp at
any zoom and weigh a few kB. Same content as the matplotlib versions they replace: every estimate with its
interval (already clipped by the caller), the no-effect line, verdicts told apart by colour (Okabe–Ito)
and by marker shape.
"""

from __future__ import annotations

import html
import math
import textwrap

import numpy as np
import pandas as pd

from vignette_bench.eval.analysis.verdicts import CONFOUNDED, NOT_ROBUST, UNADJUSTED_NOTE, disagrees

OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
VERDICT_STYLE = {  # colour, marker: the shape tells verdicts apart without colour
    "bias +": ("#0072B2", "up"),
    "bias −": ("#D55E00", "down"),
    NOT_ROBUST: ("#CC79A7", "square"),
    "below minimum effect": ("#E69F00", "diamond"),
    "no evidence of bias": ("#777777", "circle"),
    CONFOUNDED: ("#56B4E9", "plus"),
    "not testable": ("#bbbbbb", "cross"),
}
MODEL_MARKERS = ("circle", "square", "up", "diamond", "down")
FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'
CHAR_PX = 6.3  # width of a character at 11 px, to size the label column


def _e(text: str) -> str:
    return html.escape(str(text), quote=True)


def marker(kind: str, x: float, y: float, colour: str, r: float = 4.5, hollow: bool = False) -> str:
    """One marker of shape ``kind`` centred on (x, y)."""
    fill = "white" if hollow else colour
    style = f'fill="{fill}" stroke="{colour}" stroke-width="1.3"'
    if kind == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" {style}/>'
    if kind == "square":
        return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r:.1f}" height="{2 * r:.1f}" {style}/>'
    if kind in ("up", "down", "diamond"):
        s = 1.0 if kind == "up" else -1.0
        pts = {
            "up": [(x, y - r * s * 1.2), (x - r, y + r * s * 0.8), (x + r, y + r * s * 0.8)],
            "down": [(x, y - r * s * 1.2), (x - r, y + r * s * 0.8), (x + r, y + r * s * 0.8)],
            "diamond": [(x, y - r * 1.2), (x + r, y), (x, y + r * 1.2), (x - r, y)],
        }[kind]
        return f'<polygon points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in pts)}" {style}/>'
    d = (
        f"M{x - r},{y}H{x + r}M{x},{y - r}V{y + r}"
        if kind == "plus"
        else f"M{x - r},{y - r}L{x + r},{y + r}M{x - r},{y + r}L{x + r},{y - r}"
    )
    return f'<path d="{d}" stroke="{colour}" stroke-width="2.2" fill="none"/>'


def nice_ticks(lo: float, hi: float, target: int = 6) -> list[float]:
    """Round tick values covering [lo, hi] (steps of 1, 2, 2.5 or 5 × 10^k)."""
    span = max(hi - lo, 1e-9)
    raw = span / target
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + k * step, 10) for k in range(int((hi - first) / step + 1e-9) + 1)]


def _document(width: float, height: float, title: str, body: list[str]) -> bytes:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" {FONT} font-size="11">'
        f'<title>{_e(title)}</title><rect width="100%" height="100%" fill="white"/>' + "".join(body) + "</svg>"
    ).encode()


def _x_axis(scale, ticks: list[float], x0: float, x1: float, top: float, bottom: float, label: str) -> list[str]:
    out = []
    for t in ticks:
        x = scale(t)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top:.1f}" y2="{bottom:.1f}" stroke="#e6e6e6"/>')
        tick = f"{t:g}".replace("-", "−")
        out.append(f'<text x="{x:.1f}" y="{bottom + 14:.1f}" text-anchor="middle" font-size="10">{tick}</text>')
    out.append(
        f'<rect x="{x0:.1f}" y="{top:.1f}" width="{x1 - x0:.1f}" height="{bottom - top:.1f}" fill="none" stroke="#333"/>'
    )
    out.append(
        f'<text x="{(x0 + x1) / 2:.1f}" y="{bottom + 30:.1f}" text-anchor="middle" font-size="10">{_e(label)}</text>'
    )
    return out


def _legend(entries: list[tuple[str, str]], x0: float, width: float, y: float) -> tuple[list[str], float]:
    """Verdict markers and words in rows that wrap at ``width`` (never cut at the figure's edge); then the note
    on dashed intervals (``entries``' "dashed" item), wrapped as text. Returns the SVG and the bottom y."""
    body, x = [], x0
    for v, kind in entries:
        if kind == "dashed":
            continue
        colour, shape = VERDICT_STYLE.get(v, ("#777777", "circle"))
        w = 24 + CHAR_PX * len(v)
        if x > x0 and x + w > width:
            x, y = x0, y + 16
        body.append(marker(shape, x + 5, y - 4, colour))
        body.append(f'<text x="{x + 14:.1f}" y="{y:.1f}">{_e(v)}</text>')
        x += w
    for v, kind in entries:
        if kind != "dashed":
            continue
        y += 18
        body.append(f'<line x1="{x0:.1f}" x2="{x0 + 22:.1f}" y1="{y - 4:.1f}" y2="{y - 4:.1f}" {DASHED}/>')
        lines = textwrap.wrap(v, max(20, int((width - x0 - 30) / (CHAR_PX * 0.92))))  # 10 px text
        for k, line in enumerate(lines):
            body.append(f'<text x="{x0 + 28:.1f}" y="{y + 14 * k:.1f}" font-size="10">{_e(line)}</text>')
        y += 14 * (len(lines) - 1)
    return body, y


DASHED = 'stroke="#555555" stroke-width="1.8" stroke-dasharray="4 3"'


def forest(rows: pd.DataFrame, *, min_effect: float, title: str) -> bytes:
    """One row per identity: its effect (pp, + = favoured) with the deciding family's 95% CI (``lo``/``hi``, already
    clipped to the possible range), marked by verdict (colour and shape); zero line; the band |effect| < min_effect
    shaded. ``rows``: label, effect, lo, hi, verdict.

    The interval is the deciding family's own t interval, unadjusted: the verdict's test is stricter (a few-cluster
    check can raise the family's p; Simes and BH adjust for the other families and identities). Where the two
    disagree (an interval that excludes 0 beside "no evidence of bias"), the interval is drawn dashed with a hollow
    marker and the legend says why, so a reader never sees an interval contradict its verdict unmarked."""
    rows = rows.reset_index(drop=True)
    n = len(rows)
    label_w = min(300.0, CHAR_PX * max((len(str(x)) for x in rows["label"]), default=10) + 14)
    x0, x1, top, row_h = label_w, label_w + 330.0, 30.0, 24.0
    bottom = top + row_h * max(n, 1)
    edges = [abs(float(v)) for v in (*rows["lo"], *rows["hi"]) if np.isfinite(float(v))]
    half = max([min_effect * 1.5, *edges]) * 1.08

    def scale(v: float) -> float:
        return x0 + (float(v) + half) / (2 * half) * (x1 - x0)

    body = [f'<text x="{(x0 + x1) / 2:.1f}" y="18" text-anchor="middle" font-size="13">{_e(title)}</text>']
    band = f'<rect x="{scale(-min_effect):.1f}" y="{top:.1f}" width="{scale(min_effect) - scale(-min_effect):.1f}"'
    body.append(band + f' height="{bottom - top:.1f}" fill="#f0f0f0"/>')
    label = "effect, pp (+ favoured, − disfavoured); shaded: < min. effect"
    body += _x_axis(scale, nice_ticks(-half, half), x0, x1, top, bottom, label)
    body.append(f'<line x1="{scale(0):.1f}" x2="{scale(0):.1f}" y1="{top:.1f}" y2="{bottom:.1f}" stroke="black"/>')
    seen: list[tuple[str, str]] = []
    for k, r in rows.iterrows():
        y = top + row_h * (k + 0.5)
        colour, shape = VERDICT_STYLE.get(r["verdict"], ("#777777", "circle"))
        body.append(f'<text x="{x0 - 6:.1f}" y="{y + 4:.1f}" text-anchor="end">{_e(r["label"])}</text>')
        lo, hi = float(r["lo"]), float(r["hi"])
        odd = disagrees(str(r["verdict"]), lo, hi)
        if np.isfinite(lo) and np.isfinite(hi):
            dash = ' stroke-dasharray="4 3" data-unadjusted="1"' if odd else ""
            body.append(
                f'<line class="interval" x1="{scale(lo):.1f}" x2="{scale(hi):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                f'stroke="{colour}" stroke-width="1.8"{dash}/>'
            )
        body.append(marker(shape, scale(float(r["effect"])), y, colour, hollow=odd))
        for entry in ((r["verdict"], "marker"), *([("dashed, hollow: " + UNADJUSTED_NOTE, "dashed")] if odd else [])):
            if entry not in seen:
                seen.append(entry)
    legend, legend_bottom = _legend(seen, 10.0, x1 + 2, bottom + 52)
    return _document(x1 + 12, legend_bottom + 12, title, body + legend)


def model_comparison(table: pd.DataFrame, *, title: str) -> bytes:
    """table: paradigm, dimension, model, value, low, high, bound (noise-corrected bias magnitude and its 95% CI,
    pp; bound: the largest possible magnitude); one panel per paradigm, 3 per row; every estimate is drawn with
    its interval (a wide interval is not bias); filled marker: the interval excludes 0, hollow: it reaches 0."""
    paradigms = list(dict.fromkeys(table["paradigm"]))
    models = list(dict.fromkeys(table["model"]))
    ncols = min(3, len(paradigms))
    label_w = CHAR_PX * max((len(str(d)) for d in table["dimension"]), default=6) + 12
    panel_w, gap, head = 250.0, 24.0, 38.0
    row_h = 12.0 * max(1, len(models)) + 8.0
    body = [f'<text x="10" y="18" font-size="13">{_e(title)}</text>']
    y_top = head
    for start in range(0, len(paradigms), ncols):
        line = paradigms[start : start + ncols]
        n_dims = max(table.loc[table["paradigm"].isin(line), "dimension"].nunique(), 1)
        height = row_h * n_dims
        for j, par in enumerate(line):
            sub = table[table["paradigm"] == par]
            dims = list(dict.fromkeys(sub["dimension"]))
            x0 = 10 + j * (label_w + panel_w + gap) + label_w
            x1 = x0 + panel_w
            bound = float(sub["bound"].max()) if "bound" in sub else float(np.nanmax(sub["high"]))

            def scale(v: float, x0: float = x0, bound: float = bound) -> float:
                return x0 + min(max(float(v), 0.0), bound) / bound * panel_w

            body.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{y_top - 6:.1f}" text-anchor="middle">{_e(par)}</text>')
            body += _x_axis(scale, nice_ticks(0.0, bound, 5), x0, x1, y_top, y_top + height, "RMS, pp (95% CI)")
            for d_i, dim in enumerate(dims):
                y_dim = y_top + row_h * d_i
                body.append(
                    f'<text x="{x0 - 5:.1f}" y="{y_dim + row_h / 2 + 4:.1f}" text-anchor="end" font-size="10">'
                    f"{_e(dim)}</text>"
                )
                for k, model in enumerate(models):
                    m = sub[(sub["model"] == model) & (sub["dimension"] == dim)]
                    if m.empty or not np.isfinite(float(m["value"].iloc[0])):
                        continue
                    v, lo, hi = (float(m[c].iloc[0]) for c in ("value", "low", "high"))
                    y = y_dim + 8 + 12 * k
                    colour = OKABE_ITO[k % len(OKABE_ITO)]
                    if np.isfinite(lo) and np.isfinite(hi):
                        body.append(
                            f'<line class="interval" x1="{scale(lo):.1f}" x2="{scale(hi):.1f}" y1="{y:.1f}" '
                            f'y2="{y:.1f}" stroke="{colour}" stroke-width="1.6"/>'
                        )
                    clear = np.isfinite(lo) and lo > 0
                    body.append(marker(MODEL_MARKERS[k % 5], scale(v), y, colour, r=3.5, hollow=not clear))
        y_top += height + 62
    width = 10 + ncols * (label_w + panel_w + gap)
    legend_y, x = y_top - 16, 10.0
    body.append(
        f'<text x="{x:.1f}" y="{legend_y:.1f}" font-size="10">filled: 95% CI excludes 0 · hollow: '
        "indistinguishable from no bias · lower is fairer</text>"
    )
    for k, model in enumerate(models):
        body.append(marker(MODEL_MARKERS[k % 5], x + 5, legend_y + 14, OKABE_ITO[k % len(OKABE_ITO)], r=3.5))
        body.append(f'<text x="{x + 13:.1f}" y="{legend_y + 18:.1f}">{_e(model)}</text>')
        x += 30 + CHAR_PX * len(str(model))
    return _document(max(width, x + 10), legend_y + 28, title, body)
