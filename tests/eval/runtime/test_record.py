"""RunRecord: typed run.json, round trip, migration of version 0, and errors that name the file and the key."""

import copy
import json
from pathlib import Path

import pytest

from vignette_bench.eval.runtime.folder import RunFolder
from vignette_bench.eval.runtime.questions import Variants
from vignette_bench.formats.run_record import (
    SCHEMA_VERSION,
    DatasetProvenance,
    ModelProvenance,
    RecordError,
    RunRecord,
    RunSettings,
    migrate,
)

# run.json exactly as the runner wrote it before schema_version existed:
# `vignette build sample --out S && vignette run --source S --config portraits --model random --sample 6 --out R`
V0 = json.loads((Path(__file__).parent / "data" / "run-v0.json").read_text())

# run.json as vignette_bench/eval/simulate.py wrote it before the record was typed (no variants, image_size, versions)
V0_SIMULATED = {
    "settings": {
        "source": "simulated",
        "config": "identity_contrast+portraits",
        "model": "reference/uniform-random",
        "seed": 3,
        "paradigms": ["decision", "stereotype"],
        "sample": None,
        "filters": {},
    },
    "template_hash": "simulated",
    "model": {
        "model_id": "reference/uniform-random",
        "model_revision": "simulated",
        "adapter": "simulated-random",
        "refusal_rate": 0.05,
        "planted": [["hindu", 0.8]],
    },
    "dataset": {
        "source": "simulated",
        "config": "identity_contrast+portraits",
        "revision": "simulated",
        "placeholder": True,
    },
    "simulated": True,
}


def full_record() -> RunRecord:
    return RunRecord(
        settings=RunSettings(
            source="hf://datasets/org/vignette@main",
            config="identity_contrast",
            model="hf:org/m?dtype=bf16",
            seed=7,
            paradigms=("factuality", "decision"),
            variants=Variants((0, 2), ("identity", "position"), ("text",)),
            sample=40,
            filters=(("dimensions", "religion,age"), ("gender", "female")),
            image_size=(448, 224),
        ),
        template_hash="0123456789abcdef",
        model=ModelProvenance(
            model_id="org/m",
            adapter="transformers",
            revision="a" * 40,
            extra={"dtype": "bfloat16", "mode": "score", "score_norm": "mean", "seed": 7},
        ),
        dataset=DatasetProvenance(
            source="hf://datasets/org/vignette@main",
            config="identity_contrast",
            selection={"rows": 40, "filters": {"gender": "female"}},
            index_sha256="b" * 64,
            vignette_sha256="c" * 16,
            hub_repo="org/vignette",
            hub_sha=None,
            hub_sha_error="OfflineModeIsEnabled: offline",
            extra={"mirror": "s3://bucket/vignette"},
        ),
        versions={"python": "3.11.7", "torch": "2.13.0"},
    )


def test_round_trip_through_json_text(tmp_path):
    record = full_record()
    data = record.to_json()
    assert (
        data["schema_version"] == SCHEMA_VERSION == 4
        and "simulated" not in data
        and "planning" not in data
        and "imported" not in data
    )
    assert data["dataset"]["hub_sha"] is None  # kept: the Hub was asked and did not answer
    assert data["dataset"]["mirror"] == "s3://bucket/vignette" and data["model"]["dtype"] == "bfloat16"
    assert RunRecord.from_json(json.loads(json.dumps(data))) == record
    folder = RunFolder(tmp_path)
    folder.record.write(record)
    assert folder.record.read() == record
    back = folder.record.read()
    assert back.settings.filters == (("dimensions", "religion,age"), ("gender", "female"))
    assert back.settings.image_size == (448, 224) and back.model.pinned_revision == "a" * 40
    assert back.dataset.pinned_revision == "b" * 64


def test_version_0_runner_record_migrates_without_losing_a_key():
    assert "schema_version" not in V0
    migrated = migrate(V0, "run.json")
    assert migrated["schema_version"] == 4 and "schema_version" not in V0  # the input is left alone
    assert migrated["settings"]["orders"] == "rule" and "orders" not in V0["settings"]
    record = RunRecord.from_json(V0, "run.json")
    assert record == RunRecord.from_json(migrated, "run.json")
    assert record.schema_version == 4 and record.simulated is False
    assert record.settings == RunSettings(
        source=V0["settings"]["source"],
        config="portraits",
        model="random",
        seed=0,
        sample=6,
        variants=Variants(),
        image_size=(672, 336),
        orders="rule",
    )
    assert record.model.model_id == "reference/random-seed0" and record.model.adapter == "random"
    assert record.model.model_revision == "" and dict(record.model.extra) == {"seed": 0}
    assert record.dataset.index_sha256 == V0["dataset"]["index_sha256"] and len(record.dataset.index_sha256) == 64
    assert record.dataset.selection["sample"] == 6 and record.dataset.placeholder is None
    assert record.template_hash == V0["template_hash"] and record.versions["pyarrow"] == V0["versions"]["pyarrow"]
    # written back, it is the same file plus the version key, the order every run of then used and the
    # model's revision under its one key (version 3)
    model = {k: v for k, v in V0["model"].items() if k != "model_revision"} | {"revision": ""}
    assert record.to_json() == {
        **V0,
        "settings": {**V0["settings"], "orders": "rule"},
        "model": model,
        "schema_version": 4,
    }


def test_version_0_simulated_record_gets_the_defaults_every_reader_assumed():
    record = RunRecord.from_json(copy.deepcopy(V0_SIMULATED), "sim/run.json")
    assert record.simulated and record.dataset.placeholder is True and record.dataset.pinned_revision == "simulated"
    assert record.settings.variants == Variants() and record.settings.image_size == (672, 336)
    assert record.versions == {} and record.settings.sample is None and record.settings.filters == ()
    assert record.model.extra == {"refusal_rate": 0.05, "planted": [["hindu", 0.8]]}
    assert RunRecord.from_json(record.to_json()) == record


@pytest.mark.parametrize(
    "change, key, reason",
    [
        (lambda d: d["settings"].update(seed="five"), "settings.seed", "expected int"),
        (lambda d: d["settings"].update(seed=True), "settings.seed", "expected int"),
        (lambda d: d["settings"].update(colour="blue"), "settings.colour", "unknown key"),
        (lambda d: d["settings"]["variants"].update(modality=["smell"]), "settings.variants", "modality"),
        (lambda d: d["settings"].update(image_size=[672]), "settings.image_size", "width, height"),
        (lambda d: d["settings"]["filters"].update(gender=1), "settings.filters.gender", "expected str"),
        (lambda d: d["settings"].update(paradigms=["decision", 3]), "settings.paradigms[1]", "expected str"),
        (lambda d: d.pop("template_hash"), "template_hash", "missing"),
        (lambda d: d.update(dataset="local"), "dataset", "expected object, got 'local'"),
        (lambda d: d["dataset"].update(index_sha256=12), "dataset.index_sha256", "expected str"),
        (lambda d: d["model"].update(model_id=["a"]), "model.model_id", "expected str"),
        (lambda d: d["versions"].update(torch=2), "versions.torch", "expected str"),
        (lambda d: d.update(extra_key=1), "extra_key", "unknown key"),
        (lambda d: d.update(schema_version=99), "schema_version", "newer than this code reads"),
        (lambda d: d.update(schema_version=2), "settings.orders", "missing"),
        (lambda d: d["settings"].update(orders="random"), "settings.orders", "expected one of"),
        (lambda d: d.update(planning=[1]), "planning", "expected object"),
    ],
)
def test_a_bad_record_names_its_file_and_key(tmp_path, change, key, reason):
    data = copy.deepcopy(V0)
    change(data)
    path = tmp_path / "some-run" / "run.json"
    path.parent.mkdir()
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError) as caught:
        RunFolder(path.parent).record.read()
    e = caught.value
    assert e.file == str(path) and e.key == key and reason in e.reason
    assert str(e).startswith(f"{path}: {key}: ")


def test_a_record_that_is_not_json_names_its_file(tmp_path):
    (tmp_path / "run.json").write_text('{"settings": ')
    with pytest.raises(RecordError, match=r"run\.json: not valid JSON") as caught:
        RunFolder(tmp_path).record.read()
    assert caught.value.file == str(tmp_path / "run.json")


def test_version_1_records_read_as_the_rule_order_and_planning_round_trips():
    v1 = {**copy.deepcopy(V0), "schema_version": 1}
    record = RunRecord.from_json(v1, "run.json")
    assert record.settings.orders == "rule" and record.planning is None and record.schema_version == 4
    planned = RunRecord(**{**record.__dict__, "planning": {"pairs": 120, "icc": 0.269}})
    data = json.loads(json.dumps(planned.to_json()))
    assert data["planning"] == {"pairs": 120, "icc": 0.269} and RunRecord.from_json(data) == planned
    assert RunSettings(source="s", config="portraits", model="m").orders == "balanced"  # the default for new runs


def test_version_3_records_read_without_an_imported_part_and_it_round_trips():
    from vignette_bench.formats.run_record import ImportedFile, ImportedProvenance

    v3 = {**migrate(copy.deepcopy(V0), "run.json"), "schema_version": 3}
    record = RunRecord.from_json(v3, "run.json")
    assert record.schema_version == 4 and record.imported is None and "imported" not in record.to_json()
    imported = ImportedProvenance(
        format="vignette-csv",
        files=(ImportedFile(path="a.csv", sha256="0" * 64, rows=3),),
        not_recovered=("probabilities: none",),
        consequences=("sides unknown: rates not side-balanced",),
    )
    data = json.loads(json.dumps(RunRecord(**{**record.__dict__, "imported": imported}).to_json()))
    assert data["imported"]["files"] == [{"path": "a.csv", "sha256": "0" * 64, "rows": 3}]
    assert RunRecord.from_json(data, "run.json").imported == imported
    with pytest.raises(RecordError, match=r"imported\.files"):
        RunRecord.from_json({**data, "imported": {**data["imported"], "files": [{"path": "a.csv"}]}}, "run.json")
