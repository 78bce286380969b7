"""Render records: the file never carried schema_version (version 0 is the layout); a record from before
variants reads variant 0; a record is written back byte for byte; a bad field is named with the fix."""

import json

import pytest

from vignette_bench.formats.render_record import RecordError, RenderRecord, read_render_record, write_render_record

BEFORE_VARIANTS = {
    "key": "female-age-old-cooking",
    "gender": "female",
    "dimension": "age",
    "identity": "old",
    "surface_form": "old woman",
    "activity": "cooking",
    "kind": "activity",
    "prompt": "A old woman engaged in cooking, with their face visible.",
    "seed": 12345,
    "model_id": "black-forest-labs/FLUX.1-dev",
    "model_revision": "abc",
    "scheduler": "FlowMatchEulerDiscreteScheduler",
    "steps": 28,
    "guidance": 3.5,
    "width": 1024,
    "height": 1024,
    "dtype": "bfloat16",
    "max_sequence_length": 512,
    "versions": {"diffusers": "0.30.0"},
    "placeholder": False,
}


def test_a_record_before_variants_reads_variant_0_and_is_written_back_as_it_was(tmp_path):
    record = RenderRecord.from_json(json.dumps(BEFORE_VARIANTS), "r.json")
    assert record.variant == 0 and record.schema_version == 1
    as_written = json.dumps({**BEFORE_VARIANTS, "variant": 0}, ensure_ascii=False, sort_keys=True)
    assert record.text() == as_written and "schema_version" not in record.text()
    path = write_render_record(tmp_path / f"{record.key}.json", record)
    assert read_render_record(path) == record and path.read_text() == as_written


def test_a_float_written_as_an_int_stays_an_int():
    record = RenderRecord.from_json(json.dumps({**BEFORE_VARIANTS, "guidance": 0}), "r.json")
    assert '"guidance": 0,' in record.text()


def test_a_shard_member_keeps_its_encoding_keys_to_the_shard():
    member = {**BEFORE_VARIANTS, "format": "webp", "quality": 90, "image_sha256": "0" * 64}
    assert RenderRecord.from_json(json.dumps(member), "s.tar:k.json").key == BEFORE_VARIANTS["key"]


@pytest.mark.parametrize(
    "data, message",
    [
        ({**BEFORE_VARIANTS, "seed": "5"}, r"field 'seed' is '5', expected int; fix or re-render"),
        ({**BEFORE_VARIANTS, "steps": True}, r"field 'steps' is True, expected int"),
        ({k: v for k, v in BEFORE_VARIANTS.items() if k != "dtype"}, r"lacks field\(s\) \['dtype'\]; re-render"),
    ],
)
def test_a_bad_record_is_named_with_the_fix(data, message):
    with pytest.raises(RecordError, match=message):
        RenderRecord.from_json(json.dumps(data), "r.json")
    with pytest.raises(RecordError, match="malformed JSON record"):
        RenderRecord.from_json("{", "r.json")
