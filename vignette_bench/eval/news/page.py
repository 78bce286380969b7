"""The news page: every item as a person reads it — the image, the question and reference, each model's
answer (or why it failed), and each judge by name with its scores per dimension (or why it failed).

One self-contained HTML file (images inlined as small JPEG thumbnails), written by `vignette news demo`
and by `write_page` for any source, answers and judgement files. A fixture judge's scores are labelled
as a hash of the prompt on the page, as everywhere else its numbers appear.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vignette_bench.eval.news.data import NewsItem
from vignette_bench.eval.news.fixture import FIXTURE_NOTE, is_fixture
from vignette_bench.eval.news.judge import DIMENSIONS
from vignette_bench.eval.news.results import judge_name, model_label
from vignette_bench.formats.news import NewsAnswer, NewsJudgement, read_answers, read_judgements

PAGE = "news.html"
THUMBNAIL = 320  # px, the longer side
_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5rem auto;max-width:64rem;color:#222;line-height:1.4}
.warn{background:#fff4d6;border:1px solid #e0b44c;padding:.6rem .8rem;border-radius:4px}
.item{display:flex;gap:1.2rem;border-top:1px solid #ccc;padding:1rem 0}
.item img{max-width:260px;max-height:320px;object-fit:contain;border:1px solid #aaa;flex:none;align-self:flex-start}
.text{flex:1;min-width:0}
.answer{margin:.6rem 0;padding:.4rem .6rem;background:#f5f7fa;border-radius:4px;overflow-wrap:anywhere}
.failed{color:#a40000}
table{border-collapse:collapse;margin:.3rem 0;font-size:.92rem;table-layout:fixed;width:100%}
th:first-child{width:11rem}
td,th{border:1px solid #ccc;padding:.15rem .45rem;text-align:left;vertical-align:top}
.fixture{color:#8a5a00;font-style:italic}
code{font-size:.85rem;word-break:break-all}
"""


def _thumbnail(item: NewsItem) -> str:
    image = item.image.convert("RGB")
    image.thumbnail((THUMBNAIL, THUMBNAIL))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=85)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _e(text: Any) -> str:
    return html.escape(str(text))


def _judgement_cell(row: NewsJudgement | None) -> str:
    if row is None:
        return "<td>not judged yet</td>"
    if row.valid:
        snippet = f"<br><small>“{_e(row.snippet)}”</small>" if row.snippet else ""
        return f"<td><b>{row.score:g}</b>{snippet}</td>"
    return f"<td class=failed>failed: {_e(row.error)}<br><small>reply: <code>{_e(row.raw[:160])}</code></small></td>"


def _answer_block(answer: NewsAnswer, judges: list[str], by_key: dict[tuple, NewsJudgement]) -> str:
    who = _e(model_label(answer.model_id, answer.temperature))
    if not answer.valid:
        return (
            f"<div class='answer failed'><b>{who}</b>: answer failed, not judged: {_e(answer.error)}"
            f"<br><small>reply: <code>{_e(str(answer.raw)[:200])}</code></small></div>"
        )
    rows = []
    for judge in judges:
        cells = "".join(
            _judgement_cell(by_key.get((judge, answer.model_id, float(answer.temperature), answer.item_id, dim)))
            for dim in DIMENSIONS
        )
        label = (
            f"<td class=fixture>{_e(judge_name(judge))}</td>"
            if is_fixture(judge)
            else f"<td>{_e(judge_name(judge))}</td>"
        )
        rows.append(f"<tr>{label}{cells}</tr>")
    head = "<tr><th>judge</th>" + "".join(f"<th>{d}</th>" for d in DIMENSIONS) + "</tr>"
    return (
        f"<div class=answer><b>{who}</b>: {_e(answer.answer)}<br><small>rationale: {_e(answer.rationale)}</small>"
        f"<table>{head}{''.join(rows)}</table></div>"
    )


def render_page(items: Sequence[NewsItem], answers: list[NewsAnswer], judgements: list[NewsJudgement]) -> str:
    """The page's HTML for these items (in order), with the answers and judgements that concern them."""
    judges = sorted({j.judge_id for j in judgements}, key=lambda j: (is_fixture(j), j))
    by_key = {(j.judge_id, j.model_id, float(j.temperature), j.item_id, j.dimension): j for j in judgements}
    notes = []
    if any(item.placeholder for item in items):
        notes.append(
            "PLACEHOLDER news sample: drawn images and our own questions, untrained models — this page shows the "
            "pipeline, not a measurement."
        )
    if any(is_fixture(j) for j in judges):
        notes.append(FIXTURE_NOTE + ".")
    failed_answers = sum(not a.valid for a in answers)
    failed_judgements = sum(not j.valid for j in judgements)
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>News answers and judgements</title>",
        f"<style>{_CSS}</style></head><body><h1>News answers and judgements</h1>",
        *(f"<p class=warn>{_e(n)}</p>" for n in notes),
        f"<p>{len(items)} items, {len(answers)} answers ({failed_answers} failed to parse), "
        f"{len(judgements)} judgements ({failed_judgements} failed) by "
        + ", ".join(_e(judge_name(j)) for j in judges)
        + ". Scores 0–100: accuracy and faithfulness higher is better, bias lower is better.</p>",
    ]
    for item in items:
        mine = [a for a in answers if a.item_id == item.id]
        blocks = "".join(_answer_block(a, judges, by_key) for a in mine) or "<p>no answers</p>"
        parts.append(
            f"<section class=item id='{_e(item.id)}'><img alt='image of item {_e(item.id)}' src='{_thumbnail(item)}'>"
            f"<div class=text><h2>{_e(item.id)} <small>({_e(item.attribute)})</small></h2>"
            f"<p><b>Question:</b> {_e(item.question)}<br><b>Reference answer:</b> {_e(item.reference_answer)}</p>"
            f"{blocks}</div></section>"
        )
    parts.append("</body></html>")
    return "\n".join(parts)


def write_page(
    items: Sequence[NewsItem], answer_paths: Sequence[str | Path], judgement_paths: Sequence[str | Path], out: Path
) -> Path:
    """Write the page for `items` with the answers and judgements in those files."""
    answers = [row for path in answer_paths for row in read_answers(path)]
    judgements = [row for path in judgement_paths for row in read_judgements(path)]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_page(items, answers, judgements), encoding="utf-8")
    return out
