"""Assemble a report as Markdown (figures as PNG files beside it) and one self-contained HTML page
(figures inlined as base64), from a list of sections."""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd


@dataclass(frozen=True)
class Figure:
    name: str  # file stem, [a-z0-9_-]
    caption: str
    png: bytes


@dataclass
class Section:
    title: str
    level: int = 2
    paragraphs: list[str] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # warnings: what is missing or placeholder


def fig_name(*parts: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")


def md_table(frame: pd.DataFrame) -> str:
    cols = [str(c).replace("|", "\\|") for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(_fmt(v) for v in row) + " |")
    return "\n".join(lines)


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
        lines += [f"> **Note.** {n}\n" for n in s.notes]
        lines += [p + "\n" for p in s.paragraphs]
        for caption, t in s.tables:
            lines += [f"*{caption}*", "", md_table(t), ""]
        for f in s.figures:
            (figdir / f"{f.name}.png").write_bytes(f.png)
            lines += [f"![{f.caption}](figures/{f.name}.png)", "", f"*{f.caption}*", ""]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0 1.2em;display:block;overflow-x:auto;max-width:100%}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}.note{background:#fff4d6;border-left:4px solid #e0a800;padding:0.4em 0.8em}
figure{margin:1em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}figcaption{font-size:0.85em;color:#555}
nav li{font-size:0.9em}"""


def write_html(title: str, sections: list[Section], out: Path) -> Path:
    esc = html.escape
    toc = "".join(
        f'<li style="margin-left:{(s.level - 2) * 1.5}em"><a href="#s{i}">{esc(s.title)}</a></li>'
        for i, s in enumerate(sections)
    )
    body = [f"<h1>{esc(title)}</h1>", f"<nav><ul>{toc}</ul></nav>"]
    for i, s in enumerate(sections):
        body.append(f'<h{s.level} id="s{i}">{esc(s.title)}</h{s.level}>')
        body += [f'<p class="note"><b>Note.</b> {esc(n)}</p>' for n in s.notes]
        body += [f"<p>{_inline(p)}</p>" for p in s.paragraphs]
        for caption, t in s.tables:
            head = "".join(f"<th>{esc(str(c))}</th>" for c in t.columns)
            rows = "".join(
                "<tr>" + "".join(f"<td>{esc(_fmt(v))}</td>" for v in r) + "</tr>" for r in t.itertuples(index=False)
            )
            body.append(f"<table><caption>{esc(caption)}</caption><tr>{head}</tr>{rows}</table>")
        for f in s.figures:
            data = base64.b64encode(f.png).decode()
            body.append(
                f'<figure><img alt="{esc(f.caption)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{esc(f.caption)}</figcaption></figure>"
            )
    page = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
        f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>"
    )
    path = out / "report.html"
    path.write_text(page)
    return path


def _inline(text: str) -> str:
    """Escape, then allow `code` and **bold** (the only Markdown used in paragraphs)."""
    t = html.escape(text)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", t)
