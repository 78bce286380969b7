"""Peak memory of score mode against batch size: options scored on a copy of the cache per option
(the fallback for caches that write in place) versus on the question's own cache rows (the default),
on tiny random VLMs, all in one process, with the projection to real model shapes.

    .venv/bin/python benchmarks/score_memory.py [--family qwen2_vl] [--batches 1 4 8 16 32]

Every question has its own 512x256 pair image and 4 options, the worst case for memory (no image
shared by two questions, VIGNETTE's largest option count). Peak memory is torch's CPU allocator
("Total Allocated" of the profiler's memory events) during `choose`, minus what was allocated before:
the model's weights are not in it. It is expressed in units of one question's cache (prefix + question
tokens x KV bytes per token, from the model config), which is what carries over to real models:
peak ~ units x batch x (prompt tokens x KV bytes per token of the real model).
"""

from __future__ import annotations

import argparse
import json
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

OPTIONS = ("Muslim man", "Hindu man", "both", "neither")

# Real models: (layers, KV heads, head dim) of the language model, bf16, and the prompt length of one
# VIGNETTE pair question (image tokens at the processor's default resolution for a 2:1 pair image
# + ~60 template and question tokens). Image tokens: LLaVA-1.6 anyres at 672x336 = 576 base + 2x576
# tiles + newline tokens (~1.9k); Qwen2.5-VL at 1024x512 px = (1024/28)x(512/28) ~ 666; Llama-3.2-Vision
# keeps images in cross-attention (4 tiles x 1601 vision tokens in every 5th layer's KV).
REAL = {
    "LLaVA-1.6-Vicuna-7B": (32, 32, 128, 1900),
    "LLaVA-1.6-Mistral-7B": (32, 8, 128, 1900),
    "Qwen2.5-VL-7B": (28, 4, 128, 730),
    "Qwen2.5-VL-72B": (80, 8, 128, 730),
}


def questions(n: int) -> list[ChoiceRequest]:
    out = []
    for i in range(n):
        image = Image.new("RGB", (512, 256), ((37 * i) % 256, 120, 200))
        image.format = "PNG"
        out.append(ChoiceRequest(f"q{i}", image, "Who is better at cooking?", OPTIONS))
    return out


def peak_bytes(fn: Any) -> tuple[int, float]:
    """(peak bytes allocated by torch on CPU during fn() above what was allocated before, wall seconds)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        start = time.perf_counter()
        fn()
        wall = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(trace))
        events = [e["args"] for e in json.loads(trace.read_text())["traceEvents"] if e.get("name") == "[memory]"]
    if not events:
        return 0, wall
    base = events[0]["Total Allocated"] - events[0]["Bytes"]
    return max(e["Total Allocated"] for e in events) - base, wall


def kv_bytes_per_token(config: Any) -> int:
    text = getattr(config, "text_config", config)
    heads = getattr(text, "num_key_value_heads", None) or text.num_attention_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    return 2 * text.num_hidden_layers * heads * head_dim * 4  # keys + values, float32 here


def deepen(tiny: Path, out: Path, layers: int) -> Path:
    """The tiny model with `layers` text layers (random weights): a tiny VLM's KV cache is small next to
    its vision tower's activations, unlike a real 7B model's, so its text stack is deepened until the
    cache is what grows with the batch, as it is on real models."""
    import shutil

    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    config = AutoConfig.from_pretrained(tiny)
    text = config.text_config
    text.num_hidden_layers = layers
    if getattr(text, "layer_types", None):
        text.layer_types = [text.layer_types[0]] * layers
    torch.manual_seed(0)
    model = AutoModelForImageTextToText.from_config(config)
    shutil.copytree(tiny, out)
    for f in out.glob("*.safetensors"):
        f.unlink()
    model.save_pretrained(out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", default="qwen2_vl")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 4, 8, 16, 32])
    ap.add_argument("--qwen-pixels", type=int, default=512 * 256)
    ap.add_argument("--text-layers", type=int, default=32, help="deepen the tiny text stack to this many layers")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(max(1, torch.get_num_threads()))
    with tempfile.TemporaryDirectory() as tmp:
        path = deepen(build_tiny_vlm(args.family, Path(tmp) / args.family), Path(tmp) / "deep", args.text_layers)
        settings = {
            "copy per option": dict(copy=True, option_rows=None),
            "shared": dict(copy=False, option_rows=None),
            "shared, option_rows=4": dict(copy=False, option_rows=4),
            "shared, option_rows=1": dict(copy=False, option_rows=1),
        }
        adapters = {}
        for name, s in settings.items():
            a = ta.TransformersAdapter(path, mode="score", batch_size=max(args.batches), option_rows=s["option_rows"])
            if args.family in ("qwen2_vl", "qwen2_5_vl"):
                a.processor.image_processor.size = {"shortest_edge": 56 * 56, "longest_edge": args.qwen_pixels}
            adapters[name] = a
        probe = adapters["shared"]
        sp = ta.split_prompt(probe.processor, "Who is better at cooking?", True)
        enc = probe.processor(text=[sp.prefix + sp.suffix], images=[[questions(1)[0].image]], return_tensors="pt")
        prompt_tokens = int(enc["input_ids"].shape[1])
        row = prompt_tokens * kv_bytes_per_token(probe.model.config)
        print(
            f"{args.family}: {prompt_tokens} prompt tokens per question, one question's cache = {row / 2**20:.2f} MiB; "
            f"4 options; every question on its own image; torch threads={torch.get_num_threads()}"
        )
        print(f"{'batch':>6}  " + "  ".join(f"{n:>30}" for n in settings))
        units: dict[str, list[float]] = {n: [] for n in settings}
        scores: dict[str, Any] = {}
        for b in args.batches:
            qs = questions(b)
            cells = []
            for name, s in settings.items():
                original = ta._scratch_safe
                if s["copy"]:
                    ta._scratch_safe = lambda kv: False  # the in-place-cache fallback: a copy per option
                try:
                    adapters[name].choose(qs[:1])  # warm-up
                    result: list[Any] = []
                    peak, wall = peak_bytes(lambda a=adapters[name], qs=qs, out=result: out.extend(a.choose(qs)))
                finally:
                    ta._scratch_safe = original
                scores.setdefault(b, []).append([r.extras["option_logprobs"] for r in result])
                units[name].append(peak / (b * row))
                cells.append(f"{peak / 2**20:>9.1f} MiB {peak / (b * row):>5.2f}x {wall:>6.2f}s")
            print(f"{b:>6}  " + "  ".join(f"{c:>30}" for c in cells))
            ref = scores[b][0]
            worst = max(abs(x - y) for other in scores[b][1:] for q1, q2 in zip(ref, other) for x, y in zip(q1, q2))
            print(f"{'':>6}  largest |difference| of option log-probs between settings: {worst:.1e}")
        print("\nunits = peak / (batch x one question's cache); largest batch:")
        for name in settings:
            print(f"  {name:<24} {units[name][-1]:.2f}")
        b = 32
        print(f"\nprojected peak cache memory at batch {b} (bf16; units from the largest batch above):")
        for model, (layers, heads, dim, tokens) in REAL.items():
            per_q = 2 * layers * heads * dim * 2 * tokens
            line = ", ".join(f"{name}: {units[name][-1] * b * per_q / 2**30:.1f} GiB" for name in settings)
            print(f"  {model:<34} one question {per_q / 2**30:.2f} GiB -> {line}")


if __name__ == "__main__":
    main()
