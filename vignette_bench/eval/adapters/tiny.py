"""Tiny randomly initialised VLMs of the real transformers classes, for tests and the demo.

Nothing can be downloaded here, so each family is built from a small config, a byte-level BPE
tokenizer trained locally with `tokenizers` (plus the special image tokens its processor needs),
a PIL-backend image processor with tiny image sizes and a chat template in the family's style.
The folder written by `build_tiny_vlm` loads by path with `AutoModelForImageTextToText` and
`AutoProcessor`, like a Hub checkpoint. The answers of these models are noise: they exercise
the code paths, not the benchmark.

    python -m vignette_bench.eval.adapters.tiny llava /tmp/tiny-llava     # build one and print its path
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Bump when a builder changes, so cached folders are rebuilt instead of silently reused.
BUILDER_VERSION = 2
_STAMP = "tiny_vlm.json"
_HIDDEN = 32  # text and vision width of every tiny model
_VOCAB = 512

# A few sentences so BPE learns merges for the words the benchmark's prompts use.
_CORPUS = (
    "Who is cooking? Who is better at reading? Who enjoys playing football? Who hates cleaning?",
    "What is the person on the left doing? What is the person on the right doing?",
    "the person on the left, the person on the right, both, neither, I cannot tell",
    "Answer with one of the options. Options: A, B, C, D. The answer is",
    "A young man and an old man are cooking. A woman is reading a book with her face visible.",
    "Who should I hire as a cook? Who among the two in this image is friendly, trustworthy, lazy?",
    "Muslim Hindu Christian Jewish Buddhist atheist rich poor blind deaf tall short Nigerian Chinese",
    '{"answer": "yes", "rationale": "because the photo shows people"}',
)

TINY_CACHE_ENV = "VIGNETTE_TINY_DIR"  # where tiny: models are built (default ~/.cache/vignette/tiny)


def tiny_dir() -> Path:
    return Path(os.environ.get(TINY_CACHE_ENV) or Path.home() / ".cache" / "vignette" / "tiny")


@dataclass(frozen=True)
class TinyFamily:
    """One family: the special tokens its processor looks up and the function that builds it."""

    name: str
    special_tokens: tuple[str, ...]
    build: Callable[[Any, Path], None]  # (tokenizer, out_dir) -> writes model + processor
    named_tokens: tuple[tuple[str, str], ...] = ()  # tokenizer attributes the processor reads, e.g. start_image_token


def _chat_template(turn_open: str, turn_close: str, image: str, gen_prompt: str, bos: str = "") -> str:
    """A Jinja chat template: string or typed-list contents, the image placeholder where the image part is."""
    return (
        bos
        + "{% for message in messages %}"
        + turn_open
        + "{% if message['content'] is string %}{{ message['content'] }}"
        "{% else %}{% for part in message['content'] %}"
        "{% if part['type'] == 'image' %}" + image + "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
        "{% endfor %}{% endif %}" + turn_close + "{% endfor %}"
        "{% if add_generation_prompt %}" + gen_prompt + "{% endif %}"
    )


def _train_tokenizer(special: tuple[str, ...], named: dict[str, str] | None = None) -> Any:
    """Byte-level BPE trained on a fixed corpus; special tokens first, so their ids are small and stable."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    base = ("<|pad|>", "<|bos|>", "<|eos|>")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=_VOCAB,
        special_tokens=list(base + tuple(t for t in special if t not in base)),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(_CORPUS) * 4, trainer)  # deterministic: no seed needed
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<|pad|>",
        bos_token="<|bos|>",
        eos_token="<|eos|>",
        extra_special_tokens=named or {},
    )


def _llama_text(tok: Any, **extra: Any) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tok),
        hidden_size=_HIDDEN,
        intermediate_size=2 * _HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        **extra,
    )


def _clip_vision(image_size: int) -> Any:
    from transformers import CLIPVisionConfig

    return CLIPVisionConfig(
        hidden_size=_HIDDEN,
        intermediate_size=2 * _HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=image_size,
        patch_size=14,
        projection_dim=_HIDDEN,
    )


_USER_TEMPLATE = dict(turn_open="{{ message['role'].upper() }}: ", turn_close=" ", gen_prompt="ASSISTANT:")


def _build_llava(tok: Any, out: Path) -> None:
    from transformers import LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor
    from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil

    image_processor = LlavaImageProcessorPil(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28})
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tok,
        patch_size=14,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=_chat_template(image="<image>\n", **_USER_TEMPLATE),
    )
    config = LlavaConfig(
        vision_config=_clip_vision(28),
        text_config=_llama_text(tok),
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    _save(LlavaForConditionalGeneration(config), processor, out)


def _build_llava_next(tok: Any, out: Path) -> None:
    from transformers import LlavaNextConfig, LlavaNextForConditionalGeneration, LlavaNextProcessor
    from transformers.models.llava_next.image_processing_pil_llava_next import LlavaNextImageProcessorPil

    pinpoints = [[28, 28], [28, 56], [56, 28]]  # (height, width): any pair image picks the 1x2 grid
    image_processor = LlavaNextImageProcessorPil(
        size={"shortest_edge": 28},
        crop_size={"height": 28, "width": 28},
        image_grid_pinpoints=pinpoints,
    )
    processor = LlavaNextProcessor(
        image_processor=image_processor,
        tokenizer=tok,
        patch_size=14,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=_chat_template(image="<image>\n", **_USER_TEMPLATE),
    )
    config = LlavaNextConfig(
        vision_config=_clip_vision(28),
        text_config=_llama_text(tok),
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
        image_grid_pinpoints=pinpoints,
    )
    _save(LlavaNextForConditionalGeneration(config), processor, out)


def _build_mllama(tok: Any, out: Path) -> None:
    from transformers import MllamaConfig, MllamaForConditionalGeneration, MllamaProcessor
    from transformers.models.mllama.configuration_mllama import MllamaTextConfig, MllamaVisionConfig
    from transformers.models.mllama.image_processing_pil_mllama import MllamaImageProcessorPil

    image_processor = MllamaImageProcessorPil(size={"height": 28, "width": 28}, max_image_tiles=2)
    header = "<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n"
    template = _chat_template(
        turn_open=header,
        turn_close="<|eot_id|>",
        image="<|image|>",
        gen_prompt="<|start_header_id|>assistant<|end_header_id|>\n\n",
        bos="<|begin_of_text|>",
    )
    processor = MllamaProcessor(image_processor=image_processor, tokenizer=tok, chat_template=template)
    layers = [0, 1]
    vision = MllamaVisionConfig(
        hidden_size=_HIDDEN,
        intermediate_size=2 * _HIDDEN,
        num_hidden_layers=2,
        num_global_layers=1,
        attention_heads=2,
        image_size=28,
        patch_size=14,
        max_num_tiles=2,
        supported_aspect_ratios=[[1, 1], [1, 2], [2, 1]],
        intermediate_layers_indices=layers,
        vision_output_dim=_HIDDEN * (len(layers) + 1),
    )
    text = MllamaTextConfig(
        vocab_size=len(tok),
        hidden_size=_HIDDEN,
        intermediate_size=2 * _HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        cross_attention_layers=[1],
        max_position_embeddings=1024,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    config = MllamaConfig(
        vision_config=vision, text_config=text, image_token_index=tok.convert_tokens_to_ids("<|image|>")
    )
    _save(MllamaForConditionalGeneration(config), processor, out)


# The video processor each family's processor must hold where torchvision is installed.
_VIDEO_PROCESSORS = {
    "qwen2_vl": "Qwen2VLVideoProcessor",
    "qwen2_5_vl": "Qwen2VLVideoProcessor",
    "qwen3_vl": "Qwen3VLVideoProcessor",
    "internvl": "InternVLVideoProcessor",
}


def _processor_with_video_slot(model_type: str, cls: type, **kwargs: Any) -> Any:
    """`cls(**kwargs)` for a processor with a video slot. Where torchvision is installed (most GPU machines)
    transformers requires a video processor, so a default one is added (videos are never used here); where it
    is missing no video processor can be built, so the image-only class drops the slot."""
    import transformers

    from .transformers_adapter import image_only_processor

    image_only = image_only_processor(model_type)
    if image_only is not None:
        return image_only(**kwargs)
    video = getattr(transformers, _VIDEO_PROCESSORS[model_type])()
    return cls(video_processor=video, **kwargs)


_QWEN_TEMPLATE = dict(
    turn_open="<|im_start|>{{ message['role'] }}\n",
    turn_close="<|im_end|>\n",
    image="<|vision_start|><|image_pad|><|vision_end|>",
    gen_prompt="<|im_start|>assistant\n",
)
_QWEN_IMAGE_SIZE = {"shortest_edge": 56 * 56, "longest_edge": 56 * 112}  # pixels: 4x8 patches, 8 image tokens


def _qwen_ids(tok: Any) -> dict[str, int]:
    ids = {
        k: tok.convert_tokens_to_ids(v)
        for k, v in (
            ("image_token_id", "<|image_pad|>"),
            ("video_token_id", "<|video_pad|>"),
            ("vision_start_token_id", "<|vision_start|>"),
            ("vision_end_token_id", "<|vision_end|>"),
        )
    }
    return ids


def _qwen_text(tok: Any) -> dict[str, Any]:
    # head_dim 16 -> 8 rotary frequencies, split over (temporal, height, width).
    return dict(
        vocab_size=len(tok),
        hidden_size=_HIDDEN,
        intermediate_size=2 * _HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )


def _build_qwen2_vl(tok: Any, out: Path) -> None:
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    processor = _processor_with_video_slot(
        "qwen2_vl",
        Qwen2VLProcessor,
        image_processor=Qwen2VLImageProcessorPil(size=_QWEN_IMAGE_SIZE),
        tokenizer=tok,
        chat_template=_chat_template(**_QWEN_TEMPLATE),
    )
    vision = dict(
        depth=2,
        embed_dim=_HIDDEN,
        hidden_size=_HIDDEN,
        num_heads=2,
        mlp_ratio=2,
        patch_size=14,
        spatial_merge_size=2,
        temporal_patch_size=2,
    )
    config = Qwen2VLConfig(text_config=_qwen_text(tok), vision_config=vision, **_qwen_ids(tok))
    _save(Qwen2VLForConditionalGeneration(config), processor, out)


def _build_qwen2_5_vl(tok: Any, out: Path) -> None:
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    processor = _processor_with_video_slot(
        "qwen2_5_vl",
        Qwen2_5_VLProcessor,
        image_processor=Qwen2VLImageProcessorPil(size=_QWEN_IMAGE_SIZE),
        tokenizer=tok,
        chat_template=_chat_template(**_QWEN_TEMPLATE),
    )
    vision = dict(
        depth=2,
        hidden_size=_HIDDEN,
        intermediate_size=2 * _HIDDEN,
        num_heads=2,
        out_hidden_size=_HIDDEN,
        patch_size=14,
        spatial_merge_size=2,
        temporal_patch_size=2,
        window_size=56,
        fullatt_block_indexes=[1],
    )
    config = Qwen2_5_VLConfig(text_config=_qwen_text(tok), vision_config=vision, **_qwen_ids(tok))
    _save(Qwen2_5_VLForConditionalGeneration(config), processor, out)


def _build_qwen3_vl(tok: Any, out: Path, moe: bool = False) -> None:
    from transformers import Qwen3VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    # Qwen3-VL: 16 px patches, merged 2x2; 64x128 px at most -> 4x8 patches, 8 image tokens.
    image_processor = Qwen2VLImageProcessorPil(
        size={"shortest_edge": 64 * 64, "longest_edge": 64 * 128},
        patch_size=16,
        merge_size=2,
    )
    processor = _processor_with_video_slot(
        "qwen3_vl",
        Qwen3VLProcessor,
        image_processor=image_processor,
        tokenizer=tok,
        chat_template=_chat_template(**_QWEN_TEMPLATE),
    )
    vision = dict(
        depth=2,
        hidden_size=_HIDDEN,
        intermediate_size=2 * _HIDDEN,
        num_heads=2,
        patch_size=16,
        spatial_merge_size=2,
        temporal_patch_size=2,
        out_hidden_size=_HIDDEN,
        num_position_embeddings=64,
        deepstack_visual_indexes=[0],
    )
    text = dict(_qwen_text(tok), head_dim=_HIDDEN // 2)
    text["rope_parameters"] = dict(text["rope_parameters"], mrope_interleaved=True)
    if moe:
        from transformers import Qwen3VLMoeConfig, Qwen3VLMoeForConditionalGeneration

        text.update(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=_HIDDEN, decoder_sparse_step=1)
        config = Qwen3VLMoeConfig(text_config=text, vision_config=vision, **_qwen_ids(tok))
        _save(Qwen3VLMoeForConditionalGeneration(config), processor, out)
    else:
        from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

        config = Qwen3VLConfig(text_config=text, vision_config=vision, **_qwen_ids(tok))
        _save(Qwen3VLForConditionalGeneration(config), processor, out)


def _build_qwen3_vl_moe(tok: Any, out: Path) -> None:
    _build_qwen3_vl(tok, out, moe=True)


def _build_internvl(tok: Any, out: Path) -> None:
    from transformers import InternVLConfig, InternVLForConditionalGeneration, InternVLProcessor, Qwen2Config
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import GotOcr2ImageProcessorPil
    from transformers.models.internvl.configuration_internvl import InternVLVisionConfig

    tile, patch, downsample = 56, 14, 0.5
    image_processor = GotOcr2ImageProcessorPil(
        size={"height": tile, "width": tile}, crop_to_patches=True, max_patches=2
    )
    processor = _processor_with_video_slot(
        "internvl",
        InternVLProcessor,
        image_processor=image_processor,
        tokenizer=tok,
        image_seq_length=int((tile // patch) ** 2 * downsample**2),
        chat_template=_chat_template(**dict(_QWEN_TEMPLATE, image="<IMG_CONTEXT>\n")),
    )
    vision = InternVLVisionConfig(
        hidden_size=_HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=2 * _HIDDEN,
        image_size=[tile, tile],
        patch_size=[patch, patch],
    )
    text = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=_HIDDEN,
        intermediate_size=2 * _HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    config = InternVLConfig(
        vision_config=vision,
        text_config=text,
        downsample_ratio=downsample,
        image_token_id=tok.convert_tokens_to_ids("<IMG_CONTEXT>"),
        image_seq_length=int((tile // patch) ** 2 * downsample**2),
    )
    _save(InternVLForConditionalGeneration(config), processor, out)


def _build_idefics3(tok: Any, out: Path) -> None:
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor
    from transformers.models.idefics3.configuration_idefics3 import Idefics3VisionConfig
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    tile, patch, scale = 56, 14, 2
    image_processor = Idefics3ImageProcessorPil(size={"longest_edge": 2 * tile}, max_image_size={"longest_edge": tile})
    template = _chat_template(
        turn_open="<|im_start|>{{ message['role'] | capitalize }}:",
        turn_close="<end_of_utterance>\n",
        image="<image>",
        gen_prompt="<|im_start|>Assistant:",
    )
    processor = Idefics3Processor(
        image_processor=image_processor,
        tokenizer=tok,
        chat_template=template,
        image_seq_len=(tile // patch) ** 2 // scale**2,
    )
    vision = Idefics3VisionConfig(
        hidden_size=_HIDDEN,
        intermediate_size=2 * _HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=tile,
        patch_size=patch,
    )
    config = Idefics3Config(
        vision_config=vision,
        text_config=_llama_text(tok),
        scale_factor=scale,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
    )
    _save(Idefics3ForConditionalGeneration(config), processor, out)


def _save(model: Any, processor: Any, out: Path) -> None:
    model.eval().save_pretrained(out)
    processor.save_pretrained(out)


_IDEFICS_TOKENS = (
    "<fake_token_around_image>",
    "<image>",
    "<end_of_utterance>",
    "<global-img>",
    "<|im_start|>",
) + tuple(f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7))
_QWEN_TOKENS = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
FAMILIES: dict[str, TinyFamily] = {
    f.name: f
    for f in (
        TinyFamily("llava", ("<image>",), _build_llava),
        TinyFamily("llava_next", ("<image>",), _build_llava_next),
        TinyFamily(
            "mllama",
            (
                "<|image|>",
                "<|python_tag|>",
                "<|begin_of_text|>",
                "<|start_header_id|>",
                "<|end_header_id|>",
                "<|eot_id|>",
            ),
            _build_mllama,
        ),
        TinyFamily("qwen2_vl", _QWEN_TOKENS, _build_qwen2_vl),
        TinyFamily("qwen2_5_vl", _QWEN_TOKENS, _build_qwen2_5_vl),
        TinyFamily("qwen3_vl", _QWEN_TOKENS, _build_qwen3_vl),
        TinyFamily("qwen3_vl_moe", _QWEN_TOKENS, _build_qwen3_vl_moe),
        TinyFamily(
            "internvl",
            ("<|im_start|>", "<|im_end|>", "<img>", "</img>", "<IMG_CONTEXT>", "<video>"),
            _build_internvl,
            (
                ("start_image_token", "<img>"),
                ("end_image_token", "</img>"),
                ("context_image_token", "<IMG_CONTEXT>"),
                ("video_token", "<video>"),
            ),
        ),
        TinyFamily("idefics3", _IDEFICS_TOKENS, _build_idefics3),
    )
}


def build_tiny_vlm(family: str, out_dir: Path | str, seed: int = 0) -> Path:
    """Write a tiny random `family` VLM to `out_dir` and return the folder (reused if already built).

    The stamp file records family, seed and builder/library versions; a folder with a matching
    stamp is returned at once, anything else in `out_dir` is replaced.
    """
    import torch
    import transformers

    if family not in FAMILIES:
        raise ValueError(f"unknown tiny VLM family {family!r}; choose one of {', '.join(FAMILIES)}")
    out = Path(out_dir)
    stamp = {
        "family": family,
        "seed": seed,
        "builder_version": BUILDER_VERSION,
        "transformers": transformers.__version__,
        "placeholder": "random weights, untrained",
    }
    stamp_path = out / _STAMP
    if stamp_path.is_file() and json.loads(stamp_path.read_text()) == stamp:
        return out
    spec = FAMILIES[family]
    out.parent.mkdir(parents=True, exist_ok=True)
    # Build beside the target and rename, so a crash never leaves a half-written model behind.
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        tok = _train_tokenizer(spec.special_tokens, dict(spec.named_tokens))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            spec.build(tok, tmp)
        (tmp / _STAMP).write_text(json.dumps(stamp, indent=1))
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(
            f"usage: python -m vignette_bench.eval.adapters.tiny FAMILY OUT_DIR [SEED]   (FAMILY: {', '.join(FAMILIES)})"
        )
    print(build_tiny_vlm(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) == 4 else 0))


def from_spec(spec: str, parsed: Any, defaults: dict[str, Any]) -> Any:
    """The backend table's factory for `tiny:FAMILY`: builds the model once under tiny_dir(), then loads
    it as an hf: spec would (vignette_bench/eval/adapters/backends.py)."""
    from .spec import construct, invalid
    from .transformers_adapter import TransformersAdapter

    if parsed.target not in FAMILIES:
        raise invalid(spec, f"unknown tiny family {parsed.target!r} (one of {', '.join(FAMILIES)})")
    path = build_tiny_vlm(parsed.target, tiny_dir() / parsed.target)
    return construct(spec, TransformersAdapter, (str(path),), dict(parsed.options), defaults)
