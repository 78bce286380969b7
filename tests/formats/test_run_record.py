"""RunRecord: every older version (0, 1, 2) migrates to the current one without losing a key."""

import copy
import json
from pathlib import Path

import pytest

from vignette_bench.formats.base import FormatError
from vignette_bench.formats.pair_config import PairConfig
from vignette_bench.formats.run_record import SCHEMA_VERSION, RunRecord, migrate
from vignette_bench.formats.selection import SelectionRecord

V0 = json.loads((Path(__file__).parents[1] / "eval" / "runtime" / "data" / "run-v0.json").read_text())


def at_version(version: int) -> dict:
    """V0 (a real runner record) as each version wrote it."""
    data = copy.deepcopy(V0)
    if version >= 1:
        data["schema_version"] = version
    if version >= 2:
        data["settings"]["orders"] = "rule"
    if version >= 3:
        data["model"]["revision"] = data["model"].pop("model_revision")
    return data


@pytest.mark.parametrize("version", range(SCHEMA_VERSION))
def test_every_older_version_migrates(version):
    old = at_version(version)
    record = RunRecord.from_json(copy.deepcopy(old), "run.json")
    assert record == RunRecord.from_json(at_version(SCHEMA_VERSION), "run.json")
    assert record.schema_version == SCHEMA_VERSION and record.settings.orders == "rule"
    assert record.model.revision == "" and "model_revision" not in record.to_json()["model"]
    assert migrate(old, "run.json") == at_version(SCHEMA_VERSION)


def test_version_2_keeps_a_revision_under_either_key():
    data = at_version(2)
    data["model"] = {"model_id": "org/m", "adapter": "transformers", "revision": "a" * 40, "dtype": "bfloat16"}
    record = RunRecord.from_json(data, "run.json")
    assert record.model.revision == "a" * 40 and record.model.extra == {"dtype": "bfloat16"}


def test_a_newer_version_is_refused():
    with pytest.raises(FormatError, match="newer than this code reads"):
        RunRecord.from_json({**at_version(SCHEMA_VERSION), "schema_version": SCHEMA_VERSION + 1}, "run.json")


def test_round_trip_through_dumps():
    record = RunRecord.from_json(at_version(0), "run.json")
    assert RunRecord.from_json(record.dumps(), "run.json") == record


V3 = (
    Path(__file__).parents[1] / "eval" / "runtime" / "data" / "run-v3.json"
)  # `vignette run` at version 3, kept as written


def test_a_real_version_3_record_reads_into_one_pair_config():
    # edef52d's runner: --filter dimensions=religion,age gender=female exclude_near_synonyms=true, --size 96x48
    record = RunRecord.from_json(V3.read_text(), str(V3))
    assert record.schema_version == SCHEMA_VERSION and record.imported is None
    config = record.settings.pair_config()
    assert config == PairConfig(
        config="identity_contrast",
        gender=("female",),
        dimensions=("religion", "age"),
        exclude_near_synonyms=True,
        sample=2,
        seed=0,
        orders="balanced",
        size=(96, 48),
    )
    # the settings say what the loader recorded it selected: one vocabulary, PairFilters
    selection = SelectionRecord.from_json(record.dataset.selection or {}, str(V3))
    assert selection.filters == config.filters() and selection.size == config.size
    assert RunRecord.from_json(record.dumps(), str(V3)) == record
