"""A/B of the four metric modules at N answers, in one run: the code of another checkout (`--before`, e.g. a
`git worktree add /tmp/old <commit>`) against this one, each module in its own subprocess on the same
parquet file (benchmarks/metrics_bench.py's simulation and child), so peak RSS is each run's own.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/metrics_ab.py --before /tmp/old [--rows 10000000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import metrics_bench as mb  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="root of the checkout to compare against")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--metrics", nargs="+", default=list(mb.METRICS), choices=mb.METRICS)
    ap.add_argument("--data", default=None, help="parquet to reuse (default: /tmp/metrics_ab_<rows>.parquet)")
    args = ap.parse_args()
    path = args.data or f"/tmp/metrics_ab_{args.rows}.parquet"
    if not os.path.exists(path):
        pq.write_table(mb.simulate(args.rows, 0), path)
    for name in args.metrics:
        for label, root in (("before", args.before), ("after", str(ROOT))):
            cmd = [sys.executable, f"{root}/benchmarks/metrics_bench.py", "--child", name, path]
            out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
            if out.returncode:
                print(label, name, "FAILED", out.stderr[-2000:])
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"{name:<20} {label:<7} {r['seconds']:7.1f} s  {r['cpu_seconds']:7.1f} CPU s  "
                f"peak RSS {r['peak_rss_mb']:8.0f} MB",
                flush=True,
            )


if __name__ == "__main__":
    main()
