"""``vignette annotate export``: a seeded sample of renders or pairs as one offline HTML page.

The page embeds every image (JPEG data URIs) and its script, so it opens from a file with no network.
Answers autosave in the browser (localStorage, per export) and "Save answers" downloads them as
``annotations-<annotator>-<export_id>.json``. Beside the page, ``items.json`` lists the items (ids,
render keys, identities, activities, dimensions) for ``vignette annotate score``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import io
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from vignette_bench import cli_options as opt
from vignette_bench.annotate.criteria import CRITERIA, VISUAL_CUES
from vignette_bench.formats.annotation import ANNOTATIONS_FORMAT as FORMAT
from vignette_bench.formats.annotation import AnnotationItem, AnnotationItems, write_annotation_items

MAX_SIDE = 384  # pixels: enough to judge a person, keeps 1,200 items near 40 MB


@dataclass(frozen=True)
class Item:
    id: str
    dimension: str
    identity: str  # renders: the identity; pairs: the left one
    activity: str  # "" for portraits
    keys: tuple[str, ...]  # render keys shown (one, or left and right)
    label: str  # surface form shown in the questions (renders) / left form (pairs)
    label_right: str = ""  # pairs: right form
    identity_right: str = ""


def _jpeg_data_uri(image: Any) -> str:
    image = image.convert("RGB")
    image.thumbnail((MAX_SIDE * 2, MAX_SIDE))
    buf = io.BytesIO()
    image.save(buf, "JPEG", quality=85)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def sample_renders(source: str, n: int, seed: int) -> list[tuple[Item, str]]:
    import pyarrow.parquet as pq
    from PIL import Image

    import vignette

    src = vignette.Source(source)
    index = vignette.RenderIndex.load(src)
    meta = pq.read_table(
        io.BytesIO(src.read(vignette.INDEX_PATH)), use_threads=False
    ).to_pandas()  # see vignette.RenderIndex.load
    meta = meta.sort_values("key", ignore_index=True)  # file order must not change the sample
    import numpy as np  # not for --help

    take = np.sort(np.random.default_rng(seed).choice(len(meta), size=min(n, len(meta)), replace=False))
    reader = vignette.RenderReader(index)
    out = []
    for r in meta.iloc[take].itertuples(index=False):
        item = Item(str(r.key), str(r.dimension), str(r.identity), str(r.activity), (str(r.key),), str(r.surface_form))
        out.append((item, _jpeg_data_uri(Image.open(io.BytesIO(reader.read(item.id)[0])))))
    return out


def sample_pairs(source: str, config: str, n: int, seed: int) -> list[tuple[Item, str]]:
    import vignette

    everything = vignette.load_dataset(source, config)  # metadata only until a row is read
    ds = everything if n >= len(everything) else vignette.load_dataset(source, config, sample=n, seed=seed)
    out = []
    for row in ds:
        item = Item(
            row["pair_id"],
            row["dimension"],
            row["identity_left"],
            row["activity_left"],
            (row["key_left"], row["key_right"]),
            row["form_left"],
            row["form_right"],
            row["identity_right"],
        )
        out.append((item, _jpeg_data_uri(row["image"])))
    return out


def export_id(kind: str, items: list[Item]) -> str:
    text = json.dumps([kind, [asdict(i) for i in items]], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _question(text: str, item: Item) -> str:
    activity = f"engaged in {item.activity}" if item.activity else ""
    return text.format(identity=item.label, activity=activity, left=item.label, right=item.label_right)


def _item_html(kind: str, item: Item, uri: str, number: int) -> str:
    esc = html.escape
    parts = [f'<section class="item" data-item="{esc(item.id)}"><h2>{number}. ']
    if kind == "renders":
        what = f"{item.label}" + (f", engaged in {item.activity}" if item.activity else " (portrait)")
        parts.append(f"Intended: {esc(what)}</h2>")
    else:
        first, second = sorted((item.label, item.label_right))  # alphabetical: the order gives nothing away
        parts.append(f"Identities: {esc(first)} and {esc(second)}</h2>")
    parts.append(f'<img alt="item {number}" src="{uri}">')
    for c in CRITERIA[kind]:
        if c.needs_activity and not item.activity:
            continue
        parts.append(f'<fieldset data-criterion="{c.name}"><legend>{esc(_question(c.question, item))}</legend>')
        if c.options:
            for o in c.options:
                parts.append(
                    f'<label><input type="radio" name="{esc(item.id)}::{c.name}" value="{esc(o)}"> {esc(o)}</label>'
                )
        else:
            for cue in VISUAL_CUES:
                parts.append(
                    f'<label><input type="checkbox" name="{esc(item.id)}::{c.name}" value="{esc(cue)}"> {esc(cue)}</label>'
                )
        parts.append("</fieldset>")
    parts.append("</section>")
    return "".join(parts)


SCRIPT = """
const EXPORT = JSON.parse(document.getElementById('export').textContent);
const STORE = 'vignette-annotations-' + EXPORT.export_id;
function collect() {
  const answers = {};
  for (const input of document.querySelectorAll('input[type=radio]:checked, input[type=checkbox]:checked')) {
    const [item, criterion] = input.name.split('::');
    answers[item] = answers[item] || {};
    if (input.type === 'checkbox') { (answers[item][criterion] = answers[item][criterion] || []).push(input.value); }
    else { answers[item][criterion] = input.value; }
  }
  for (const section of document.querySelectorAll('section.item')) {  // a ticked 'none' of the cues is []
    const item = section.dataset.item;
    if (answers[item] && section.querySelector('[data-criterion=cues]') && !answers[item].cues) answers[item].cues = [];
  }
  return answers;
}
function progress() {
  const answers = collect();
  const done = EXPORT.items.filter(id => answers[id] && Object.keys(answers[id]).length).length;
  document.getElementById('progress').textContent = done + ' of ' + EXPORT.items.length + ' items answered';
  return answers;
}
// Only a change writes the store: loading the page must not, or a page opened before the last write
// reached storage (a second tab, a quick reload) would overwrite the saved answers with what it restored.
function autosave() {
  const answers = progress();
  localStorage.setItem(STORE, JSON.stringify({annotator: document.getElementById('annotator').value, answers}));
}
function restore() {
  const saved = JSON.parse(localStorage.getItem(STORE) || 'null');
  if (!saved) return;
  document.getElementById('annotator').value = saved.annotator || '';
  for (const [item, crit] of Object.entries(saved.answers || {})) {
    for (const [name, value] of Object.entries(crit)) {
      for (const v of [].concat(value)) {
        const input = [...document.getElementsByName(item + '::' + name)].find(i => i.value === v);
        if (input) input.checked = true;
      }
    }
  }
}
function save() {
  const annotator = document.getElementById('annotator').value.trim();
  const status = document.getElementById('status');
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(annotator)) { status.textContent = 'Enter your annotator id (letters, digits, - or _) first.'; return; }
  const body = {format: EXPORT.format, export_id: EXPORT.export_id, kind: EXPORT.kind, annotator,
                saved_at: new Date().toISOString(), answers: collect()};
  const link = document.createElement('a');
  link.href = URL.createObjectURL(new Blob([JSON.stringify(body, null, 1)], {type: 'application/json'}));
  link.download = 'annotations-' + annotator + '-' + EXPORT.export_id + '.json';
  document.body.appendChild(link); link.click(); link.remove();
  status.textContent = 'Saved ' + link.download;
}
document.addEventListener('change', autosave);
document.getElementById('save').addEventListener('click', save);
restore(); progress();
"""

CSS = """body{font-family:system-ui,sans-serif;max-width:900px;margin:1em auto;padding:0 1em}
header{position:sticky;top:0;background:#fff;border-bottom:1px solid #ccc;padding:.5em 0;z-index:1}
.item{border-bottom:1px solid #ddd;padding:1em 0}.item img{max-width:100%;display:block;margin:.5em 0}
fieldset{border:1px solid #ccc;margin:.4em 0}label{margin-right:1em;white-space:nowrap}h2{font-size:1em}"""


def page(kind: str, items: list[tuple[Item, str]], title: str) -> tuple[str, str]:
    eid = export_id(kind, [i for i, _ in items])
    data = {"format": FORMAT, "export_id": eid, "kind": kind, "items": [i.id for i, _ in items]}
    body = "".join(_item_html(kind, item, uri, n + 1) for n, (item, uri) in enumerate(items))
    doc = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{CSS}</style></head><body><header><h1>{html.escape(title)}</h1>"
        '<label>Annotator id <input id="annotator" autocomplete="off"></label> '
        '<button id="save" type="button">Save answers</button> <span id="progress"></span> '
        '<span id="status" role="status"></span></header>'
        "<p>Answer from the image alone. Your answers are kept in this browser as you go; "
        "press <b>Save answers</b> to download them as a file and send that file.</p>"
        f"{body}"
        f'<script type="application/json" id="export">{json.dumps(data)}</script>'
        f"<script>{SCRIPT}</script></body></html>"
    )
    return doc, eid


def export(source: str, kind: str, out: Path, n: int, seed: int, config: str = "identity_contrast") -> Path:
    items = sample_renders(source, n, seed) if kind == "renders" else sample_pairs(source, config, n, seed)
    title = f"VIGNETTE human validation: {len(items)} {kind} (seed {seed})"
    doc, eid = page(kind, items, title)
    out.mkdir(parents=True, exist_ok=True)
    (out / "annotate.html").write_text(doc)
    manifest = AnnotationItems(
        format=FORMAT,
        export_id=eid,
        kind=kind,
        source=source,
        seed=seed,
        n=len(items),
        items=tuple(AnnotationItem(**asdict(i)) for i, _ in items),
    )
    write_annotation_items(out / "items.json", manifest)
    return out / "annotate.html"


def add_arguments(p: argparse.ArgumentParser) -> None:
    opt.source(p, required=True, help="source folder or URL (renders/index.parquet + shards)")
    p.add_argument(
        "--kind",
        choices=("renders", "pairs"),
        default="renders",
        help="annotate single renders or composed pairs (default renders)",
    )
    p.add_argument("--config", default="identity_contrast", help="pair config for --kind pairs")
    opt.limit(p, default=1200, help="items to sample (default 1200, as in the paper)")
    opt.seed(p, help="seed of the sample (default 0)")
    opt.out(p, type=Path, required=True, help="folder for annotate.html and items.json")


def main(args: argparse.Namespace) -> int:
    import vignette

    if args.limit < 1:
        print("error: --limit must be >= 1", file=sys.stderr)
        return 2
    try:
        path = export(args.source, args.kind, args.out, args.limit, args.seed, args.config)
    except (vignette.VignetteError, FileNotFoundError, LookupError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {path} and {path.parent / 'items.json'}")
    return 0
