"""Score mode on a GPU at a real model's shapes: peak GPU memory and time against batch size, for options
scored on a copy of the cache per option, on the question's own cache rows (the default) and with
`option_rows=4`, plus how far score mode's option log-probabilities are from a whole-string forward.

    python benchmarks/gpu_score_memory.py [--shape vicuna|mistral] [--batches 1 8 16 32]

No weights can be downloaded where this runs, so the model is LLaVA-1.6 (LlavaNextForConditionalGeneration)
at the published shapes of llava-v1.6-vicuna-7b (32 layers, 32 KV heads, CLIP ViT-L/14-336, anyres
grid pinpoints) or -mistral-7b (8 KV heads) with RANDOM weights, in bf16, saved to disk and loaded
through the adapter like any checkpoint (`device=cuda`, `dtype=bf16`). Memory and time depend on
shapes, not on weight values; the answers are noise. The tokenizer is the tiny family's (a 512-token BPE),
so the question text is a few dozen tokens as in VIGNETTE; the image tokens come from the real
LLaVA-1.6 processor settings on a 1024x512 pair image (one question per image: the worst case).

Peak is torch.cuda.max_memory_allocated during `choose` minus what was allocated before (the
weights), also in units of one question's cache (prompt tokens x KV bytes per token), the unit
benchmarks/score_memory.py measured on CPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from PIL import Image  # noqa: E402

from vignette_bench.eval.adapters import transformers_adapter as ta  # noqa: E402
from vignette_bench.eval.adapters.base import ChoiceRequest  # noqa: E402
from vignette_bench.eval.adapters.tiny import build_tiny_vlm  # noqa: E402
from vignette_bench.eval.leaderboard.verify import PROB_TOL  # noqa: E402

OPTIONS = ("Muslim man", "Hindu man", "both", "neither")
# (KV heads, intermediate size, vocab) of the two LLaVA-1.6 7B language models; both 32 layers x 4096 wide.
SHAPES = {"vicuna": (32, 11008, 32064), "mistral": (8, 14336, 32064)}
PINPOINTS = [[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]]  # llava-v1.6's anyres grids


def build_real_shape(tiny: Path, out: Path, shape: str, device: str, smoke: bool = False, save: bool = True) -> Any:
    """The tiny LLaVA-NeXT's tokenizer and template with LLaVA-1.6-7B's image settings and shapes
    (`smoke`: the same settings with 2-layer, 256-wide stacks, to check this script on a CPU). Saved to `out`
    and its path returned, or with `save=False` (model, processor) returned as they are."""
    import torch
    from transformers import (
        AutoProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaNextConfig,
        LlavaNextForConditionalGeneration,
    )

    processor = AutoProcessor.from_pretrained(tiny)
    ip = processor.image_processor
    ip.size, ip.crop_size, ip.image_grid_pinpoints = {"shortest_edge": 336}, {"height": 336, "width": 336}, PINPOINTS
    kv_heads, intermediate, vocab = SHAPES[shape]
    layers, width, vision_layers = (2, 256, 2) if smoke else (32, 4096, 24)
    tok = processor.tokenizer
    config = LlavaNextConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=1024,
            intermediate_size=4096,
            num_hidden_layers=vision_layers,
            num_attention_heads=16,
            image_size=336,
            patch_size=14,
            projection_dim=768,
        ),
        text_config=LlamaConfig(
            vocab_size=vocab,
            hidden_size=width,
            intermediate_size=intermediate * width // 4096,
            num_hidden_layers=layers,
            num_attention_heads=32,
            num_key_value_heads=kv_heads,
            max_position_embeddings=4096,
            pad_token_id=tok.pad_token_id,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
        ),
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
        image_grid_pinpoints=PINPOINTS,
    )
    torch.manual_seed(0)
    t0 = time.perf_counter()
    dtype, default_device = torch.get_default_dtype(), torch.get_default_device()
    torch.set_default_dtype(torch.bfloat16)
    torch.set_default_device(device)  # random init on the GPU: seconds instead of minutes on the CPU
    try:
        model = LlavaNextForConditionalGeneration(config)
    finally:
        torch.set_default_dtype(dtype)
        torch.set_default_device(default_device)
    print(f"random init: {time.perf_counter() - t0:.0f} s")
    if not save:
        return model, processor
    t0 = time.perf_counter()
    model.save_pretrained(out)
    processor.save_pretrained(out)
    print(f"saved: {time.perf_counter() - t0:.0f} s")
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return out


def questions(n: int, offset: int = 0) -> list[ChoiceRequest]:
    out = []
    for i in range(offset, offset + n):
        image = Image.new("RGB", (1024, 512), ((37 * i) % 256, 120, 200))
        image.format = "PNG"
        out.append(ChoiceRequest(f"q{i}", image, "Who is better at cooking?", OPTIONS))
    return out


def measure(a: ta.TransformersAdapter, qs: list[ChoiceRequest]) -> tuple[int, float, list[Any]]:
    """(peak bytes above the start, seconds, results) of one `choose` on the GPU (0 bytes on a CPU)."""
    import torch

    if not torch.cuda.is_available():
        start = time.perf_counter()
        results = a.choose(qs)
        return 0, time.perf_counter() - start, results
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start_bytes = torch.cuda.memory_allocated()
    start = time.perf_counter()
    results = a.choose(qs)
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - start_bytes, time.perf_counter() - start, results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), default="vicuna")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8, 16, 32])
    ap.add_argument(
        "--workdir", default=None, help="where the random-weight checkpoint is written (default: a temp dir)"
    )
    ap.add_argument("--generate-batch", type=int, default=16, help="batch for the score-vs-generate timing")
    ap.add_argument("--in-memory", action="store_true", help="skip the save and load through disk (faster)")
    ap.add_argument(
        "--smoke", action="store_true", help="2-layer stacks on the CPU: checks the script, measures nothing"
    )
    args = ap.parse_args()
    import torch

    if not args.smoke and not torch.cuda.is_available():
        sys.exit(
            "error: this benchmark needs a CUDA GPU (benchmarks/score_memory.py is the CPU one; --smoke checks the script)"
        )
    device = "cpu" if args.smoke else "cuda"
    gpu = torch.cuda.get_device_name(0) if device == "cuda" else "CPU (smoke run: no numbers)"
    print(f"{gpu}, torch {torch.__version__}, transformers {__import__('transformers').__version__}")
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        t0 = time.perf_counter()
        built = build_real_shape(
            build_tiny_vlm("llava_next", Path(tmp) / "tiny"),
            Path(tmp) / "real",
            args.shape,
            device,
            args.smoke,
            save=not args.in_memory,
        )
        if args.in_memory:  # the adapter takes the model as built instead of loading it from disk
            ta.load_model_and_processor = lambda *_, **__: (built[0].eval(), built[1])
            path = Path(tmp) / "in-memory"
        else:
            path = built
            size = sum(f.stat().st_size for f in path.glob("*.safetensors"))
            print(f"random-weight LLaVA-1.6-{args.shape}-7B shapes: {size / 2**30:.1f} GiB on disk")
        t0 = time.perf_counter()
        a = ta.TransformersAdapter(path, mode="score", device=device, dtype="bf16", batch_size=max(args.batches))
        weights = torch.cuda.memory_allocated() if device == "cuda" else 0
        print(
            f"loaded by the adapter (device={device}, dtype=bf16) in {time.perf_counter() - t0:.0f} s: {weights / 2**30:.2f} GiB on {a.device}"
        )
        text = a.model.config.text_config
        sp = ta.split_prompt(a.processor, questions(1)[0].prompt, True)
        enc = a.processor(text=[sp.prefix + sp.suffix], images=[[questions(1)[0].image]], return_tensors="pt")
        tokens = int(enc["input_ids"].shape[1])
        head_dim = text.hidden_size // text.num_attention_heads
        row = tokens * 2 * text.num_hidden_layers * text.num_key_value_heads * head_dim * 2  # keys+values, bf16
        print(
            f"{tokens} prompt tokens per question (1024x512 pair image); one question's KV cache = {row / 2**30:.3f} GiB"
        )

        settings: dict[str, dict[str, Any]] = {
            "copy per option": dict(copy=True, option_rows=None),
            "shared": dict(copy=False, option_rows=None),
            "shared, option_rows=4": dict(copy=False, option_rows=4),
        }
        measure(a, questions(1, offset=999))  # warm-up: kernels, cuBLAS workspaces
        print(f"\n{'batch':>5}  " + "  ".join(f"{n:>36}" for n in settings))
        for b in args.batches:
            a.batch_size = b
            qs = questions(b)
            cells, scores, probs = [], [], []
            for s in settings.values():
                original = ta._scratch_safe
                if s["copy"]:
                    ta._scratch_safe = lambda kv: False  # the in-place-cache fallback: a copy per option
                a.option_rows = s["option_rows"]
                try:
                    peak, wall, results = measure(a, qs)
                    scores.append([r.extras["option_logprobs"] for r in results])
                    probs.append([(r.choice, r.probabilities) for r in results])
                    cells.append(f"{peak / 2**30:6.1f} GiB {peak / (b * row):5.2f}x {wall:6.2f}s {b / wall:6.1f} q/s")
                except torch.OutOfMemoryError:
                    cells.append("out of GPU memory")
                finally:
                    ta._scratch_safe = original
                    a.option_rows = None
                    if device == "cuda":
                        torch.cuda.empty_cache()
            print(f"{b:>5}  " + "  ".join(f"{c:>36}" for c in cells))
            if len(scores) > 1:
                worst = max(
                    abs(x - y) for other in scores[1:] for q1, q2 in zip(scores[0], other) for x, y in zip(q1, q2)
                )
                print(f"{'':>5}  largest |difference| of option log-probs between settings (bf16): {worst:.2e}")
                # What `vignette leaderboard verify` compares: choice equal and every probability within PROB_TOL.
                dp = [
                    (c1 == c2, max(abs(x - y) for x, y in zip(p1, p2)))
                    for other in probs[1:]
                    for (c1, p1), (c2, p2) in zip(probs[0], other)
                ]
                flips = sum(not same and d <= PROB_TOL for same, d in dp)
                beyond = sum(d > PROB_TOL for _, d in dp)
                ds = sorted(d for _, d in dp)
                print(
                    f"{'':>5}  probabilities: |difference| median {ds[len(ds) // 2]:.1e}, 95th pct {ds[int(0.95 * (len(ds) - 1))]:.1e}, "
                    f"largest {ds[-1]:.1e}; of {len(dp)} question comparisons, {beyond} beyond {PROB_TOL} and "
                    f"{flips} choice flips within it (near-ties)"
                )

        a.batch_size = 4
        qs = questions(4, offset=500)
        got = [r.extras["option_logprobs"] for r in a.choose(qs)]
        diffs = [abs(g - w) for q, gs in zip(qs, got) for g, w in zip(gs, a.whole_string_logprobs(q)) if w is not None]
        print(
            f"\nscore mode vs a whole-string forward without cache, {len(diffs)} options in bf16: "
            f"largest |difference| {max(diffs):.2e}, mean {sum(diffs) / len(diffs):.2e} (nats)"
        )
        # Generate mode (outlines, the options as a choice constraint) on the same questions, same batch.
        a.batch_size = max(1, args.generate_batch)
        qs = questions(args.generate_batch, offset=700)
        _, score_s, _ = measure(a, qs)
        a.mode = "generate"
        try:
            if args.generate_batch < 1:
                raise RuntimeError("--generate-batch 0")
            peak, gen_s, results = measure(a, qs)
            valid = sum(r.valid for r in results)
            print(
                f"batch {args.generate_batch}: score {score_s:.2f} s, generate {gen_s:.2f} s "
                f"(score x{gen_s / score_s:.1f} faster; generate peak {peak / 2**30:.1f} GiB above weights; {valid}/{len(qs)} valid)"
            )
        except Exception as e:  # noqa: BLE001 - outlines missing or failing must not lose the numbers above
            print(f"generate mode not measured: {type(e).__name__}: {e}")
        finally:
            a.mode = "score"


if __name__ == "__main__":
    main()
