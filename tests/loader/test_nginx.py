"""An HTTP source served by Debian's nginx (tests/loader/nginx_server.py): a slice fetches only the bytes
it needs — each render and its tar header once, plus index and taxonomy — counted by nginx's own log."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import vignette
from tests.loader.nginx_server import nginx_binary, serve_nginx
from vignette_bench.dataset_builder.sample import build_sample

pytestmark = pytest.mark.skipif(nginx_binary() is None, reason="nginx is not installed (`make sysdeps` installs it)")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample(tmp_path_factory.mktemp("nginx") / "src")


def test_an_nginx_slice_reads_only_the_bytes_it_needs(source: Path) -> None:
    rows = {r["key"]: r for r in pq.read_table(source / "renders" / "index.parquet").to_pylist()}
    with serve_nginx(source) as (url, log):
        ds = vignette.load_dataset(
            url, "identity_activity_contrast", streaming=True, gender="female", dimensions="religion", split="test[:40]"
        )
        pairs = [(r["key_left"], r["key_right"], r["image"].size) for r in ds]
        requests = log.requests()
    assert len(pairs) == 40 and all(size == vignette.DEFAULT_SIZE for *_, size in pairs)
    needed = {k for left, right, _ in pairs for k in (left, right)}
    shard_reads = [(u, r, n) for u, r, n in requests if u.endswith(".tar")]
    assert len(shard_reads) == len(needed) and all(r.startswith("bytes=") for _, r, _ in shard_reads)
    needed_bytes = sum(rows[k]["length"] + vignette.TAR_BLOCK for k in needed)
    assert sum(n for *_, n in shard_reads) == needed_bytes
    minimum = needed_bytes + (source / "renders" / "index.parquet").stat().st_size
    minimum += sum(p.stat().st_size for p in (source / "taxonomy").iterdir())
    sent = sum(n for *_, n in requests)
    assert sent <= 1.05 * minimum, (sent, minimum, sent / minimum)


def test_a_missing_file_on_nginx_is_named(source: Path, tmp_path: Path) -> None:
    with serve_nginx(tmp_path) as (url, _):
        with pytest.raises(FileNotFoundError, match="renders/index.parquet"):
            vignette.load_dataset(url, "identity_contrast")
