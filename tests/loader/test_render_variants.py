"""k renders per cell: the builder plans and records variants, the index carries them, and the loader
gives each pair side one of its cell's renders, fixed by the pair, so the statistics see k render
clusters per cell instead of one (issue 12, item 9). k = 1 keeps the paper's keys."""

from __future__ import annotations

import collections
import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import vignette
from vignette_bench.dataset_builder.records import plan_renders, validate_record
from vignette_bench.dataset_builder.sample import build_sample, placeholder_record
from vignette_bench.formats.render_index import render_key
from vignette_bench.formats.render_record import RecordError, RenderRecord
from vignette_bench.taxonomy import load_taxonomy

IDENTITIES = ("muslim", "hindu", "christian", "old", "young")
ACTIVITIES = ("cooking", "driving", "teaching")


@pytest.fixture(scope="module")
def k3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("variants")
    return build_sample(root / "k3", size=64, identities=IDENTITIES, activities=ACTIVITIES, renders_per_cell=3)


def test_plan_makes_k_seeded_renders_per_cell_and_keeps_variant_zero_keys() -> None:
    tax = load_taxonomy()
    one = plan_renders(tax, identities=["muslim"], activities=["cooking"])
    three = plan_renders(tax, identities=["muslim"], activities=["cooking"], renders_per_cell=3)
    assert len(three) == 3 * len(one)
    assert [s.key for s in three if s.variant == 0] == [s.key for s in one]  # the paper's keys stay
    assert [s.seed for s in three if s.variant == 0] == [s.seed for s in one]
    assert len({s.key for s in three}) == len(three) and len({s.seed for s in three}) == len(three)
    assert render_key("male", "religion", "muslim", "cooking", 2) == "male-religion-muslim-cooking-v2"
    with pytest.raises(ValueError, match="renders_per_cell must be >= 1"):
        plan_renders(tax, renders_per_cell=0)


def test_records_carry_the_variant_and_older_records_read_as_variant_zero() -> None:
    tax = load_taxonomy()
    spec = plan_renders(tax, identities=["muslim"], activities=["cooking"], renders_per_cell=2)[1]
    record = placeholder_record(spec, 64, 64)
    assert record.variant == 1 and record.key.endswith("-v1")
    validate_record(record, tax, "x.json")
    older = json.loads(record.text())
    older.pop("variant")
    older["key"] = older["key"][: -len("-v1")]
    assert RenderRecord.from_json(json.dumps(older), "old.json").variant == 0
    wrong = RenderRecord(**{**json.loads(record.text()), "variant": 2})
    with pytest.raises(RecordError, match=r"key is '.*-v1' but the taxonomy gives '.*-v2'"):
        validate_record(wrong, tax, "x.json")


def test_index_has_a_variant_column_and_the_run_info_records_k(k3: Path) -> None:
    index = pd.read_parquet(k3 / "renders" / "index.parquet")
    assert index["variant"].value_counts().to_dict() == {0: len(index) // 3, 1: len(index) // 3, 2: len(index) // 3}
    ds = vignette.load_dataset(k3, "identity_contrast")
    assert json.loads(ds.info.description)["renders_per_cell"] == 3


@pytest.mark.parametrize("config", vignette.CONFIGS)
def test_each_pair_shows_one_render_per_side_the_same_in_both_orders(k3: Path, config: str) -> None:
    ds = vignette.load_dataset(k3, config, orders="both")
    by_pair: dict[int, set[frozenset[str]]] = collections.defaultdict(set)
    variants: collections.Counter[str] = collections.Counter()
    for left, right, index in zip(ds["key_left"], ds["key_right"], ds["index"]):
        by_pair[index].add(frozenset((left, right)))
        variants.update(k[-3:] if k[-3:-1] == "-v" else "v0" for k in (left, right))
    assert all(len(keys) == 1 for keys in by_pair.values())  # a pair's two orders show the same renders
    assert set(variants) == {"v0", "-v1", "-v2"}  # every variant is used
    assert min(variants.values()) > 0.15 * sum(variants.values())
    again = vignette.load_dataset(k3, config, orders="both")
    assert list(again["key_left"]) == list(ds["key_left"])  # deterministic


def test_pair_space_item_agrees_with_columns_and_images_show_the_variant(k3: Path) -> None:
    index = vignette.RenderIndex.load(vignette.Source(k3))
    space = vignette.PairSpace(load_taxonomy(k3 / "taxonomy"), "identity_contrast", coverage=index.coverage)
    cols = space.columns(range(len(space)))
    for i in range(len(space)):
        spec = space[i]
        assert (spec.key_left, spec.key_right) == (cols["key_left"][i].as_py(), cols["key_right"][i].as_py())
    ds = vignette.load_dataset(k3, "identity_contrast", size=(128, 64), seam=0)
    row = next(r for r in ds if r["key_left"].endswith("-v2"))
    reader = vignette.RenderReader(index)
    expected = vignette.compose(reader.read(row["key_left"])[0], reader.read(row["key_right"])[0], (128, 64), 0, "PNG")
    assert list(row["image"].convert("RGB").getdata()) == list(expected.convert("RGB").getdata())


def test_one_render_per_cell_keeps_the_papers_keys(tmp_path: Path) -> None:
    src = build_sample(tmp_path / "k1", size=64, identities=IDENTITIES[:2], activities=ACTIVITIES[:1])
    ds = vignette.load_dataset(src, "identity_contrast", orders="both")
    assert not any(k.endswith(("-v1", "-v2")) for k in list(ds["key_left"]) + list(ds["key_right"]))
    assert json.loads(ds.info.description)["renders_per_cell"] == 1


def test_an_index_with_a_missing_variant_is_refused_naming_the_cell(k3: Path, tmp_path: Path) -> None:
    copy = tmp_path / "gap"
    shutil.copytree(k3, copy)
    path = copy / "renders" / "index.parquet"
    table = pq.read_table(path)
    drop = "male-religion-muslim-cooking-v1"
    pq.write_table(table.filter(pc.not_equal(table.column("key"), drop)), path)
    with pytest.raises(
        vignette.CorruptRenderError,
        match=r"cell 'male-religion-muslim-cooking' has renders \[0, 2\] but lacks variant\(s\) \[1\]",
    ):
        vignette.load_dataset(copy, "identity_contrast")


def _portrait_run(source: Path, out: Path) -> pd.DataFrame:
    from vignette_bench.cli import main as cli

    assert (
        cli(
            [
                "run",
                "--source",
                str(source),
                "--config",
                "portraits",
                "--model",
                "random",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    return pd.read_parquet(out / "responses.parquet")


def test_the_report_clusters_stereotype_answers_on_renders_once_there_are_several(k3: Path, tmp_path: Path) -> None:
    """With one portrait per identity a stereotype verdict can only be about that portrait (clustered by
    pair image); with k portraits the render is the cluster and the verdict is about the identity."""
    from vignette_bench.eval.analysis.numbers import family_inputs, stereotype_by_portrait

    k1 = build_sample(tmp_path / "k1", size=64, identities=IDENTITIES, activities=ACTIVITIES[:1])
    one, three = _portrait_run(k1, tmp_path / "run1"), _portrait_run(k3, tmp_path / "run3")
    assert three["key_left"].str.endswith(("-v1", "-v2")).any()
    assert stereotype_by_portrait(one) and not stereotype_by_portrait(three)
    clusters = {c for cs in family_inputs(three)["stereotype"]["candidate_clusters"] for c in cs}
    stereotype = three[three["paradigm"] == "stereotype"]
    assert clusters == {*stereotype["key_left"], *stereotype["key_right"]}  # one cluster per render shown
