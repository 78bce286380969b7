"""Assemble a report as Markdown (figures as PNG or SVG files beside it) and one self-contained HTML page
(figures inlined as base64), from a list of sections."""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from vignette_bench import atomic

# what a section says in place of the figures `vignette report --figures` left out
NOT_DRAWN = "figures not drawn in this report (`vignette report --figures all` draws them)"


@dataclass(frozen=True)
class Figure:
    name: str  # file stem, [a-z0-9_-]
    caption: str
    png: bytes  # the image: PNG bytes, or an SVG document (vignette_bench/eval/pages/svg.py) when it starts with "<svg"

    @property
    def suffix(self) -> str:
        return "svg" if self.png.startswith(b"<svg") else "png"

    @property
    def mime(self) -> str:
        return "image/svg+xml" if self.suffix == "svg" else "image/png"


@dataclass
class Section:
    title: str
    level: int = 2
    paragraphs: list[str] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # warnings: what is missing or placeholder
    kind: str = "detail"  # "findings": opens the page, not collapsed; "detail": a collapsible section
    anchor: str = ""  # the HTML id (links from the findings); s<index> when empty
    items: list[str] = field(default_factory=list)  # a bulleted list (the findings)
    links: list[tuple[str, str]] = field(default_factory=list)  # (words, anchor) of the sections to read next
    plain: list[str] = field(default_factory=list)  # the findings as plain text lines (`vignette demo` prints them)


def fig_name(*parts: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")


def plural(n: int, word: str) -> str:
    """``n`` and the word in the number it takes: "1 identity", "2 identities", "3 run folders"."""
    if n == 1:
        return f"{n:,} {word}"
    return f"{n:,} {word[:-1] + 'ies' if re.search('[^aeiou]y$', word) else word + 's'}"


def md_table(frame: pd.DataFrame) -> str:
    cols = [str(c).replace("|", "\\|") for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    p_cols = [is_p_column(c) for c in frame.columns]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(fmt_p(v) if p else _fmt(v) for v, p in zip(row, p_cols)) + " |")
    return "\n".join(lines)


P_FLOOR = 1e-16  # smaller p-values print as "< 1e-16": their reference distributions are not that exact


def is_p_column(name: object) -> bool:
    """A column of p- or q-values, by its name: p, q, p_value, q_paper, "p (global)", "refusal p", left_p..."""
    return bool({"p", "q"} & set(re.split(r"[^a-z0-9]+", str(name).lower())))


def fmt_p(v) -> str:
    """A p- or q-value: 3 significant digits, "< 1e-16" below that (never "0": a test does not give p = 0)."""
    if isinstance(v, (float, int)) and not isinstance(v, bool) and not pd.isna(v) and v < P_FLOOR:
        return f"< {P_FLOOR:.0e}"
    if isinstance(v, float) and not pd.isna(v):
        return f"{v:.3g}"
    return _fmt(v)


def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        if pd.isna(v):
            return "–"
        if abs(v) < 1e-9:  # float noise of a difference that is zero
            return "0"
        return f"{v:.3g}" if abs(v) < 1e-3 else f"{v:.3f}".rstrip("0").rstrip(".")
    return str(v).replace("|", "\\|")


def write_markdown(title: str, sections: list[Section], out: Path) -> Path:
    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", ""]
    for s in sections:
        lines += ["#" * s.level + " " + s.title, ""]
        if s.kind == "findings":
            lines += [s.paragraphs[0] + "\n"] if s.paragraphs else []
            lines += [f"- {x}" for x in s.items] + [""]
            lines += [p + "\n" for p in s.paragraphs[1:]]
            lines += ["Read with care:", ""] + [f"- {n}" for n in s.notes] + [""] if s.notes else []
        else:
            lines += [f"> **Note.** {n}\n" for n in s.notes]
            lines += [p + "\n" for p in s.paragraphs]
            lines += [f"- {x}" for x in s.items] + [""] if s.items else []
        for caption, t in s.tables:
            lines += [f"*{caption}*", "", md_table(t), ""]
        for f in s.figures:
            atomic.write_bytes(figdir / f"{f.name}.{f.suffix}", f.png)
            lines += [f"![{f.caption}](figures/{f.name}.{f.suffix})", "", f"*{f.caption}*", ""]
    return atomic.write_text(out / "report.md", "\n".join(lines))  # a full disk leaves no truncated page


CSS = """body{font-family:system-ui,sans-serif;max-width:1320px;margin:0.6em auto;padding:0 1em;color:#222;font-size:15px}
h1{font-size:1.3em;margin:0.2em 0 0.3em}
table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0 1.2em;display:block;overflow-x:auto;max-width:100%}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}.note{background:#fff4d6;border-left:4px solid #e0a800;padding:0.4em 0.8em}
figure{margin:1em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}figcaption{font-size:0.85em;color:#555}
.findings{border:1px solid #bbb;border-radius:6px;padding:0.3em 0.8em;margin:0 0 0.5em;display:flex;gap:1em}
.findings .words{flex:1 1 55%;font-size:0.92em}.findings h2{font-size:1.1em;margin:0.2em 0}
.findings p,.findings ul{margin:0.25em 0}.findings li{margin:0.1em 0}
.findings .caveats{background:#fff4d6;border-left:4px solid #e0a800;padding:0.15em 0.6em 0.15em 1.6em;font-size:0.92em}
.findings figure{flex:0 1 45%;margin:0.2em 0}.findings figure img{max-height:300px;width:auto;max-width:100%}
.findings figcaption{font-size:0.78em}.links{font-size:0.9em}
details{border-top:1px solid #ddd;padding:0.2em 0}details>summary{cursor:pointer;font-weight:600;padding:0.2em 0}
details.l2>summary{font-size:1.1em}details.l3{margin-left:1.2em}
#details-head{font-size:1.05em;margin:0.8em 0 0.2em}"""

# Open a collapsed section when a link (or the address) points at it.
SCRIPT = """function openTarget(){var id=decodeURIComponent(location.hash.slice(1));var e=id&&document.getElementById(id);
while(e){if(e.tagName==='DETAILS'){e.open=true;}e=e.parentElement;}}
window.addEventListener('hashchange',openTarget);openTarget();"""


def _table_html(caption: str, t: pd.DataFrame) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(str(c))}</th>" for c in t.columns)
    p_cols = [is_p_column(c) for c in t.columns]
    rows = "".join(
        "<tr>" + "".join(f"<td>{esc(fmt_p(v) if p else _fmt(v))}</td>" for v, p in zip(r, p_cols)) + "</tr>"
        for r in t.itertuples(index=False)
    )
    return f"<table><caption>{_inline(caption)}</caption><tr>{head}</tr>{rows}</table>"


def _figure_html(f: Figure) -> str:
    esc = html.escape
    data = base64.b64encode(f.png).decode()
    return (
        f'<figure><img alt="{esc(f.caption)}" src="data:{f.mime};base64,{data}">'
        f"<figcaption>{_inline(f.caption)}</figcaption></figure>"
    )


def _findings_html(s: Section, anchor: str) -> str:
    esc = html.escape
    words = [f"<h2>{esc(s.title)}</h2>"]
    words += [f"<p>{_inline(p)}</p>" for p in s.paragraphs[:1]]
    words.append("<ul>" + "".join(f"<li>{_inline(x)}</li>" for x in s.items) + "</ul>")
    words += [f"<p>{_inline(p)}</p>" for p in s.paragraphs[1:]]
    if s.notes:
        words.append('<ul class="caveats">' + "".join(f"<li>{_inline(n)}</li>" for n in s.notes) + "</ul>")
    if s.links:
        words.append(
            '<p class="links">Details: ' + " · ".join(f'<a href="#{esc(a)}">{esc(w)}</a>' for w, a in s.links) + "</p>"
        )
    figs = "".join(_figure_html(f) for f in s.figures)
    return f'<section class="findings" id="{esc(anchor)}"><div class="words">{"".join(words)}</div>{figs}</section>'


def write_html(title: str, sections: list[Section], out: Path) -> Path:
    """Findings first (open), then every other section collapsed in a <details> with an index of links."""
    esc = html.escape
    anchors = [s.anchor or f"s{i}" for i, s in enumerate(sections)]
    body = [f"<h1>{esc(title)}</h1>"]
    collapse = any(s.kind == "findings" for s in sections)  # a page without findings keeps every section open
    if not collapse:
        toc = "".join(
            f'<li style="margin-left:{(s.level - 2) * 1.5}em"><a href="#{esc(a)}">{esc(s.title)}</a></li>'
            for s, a in zip(sections, anchors)
        )
        body.append(f"<nav><ul>{toc}</ul></nav>")
    details = []
    for s, anchor in zip(sections, anchors):
        if s.kind == "findings":
            body.append(_findings_html(s, anchor))
            continue
        inner = [f'<p class="note"><b>Note.</b> {_inline(n)}</p>' for n in s.notes]
        inner += [f"<p>{_inline(p)}</p>" for p in s.paragraphs]
        if s.items:
            inner.append("<ul>" + "".join(f"<li>{_inline(x)}</li>" for x in s.items) + "</ul>")
        inner += [_table_html(caption, t) for caption, t in s.tables]
        inner += [_figure_html(f) for f in s.figures]
        if not collapse:
            body.append(f'<h{s.level} id="{esc(anchor)}">{esc(s.title)}</h{s.level}>' + "".join(inner))
            continue
        level = min(max(s.level, 2), 3)
        details.append(
            f'<details class="l{level}" id="{esc(anchor)}"><summary>{esc(s.title)}</summary>{"".join(inner)}</details>'
        )
    if details:
        body.append('<h2 id="details-head">Details (click a section to open it)</h2>')
        body += details
    page = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{CSS}</style></head><body>{''.join(body)}<script>{SCRIPT}</script></body></html>"
    )
    return atomic.write_text(out / "report.html", page)


def inline_html(text: str) -> str:
    """Escape, then render `code`, **bold** and *italic* (the only Markdown the report's text uses)."""
    return _inline(text)


def _inline(text: str) -> str:
    """Escape, then render `code`, **bold** and *italic* (the only Markdown the report's text uses), so no
    backtick or asterisk of the Markdown shows on the page. Code first: its text is kept as written."""
    parts = re.split(r"`([^`]+)`", html.escape(text))
    out = []
    for k, t in enumerate(parts):
        if k % 2:
            out.append(f"<code>{t}</code>")
            continue
        t = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", t)
        out.append(re.sub(r"(?<![\w*])\*([^*\s](?:[^*]*[^*\s])?)\*(?![\w*])", r"<i>\1</i>", t))
    return "".join(out)
