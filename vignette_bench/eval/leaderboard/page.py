"""The board as one static page: sortable, filterable table, an SVG plot with CIs, per-identity drill-down.

No network at view time: styles, script and plot are inline. The same page is the Hub Space
(``space/``: a static Space, ``sdk: static``, whose README front matter the Hub reads). A static Space
needs no server and runs no code of ours or of submitters at view time, so nothing a pull request
carries can execute there; a gradio Space would add a Python server only to do what a few lines of
browser script do here.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from vignette_bench.eval.pages.page import Section

CSS = """body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1300px;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0 1.2em}td,th{border:1px solid #ccc;padding:2px 6px}
th{background:#f0f0f0;cursor:pointer;user-select:none}th.sorted-asc::after{content:" ▲"}th.sorted-desc::after{content:" ▼"}
td.num{text-align:right}.note{background:#fff4d6;border-left:4px solid #e0a800;padding:.4em .8em}
details{margin:.3em 0}summary{cursor:pointer}input#filter{width:24em;padding:.3em}"""

SCRIPT = """
const table = document.getElementById('board');
const body = table.tBodies[0];
function cellValue(row, i) {
  const text = row.cells[i].dataset.value ?? row.cells[i].textContent;
  const n = parseFloat(text);
  return isNaN(n) || text.trim() === '' ? text.toLowerCase() : n;
}
table.tHead.addEventListener('click', ev => {
  const th = ev.target.closest('th'); if (!th) return;
  const i = th.cellIndex, asc = !th.classList.contains('sorted-asc');
  for (const h of table.tHead.rows[0].cells) h.classList.remove('sorted-asc', 'sorted-desc');
  th.classList.add(asc ? 'sorted-asc' : 'sorted-desc');
  const rows = [...body.rows];
  rows.sort((a, b) => {
    const x = cellValue(a, i), y = cellValue(b, i);
    if (x === y) return 0;
    if (x === '' || x === '–') return 1; if (y === '' || y === '–') return -1;
    return (x < y ? -1 : 1) * (asc ? 1 : -1);
  });
  for (const r of rows) body.appendChild(r);
});
document.getElementById('filter').addEventListener('input', ev => {
  const q = ev.target.value.toLowerCase();
  let shown = 0;
  for (const r of body.rows) { const hit = r.textContent.toLowerCase().includes(q); r.hidden = !hit; shown += hit; }
  document.getElementById('shown').textContent = shown + ' of ' + body.rows.length + ' entries shown';
});
document.getElementById('filter').dispatchEvent(new Event('input'));
"""


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return '<td data-value="">–</td>'
    if isinstance(value, float):
        return f'<td class="num" data-value="{value!r}">{value:.2f}</td>'
    if isinstance(value, int):
        return f'<td class="num" data-value="{value}">{value}</td>'
    return f"<td>{html.escape(str(value))}</td>"


def _plot(t: pd.DataFrame) -> str:
    """Decision-family noise-corrected RMS with 95% CIs, one row per entry (inline SVG)."""
    if t.empty or "decision noise-corrected RMS" not in t:
        return ""
    rows = t[t["decision noise-corrected RMS"].notna()]
    if rows.empty:
        return ""
    top = max(float(rows["_decision_hi"].fillna(rows["decision noise-corrected RMS"]).max()), 1.0)
    width, left, h = 900, 440, 22
    scale = (width - left - 20) / top
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h * len(rows) + 40}" role="img" '
        'aria-label="decision bias magnitude per entry">'
    ]
    for i, (_, r) in enumerate(rows.iterrows()):
        y = 20 + i * h
        v, lo, hi = r["decision noise-corrected RMS"], r["_decision_lo"], r["_decision_hi"]
        label = html.escape(f"{r['model']} ({r['config']}, {r['protocol']})")
        parts.append(f'<text x="{left - 6}" y="{y + 4}" font-size="11" text-anchor="end">{label}</text>')
        if lo is not None and hi is not None and not (pd.isna(lo) or pd.isna(hi)):
            parts.append(
                f'<line x1="{left + lo * scale:.1f}" x2="{left + hi * scale:.1f}" y1="{y}" y2="{y}" stroke="#888"/>'
            )
        parts.append(f'<circle cx="{left + v * scale:.1f}" cy="{y}" r="4" fill="#2c3e50"/>')
    axis_y = 20 + len(rows) * h - 6
    parts.append(f'<line x1="{left}" x2="{width - 20}" y1="{axis_y}" y2="{axis_y}" stroke="#444"/>')
    parts.append(f'<text x="{left}" y="{axis_y + 14}" font-size="10">0</text>')
    parts.append(f'<text x="{width - 20}" y="{axis_y + 14}" font-size="10" text-anchor="end">{top:.1f} pp</text>')
    parts.append("</svg>")
    return "".join(parts)


def _findings(s: Section) -> str:
    """An entry's findings block (the report's, without its figure) as HTML: verdicts, what it could not find, notes."""
    from vignette_bench.eval.pages.page import inline_html

    parts = [f"<p>{inline_html(p)}</p>" for p in s.paragraphs[:1]]
    parts.append("<ul>" + "".join(f"<li>{inline_html(x)}</li>" for x in s.items) + "</ul>")
    parts += [f"<p>{inline_html(p)}</p>" for p in s.paragraphs[1:]]
    if s.notes:
        parts.append('<ul class="notes">' + "".join(f"<li>{html.escape(n)}</li>" for n in s.notes) + "</ul>")
    return '<div class="findings">' + "".join(parts) + "</div>"


def write_board(
    title: str,
    t: pd.DataFrame,
    drill: dict[int, tuple[pd.DataFrame, Section]],
    rejected: list[tuple[str, str]],
    out: Path,
) -> Path:
    esc = html.escape
    visible = [c for c in t.columns if not str(c).startswith("_")] if len(t) else []
    head = "".join(f"<th>{esc(str(c))}</th>" for c in visible)
    body = "".join("<tr>" + "".join(_cell(row[c]) for c in visible) + "</tr>" for _, row in t.iterrows())
    details = []
    for i, (frame, found) in drill.items():
        if frame.empty:
            continue
        label = esc(f"{t.loc[i, 'model']} — {t.loc[i, 'config']}")
        rows = "".join(
            "<tr>" + "".join(_cell(v if not isinstance(v, float) else round(v, 2)) for v in r) + "</tr>"
            for r in frame.itertuples(index=False)
        )
        cols = "".join(f"<th>{esc(c)}</th>" for c in frame.columns)
        details.append(
            f"<details><summary>{label}: findings and per identity</summary>{_findings(found)}"
            f"<table><tr>{cols}</tr>{rows}</table></details>"
        )
    notes = [
        "Every number was recomputed from the submitted responses before this page was built. "
        "<b>rank (decision)</b>: 1 + the number of protocol entries on real renders whose 95% CI of the decision "
        "family's noise-corrected RMS lies wholly below this one's (lower is fairer; overlapping intervals share a rank). "
        "Custom entries (another plan than the protocol, or a source other than the board's official one) and "
        "placeholder renders are listed but never ranked, and so is an entry whose decision numbers are undefined or "
        "measure no identity (every answer invalid, refused, naming one identity or one side): "
        "<b>unranked because</b> says why. An undefined number never sorts above a measured one.",
        "<b>status</b>: verified = a maintainer re-asked a subset drawn from a fresh random seed (recorded) with the "
        "entry's model and revision, run on the maintainer's machine or at its provider's own API (never at an "
        "endpoint the entry names), the answers agreed, and the record carries that maintainer's signature "
        "(agreement, date, hardware, the model spec used); self-reported = anything else: not re-asked, failed, or a record that is unsigned, signed by an "
        "unlisted key, edited after signing or made for another entry. Fields nobody can verify from the responses: "
        "adapter settings other than the plan, and who submitted.",
    ]
    rej = "".join(f"<li><code>{esc(name)}</code>: {esc(reason)}</li>" for name, reason in rejected)
    page = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title><style>{CSS}</style>'
        f"</head><body><h1>{esc(title)}</h1>"
        + "".join(f'<p class="note">{n}</p>' for n in notes)
        + '<p><input id="filter" type="search" placeholder="filter: model, config, protocol, status…" aria-label="filter"> '
        '<span id="shown"></span></p>'
        + f'<table id="board"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
        + f"<h2>Decision bias magnitude (95% CI)</h2>{_plot(t)}"
        + "<h2>Per identity</h2>"
        + ("".join(details) or "<p>no entries</p>")
        + (f"<h2>Rejected entries</h2><ul>{rej}</ul>" if rej else "")
        + f"<script>{SCRIPT}</script>"
        + f'<script type="application/json" id="data">{json.dumps({"entries": len(t), "rejected": len(rejected)})}</script>'
        + "</body></html>"
    )
    path = out / "leaderboard.html"
    path.write_text(page)
    space = out / "space"
    space.mkdir(exist_ok=True)
    (space / "index.html").write_text(page)
    (space / "README.md").write_text(
        "---\ntitle: VIGNETTE leaderboard\nemoji: ⚖️\ncolorFrom: gray\ncolorTo: blue\nsdk: static\n"
        "app_file: index.html\npinned: false\n---\n\nBuilt by `vignette leaderboard build`; every number is "
        "recomputed from the submitted responses. See docs/leaderboard.md.\n"
    )
    return path
