"""Cost and outcome of `vignette news demo` (tiny untrained LLaVA answering and judging under the bounded
schemas of vignette_bench/eval/news/schemas.py), in a fresh process.

    .venv/bin/python benchmarks/news_demo.py [--limit 5] [--out DIR]

Prints the CPU seconds of the child (user + system, RUSAGE_CHILDREN; the tiny model is built once into
its cache first, not counted), the wall time, how many answers and judgements parsed, and the reply
lengths in characters and UTF-8 bytes (what the token budget has to hold).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=5)
    ap.add_argument("--out", default=None, help="demo folder (default: a temporary one)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="news_demo_"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    warm = "from vignette_bench.eval.adapters.tiny import build_tiny_vlm, tiny_dir; build_tiny_vlm('llava', tiny_dir() / 'llava')"
    subprocess.run([sys.executable, "-c", warm], check=True, env=env, cwd=ROOT, capture_output=True)
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    command = [sys.executable, "-m", "vignette_bench", "news", "demo", "--out", str(out), "--limit", str(args.limit)]
    subprocess.run(command, check=True, env=env, cwd=ROOT, capture_output=True)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    def rows(path: Path) -> list[dict]:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    answers = rows(out / "runs" / "model" / "answers.jsonl")
    judged = rows(out / "judgements.jsonl")
    print(f"vignette news demo --limit {args.limit}: {cpu:.1f} s CPU, {wall:.1f} s wall")
    print(f"  tiny model's answers: {sum(a['valid'] for a in answers)}/{len(answers)} parsed")
    print(f"  tiny judge's judgements: {sum(j['valid'] for j in judged)}/{len(judged)} parsed")
    for name, replies in (("answer", [a["raw"] for a in answers]), ("judgement", [j["raw"] for j in judged])):
        chars = [len(r) for r in replies]
        size = [len(r.encode()) for r in replies]
        print(f"  {name} replies: max {max(chars)} characters, {max(size)} bytes")
    print(f"  page: {out / 'news.html'}; lock files left: {len(list(out.rglob('*.lock')))}")


if __name__ == "__main__":
    main()
