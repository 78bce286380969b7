"""Bytes a remote slice fetches, against the bytes it needs, through three servers in one run.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/source_bytes.py [--size 1024] [--pairs 100]

The slice is benchmarks/loader_bench.py's (identity_activity_contrast, female, religion, 7 activities,
test[:N], streamed with images) on its source of photo-like 1024² JPEG renders. Needed = the renders the
pairs show (each with the 512-byte tar header read before it) + index + taxonomy. Servers:
  * a Python Range-honouring server (tests/loader/test_http.py), bytes counted in the handler;
  * Debian's nginx (tests/loader/nginx_server.py), bytes from its access log ($body_bytes_sent);
  * a local stand-in for the Hub's HTTP API (tests/loader/hub_standin.py) read through
    huggingface_hub's HfFileSystem (hf://datasets/...), bytes counted in the handler, API JSON included.
Also printed: the same hf:// slice with fsspec's default read-ahead (the code before this change), to
show what the fix removed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pyarrow.parquet as pq  # noqa: E402
from loader_bench import SLICE_ACTIVITIES, build_bench_source  # noqa: E402

from tests.loader.hub_standin import serve_hub  # noqa: E402
from tests.loader.nginx_server import nginx_binary, serve_nginx  # noqa: E402
from tests.loader.test_http import serve_folder  # noqa: E402

SLICE = """
import json, sys, vignette
if sys.argv[3] == "readahead":  # the code before: fsspec's default buffered read-ahead
    vignette.Source._range_options = property(lambda self: {})
ds = vignette.load_dataset(sys.argv[1], "identity_activity_contrast", streaming=True, gender="female",
                           dimensions="religion", activities=json.loads(sys.argv[2]), split="test[:%d]")
print(json.dumps([[r["key_left"], r["key_right"]] for r in ds]))
"""


def run_slice(url: str, pairs: int, env: dict[str, str], mode: str = "fixed") -> list[list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", SLICE % pairs, url, json.dumps(list(SLICE_ACTIVITIES)), mode],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--pairs", type=int, default=100)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        source = build_bench_source(Path(tmp) / "src", args.size)
        rows = {r["key"]: r for r in pq.read_table(source / "renders" / "index.parquet").to_pylist()}
        fixed = (source / "renders" / "index.parquet").stat().st_size + sum(
            p.stat().st_size for p in (source / "taxonomy").iterdir()
        )

        def needed(pairs: list[list[str]]) -> int:
            return fixed + sum(rows[k]["length"] + 512 for k in {k for pair in pairs for k in pair})

        print(
            f"slice: {args.pairs} pairs of identity_activity_contrast (female, religion, 7 activities), {args.size}² JPEG renders"
        )
        print(f"{'server':<52}{'sent':>12}{'needed':>12}{'ratio':>8}")
        results = []
        with serve_folder(source) as (url, traffic):
            pairs = run_slice(url, args.pairs, {})
            results.append(("Python Range server (plain HTTP)", traffic.bytes_sent, needed(pairs)))
        if nginx_binary():
            with serve_nginx(source) as (url, log):
                pairs = run_slice(url, args.pairs, {})
                results.append(("nginx (Debian) static files", log.bytes_sent, needed(pairs)))
        else:
            print("nginx: not installed, skipped (`make sysdeps`)")
        for mode, label in (
            ("fixed", "hf:// via HfFileSystem, Hub stand-in"),
            ("readahead", "hf://, default read-ahead (before)"),
        ):
            with serve_hub(source) as (endpoint, hub):
                env = {"HF_ENDPOINT": endpoint, "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_TELEMETRY": "1"}
                pairs = run_slice("hf://datasets/vignette-test/vignette", args.pairs, env, mode)
                results.append((label, hub.bytes_sent, needed(pairs)))
        for label, sent, need in results:
            print(f"{label:<52}{sent:>12,}{need:>12,}{sent / need:>7.3f}x")


if __name__ == "__main__":
    main()
