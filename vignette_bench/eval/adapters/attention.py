"""Where the answer looks: attention from the answer tokens to the image, mapped onto the original image.

The measurement lives with the adapters because recording it is an adapter capability (the
transformers adapter's `record_attention=True` hook); `vignette_bench.eval.explain` reads the
recorded fields and draws them, importing this module (never the other way round).

Interface:

    check_supported(model.config)              # at adapter start: refuse a family with no layout early
    layout  = image_layout(model.config, processor.image_processor, (height, width))   # ImageLayout
    summary = record_attention(model, inputs, answer_start, layout)                   # AttentionSummary
    row.update(summary.to_record())            # flat attn_* fields for the responses table
    summary = AttentionSummary.from_record(row)

`inputs` is the processor's BatchFeature for ONE example whose input_ids already end with the
chosen answer's tokens (teacher forcing); `answer_start` is the index of the first answer token.
The model must run attn_implementation="eager": fused kernels (sdpa, flash, flex) never
materialise attention weights. The pure core, `summarize(...)`, takes attention weights from
any source (hooks, output_attentions=True, or a tensor built by hand in a test).

Conventions (docs/explain.md has the long form):
* Query rows: answer token t was produced by the row of position t - 1, so the rows used are
  answer_start - 1 .. last - 1 (the rows LVLM-Interpret shows while generating).
* Layers: every text decoder layer's self-attention (the image tokens are keys there); for Mllama,
  whose text meets the image only in cross-attention layers, those layers, with the vision tokens
  as keys.
* Every statistic is a mean over answer tokens, then heads, then layers of the raw attention
  weights (heads that look at the image more count more); nothing is renormalised per head.
* Image tokens map to boxes of the ORIGINAL image in [0, 1] coordinates (x right, y down),
  undoing the processor's pad / resize / crop and LLaVA-NeXT's anyres tiling and unpadding.
  Tokens without a place (LLaVA-NeXT's row-newline tokens, a CLS token) are "non-spatial":
  counted in attn_image_share and attn_nonspatial_share, left out of the spatial shares.
* Regions are disjoint vertical bands: left = x < 0.5 - seam/2, seam = the band of width
  `seam_width` (a fraction of the image width) centred on the middle, right = the rest. A token's
  mass is split by how much of its box falls in each band, so left + seam + right = 1.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vignette_bench.errors import VignetteError

# vignette cross-fades the two renders over DEFAULT_SEAM = 32 pixels in the middle of the pair at
# any output size (a test keeps the two in step). The seam band is that many pixels of the image
# the layout was made for, unless a call passes seam_width (a fraction of the width).
SEAM_PIXELS = 32
GRID = (24, 24)  # coarse grid the mean map is stored on (rows, cols over the original image)
TOP_HEADS = 8
EAGER_HINT = 'load the model with attn_implementation="eager"'


class AttentionUnavailable(VignetteError):
    """The backend or attention implementation cannot give attention weights (a setting to change)."""


def unavailable_for_api(backend: str) -> AttentionUnavailable:
    """The error an API adapter raises when asked to record attention."""
    return AttentionUnavailable(
        f"attention recording is unavailable for API backends ({backend}): they return text, not attention "
        "weights; use the transformers adapter (an hf: or tiny: model spec) with record_attention=true"
    )


# --------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class ImageLayout:
    """Where each image token (in sequence order) lies on the original image.

    boxes[i] = (x0, y0, x1, y1) in [0, 1]; a row of NaN for a token with no place (newline, CLS).
    """

    family: str
    image_size: tuple[int, int]  # original (height, width)
    boxes: np.ndarray
    native_grid: tuple[int, int]  # the model's patch grid for one view of the image (rows, cols)

    @property
    def n_tokens(self) -> int:
        return len(self.boxes)

    @property
    def spatial(self) -> np.ndarray:
        return ~np.isnan(self.boxes[:, 0])


def _size(d: Any, key: str) -> Any:
    return d.get(key) if isinstance(d, dict) else getattr(d, key, None)


class _Affine:
    """processed = original * scale + offset, per axis; built step by step like the processor."""

    def __init__(self, height: int, width: int):
        self.h, self.w = height, width  # current image size
        self.scale = np.array([1.0, 1.0])  # (y, x)
        self.offset = np.array([0.0, 0.0])

    def pad(self, top: int, left: int, new_h: int, new_w: int) -> None:
        self.offset += (top, left)
        self.h, self.w = new_h, new_w

    def resize(self, new_h: int, new_w: int) -> None:
        k = np.array([new_h / self.h, new_w / self.w])
        self.scale *= k
        self.offset *= k
        self.h, self.w = new_h, new_w

    def crop(self, top: int, left: int, new_h: int, new_w: int) -> None:
        self.offset -= (top, left)
        self.h, self.w = new_h, new_w

    def boxes(self, rows: int, cols: int, cell_h: float, cell_w: float, orig: tuple[int, int]) -> np.ndarray:
        """Boxes (normalised to the original image) of a rows x cols grid of cells on the processed image."""
        r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        y0 = (r * cell_h - self.offset[0]) / self.scale[0] / orig[0]
        y1 = ((r + 1) * cell_h - self.offset[0]) / self.scale[0] / orig[0]
        x0 = (c * cell_w - self.offset[1]) / self.scale[1] / orig[1]
        x1 = ((c + 1) * cell_w - self.offset[1]) / self.scale[1] / orig[1]
        b = np.clip(np.stack([x0, y0, x1, y1], -1).reshape(-1, 4), 0.0, 1.0)
        b[(b[:, 2] <= b[:, 0]) | (b[:, 3] <= b[:, 1])] = np.nan  # cell lies wholly on padding
        return b


def _resized_hw(h: int, w: int, size: Any) -> tuple[int, int]:
    """The size the image processor's resize() produces (same helper, same rounding)."""
    from transformers.image_transforms import get_resize_output_image_size
    from transformers.image_utils import ChannelDimension

    if _size(size, "height") and _size(size, "width"):
        return int(_size(size, "height")), int(_size(size, "width"))
    if _size(size, "shortest_edge") and not _size(size, "longest_edge"):
        dummy = np.empty((1, h, w), dtype=np.uint8)
        out = get_resize_output_image_size(
            dummy,
            size=int(_size(size, "shortest_edge")),
            default_to_square=False,
            input_data_format=ChannelDimension.FIRST,
        )
        return int(out[0]), int(out[1])
    raise ValueError(f"image processor size {size!r} is not supported by eval.attention; see docs/explain.md")


def _llava_layout(config: Any, ip: Any, image_size: tuple[int, int]) -> ImageLayout:
    h, w = image_size
    patch = config.vision_config.patch_size
    side = config.vision_config.image_size
    t = _Affine(h, w)
    if getattr(ip, "do_pad", False):  # pad_to_square, pasted in the middle
        m = max(h, w)
        t.pad((m - h) // 2, (m - w) // 2, m, m)
    if getattr(ip, "do_resize", True):
        t.resize(*_resized_hw(t.h, t.w, ip.size))
    if getattr(ip, "do_center_crop", False):
        ch, cw = int(_size(ip.crop_size, "height")), int(_size(ip.crop_size, "width"))
        t.crop((t.h - ch) // 2, (t.w - cw) // 2, ch, cw)
    if (t.h, t.w) != (side, side):
        raise ValueError(f"processed image is {t.h}x{t.w} but the vision tower expects {side}x{side}")
    g = side // patch
    boxes = t.boxes(g, g, patch, patch, image_size)
    if config.vision_feature_select_strategy == "full":  # the CLS token comes first and has no place
        boxes = np.vstack([np.full((1, 4), np.nan), boxes])
    return ImageLayout("llava", (h, w), boxes, (g, g))


def _unpadded_rows_cols(rows: int, cols: int, h: int, w: int) -> tuple[int, int, int, int]:
    """Which feature rows/cols LLaVA-NeXT keeps (the model's unpad_image, on the feature grid)."""
    if w / h > cols / rows:
        new_h = int(round(h * (cols / w), 7))
        pad = (rows - new_h) // 2
        return pad, rows - pad, 0, cols
    new_w = int(round(w * (rows / h), 7))
    pad = (cols - new_w) // 2
    return 0, rows, pad, cols - pad


def _llava_next_layout(config: Any, ip: Any, image_size: tuple[int, int]) -> ImageLayout:
    from transformers.image_processing_utils import get_patch_output_size, select_best_resolution
    from transformers.image_utils import ChannelDimension

    h, w = image_size
    patch = config.vision_config.patch_size
    side = config.vision_config.image_size
    if config.vision_feature_select_strategy != "default":
        raise ValueError("LLaVA-NeXT attention maps need vision_feature_select_strategy='default' (as the model)")
    for name in ("size", "crop_size"):
        s = getattr(ip, name)
        if (_size(s, "shortest_edge") or _size(s, "height")) != side:
            raise ValueError(f"LLaVA-NeXT image processor {name}={s!r} differs from the vision tower's {side}")
    g = side // patch
    # 1. The base view: the whole image squashed to side x side.
    base = _Affine(h, w)
    base.resize(side, side)
    parts = [base.boxes(g, g, patch, patch, image_size)]
    # 2. The anyres canvas: aspect-preserving resize into the best pinpoint, centred padding, side x side tiles.
    bh, bw = select_best_resolution((h, w), config.image_grid_pinpoints)
    nh, nw = get_patch_output_size(np.empty((1, h, w), np.uint8), (bh, bw), ChannelDimension.FIRST)
    canvas = _Affine(h, w)
    canvas.resize(nh, nw)
    canvas.pad((bh - nh) // 2, (bw - nw) // 2, bh, bw)
    rows, cols = (bh // side) * g, (bw // side) * g
    grid = canvas.boxes(rows, cols, patch, patch, image_size).reshape(rows, cols, 4)
    r0, r1, c0, c1 = _unpadded_rows_cols(rows, cols, h, w)
    newline = np.full((r1 - r0, 1, 4), np.nan)  # one newline token closes every kept row
    parts.append(np.concatenate([grid[r0:r1, c0:c1], newline], axis=1).reshape(-1, 4))
    return ImageLayout("llava_next", (h, w), np.vstack(parts), (g, g))


def _qwen2_vl_layout(config: Any, ip: Any, image_size: tuple[int, int]) -> ImageLayout:
    """Qwen2-VL resizes the whole image (no pad, no crop) and merges m x m patches into one token."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    h, w = image_size
    patch, merge = ip.patch_size, ip.merge_size
    rh, rw = smart_resize(
        h,
        w,
        factor=patch * merge,
        min_pixels=_size(ip.size, "shortest_edge"),
        max_pixels=_size(ip.size, "longest_edge"),
    )
    t = _Affine(h, w)
    t.resize(rh, rw)
    g = (rh // (patch * merge), rw // (patch * merge))
    return ImageLayout(config.model_type, (h, w), t.boxes(*g, patch * merge, patch * merge, image_size), g)


def _idefics3_layout(config: Any, ip: Any, image_size: tuple[int, int]) -> ImageLayout:
    """Idefics3 / SmolVLM: rows x cols tiles of the whole resized image, then a squashed global view.

    Every resize acts on the whole image (no crop; batch padding only when images differ in size), and
    the tiles divide the resized image exactly, so a cell's box in [0, 1] needs only rows and cols.
    Pixel shuffle merges scale x scale patches into one token, in raster order.
    """
    h, w = image_size
    side = _size(ip.max_image_size, "longest_edge")
    if side != config.vision_config.image_size:
        raise ValueError(
            f"Idefics3 max_image_size {side} differs from the vision tower's {config.vision_config.image_size}"
        )
    g = side // config.vision_config.patch_size // config.scale_factor
    _, rows, cols = ip.get_number_of_image_patches(h, w, {}) if getattr(ip, "do_image_splitting", True) else (0, 0, 0)
    r, c = np.meshgrid(np.arange(g), np.arange(g), indexing="ij")
    cell = np.stack([c, r, c + 1, r + 1], -1).reshape(-1, 4) / g  # one view, in its own [0, 1] square
    parts = [(cell + [j, i, j, i]) / [cols, rows, cols, rows] for i in range(rows) for j in range(cols)]
    parts.append(cell)  # the global view: the whole image
    return ImageLayout("idefics3", (h, w), np.vstack(parts).astype(np.float64), (g, g))


def _mllama_layout(config: Any, ip: Any, image_size: tuple[int, int]) -> ImageLayout:
    """Mllama: the vision keys of its cross-attention, max_image_tiles x (CLS + g x g patches).

    The image is resized into the best canvas of tiles (aspect kept), padded at the bottom and right,
    and cut into tiles in raster order; tiles past the canvas are padding (masked by the model).
    """
    from transformers.models.mllama.image_processing_pil_mllama import (
        get_image_size_fit_to_canvas,
        get_optimal_tiled_canvas,
    )

    h, w = image_size
    tile, patch = config.vision_config.image_size, config.vision_config.patch_size
    if _size(ip.size, "height") != tile:
        raise ValueError(f"Mllama image processor size {ip.size!r} differs from the vision tower's {tile}")
    g = tile // patch
    ch, cw = get_optimal_tiled_canvas(h, w, ip.max_image_tiles, tile)
    t = _Affine(h, w)
    t.resize(*get_image_size_fit_to_canvas(h, w, ch, cw, tile))
    t.pad(0, 0, ch, cw)
    grid = t.boxes(ch // tile * g, cw // tile * g, patch, patch, image_size).reshape(ch // tile * g, cw // tile * g, 4)
    cls = np.full((1, 4), np.nan)
    parts = [
        np.vstack([cls, grid[i * g : (i + 1) * g, j * g : (j + 1) * g].reshape(-1, 4)])
        for i in range(ch // tile)
        for j in range(cw // tile)
    ]
    parts += [np.full((g * g + 1, 4), np.nan)] * (ip.max_image_tiles - len(parts))
    return ImageLayout("mllama", (h, w), np.vstack(parts), (g, g))


_LAYOUTS = {
    "mllama": _mllama_layout,
    "llava": _llava_layout,
    "llava_next": _llava_next_layout,
    "qwen2_vl": _qwen2_vl_layout,
    "qwen2_5_vl": _qwen2_vl_layout,
    "idefics3": _idefics3_layout,
}


def check_supported(config: Any) -> None:
    """Raise AttentionUnavailable now (e.g. when an adapter is built) if this model family has no layout."""
    kind = config.model_type
    if kind not in _LAYOUTS:
        raise AttentionUnavailable(
            f"attention maps are not implemented for model_type {kind!r} (supported: {', '.join(_LAYOUTS)}); "
            "docs/explain.md says what each other family needs"
        )


def image_layout(config: Any, image_processor: Any, image_size: tuple[int, int]) -> ImageLayout:
    """Map every image token of `config.model_type` to its box on an original image of (height, width)."""
    check_supported(config)
    return _LAYOUTS[config.model_type](config, image_processor, (int(image_size[0]), int(image_size[1])))


# --------------------------------------------------------------------------- measures


def default_seam_width(width: int) -> float:
    """vignette's seam as a fraction of an image `width` pixels wide."""
    return min(SEAM_PIXELS / width, 0.5)


def region_weights(boxes: np.ndarray, seam_width: float) -> np.ndarray:
    """(tokens, 3): the fraction of each box's width in the left band, the seam band and the right band."""
    if not 0.0 <= seam_width < 1.0:
        raise ValueError(f"seam_width is a fraction of the image width in [0, 1); got {seam_width}")
    edges = np.array([0.0, 0.5 - seam_width / 2, 0.5 + seam_width / 2, 1.0])
    x0, x1 = boxes[:, 0:1], boxes[:, 2:3]
    overlap = np.clip(np.minimum(x1, edges[1:]) - np.maximum(x0, edges[:-1]), 0.0, None)
    return np.nan_to_num(overlap / (x1 - x0))  # non-spatial tokens: all zero


def grid_weights(boxes: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """(tokens, rows*cols): the fraction of each box's area in each cell of a rows x cols grid."""

    def axis(lo: np.ndarray, hi: np.ndarray, n: int) -> np.ndarray:
        e = np.arange(n + 1) / n
        return (
            np.clip(np.minimum(hi[:, None], e[None, 1:]) - np.maximum(lo[:, None], e[None, :-1]), 0, None)
            / (hi - lo)[:, None]
        )

    wy = axis(boxes[:, 1], boxes[:, 3], grid[0])
    wx = axis(boxes[:, 0], boxes[:, 2], grid[1])
    return np.nan_to_num((wy[:, :, None] * wx[:, None, :]).reshape(len(boxes), -1))


@dataclass(frozen=True)
class AttentionSummary:
    """The compact record of one answer's attention over the image (never the full tensor)."""

    image_share: float  # mean share of the answer's attention that goes to image tokens
    nonspatial_share: float  # of the image attention: share on tokens with no place (newline, CLS)
    left_share: float  # of the spatial image attention; left + seam + right = 1
    right_share: float
    seam_share: float
    layer_left_share: tuple[float, ...]
    layer_right_share: tuple[float, ...]
    layer_seam_share: tuple[float, ...]
    head_mass: np.ndarray  # (layers, heads) float16: mean share of attention on image tokens
    top_heads: tuple[tuple[int, int, float], ...]  # (layer, head, mass), largest first
    grid: np.ndarray  # (rows, cols) float16: share of spatial image attention per cell, sums to 1
    seam_width: float
    n_answer_tokens: int

    def to_record(self) -> dict[str, Any]:
        """Flat attn_* fields for a responses row: JSON-safe (the run log is JSON lines) and parquet-typed
        (ATTENTION_SCHEMA); arrays are little-endian float16, base64-encoded, with their shape beside them."""
        return {
            "attn_image_share": self.image_share,
            "attn_nonspatial_share": self.nonspatial_share,
            "attn_left_share": self.left_share,
            "attn_right_share": self.right_share,
            "attn_seam_share": self.seam_share,
            "attn_layer_left_share": list(self.layer_left_share),
            "attn_layer_right_share": list(self.layer_right_share),
            "attn_layer_seam_share": list(self.layer_seam_share),
            "attn_head_mass": _pack(self.head_mass),
            "attn_head_mass_shape": list(self.head_mass.shape),
            "attn_top_heads": [{"layer": int(lay), "head": int(h), "mass": float(m)} for lay, h, m in self.top_heads],
            "attn_grid": _pack(self.grid),
            "attn_grid_shape": list(self.grid.shape),
            "attn_seam_width": self.seam_width,
            "attn_answer_tokens": self.n_answer_tokens,
        }

    @classmethod
    def from_record(cls, row: dict[str, Any]) -> AttentionSummary:
        missing = [k for k in ("attn_left_share", "attn_grid", "attn_head_mass") if row.get(k) is None]
        if missing:
            raise KeyError(
                f"row {row.get('question_id', '?')} has no attention record ({', '.join(missing)}); "
                "run the model with attention recording on"
            )

        def arr(key: str) -> np.ndarray:
            raw = row[key]
            raw = base64.b64decode(raw) if isinstance(raw, str) else bytes(raw)
            return np.frombuffer(raw, dtype="<f2").reshape([int(s) for s in row[key + "_shape"]])

        def heads(h: Any) -> tuple[int, int, float]:
            return (int(h["layer"]), int(h["head"]), float(h["mass"])) if isinstance(h, dict) else tuple(h)

        return cls(
            image_share=float(row["attn_image_share"]),
            nonspatial_share=float(row["attn_nonspatial_share"]),
            left_share=float(row["attn_left_share"]),
            right_share=float(row["attn_right_share"]),
            seam_share=float(row["attn_seam_share"]),
            layer_left_share=tuple(float(x) for x in row["attn_layer_left_share"]),
            layer_right_share=tuple(float(x) for x in row["attn_layer_right_share"]),
            layer_seam_share=tuple(float(x) for x in row["attn_layer_seam_share"]),
            head_mass=arr("attn_head_mass").astype(np.float32),
            top_heads=tuple(heads(h) for h in row["attn_top_heads"]),
            grid=arr("attn_grid").astype(np.float32),
            seam_width=float(row["attn_seam_width"]),
            n_answer_tokens=int(row["attn_answer_tokens"]),
        )


def _pack(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f2").tobytes()).decode("ascii")


def attention_schema() -> Any:
    """The pyarrow fields to_record() adds to the responses table (vignette_bench/formats/responses.py)."""
    from vignette_bench.formats.responses import ATTENTION_SCHEMA

    return ATTENTION_SCHEMA


def _shares(mass: np.ndarray, regions: np.ndarray) -> np.ndarray:
    """(..., tokens) attention -> (..., 3) left/seam/right shares of the spatial part."""
    r = mass @ regions
    with np.errstate(invalid="ignore", divide="ignore"):
        return r / r.sum(-1, keepdims=True)  # NaN only when no spatial token got any attention


def summarize(
    attentions: Sequence[Any],
    image_positions: Sequence[int] | np.ndarray,
    layout: ImageLayout,
    query_positions: Sequence[int] | np.ndarray,
    *,
    seam_width: float | None = None,
    grid: tuple[int, int] = GRID,
    top_k: int = TOP_HEADS,
) -> AttentionSummary:
    """Summarise attention weights (per layer: 1 x heads x q x k, or heads x q x k) for one example.

    image_positions: key index of each image token, in the order of `layout.boxes`.
    query_positions: the q rows to average (the rows that produced the answer tokens).
    seam_width: fraction of the image width; default vignette's seam on an image of layout.image_size.
    """
    if seam_width is None:
        seam_width = default_seam_width(layout.image_size[1])
    if not attentions or any(a is None for a in attentions):
        raise AttentionUnavailable(
            f"the model returned no attention weights; {EAGER_HINT} (sdpa and flash "
            "attention kernels never materialise them)"
        )
    image_positions = np.asarray(image_positions, dtype=np.int64)
    query_positions = np.asarray(query_positions, dtype=np.int64)
    if len(image_positions) != layout.n_tokens:
        raise ValueError(
            f"the sequence has {len(image_positions)} image tokens but the {layout.family} layout of a "
            f"{layout.image_size[0]}x{layout.image_size[1]} image has {layout.n_tokens}; was the layout "
            "built from the same processor settings and image?"
        )
    if len(query_positions) == 0:
        raise ValueError("no answer tokens to take attention from")
    rows = []
    for a in attentions:
        a = _to_numpy(a)
        a = a[0] if a.ndim == 4 else a
        rows.append(a[:, query_positions][:, :, image_positions].mean(axis=1))  # (heads, image tokens)
    img = np.stack(rows).astype(np.float64)  # (layers, heads, image tokens)
    head_mass = img.sum(-1)
    layer_map = img.mean(1)  # (layers, image tokens)
    mean_map = layer_map.mean(0)
    regions = region_weights(layout.boxes, seam_width)
    layer_sh = _shares(layer_map, regions)
    sh = _shares(mean_map, regions)
    spatial_mass = mean_map[layout.spatial].sum()
    cells = mean_map @ grid_weights(layout.boxes, grid)
    order = np.argsort(-head_mass, axis=None, kind="stable")[:top_k]
    top = tuple((int(i // head_mass.shape[1]), int(i % head_mass.shape[1]), float(head_mass.flat[i])) for i in order)
    return AttentionSummary(
        image_share=float(head_mass.mean()),
        nonspatial_share=float(1.0 - spatial_mass / mean_map.sum()) if mean_map.sum() > 0 else float("nan"),
        left_share=float(sh[0]),
        seam_share=float(sh[1]),
        right_share=float(sh[2]),
        layer_left_share=tuple(layer_sh[:, 0].tolist()),
        layer_seam_share=tuple(layer_sh[:, 1].tolist()),
        layer_right_share=tuple(layer_sh[:, 2].tolist()),
        head_mass=head_mass.astype(np.float16),
        top_heads=top,
        grid=(cells / cells.sum() if cells.sum() > 0 else cells).reshape(grid).astype(np.float16),
        seam_width=float(seam_width),
        n_answer_tokens=len(query_positions),
    )


def _to_numpy(a: Any) -> np.ndarray:
    if hasattr(a, "detach"):
        return a.detach().float().cpu().numpy()
    return np.asarray(a)


# --------------------------------------------------------------------------- recording with a real model


def _decoder_attention_modules(model: Any) -> tuple[list[Any], bool]:
    """The attention modules whose answer rows we read, and whether they are cross-attention.

    Decoder-only VLMs (LLaVA, Qwen2-VL, Idefics3): every layer's self-attention, whose keys include
    the image tokens. Mllama: the image is not in the sequence; text meets it only in the
    cross-attention layers, whose keys are the vision tokens themselves.
    """
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    layers = getattr(decoder, "layers", None)
    if layers is None:
        raise AttentionUnavailable(f"cannot find the text decoder layers of {type(model).__name__}")
    cross = [layer.cross_attn for layer in layers if hasattr(layer, "cross_attn")]
    if cross:
        return cross, True
    mods = [getattr(layer, "self_attn", None) for layer in layers]
    if any(m is None for m in mods):
        raise AttentionUnavailable(f"{type(model).__name__} has decoder layers without self-attention")
    return mods, False


def record_attention(
    model: Any,
    inputs: Any,
    answer_start: int,
    layout: ImageLayout,
    *,
    seam_width: float | None = None,
    grid: tuple[int, int] = GRID,
    top_k: int = TOP_HEADS,
) -> AttentionSummary:
    """One teacher-forced forward pass over prompt + answer, keeping only the answer rows of each layer.

    Hooks slice each layer's weights to the rows that produced the answer as the layer runs, so the
    memory held is (layers x heads x answer tokens x sequence), not the full attention tensor.
    """
    import torch

    impl = getattr(model.config, "_attn_implementation", None)
    text_impl = getattr(getattr(model.config, "text_config", None), "_attn_implementation", impl)
    if text_impl != "eager":
        raise AttentionUnavailable(
            f"the model runs attn_implementation={text_impl!r}, which returns no attention weights; {EAGER_HINT}"
        )
    ids = inputs["input_ids"]
    if ids.shape[0] != 1:
        raise ValueError(f"record_attention takes one example at a time, got a batch of {ids.shape[0]}")
    n = ids.shape[1]
    if not 1 <= answer_start < n:
        raise ValueError(f"answer_start={answer_start} must point inside the sequence of {n} tokens")
    modules, cross = _decoder_attention_modules(model)
    if cross:  # keys are the vision tokens, in the layout's order
        image_positions = np.arange(layout.n_tokens)
    else:
        image_token = getattr(model.config, "image_token_id", None)
        if image_token is None:
            image_token = model.config.image_token_index
        image_positions = (ids[0] == image_token).nonzero().flatten().cpu().numpy()
    query = torch.arange(answer_start - 1, n - 1)
    captured: list[Any] = []

    def hook(module: Any, args: Any, output: Any) -> None:
        weights = output[1] if isinstance(output, tuple) and len(output) > 1 else None
        if weights is None:
            raise AttentionUnavailable(f"{type(module).__name__} returned no attention weights; {EAGER_HINT}")
        if cross and weights.shape[-1] != layout.n_tokens:
            raise ValueError(
                f"cross-attention has {weights.shape[-1]} vision keys but the {layout.family} layout has "
                f"{layout.n_tokens}; were the layout and the inputs made by the same processor?"
            )
        captured.append(weights[:1, :, query.to(weights.device)].detach().float().cpu())

    handles = [m.register_forward_hook(hook) for m in modules]
    try:
        with torch.no_grad():
            model(**inputs, use_cache=False)
    finally:
        for h in handles:
            h.remove()
    return summarize(
        captured, image_positions, layout, np.arange(len(query)), seam_width=seam_width, grid=grid, top_k=top_k
    )
