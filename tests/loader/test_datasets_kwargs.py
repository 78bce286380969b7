"""`vignette.load_dataset` takes what `datasets.load_dataset` users pass: split slices in percent and from
the end (same rows as datasets gives), `cache_dir`, `keep_in_memory`, `num_proc`; a map-style table is a
memory-mapped Arrow file named by its contents (pickles as a path, never stale); fingerprints do not
depend on PYTHONHASHSEED."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

import vignette
from vignette import VignetteError
from vignette_bench.dataset_builder.sample import build_sample


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample(tmp_path_factory.mktemp("kw") / "src", size=64)


@pytest.mark.parametrize("split", ["test[10%:20%]", "test[:33%]", "test[-7:]", "test[5:-5]", "test[-20%:]"])
@pytest.mark.parametrize("streaming", [False, True])
def test_split_slices_select_what_datasets_selects(source: Path, tmp_path: Path, split: str, streaming: bool) -> None:
    whole = vignette.load_dataset(source, "identity_contrast", images=False)
    parquet = tmp_path / "whole.parquet"
    whole.to_parquet(parquet)
    expected = datasets.load_dataset("parquet", data_files={"test": str(parquet)}, split=split)["pair_id"]
    ours = vignette.load_dataset(source, "identity_contrast", split=split, images=False, streaming=streaming)
    assert [r["pair_id"] for r in ours] == expected and 0 < len(expected) < len(whole)


def test_bad_splits_are_named(source: Path) -> None:
    for split, message in (
        ("train", "unknown split 'train'"),
        ("test+test", "no '\\+'"),
        ("test[1:2", "unknown split"),
    ):
        with pytest.raises(VignetteError, match=message):
            vignette.load_dataset(source, "portraits", split=split)
    with pytest.raises(VignetteError, match="num_proc=0"):
        vignette.load_dataset(source, "portraits", num_proc=0)
    assert len(vignette.load_dataset(source, "portraits", num_proc=4)) > 0


def test_the_table_is_a_memory_mapped_file_named_by_its_contents(source: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    ds = vignette.load_dataset(source, "identity_activity_contrast", cache_dir=cache)
    files = [Path(f["filename"]) for f in ds.cache_files]
    assert len(files) == 1 and files[0].parent == cache and files[0].name.startswith("identity_activity_contrast-")
    again = vignette.load_dataset(source, "identity_activity_contrast", cache_dir=cache)
    assert [f["filename"] for f in again.cache_files] == [str(files[0])] and len(list(cache.iterdir())) == 1
    assert again._fingerprint == ds._fingerprint
    other = vignette.load_dataset(source, "identity_activity_contrast", cache_dir=cache, dimensions="religion")
    assert other.cache_files[0]["filename"] != str(files[0]) and other._fingerprint != ds._fingerprint
    # a DataLoader worker gets a path, not the rows: the pickle does not grow with the table
    small = vignette.load_dataset(source, "portraits", cache_dir=cache)
    in_memory = vignette.load_dataset(source, "identity_activity_contrast", keep_in_memory=True)
    assert not in_memory.cache_files and len(in_memory) > 10 * len(small)
    assert len(pickle.dumps(ds)) < 1.5 * len(pickle.dumps(small)) < len(pickle.dumps(in_memory)) / 5
    restored = pickle.loads(pickle.dumps(ds))
    assert restored[3]["pair_id"] == ds[3]["pair_id"] and restored[3]["image"].size == vignette.DEFAULT_SIZE


def test_a_source_rebuilt_in_place_is_never_served_from_an_old_table(tmp_path: Path) -> None:
    """The file name is the sha256 of the table: a rebuilt folder with other renders gives other rows."""
    src, cache = tmp_path / "src", tmp_path / "cache"
    build_sample(src, size=64, identities=("muslim", "hindu"), activities=("cooking",))
    before = vignette.load_dataset(src, "identity_contrast", cache_dir=cache)["identity_left"]
    shutil.rmtree(src)
    build_sample(src, size=64, identities=("muslim", "christian"), activities=("cooking",))
    after = vignette.load_dataset(src, "identity_contrast", cache_dir=cache)["identity_left"]
    assert any("hindu" in x.lower() for x in before)
    assert not any("hindu" in x.lower() for x in after) and len(list(cache.iterdir())) == 2


def test_the_fingerprint_does_not_depend_on_the_hash_seed(source: Path, tmp_path: Path) -> None:
    code = (
        "import vignette, sys; "
        f"ds = vignette.load_dataset({str(source)!r}, 'identity_contrast', sample=12, seed=3, "
        f"cache_dir={str(tmp_path / 'cache')!r}); "
        "mem = vignette.load_dataset("
        f"{str(source)!r}, 'identity_contrast', sample=12, seed=3, keep_in_memory=True); "
        "print(ds._fingerprint, mem._fingerprint, ds.info.description)"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outs) == 1 and next(iter(outs)).strip()
