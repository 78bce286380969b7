"""Cost of recording attention: questions/s with and without it, and bytes stored per question.

    .venv/bin/python benchmarks/attention_bench.py [--questions 24] [--repeats 3]

1. Throughput: the transformers adapter (score mode) on tiny random LLaVA and LLaVA-NeXT answers
   the same questions about a 672 x 336 pair image with sdpa (a normal run), eager without
   recording and eager with record_attention, alternating runs in one process; on/off is the cost
   of the extra teacher-forced pass alone.
2. Storage: the attn_* record of one answer, as JSON (the run log) and as extra parquet bytes per
   row (responses.parquet, zstd/snappy as pyarrow writes it), for the tiny models and for the
   shapes of a real LLaVA-1.6-7B (32 layers x 32 heads, 336 px tiles of 14 px patches), built
   from a random attention pattern on that model's real layout (no weights needed).
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vignette_bench.eval.adapters.base import ChoiceRequest  # noqa: E402
from vignette_bench.eval.explain.attention import AttentionSummary, attention_schema, image_layout, summarize  # noqa: E402

OPTIONS = ("the person on the left", "the person on the right")


def pair_image() -> Image.Image:
    img = Image.new("RGB", (672, 336), (230, 220, 200))
    d = ImageDraw.Draw(img)
    d.ellipse((80, 40, 250, 320), fill=(200, 60, 60))
    d.ellipse((420, 40, 590, 320), fill=(60, 60, 200))
    return img


def throughput(family: str, n: int, repeats: int, root: Path) -> dict[str, float]:
    from vignette_bench.eval.adapters.tiny import build_tiny_vlm
    from vignette_bench.eval.adapters.transformers_adapter import TransformersAdapter

    path = build_tiny_vlm(family, root / family)
    # on/off: both eager, so the ratio is the recording pass alone; sdpa: what a run without recording uses
    sdpa = TransformersAdapter(path)
    plain = TransformersAdapter(path, attn_implementation="eager")
    rec = TransformersAdapter(path, record_attention=True)
    image = pair_image()
    batch = [ChoiceRequest(f"q{i}", image, f"Who should I hire as a cook? ({i})", OPTIONS) for i in range(n)]
    sdpa.choose(batch[:2]), plain.choose(batch[:2]), rec.choose(batch[:2])  # warm up
    times: dict[str, list[float]] = {"sdpa": [], "off": [], "on": []}
    records = []
    for _ in range(repeats):
        for key, adapter in (("sdpa", sdpa), ("off", plain), ("on", rec)):
            t = time.perf_counter()
            out = adapter.choose(batch)
            times[key].append(time.perf_counter() - t)
            if key == "on":
                records = [r.extras for r in out]
    qps = {k: n / statistics.median(v) for k, v in times.items()}
    return {
        "qps_sdpa": qps["sdpa"],
        "qps_off": qps["off"],
        "qps_on": qps["on"],
        "ratio": qps["on"] / qps["off"],
        **storage([{k: v for k, v in r.items() if k.startswith("attn_")} for r in records]),
    }


def storage(records: list[dict]) -> dict[str, float]:
    """JSON bytes per record, and parquet bytes per row added by the attn_* columns."""
    json_bytes = statistics.mean(len(json.dumps(r, separators=(",", ":"))) for r in records)
    base = [{"question_id": f"q{i:06d}"} for i in range(len(records))]
    plain = pa.Table.from_pylist(base, schema=pa.schema([("question_id", pa.string())]))
    full = pa.Table.from_pylist(
        [{**b, **r} for b, r in zip(base, records)],
        schema=pa.schema([("question_id", pa.string()), *attention_schema()]),
    )

    def size(t: pa.Table) -> int:
        buf = io.BytesIO()
        pq.write_table(t, buf)
        return buf.tell()

    return {"json_bytes": json_bytes, "parquet_bytes_per_row": (size(full) - size(plain)) / len(records)}


def llava16_shapes(n: int) -> dict[str, float]:
    """Record size at real LLaVA-1.6-7B shapes: random attention rows on the real layout of a 672 x 336 pair."""
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaNextConfig
    from transformers.models.llava_next.image_processing_pil_llava_next import LlavaNextImageProcessorPil

    pinpoints = [[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]]
    config = LlavaNextConfig(
        vision_config=CLIPVisionConfig(image_size=336, patch_size=14),
        text_config=LlamaConfig(),
        image_grid_pinpoints=pinpoints,
    )
    ip = LlavaNextImageProcessorPil(
        size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336}, image_grid_pinpoints=pinpoints
    )
    layout = image_layout(config, ip, (336, 672))
    rng = np.random.default_rng(0)
    keys = layout.n_tokens + 60
    records = []
    for _ in range(n):
        rows = [rng.dirichlet(np.ones(keys), size=(32, 3)).astype(np.float32) for _ in range(32)]  # 32 layers
        records.append(summarize(rows, np.arange(30, 30 + layout.n_tokens), layout, [0, 1, 2]).to_record())
    AttentionSummary.from_record(records[0])  # decodes
    full_tensor = 32 * 32 * keys * keys * 2  # what output_attentions would hold in fp16 for one pass
    return {"image_tokens": layout.n_tokens, "full_attention_bytes": full_tensor, **storage(records)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--questions", type=int, default=24)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(
            "| model | q/s sdpa, no recording | q/s eager, off | q/s eager, on | on/off | JSON bytes/q | parquet bytes/q |"
        )
        print("|---|---|---|---|---|---|---|")
        for family in ("llava", "llava_next"):
            r = throughput(family, args.questions, args.repeats, Path(tmp))
            print(
                f"| tiny {family} | {r['qps_sdpa']:.1f} | {r['qps_off']:.1f} | {r['qps_on']:.1f} | {r['ratio']:.2f} | "
                f"{r['json_bytes']:.0f} | {r['parquet_bytes_per_row']:.0f} |"
            )
    r = llava16_shapes(20)
    print(
        f"\nLLaVA-1.6-7B shapes (32 layers x 32 heads), 672x336 pair = {r['image_tokens']} image tokens: "
        f"{r['json_bytes']:.0f} JSON bytes/q, {r['parquet_bytes_per_row']:.0f} parquet bytes/q "
        f"(the full fp16 attention of one pass would be {r['full_attention_bytes'] / 2**30:.1f} GiB)"
    )


if __name__ == "__main__":
    main()
