"""Draw where the model looked for one answered question: `vignette explain RUN --question ID`.

Three panels, as in the VIGNETTE paper's case study (fig. 7, appendix A.8), each a PNG, plus all
three side by side:

1. `<id>-overlay.png`   the pair image with the mean image-to-answer attention laid over it;
2. `<id>-mean.png`      that mean map alone, on the stored grid, with the left / seam / right bands;
3. `<id>-heads.png`     image attention per head: every layer x head, and the heads of --layer.

The row must carry an attention record (a run with the transformers adapter's
record_attention=True; eval.attention). The pair image is composed again through vignette from
the source in the run's record and the pair in its plan (vignette_bench/eval/runtime/folder.py); pass --image to
use a file instead. When neither works the overlay is left out and the other two panels are still drawn.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vignette_bench.errors import VignetteError
from vignette_bench.eval.explain.attention import AttentionSummary
from vignette_bench.eval.runtime.folder import RunFolder


class ExplainError(VignetteError, RuntimeError):
    """The question, its attention record or the layer asked for cannot be found."""


@dataclass(frozen=True)
class Explained:
    question_id: str
    panels: tuple[Path, ...]  # the PNGs written (overlay first when the image was available)
    combined: Path
    image_note: str  # "" when the pair image was drawn, else why it was not


def load_row(run_dir: Path, question_id: str) -> dict[str, Any]:
    """The response row of `question_id`: from the merged responses, else the latest in the run log."""
    folder = RunFolder(run_dir)
    if folder.responses.exists():
        import pyarrow.parquet as pq

        from vignette_bench.formats.responses import check_table

        table = folder.responses.read(filters=[("question_id", "==", question_id)])
        written = pq.read_schema(folder.responses.path).names  # check what the file has, not the nulls added
        check_table(table.select([c for c in table.column_names if c in written]), str(folder.responses.path))
        hits = table.to_pylist()
        if hits:
            return hits[-1]
    rows = [r for r in folder.log.rows() if r.get("question_id") == question_id]
    if not rows:
        raise ExplainError(
            f"{run_dir}: no answer to question {question_id!r} in {folder.responses.path.name} or {folder.log.path.name}/"
        )
    return rows[-1]


def pair_image(run_dir: Path, pair_id: str) -> Image.Image:
    """Compose the pair again as the run did: the source and image size from its record, the keys from its plan."""
    from vignette_bench.eval.runtime.plan import pair_composer

    folder = RunFolder(run_dir)
    settings = folder.record.read().settings  # a record without image_size is migrated to the default size
    rows = folder.plan.read(
        columns=["pair_id", "key_left", "key_right"], filters=[("pair_id", "==", pair_id)]
    ).to_pylist()
    if not rows:
        raise ExplainError(f"{folder.plan.path} has no pair {pair_id!r}")
    return pair_composer(settings).pair(rows[0]["key_left"], rows[0]["key_right"])


def _bands(ax: Any, width: float, seam: float) -> None:
    for x in (0.5 - seam / 2, 0.5 + seam / 2) if seam > 0 else (0.5,):
        ax.axvline(x * width, color="white", lw=1, ls="--", alpha=0.8)


def _overlay(ax: Any, image: Image.Image, s: AttentionSummary) -> None:
    heat = Image.fromarray(s.grid.astype(np.float32), mode="F").resize(image.size, Image.Resampling.BILINEAR)
    h = np.asarray(heat)
    span = h.max() - h.min()
    ax.imshow(image)
    # min-max scaled, as attention overlays usually are: the colours show where, the title says how much
    ax.imshow((h - h.min()) / span if span > 0 else h * 0, cmap="jet", alpha=0.45, vmin=0, vmax=1)
    _bands(ax, image.width, s.seam_width)
    ratio = f"{h.max() / h.min():.3f}" if h.min() > 0 else "inf"  # a flat map looks as contrasted as a sharp one
    ax.set_title(
        f"overlay (min-max scaled, max/min {ratio}): left {s.left_share:.2f} · seam {s.seam_share:.2f} · "
        f"right {s.right_share:.2f}",
        fontsize=9,
    )
    ax.axis("off")


def _mean_map(ax: Any, s: AttentionSummary, aspect: float) -> Any:
    rows, cols = s.grid.shape
    im = ax.imshow(s.grid, cmap="viridis", extent=(0, 1, 1, 0), aspect=1 / aspect)
    _bands(ax, 1.0, s.seam_width)
    ax.set_title(f"image-to-answer mean attention ({rows}x{cols} grid)")
    ax.set_xticks([0, 0.5, 1])
    ax.set_yticks([])
    return im


def _heads(ax_all: Any, ax_layer: Any, s: AttentionSummary, layer: int) -> Any:
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import MaxNLocator

    m = s.head_mass
    im = ax_all.imshow(m, cmap="magma", aspect="auto", interpolation="nearest", vmin=0)  # absolute scale
    ax_all.add_patch(Rectangle((-0.5, layer - 0.5), m.shape[1], 1, fill=False, ec="cyan", lw=1.5))
    ax_all.set_xlabel("head")
    ax_all.set_ylabel("layer")
    for axis in (ax_all.xaxis, ax_all.yaxis, ax_layer.xaxis):
        axis.set_major_locator(MaxNLocator(integer=True))
    ax_all.set_title("image attention per layer x head")
    top = {h for lay, h, _ in s.top_heads if lay == layer}
    colors = ["tab:red" if h in top else "tab:gray" for h in range(m.shape[1])]
    ax_layer.bar(np.arange(m.shape[1]), m[layer], color=colors)
    ax_layer.set_xlabel("head")
    ax_layer.set_ylabel("share of attention on the image")
    ax_layer.set_title(f"layer {layer}: per-head average (red: top heads)")
    return im


def explain(
    run_dir: str | Path,
    question_id: str,
    *,
    layer: int | None = None,
    out: str | Path | None = None,
    image: Image.Image | None = None,
) -> Explained:
    """Write the panels for one question; returns their paths. layer defaults to the last (negatives count back)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    row = load_row(run_dir, question_id)
    s = AttentionSummary.from_record(row)
    n_layers = s.head_mass.shape[0]
    layer = n_layers - 1 if layer is None else layer
    if not -n_layers <= layer < n_layers:
        raise ExplainError(f"--layer {layer}: the model has {n_layers} layers (0..{n_layers - 1})")
    layer %= n_layers
    note = ""
    if image is None:
        try:
            image = pair_image(run_dir, row["pair_id"])
        except Exception as e:  # the pictures of attention do not need the image; say why it is missing
            note = f"pair image unavailable ({type(e).__name__}: {e}); pass --image to draw the overlay"
    out_dir = Path(out) if out else run_dir / "explain"
    out_dir.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in question_id)
    title = f"{question_id}: {row.get('context', '')} -> {row.get('choice')!s}"
    aspect = image.width / image.height if image is not None else 2.0
    paths = []

    def save(fig: Any, name: str) -> Path:
        path = out_dir / f"{safe}-{name}.png"
        fig.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
        return path

    if image is not None:
        fig, ax = plt.subplots(figsize=(6, 6 / aspect + 0.6))
        _overlay(ax, image, s)
        fig.suptitle(title, fontsize=9)
        save(fig, "overlay")
    fig, ax = plt.subplots(figsize=(6, 6 / aspect + 0.6))
    fig.colorbar(_mean_map(ax, s, aspect), ax=ax, shrink=0.8, label="share of image attention")
    fig.suptitle(title, fontsize=9)
    save(fig, "mean")
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.5))
    fig.colorbar(_heads(a1, a2, s, layer), ax=a1)
    fig.suptitle(title, fontsize=9)
    save(fig, "heads")

    fig, axes = plt.subplots(1, 4, figsize=(20, 4.2), gridspec_kw={"width_ratios": [1.3, 1.3, 1, 1]})
    if image is not None:
        _overlay(axes[0], image, s)
    else:
        axes[0].text(0.5, 0.5, "pair image unavailable", ha="center", va="center")
        axes[0].axis("off")
    fig.colorbar(_mean_map(axes[1], s, aspect), ax=axes[1], shrink=0.7)
    fig.colorbar(_heads(axes[2], axes[3], s, layer), ax=axes[2], shrink=0.7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    combined = out_dir / f"{safe}-panels.png"
    fig.savefig(combined, dpi=80)
    plt.close(fig)
    return Explained(question_id, tuple(paths), combined, note)


def attention_section(run_dir: str | Path, examples: int = 2) -> Any:
    """A report Section (vignette_bench.eval.pages.page) for a run that recorded attention, else None.

    Mean left / seam / right shares, the chosen-versus-other test per identity, the mean shares
    per layer, and the panels of the `examples` answers with the most unequal left/right attention.
    """
    import tempfile

    import pandas as pd

    from vignette_bench.eval.explain.attention import chosen_vs_other
    from vignette_bench.eval.pages.page import Figure, Section, fig_name

    run_dir = Path(run_dir)
    folder = RunFolder(run_dir)
    if not folder.responses.exists():
        return None
    from vignette_bench.formats.responses import read_responses

    rows = read_responses(folder.responses.path)
    if "attn_left_share" not in rows or rows["attn_left_share"].isna().all():
        return None
    a = rows[rows["attn_left_share"].notna()]
    s = Section("Where the model looked (answer-to-image attention)", level=3)
    s.paragraphs.append(
        f"{len(a)} image answers with an attention record. Mean share of the answer's attention on the image "
        f"{a['attn_image_share'].mean():.3f}; of that, left {a['attn_left_share'].mean():.3f}, seam "
        f"{a['attn_seam_share'].mean():.3f}, right {a['attn_right_share'].mean():.3f} (docs/explain.md)."
    )
    s.tables.append(
        (
            "Attention on the chosen person minus the other, per chosen identity (sign test over "
            "pairs, Benjamini-Hochberg q)",
            chosen_vs_other(rows).round(4),
        )
    )
    layers = (
        pd.DataFrame(
            {k: np.mean(np.stack(a[f"attn_layer_{k}_share"].to_numpy()), axis=0) for k in ("left", "seam", "right")}
        )
        .rename_axis("layer")
        .reset_index()
        .round(4)
    )
    s.tables.append(("Mean attention shares per layer", layers))
    gap = (a["attn_left_share"] - a["attn_right_share"]).abs()
    with tempfile.TemporaryDirectory() as tmp:
        for qid in a.assign(gap=gap).sort_values(["gap", "question_id"], ascending=[False, True])["question_id"][
            :examples
        ]:
            done = explain(run_dir, qid, out=tmp)
            caption = f"question {qid}: overlay, mean map, heads" + (f" ({done.image_note})" if done.image_note else "")
            s.figures.append(Figure(fig_name("attention", qid), caption, done.combined.read_bytes()))
    return s


def main(args: argparse.Namespace) -> int:
    try:
        image = Image.open(args.image).convert("RGB") if args.image else None
        result = explain(args.run, args.question, layer=args.layer, out=args.out, image=image)
    except (ExplainError, KeyError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if result.image_note:
        print(f"note: {result.image_note}", file=sys.stderr)
    for path in (*result.panels, result.combined):
        print(path)
    return 0
