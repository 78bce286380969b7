"""`vignette build protocol-sample` (issue 38): the protocol's pairs with their images as parquet, the protocol's
own selection, resumable shard by shard, declared by the card, verified and planned by upload."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from vignette_bench.dataset_builder.card import write_card
from vignette_bench.dataset_builder.protocol_manifest import MANIFEST, PROTOCOL_DIR, ProtocolSampleError, read_manifest
from vignette_bench.dataset_builder.protocol_sample import (
    lazy_protocol_dataset,
    verify_protocol_sample,
    write_protocol_sample,
)
from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.eval.leaderboard.protocol import MAX_PAIRS, plan_for, protocol_settings, source_pairs
from vignette_bench.eval.runtime.plan import open_pairs
from vignette_bench.upload.plan import UploadFolder
from vignette_bench.upload.targets import UploadError, dataset_plan

CONFIGS = ("identity_contrast", "portraits")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample(tmp_path_factory.mktemp("protocol") / "src", size=32, news=False, protocol=True)


def _card(root: Path) -> dict:
    return yaml.safe_load((root / "README.md").read_text().split("---\n")[1])


def _table(root: Path, config: str) -> pa.Table:
    return pa.concat_tables(pq.read_table(f) for f in sorted((root / PROTOCOL_DIR / config).glob("*.parquet")))


def _copy(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    return dest


def test_the_rows_are_the_protocol_runs_pairs_every_column(source: Path) -> None:
    for config in CONFIGS:
        table = _table(source, config)
        n = source_pairs(str(source), config)
        plan = plan_for(config, n)
        assert plan.sample is None and n < MAX_PAIRS  # a small source is asked in full, in balanced orders
        # the pairs a protocol run asks about, by the runner's own code
        asked = open_pairs(protocol_settings(plan, str(source), "random")).rows
        assert table.column("pair_id").to_pylist() == asked["pair_id"]
        lazy = lazy_protocol_dataset(str(source), config)
        assert table.column_names == lazy.column_names  # every column the lazy loader gives, image included
        assert table.drop(["image"]).to_pylist() == lazy.remove_columns("image").to_list()
        assert {p[-3:] for p in table.column("pair_id").to_pylist()} == {"/L0", "/L1"}  # both orders occur


def test_the_card_declares_them_under_their_own_names_with_an_image_feature(source: Path) -> None:
    card = _card(source)
    declared = {c["config_name"]: c["data_files"][0]["path"] for c in card["configs"]}
    info = {i["config_name"]: i for i in card["dataset_info"]}
    for config in CONFIGS:
        assert declared[config] == f"{PROTOCOL_DIR}/{config}/*.parquet"
        assert {"name": "image", "dtype": "image"} in info[config]["features"]
        assert info[config]["splits"][0]["num_examples"] == len(_table(source, config))
    body = (source / "README.md").read_text().split("---\n", 2)[2]
    first = body.strip().split("\n\n")[1]  # the paragraph under the title says which is which
    assert "`identity_contrast`" in first and "vignette.load_dataset" in first and "pip install" in first


def test_a_rerun_skips_verified_shards_and_redoes_missing_or_damaged_ones(source: Path, tmp_path: Path) -> None:
    root = _copy(source, tmp_path / "src")
    first = write_protocol_sample(root, configs=("identity_contrast",), rows_per_shard=20)
    folder = root / PROTOCOL_DIR / "identity_contrast"
    assert first[0].shards == len(list(folder.glob("*.parquet"))) >= 3 and first[0].written == first[0].shards
    assert not list(folder.glob("test-*-of-00001.parquet"))  # the one-shard build of the sample was replaced
    again = write_protocol_sample(root, configs=("identity_contrast",), rows_per_shard=20)
    assert again[0].written == 0
    shards = sorted(folder.glob("*.parquet"))
    shards[0].unlink()
    data = bytearray(shards[1].read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, other bytes: only the sha256 tells
    shards[1].write_bytes(bytes(data))
    assert len(verify_protocol_sample(root)) == 2
    fixed = write_protocol_sample(root, configs=("identity_contrast",), rows_per_shard=20)
    assert fixed[0].written == 2 and verify_protocol_sample(root) == []
    manifest = read_manifest(folder)
    assert manifest is not None and manifest["complete"] and sum(s["rows"] for s in manifest["shards"]) == fixed[0].rows


def test_an_interrupted_build_is_not_declared(source: Path, tmp_path: Path) -> None:
    root = _copy(source, tmp_path / "src")
    manifest_path = root / PROTOCOL_DIR / "portraits" / MANIFEST
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps({**manifest, "complete": False}))
    write_card(root)
    assert "portraits" not in {c["config_name"] for c in _card(root)["configs"]}
    assert "identity_contrast" in {c["config_name"] for c in _card(root)["configs"]}


def test_upload_plans_them_and_refuses_a_damaged_shard(source: Path, tmp_path: Path) -> None:
    root = _copy(source, tmp_path / "src")
    steps = dataset_plan(root, "org/vignette")
    paths = next(s for s in steps if isinstance(s, UploadFolder)).paths
    for config in CONFIGS:
        assert f"{PROTOCOL_DIR}/{config}/{MANIFEST}" in paths
        assert any(p.startswith(f"{PROTOCOL_DIR}/{config}/test-") and p.endswith(".parquet") for p in paths)
    shard = next((root / PROTOCOL_DIR / "portraits").glob("*.parquet"))
    shard.write_bytes(shard.read_bytes()[:-1])
    with pytest.raises(UploadError, match="portraits.*bytes, the manifest says"):
        dataset_plan(root, "org/vignette")


def test_a_damaged_manifest_is_named(source: Path, tmp_path: Path) -> None:
    root = _copy(source, tmp_path / "src")
    (root / PROTOCOL_DIR / "portraits" / MANIFEST).write_text('{"rows": 3, "shards": [{"file": "x"}]}')
    with pytest.raises(ProtocolSampleError, match=r"manifest.json: shards\[0\] lacks or mistypes"):
        write_card(root)


def test_the_command_writes_into_another_folder_and_names_a_bad_source(source: Path, tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "vignette_bench", "build", "protocol-sample"]
    done = subprocess.run(
        [*cmd, "--source", str(source), "--out", str(tmp_path / "out"), "--configs", "portraits"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "protocol/portraits:" in done.stdout and (tmp_path / "out" / PROTOCOL_DIR / "portraits" / MANIFEST).is_file()
    bad = subprocess.run([*cmd, "--source", str(tmp_path / "nowhere")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "Traceback" not in bad.stderr
    other = subprocess.run([*cmd, "--source", str(source), "--configs", "news"], capture_output=True, text=True)
    assert other.returncode == 2 and "not in the protocol" in other.stderr
