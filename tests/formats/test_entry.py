"""Entry: versions 0 and 1 (no protocol, no run settings) migrate to custom entries; a bad entry names its key."""

import copy

import pytest

from vignette_bench.formats.base import FormatError
from vignette_bench.formats.entry import Entry

V2 = {
    "schema_version": 2,
    "protocol": {"version": "custom", "differences": ["sample 40 of 120 pairs"]},
    "run": {"config": "identity_contrast", "seed": 0, "sample": 40},
    "entry_id": "reference-uniform-random--1a2b3c4d--cccf36f2",
    "model": {"id": "reference/uniform-random", "revision": "simulated"},
    "adapter": {"adapter": "simulated-random", "variants": None, "template_hash": "simulated"},
    "dataset": {"source": "simulated", "revision": "simulated", "placeholder": True},
    "sample": {"configs": ["identity_contrast"], "paradigms": ["decision"], "n_questions": 400, "n_pairs": 40},
    "responses": {"location": "../runs/a/responses.parquet", "sha256": "a" * 64, "rows": 400},
    "metrics": {"decision": {"n": 400, "invalid_rate": 0.05, "left_rate": 0.5, "answer_mode": "choice"}},
    "submitted": {"by": "tester", "date": "2026-11-20T10:00:00+00:00"},
}


@pytest.mark.parametrize("version", [0, 1])
def test_older_versions_migrate_to_custom_entries(version):
    old = {k: copy.deepcopy(v) for k, v in V2.items() if k not in ("protocol", "run", "schema_version")}
    if version:
        old["schema_version"] = version
    entry = Entry.from_json(old, "entry.json")
    assert entry.schema_version == 2 and entry.protocol.version == "custom" and entry.run == {}
    assert f"entry version {version}" in entry.protocol.differences[0]
    assert Entry.upgrade(old, "entry.json")["protocol"] == entry.protocol.to_json()


def test_current_version_round_trips_as_written():
    entry = Entry.from_json(copy.deepcopy(V2), "entry.json")
    assert entry.to_json() == V2  # optional keys left out stay out
    assert Entry.from_json(entry.dumps(), "entry.json") == entry


@pytest.mark.parametrize(
    "change, key",
    [
        (lambda e: e["responses"].update(sha256="not-hex"), "responses.sha256"),
        (lambda e: e["metrics"]["decision"].update(answer_mode="guess"), "metrics.decision.answer_mode"),
        (lambda e: e["metrics"]["decision"].update(invalid_rate=1.5), "metrics.decision.invalid_rate"),
        (lambda e: e["metrics"].update({"bogus": {"n": 1, "invalid_rate": 0.0}}), "metrics.bogus[key]"),
        (lambda e: e["protocol"].update(version="vignette-protocol/9"), "protocol.version"),
        (lambda e: e["sample"].update(paradigms=["decision", "decision"]), "sample.paradigms"),
        (lambda e: e["model"].update(id="org/m\n<!--"), "model.id"),
        (lambda e: e["model"].update(revision="main\x1b[0m"), "model.revision"),
        (lambda e: e["dataset"].update(source="org/vignette\u2028x"), "dataset.source"),
        (lambda e: e["submitted"].update(by="me\r"), "submitted.by"),
        (lambda e: e["submitted"].update(date="yesterday"), "submitted.date"),
        (lambda e: e.pop("submitted"), "submitted"),
    ],
)
def test_a_bad_entry_names_its_key(change, key):
    data = copy.deepcopy(V2)
    change(data)
    with pytest.raises(FormatError) as caught:
        Entry.from_json(data, "entry.json")
    assert caught.value.key == key, str(caught.value)
