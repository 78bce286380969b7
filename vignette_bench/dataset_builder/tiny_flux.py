"""A tiny, randomly initialised FluxPipeline: the real classes with toy sizes, for tests and the demo.

FLUX.1-dev cannot be downloaded here, so ``render`` is exercised on this stand-in: the same
``FluxPipeline`` (FluxTransformer2DModel, AutoencoderKL, CLIPTextModel, T5EncoderModel, their
tokenizers, FlowMatchEulerDiscreteScheduler) saved with ``save_pretrained`` and loaded by path,
exactly as a downloaded model would be. Its images are noise, not people.
Sizes follow diffusers' own Flux pipeline tests.
"""

from __future__ import annotations

import string
from pathlib import Path

import torch


def _clip_tokenizer():  # type: ignore[no-untyped-def]
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import CLIPTokenizer

    # Byte-level BPE with no merges: every character is a token, so any prompt tokenizes.
    chars = sorted(ByteLevel.alphabet())
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for c in chars:
        vocab.setdefault(c, len(vocab))
        vocab.setdefault(c + "</w>", len(vocab))
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=77)


def _t5_tokenizer():  # type: ignore[no-untyped-def]
    from transformers import T5TokenizerFast

    pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -1.0)]
    pieces += [(c, -2.0) for c in string.ascii_letters + string.digits + string.punctuation]
    pieces += [("▁" + c, -1.5) for c in string.ascii_letters]
    return T5TokenizerFast(vocab=pieces, extra_ids=0, model_max_length=512)


def build_tiny_flux(out: Path, seed: int = 0) -> Path:
    """Build the tiny pipeline with weights from ``seed`` and save it to ``out``; return ``out``."""
    from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, FluxPipeline, FluxTransformer2DModel
    from transformers import CLIPTextConfig, CLIPTextModel, T5Config, T5EncoderModel

    torch.manual_seed(seed)
    transformer = FluxTransformer2DModel(
        patch_size=1,
        in_channels=4,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=32,
        pooled_projection_dim=32,
        axes_dims_rope=[4, 4, 8],
    )
    clip = CLIPTextModel(
        CLIPTextConfig(
            bos_token_id=0,
            eos_token_id=1,
            pad_token_id=1,
            hidden_size=32,
            intermediate_size=37,
            num_attention_heads=4,
            num_hidden_layers=2,
            vocab_size=600,
            projection_dim=32,
            hidden_act="gelu",
        )
    )
    t5 = T5EncoderModel(
        T5Config(vocab_size=200, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4, decoder_start_token_id=0)
    )
    vae = AutoencoderKL(
        sample_size=32,
        in_channels=3,
        out_channels=3,
        block_out_channels=(4,),
        layers_per_block=1,
        latent_channels=1,
        norm_num_groups=1,
        use_quant_conv=False,
        use_post_quant_conv=False,
        shift_factor=0.0609,
        scaling_factor=1.5035,
    )
    pipe = FluxPipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=vae,
        text_encoder=clip.eval(),
        tokenizer=_clip_tokenizer(),
        text_encoder_2=t5.eval(),
        tokenizer_2=_t5_tokenizer(),
        transformer=transformer.eval(),
    )
    pipe.save_pretrained(out)
    return Path(out)
