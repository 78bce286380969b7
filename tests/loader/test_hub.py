"""hf:// sources through huggingface_hub's HfFileSystem against a local stand-in for the Hub's HTTP API
(tests/loader/hub_standin.py; the Hub cannot be reached here): a slice fetches only the bytes it needs,
and a wrong repo is named at once instead of after retries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.loader.hub_standin import serve_hub
from vignette import TAR_BLOCK
from vignette_bench.dataset_builder.sample import build_sample

REPO = "vignette-test/vignette"
SLICE = """
import json, sys, vignette
ds = vignette.load_dataset(sys.argv[1], "identity_activity_contrast", streaming=True, gender="female",
                           dimensions="religion", split="test[:40]")
print(json.dumps([[r["key_left"], r["key_right"], list(r["image"].size)] for r in ds]))
"""


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample(tmp_path_factory.mktemp("hub") / "src")


def _run(endpoint: str, url: str) -> subprocess.CompletedProcess:
    # huggingface_hub reads HF_ENDPOINT and the offline switch at import: a fresh process points it here
    env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_TELEMETRY": "1"}
    return subprocess.run([sys.executable, "-c", SLICE, url], env=env, capture_output=True, text=True, timeout=120)


def test_an_hf_slice_reads_only_the_bytes_it_needs(source: Path) -> None:
    rows = {r["key"]: r for r in pq.read_table(source / "renders" / "index.parquet").to_pylist()}
    with serve_hub(source, REPO) as (endpoint, traffic):
        done = _run(endpoint, f"hf://datasets/{REPO}")
        assert done.returncode == 0, done.stderr[-2000:]
        pairs = json.loads(done.stdout)
        files = [(p, r, n) for p, r, n in traffic.requests if r != "api"]
        api_bytes = sum(n for _, r, n in traffic.requests if r == "api")
    assert len(pairs) == 40
    needed = {k for left, right, _ in pairs for k in (left, right)}
    shard_reads = [(p, r, n) for p, r, n in files if p.startswith("renders/") and p.endswith(".tar")]
    assert len(shard_reads) == len(needed)  # one ranged request per render, each read once
    # each read is the render plus the 512-byte tar header before it (checked to name the key)
    needed_bytes = sum(rows[k]["length"] + TAR_BLOCK for k in needed)
    assert sum(n for *_, n in shard_reads) == needed_bytes
    index_and_taxonomy = (source / "renders" / "index.parquet").stat().st_size + sum(
        p.stat().st_size for p in (source / "taxonomy").iterdir()
    )
    minimum = needed_bytes + index_and_taxonomy
    sent = sum(n for *_, n in files) + api_bytes
    assert sent <= 1.05 * minimum, (sent, minimum, sent / minimum)


def test_a_wrong_hf_repo_is_named_without_retrying(source: Path) -> None:
    with serve_hub(source, REPO) as (endpoint, traffic):
        done = _run(endpoint, "hf://datasets/vignette-test/no-such-repo")
        tries = len(traffic.requests)
    assert done.returncode != 0 and "HTTP 404" in done.stderr and "no-such-repo" in done.stderr
    assert tries == 1
