"""Every config that needs no code of ours loads with plain `datasets.load_dataset(SOURCE, config)` from
one source folder that holds all of them (issue 14, item 5): the render index, the news subset and each
pair config's rows without images. Two folders with the same name never serve each other's rows."""

from __future__ import annotations

from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
import yaml

import vignette
from vignette_bench.dataset_builder.card import data_configs
from vignette_bench.dataset_builder.sample import build_sample


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample(tmp_path_factory.mktemp("plain") / "src", size=32, protocol=True)


def _card_configs(source: Path) -> list[str]:
    head = (source / "README.md").read_text().split("---\n")[1]
    return [c["config_name"] for c in yaml.safe_load(head)["configs"]]


def test_the_card_declares_every_plain_config(source: Path) -> None:
    # the protocol's configs (with images, under their own names: tests/dataset_builder/test_protocol_sample.py)
    expected = ["index", "identity_contrast", "portraits", "news"] + sorted(f"{c}_specs" for c in vignette.CONFIGS)
    assert _card_configs(source) == expected == [name for name, _ in data_configs(source)]


@pytest.mark.parametrize("config", ["index", "news", *[f"{c}_specs" for c in vignette.CONFIGS]])
def test_each_config_loads_with_plain_datasets(source: Path, tmp_path: Path, config: str) -> None:
    ds = datasets.load_dataset(str(source), config, split="test", cache_dir=str(tmp_path / "cache"))
    if config == "index":
        assert len(ds) == len(pq.read_table(source / "renders" / "index.parquet"))
    elif config == "news":
        assert len(ds) == 10 and ds[0]["image"].size[0] > 0
    else:  # the same rows, in the same order, as the loading module's metadata-only table
        ours = vignette.load_dataset(source, config.removesuffix("_specs"), images=False, keep_in_memory=True)
        assert ds.column_names == ours.column_names and ds.to_list() == ours.to_list()
    # and through vignette.load_dataset, which hands data configs to datasets
    assert len(vignette.load_dataset(source, config, split="test", cache_dir=str(tmp_path / "cache2"))) == len(ds)


def test_renders_load_with_the_webdataset_builder_next_to_the_parquet_configs(source: Path, tmp_path: Path) -> None:
    ours = vignette.load_dataset(source, "renders", split="test", cache_dir=str(tmp_path / "cache"))
    assert len(ours) == len(pq.read_table(source / "renders" / "index.parquet")) and "jpg" in ours.column_names


def test_two_sources_with_the_same_name_never_share_rows(tmp_path: Path) -> None:
    """datasets keys a local folder's cache on its base name and the config's relative patterns; the card's
    per-config digest keeps them apart (before: the second folder got the first one's rows)."""
    cache = str(tmp_path / "cache")
    a = build_sample(tmp_path / "a" / "src", size=32, identities=("muslim", "hindu"), activities=("cooking",))
    b = build_sample(tmp_path / "b" / "src", size=32, identities=("old", "young"), activities=("driving",))
    for config in ("index", "identity_contrast_specs"):
        rows = [datasets.load_dataset(str(s), config, split="test", cache_dir=cache).to_list() for s in (a, b)]
        assert rows[0] != rows[1]
    keys = datasets.load_dataset(str(b), "index", split="test", cache_dir=cache)["key"]
    assert all("driving" in k or "portrait" in k for k in keys)


def test_a_config_with_no_pairs_is_not_declared(tmp_path: Path) -> None:
    one_activity = build_sample(tmp_path / "src", size=32, identities=("muslim", "hindu"), activities=("cooking",))
    assert "activity_contrast_specs" not in _card_configs(one_activity)
    assert not (one_activity / "pairs" / "activity_contrast").exists()
