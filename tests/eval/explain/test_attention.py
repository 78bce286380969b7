"""vignette_bench.eval.explain.attention: layouts against the real processors and models, exact shares on hand-made patterns."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image
from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaNextConfig
from transformers.image_utils import PILImageResampling
from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil
from transformers.models.llava_next.image_processing_pil_llava_next import LlavaNextImageProcessorPil

from vignette_bench.eval.explain.attention import (
    AttentionSummary,
    AttentionUnavailable,
    check_supported,
    chosen_vs_other,
    image_layout,
    record_attention,
    summarize,
    unavailable_for_api,
)

SIDE, PATCH = 28, 7  # 4 x 4 patches per view


def _llava_config(strategy: str = "default") -> LlavaConfig:
    vision = CLIPVisionConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=SIDE,
        patch_size=PATCH,
    )
    text = LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, vocab_size=64)
    return LlavaConfig(vision_config=vision, text_config=text, vision_feature_select_strategy=strategy)


def _next_config(pinpoints: list[list[int]]) -> LlavaNextConfig:
    c = _llava_config()
    return LlavaNextConfig(
        vision_config=c.vision_config,
        text_config=c.text_config,
        image_grid_pinpoints=pinpoints,
        vision_feature_select_strategy="default",
    )


def _attn(layers: int, heads: int, q: int, k: int) -> np.ndarray:
    return np.zeros((layers, 1, heads, q, k))


# ----------------------------------------------------------------- exact shares on a known pattern


def test_llava_shares_match_hand_computation():
    # 56 x 28 image, resize shortest edge 28 -> 56 x 28, centre crop 28: the crop covers x in [14, 42) of 56,
    # so the 4 patch columns are [.25,.375], [.375,.5], [.5,.625], [.625,.75] of the original width.
    ip = LlavaImageProcessorPil(size={"shortest_edge": SIDE}, crop_size={"height": SIDE, "width": SIDE})
    layout = image_layout(_llava_config(), ip, (28, 56))
    assert layout.n_tokens == 16
    np.testing.assert_allclose(layout.boxes[:4, [0, 2]], [[0.25, 0.375], [0.375, 0.5], [0.5, 0.625], [0.625, 0.75]])

    n_text = 3  # sequence: 3 text tokens, 16 image tokens, 2 answer tokens
    image_pos = np.arange(n_text, n_text + 16)
    k = n_text + 16 + 2
    a = _attn(2, 2, k, k)
    q = [k - 3, k - 2]  # rows that produced the two answer tokens
    # layer 0, both heads, both rows: .3 on patch (0,0), .2 on (0,1), .1 on (1,2), .4 on text
    for head in (0, 1):
        for row in q:
            a[0, 0, head, row, [image_pos[0], image_pos[1], image_pos[6], 0]] = [0.3, 0.2, 0.1, 0.4]
    # layer 1: head 0 puts .5 on patch (3,3) (right), head 1 puts everything on text
    a[1, 0, 0, q, image_pos[15]] = 0.5
    a[1, 0, 0, q, 1] = 0.5
    a[1, 0, 1, q, 2] = 1.0

    s = summarize(list(a), image_pos, layout, q, seam_width=0.1)
    # seam band [.45, .55]: column 1 gives .6 of its width to left, .4 to seam; column 2 .4 to seam, .6 right.
    # layer 0: left .3 + .2*.6 = .42, seam .2*.4 + .1*.4 = .12, right .1*.6 = .06 (of .6)
    assert s.layer_left_share[0] == pytest.approx(0.42 / 0.6)
    assert s.layer_seam_share[0] == pytest.approx(0.12 / 0.6)
    assert s.layer_right_share[0] == pytest.approx(0.06 / 0.6)
    assert (s.layer_left_share[1], s.layer_seam_share[1], s.layer_right_share[1]) == pytest.approx((0, 0, 1))
    # mean over heads then layers: left .42/2, seam .12/2, right .06/2 + .5/4 = .155; total .425
    assert s.left_share == pytest.approx(0.21 / 0.425)
    assert s.seam_share == pytest.approx(0.06 / 0.425)
    assert s.right_share == pytest.approx(0.155 / 0.425)
    assert s.image_share == pytest.approx((0.6 + 0.6 + 0.5 + 0) / 4)
    assert s.nonspatial_share == pytest.approx(0)
    np.testing.assert_allclose(s.head_mass, [[0.6, 0.6], [0.5, 0]], atol=1e-3)
    assert [(lay, h) for lay, h, _ in s.top_heads] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert s.n_answer_tokens == 2
    # the grid holds the same mass: with no seam its left half is the left share
    g = s.grid.astype(np.float64)
    assert g.sum() == pytest.approx(1, abs=1e-3)
    s0 = summarize(list(a), image_pos, layout, q, seam_width=0.0, grid=(4, 8))
    assert s0.grid[:, :4].astype(np.float64).sum() == pytest.approx(s0.left_share, abs=2e-3)
    assert s0.left_share == pytest.approx((0.5 / 2) / 0.425)  # without a seam: columns 0-1 are left


def test_llava_next_shares_match_hand_computation():
    # 28 x 56 (h x w) image, pinpoints pick a 1 x 2 tile canvas 28 x 56: no resize, no padding, nothing unpadded.
    ip = LlavaNextImageProcessorPil(
        size={"shortest_edge": SIDE},
        crop_size={"height": SIDE, "width": SIDE},
        image_grid_pinpoints=[[28, 56], [56, 28]],
    )
    layout = image_layout(_next_config([[28, 56], [56, 28]]), ip, (28, 56))
    # base 4 x 4, then 4 rows of (8 tile columns + newline)
    assert layout.n_tokens == 16 + 4 * 9
    newline = 16 + 8  # first newline token
    assert not layout.spatial[newline] and layout.spatial[:newline].all()
    np.testing.assert_allclose(layout.boxes[16 + np.arange(8), 0], np.arange(8) / 8)
    np.testing.assert_allclose(layout.boxes[:4, 0], np.arange(4) / 4)  # base view covers the whole width

    image_pos = np.arange(1, 1 + layout.n_tokens)
    k = image_pos[-1] + 2
    a = _attn(1, 1, k, k)
    # .2 on base patch (0,0) [x 0-.25], .2 on tile cell (0,7) [x .875-1], .2 on tile cell (1,4) [x .5-.625],
    # .1 on a newline, .3 on text
    a[0, 0, 0, k - 2, image_pos[[0, 16 + 7, 16 + 9 + 4, newline]]] = [0.2, 0.2, 0.2, 0.1]
    a[0, 0, 0, k - 2, 0] = 0.3
    s = summarize(list(a), image_pos, layout, [k - 2], seam_width=0.0)
    assert s.left_share == pytest.approx(0.2 / 0.6)
    assert s.right_share == pytest.approx(0.4 / 0.6)
    assert s.seam_share == 0
    assert s.nonspatial_share == pytest.approx(0.1 / 0.7)
    assert s.image_share == pytest.approx(0.7)
    assert s.left_share + s.seam_share + s.right_share == pytest.approx(1)


# ----------------------------------------------------------------- layouts against the real processors


def _coords(ip, h: int, w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run the processor with NEAREST resampling on images whose pixels encode their own (x, y)."""
    out = []
    for axis in (1, 0):
        v = np.indices((h, w))[axis]
        img = Image.fromarray(np.stack([v & 255, v >> 8, np.full_like(v, 255)], -1).astype(np.uint8))
        pv = ip(img, resample=PILImageResampling.NEAREST, do_rescale=False, do_normalize=False, return_tensors="np")[
            "pixel_values"
        ][0].astype(np.int64)
        out.append(pv)
    x, y = (p[..., 0, :, :] + 256 * p[..., 1, :, :] for p in out)
    return x, y, out[0][..., 2, :, :] == 255


def _assert_inside(box, xs, ys, valid, h, w, tol=1.5):
    if not valid.any():
        assert np.isnan(box).all(), "a cell that is all padding must have no place"
        return
    x, y = (xs[valid] + 0.5) / w, (ys[valid] + 0.5) / h
    assert box[0] - tol / w <= x.min() and x.max() <= box[2] + tol / w, (box, x.min(), x.max())
    assert box[1] - tol / h <= y.min() and y.max() <= box[3] + tol / h, (box, y.min(), y.max())


@pytest.mark.parametrize("do_pad", [False, True])
@pytest.mark.parametrize("hw", [(40, 100), (90, 50), (28, 28)])
def test_llava_layout_matches_processor(do_pad, hw):
    ip = LlavaImageProcessorPil(size={"shortest_edge": SIDE}, crop_size={"height": SIDE, "width": SIDE}, do_pad=do_pad)
    layout = image_layout(_llava_config(), ip, hw)
    xs, ys, valid = _coords(ip, *hw)
    g = SIDE // PATCH
    for t in range(g * g):
        r, c = divmod(t, g)
        cell = np.s_[r * PATCH : (r + 1) * PATCH, c * PATCH : (c + 1) * PATCH]
        _assert_inside(layout.boxes[t], xs[cell], ys[cell], valid[cell], *hw)


def test_llava_full_strategy_puts_cls_first():
    ip = LlavaImageProcessorPil(size={"shortest_edge": SIDE}, crop_size={"height": SIDE, "width": SIDE})
    layout = image_layout(_llava_config("full"), ip, (28, 28))
    assert layout.n_tokens == 17 and not layout.spatial[0] and layout.spatial[1:].all()


TINY_PINPOINTS = [[28, 56], [56, 28], [56, 56], [28, 84]]
LLAVA16_PINPOINTS = [[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]]  # llava-v1.6 checkpoints


@pytest.mark.parametrize(
    "side, patch, pinpoints, hw",
    [
        *((SIDE, PATCH, TINY_PINPOINTS, hw) for hw in [(40, 100), (100, 40), (30, 31), (60, 200)]),
        # the real LLaVA-1.6 geometry: a 672 x 336 pair, a photo, a panorama
        *((336, 14, LLAVA16_PINPOINTS, hw) for hw in [(336, 672), (375, 500), (300, 1000)]),
    ],
)
def test_llava_next_layout_matches_model_packing_and_processor(side, patch, pinpoints, hw):
    """Pack features that carry (view, row, col) through the model's own pack_image_features, then check each
    token's box against the pixels the real image processor put in that view's cell; the token count must be
    the processor's own."""
    from types import SimpleNamespace

    from transformers import LlavaNextForConditionalGeneration, LlavaNextProcessor

    vision = CLIPVisionConfig(
        hidden_size=8,
        intermediate_size=8,
        num_hidden_layers=1,
        num_attention_heads=1,
        image_size=side,
        patch_size=patch,
    )
    config = LlavaNextConfig(
        vision_config=vision,
        text_config=_llava_config().text_config,
        image_grid_pinpoints=pinpoints,
        vision_feature_select_strategy="default",
    )
    ip = LlavaNextImageProcessorPil(
        size={"shortest_edge": side}, crop_size={"height": side, "width": side}, image_grid_pinpoints=pinpoints
    )
    layout = image_layout(config, ip, hw)
    proc = SimpleNamespace(image_processor=ip, patch_size=patch, num_additional_image_tokens=1)
    proc._get_unpadded_features = LlavaNextProcessor._get_unpadded_features.__get__(proc)
    assert layout.n_tokens == LlavaNextProcessor._get_number_of_features(proc, *hw, side, side) - 1  # - CLS
    xs, ys, valid = _coords(ip, *hw)
    views, g = xs.shape[0], side // patch
    feats = torch.tensor([[(v, r, c) for r in range(g) for c in range(g)] for v in range(views)], dtype=torch.float32)
    model = LlavaNextForConditionalGeneration(config).model
    packed, lens = model.pack_image_features(
        [feats], torch.tensor([hw]), "default", image_newline=torch.full((3,), -1.0)
    )
    packed = packed[0].numpy()
    assert len(packed) == layout.n_tokens
    assert ((packed[:, 0] == -1) == ~layout.spatial).all()
    for t, (v, r, c) in enumerate(packed.astype(int)):
        if v >= 0:
            cell = np.s_[v, r * patch : (r + 1) * patch, c * patch : (c + 1) * patch]
            _assert_inside(layout.boxes[t], xs[cell], ys[cell], valid[cell], *hw)


def _qwen(family: str = "qwen2_vl"):
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
    )
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    text = dict(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        bos_token_id=1,
        eos_token_id=2,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
    )
    common = dict(hidden_size=32, num_heads=2, patch_size=14, spatial_merge_size=2, temporal_patch_size=2)
    ids = dict(
        image_token_id=60,
        video_token_id=61,
        vision_start_token_id=62,
        vision_end_token_id=63,
        attn_implementation="eager",
    )
    torch.manual_seed(0)
    if family == "qwen2_vl":
        vision = dict(depth=1, embed_dim=32, mlp_ratio=2, **common)
        model = Qwen2VLForConditionalGeneration(Qwen2VLConfig(text_config=text, vision_config=vision, **ids))
    else:  # window attention in the vision tower; the tokens come back in raster order
        vision = dict(
            depth=2, intermediate_size=64, out_hidden_size=32, window_size=56, fullatt_block_indexes=[1], **common
        )
        model = Qwen2_5_VLForConditionalGeneration(Qwen2_5_VLConfig(text_config=text, vision_config=vision, **ids))
    ip = Qwen2VLImageProcessorPil(size={"shortest_edge": 56 * 56, "longest_edge": 56 * 112})
    return model.eval(), ip


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl"])
@pytest.mark.parametrize("hw", [(40, 100), (120, 50)])
def test_qwen2_vl_layout_matches_processor_and_records(hw, family):
    model, ip = _qwen(family)
    layout = image_layout(model.config, ip, hw)
    # the processor emits merge x merge patches per token, consecutively; each patch is (C, T, p, p)
    out = []
    for axis in (1, 0):
        v = np.indices(hw)[axis]
        img = Image.fromarray(np.stack([v & 255, v >> 8, np.full_like(v, 255)], -1).astype(np.uint8))
        pv = ip(img, resample=PILImageResampling.NEAREST, do_rescale=False, do_normalize=False, return_tensors="np")[
            "pixel_values"
        ].astype(np.int64)
        out.append(pv.reshape(layout.n_tokens, 4, 3, 2, 14, 14)[:, :, :, 0])
    for t in range(layout.n_tokens):
        xs, ys = (o[t, :, 0] + 256 * o[t, :, 1] for o in out)
        _assert_inside(layout.boxes[t], xs, ys, out[0][t, :, 2] == 255, *hw)
    # and end to end with hand-made ids: text, <vision_start>, image tokens, <vision_end>, answer
    image = Image.new("RGB", hw[::-1], (10, 200, 10))
    pixels = ip(image, return_tensors="pt")
    ids = torch.tensor([[5, 6, 62] + [60] * layout.n_tokens + [63, 7, 8, 9, 10]])
    inputs = {"input_ids": ids, "mm_token_type_ids": (ids == 60).long(), **pixels}
    s = record_attention(model, inputs, ids.shape[1] - 2, layout)
    assert s.n_answer_tokens == 2 and 0 < s.image_share <= 1 and s.nonspatial_share == 0
    assert s.left_share + s.seam_share + s.right_share == pytest.approx(1)


@pytest.mark.parametrize("hw", [(56, 112), (150, 60), (40, 40), (100, 260)])
def test_idefics3_layout_matches_processor_shuffle_and_records(hw):
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration
    from transformers.models.idefics3.configuration_idefics3 import Idefics3VisionConfig
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    tile, patch, scale = 56, 14, 2
    ip = Idefics3ImageProcessorPil(size={"longest_edge": 2 * tile}, max_image_size={"longest_edge": tile})
    vision = Idefics3VisionConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=tile,
        patch_size=patch,
    )
    text = LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, vocab_size=64)
    torch.manual_seed(0)
    model = Idefics3ForConditionalGeneration(
        Idefics3Config(
            vision_config=vision, text_config=text, scale_factor=scale, image_token_id=60, attn_implementation="eager"
        )
    ).eval()
    layout = image_layout(model.config, ip, hw)
    xs, ys, valid = _coords(ip, *hw)  # (views, tile, tile)
    g, cell = tile // patch // scale, patch * scale
    assert layout.n_tokens == xs.shape[0] * g * g
    # pixel shuffle keeps merged tokens in raster order: feed patch features carrying their (row, col)
    n = tile // patch
    feats = torch.tensor([[(r, c) for r in range(n) for c in range(n)]], dtype=torch.float32)
    merged = model.model.connector.pixel_shuffle(feats, scale)[0].reshape(g * g, scale * scale, 2)
    for t in range(g * g):
        assert (merged[t, :, 0] // scale == t // g).all() and (merged[t, :, 1] // scale == t % g).all()
    for t in range(layout.n_tokens):
        v, (r, c) = t // (g * g), divmod(t % (g * g), g)
        region = np.s_[v, r * cell : (r + 1) * cell, c * cell : (c + 1) * cell]
        _assert_inside(layout.boxes[t], xs[region], ys[region], valid[region], *hw)
    ids = torch.tensor([[5, 6] + [60] * layout.n_tokens + [7, 8, 9]])
    pixels = ip(Image.new("RGB", hw[::-1], (10, 10, 200)), return_tensors="pt")
    s = record_attention(model, {"input_ids": ids, "pixel_values": pixels["pixel_values"]}, ids.shape[1] - 2, layout)
    assert s.left_share + s.seam_share + s.right_share == pytest.approx(1) and s.nonspatial_share == 0


@pytest.mark.parametrize("hw", [(56, 112), (112, 56), (40, 40), (30, 100)])
def test_mllama_layout_matches_processor(hw):
    from transformers import MllamaConfig
    from transformers.models.mllama.configuration_mllama import MllamaVisionConfig
    from transformers.models.mllama.image_processing_pil_mllama import MllamaImageProcessorPil

    tile, patch = 28, 7
    ip = MllamaImageProcessorPil(size={"height": tile, "width": tile}, max_image_tiles=4)
    vision = MllamaVisionConfig(image_size=tile, patch_size=patch, max_num_tiles=4)
    layout = image_layout(MllamaConfig(vision_config=vision), ip, hw)
    xs, ys, valid = _coords(ip, *hw)  # (media, tiles, tile, tile) -> (tiles, tile, tile)
    xs, ys, valid = xs[0], ys[0], valid[0]
    g = tile // patch
    assert layout.n_tokens == 4 * (g * g + 1)
    tiles = int(ip(Image.new("RGB", hw[::-1]), return_tensors="np")["num_tiles"][0][0])
    for k in range(4):
        block = layout.boxes[k * (g * g + 1) : (k + 1) * (g * g + 1)]
        assert np.isnan(block[0]).all()  # the CLS token of every tile
        if k >= tiles:
            assert np.isnan(block).all()  # padding tiles
            continue
        for t in range(g * g):
            r, c = divmod(t, g)
            region = np.s_[k, r * patch : (r + 1) * patch, c * patch : (c + 1) * patch]
            _assert_inside(block[1 + t], xs[region], ys[region], valid[region], *hw)


def test_unsupported_family_names_the_docs():
    class Cfg:
        model_type = "paligemma"

    with pytest.raises(AttentionUnavailable, match="docs/explain.md"):
        image_layout(Cfg(), None, (10, 10))
    with pytest.raises(AttentionUnavailable, match="'paligemma'"):
        check_supported(Cfg())


# ----------------------------------------------------------------- end to end on tiny models


@pytest.fixture(scope="module", params=["llava", "llava_next", "idefics3", "qwen2_vl", "mllama"])
def tiny(request, tmp_path_factory):
    """The transformers adapter with record_attention=True on a tiny random model of each family."""
    from vignette_bench.eval.adapters.tiny import build_tiny_vlm
    from vignette_bench.eval.adapters.transformers_adapter import TransformersAdapter

    # one folder per session, shared with tests/eval/explain/test_pictures.py (building a tiny VLM costs seconds)
    path = build_tiny_vlm(request.param, tmp_path_factory.getbasetemp() / "tiny-vlm" / request.param)
    adapter = TransformersAdapter(path, record_attention=True)
    return request.param, adapter, adapter.model, adapter.processor


def _inputs(adapter, image, answer: str):
    """prompt + answer as one sequence, tokenized exactly as the adapter's score mode does."""
    from vignette_bench.eval.adapters.base import ChoiceRequest

    return adapter.full_inputs(ChoiceRequest("q", image, "Who is cooking?", (answer, "other")), answer)


def test_record_attention_end_to_end(tiny):
    family, adapter, model, processor = tiny
    image = Image.new("RGB", (112, 56), (200, 30, 30))
    inputs, answer_start = _inputs(adapter, image, " the person on the left")
    layout = image_layout(model.config, processor.image_processor, (image.height, image.width))
    s = record_attention(model, inputs, answer_start, layout)
    assert s.n_answer_tokens == inputs["input_ids"].shape[1] - answer_start
    assert 0 < s.image_share <= 1 + 1e-6  # float32 softmax rows
    assert np.isfinite([s.left_share, s.right_share, s.seam_share]).all()
    assert s.left_share + s.seam_share + s.right_share == pytest.approx(1)
    for shares in zip(s.layer_left_share, s.layer_seam_share, s.layer_right_share):
        assert sum(shares) == pytest.approx(1)
    assert s.head_mass.shape[1] == model.config.text_config.num_attention_heads
    # the hook path gives what output_attentions=True gives on the full tensors
    with torch.no_grad():
        out = model(**inputs, output_attentions=True)
    ids = inputs["input_ids"][0]
    if family == "mllama":  # the answer meets the image only in the cross-attention layers (one tensor per layer)
        full = [out.attentions[i] for i in model.config.text_config.cross_attention_layers]
        image_pos = np.arange(layout.n_tokens)
        assert s.head_mass.shape[0] == len(model.config.text_config.cross_attention_layers)
    else:
        full = out.attentions
        image_pos = (ids == model.config.image_token_id).nonzero().flatten().numpy()
        assert s.head_mass.shape[0] == model.config.text_config.num_hidden_layers
    ref = summarize(full, image_pos, layout, np.arange(answer_start - 1, len(ids) - 1))
    assert ref.left_share == pytest.approx(s.left_share, rel=1e-5)
    np.testing.assert_array_equal(ref.grid, s.grid)


def test_record_round_trips_through_json_log_and_parquet(tiny, tmp_path):
    """The run log is JSON lines and the responses table parquet: the record must survive both."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from vignette_bench.eval.explain.attention import attention_schema

    family, adapter, model, processor = tiny
    image = Image.new("RGB", (112, 56))
    inputs, answer_start = _inputs(adapter, image, " left")
    s = record_attention(model, inputs, answer_start, image_layout(model.config, processor.image_processor, (56, 112)))
    record = s.to_record()
    assert set(record) == set(attention_schema().names)
    row = json.loads(json.dumps({"question_id": "q1", **record}))
    schema = pa.schema([("question_id", pa.string()), *attention_schema()])
    pq.write_table(pa.Table.from_pylist([row], schema=schema), tmp_path / "r.parquet")
    back = AttentionSummary.from_record(pq.read_table(tmp_path / "r.parquet").to_pylist()[0])
    assert back.left_share == s.left_share and back.top_heads == s.top_heads
    np.testing.assert_array_equal(back.grid, s.grid.astype(np.float32))
    np.testing.assert_array_equal(back.head_mass, s.head_mass.astype(np.float32))
    assert len(json.dumps(record)) < 4000  # compact: no attention tensor, a few KB at most


def test_transformers_adapter_hook_records_the_chosen_answer(tiny):
    """The adapter's record_attention=True puts the attn_* record into ChoiceResult.extras (image questions only)."""
    from vignette_bench.eval.adapters.base import ChoiceRequest

    adapter = tiny[1]
    options = ("the person on the left", "the person on the right")
    image, text = adapter.choose(
        [
            ChoiceRequest("q0", Image.new("RGB", (112, 56)), "Who is cooking?", options),
            ChoiceRequest("q1", None, "Who is cooking?", options),
        ]
    )
    s = AttentionSummary.from_record(image.extras)
    assert s.left_share + s.seam_share + s.right_share == pytest.approx(1) and s.grid.shape == (24, 24)
    assert not any(k.startswith("attn_") for k in text.extras)


def test_sdpa_model_gets_an_error_naming_eager(tiny):
    family, adapter, model, processor = tiny
    image = Image.new("RGB", (112, 56))
    inputs, answer_start = _inputs(adapter, image, " left")
    layout = image_layout(model.config, processor.image_processor, (56, 112))
    model.set_attn_implementation("sdpa")
    try:
        with pytest.raises(AttentionUnavailable, match='attn_implementation="eager"'):
            record_attention(model, inputs, answer_start, layout)
    finally:
        model.set_attn_implementation("eager")


def test_api_backend_error():
    from vignette_bench.eval.adapters.spec import build_adapter

    assert "unavailable for API backends" in str(unavailable_for_api("openai"))
    for spec in ("openai:gpt-4o@http://127.0.0.1:9/v1?record_attention=true", "vllm:some/model?record_attention=true"):
        with pytest.raises(AttentionUnavailable, match="unavailable for API backends"):
            build_adapter(spec)


def test_missing_record_is_named():
    with pytest.raises(KeyError, match="q7 has no attention record"):
        AttentionSummary.from_record({"question_id": "q7", "attn_left_share": None})


# ----------------------------------------------------------------- aggregation


def test_chosen_vs_other_detects_a_gap_and_not_a_null():
    import pandas as pd

    rng = np.random.default_rng(0)
    rows = []
    for identity, gap in (("chef", 0.1), ("baker", 0.0)):
        for pair in range(30):
            chose_left = bool(pair % 2)
            noise = rng.normal(0, 0.05)
            for _question in range(3):  # three answers about one pair image: one unit, not three
                chosen, other = 0.45 + gap / 2 + noise, 0.45 - gap / 2 - noise
                left, right = (chosen, other) if chose_left else (other, chosen)
                rows.append(
                    {
                        "pair_id": f"{identity}{pair}",
                        "selected_identity": identity,
                        "chose_left": chose_left,
                        "attn_left_share": left,
                        "attn_right_share": right,
                    }
                )
    rows.append(
        {"pair_id": "x", "selected_identity": "", "chose_left": None, "attn_left_share": 0.5, "attn_right_share": 0.5}
    )
    res = chosen_vs_other(pd.DataFrame(rows)).set_index("identity")
    assert list(res.index) == ["baker", "chef", "*all*"]  # the refusal is not an identity; pooled row last
    assert res.loc["chef", "significant"] and res.loc["chef", "mean_gap"] == pytest.approx(0.1, abs=0.03)
    assert not res.loc["baker", "significant"]
    assert res.loc["chef", "n_answers"] == 90 and res.loc["chef", "n_pairs"] == 30
    assert res.loc["*all*", "n_pairs"] == 60


def test_chosen_vs_other_null_is_calibrated():
    """Attention unrelated to the choice: p-values of the sign test reject at most about alpha of the time."""
    import pandas as pd

    rng = np.random.default_rng(1)
    n_id, n = 300, 30
    left = rng.uniform(0.3, 0.6, n_id * n)
    d = pd.DataFrame(
        {
            "pair_id": np.arange(n_id * n).astype(str),
            "selected_identity": np.repeat([f"i{k}" for k in range(n_id)], n),
            "chose_left": rng.random(n_id * n) < 0.5,
            "attn_left_share": left,
            "attn_right_share": 0.9 - left,
        }
    )
    res = chosen_vs_other(d)
    res = res[res["identity"] != "*all*"]
    assert len(res) == n_id
    assert (res["p_value"] < 0.05).mean() <= 0.08
    assert res["significant"].sum() <= 3


def test_seam_width_matches_vignette_composition():
    import vignette
    from vignette_bench.eval.explain.attention import SEAM_PIXELS, default_seam_width

    assert SEAM_PIXELS == vignette.DEFAULT_SEAM
    assert default_seam_width(672) == 32 / 672 and default_seam_width(40) == 0.5
