"""The annotation files: never versioned by schema_version (their `format` string is their version); the items
are written back byte for byte; another JSON file is refused by its `format`; a bad key is named."""

import json

import pytest

from vignette_bench.formats.annotation import (
    AnnotationError,
    read_annotation_answers,
    read_annotation_items,
    write_annotation_items,
)

ITEMS = {
    "format": "vignette-annotations/1",
    "export_id": "abc123",
    "kind": "pairs",
    "source": "demo/source",
    "seed": 0,
    "n": 1,
    "items": [
        {
            "id": "p1",
            "dimension": "age",
            "identity": "old",
            "activity": "",
            "keys": ["male-age-old-portrait", "male-age-child-portrait"],
            "label": "old man",
            "label_right": "male child",
            "identity_right": "child",
        }
    ],
}
ANSWERS = {
    "format": "vignette-annotations/1",
    "export_id": "abc123",
    "kind": "pairs",
    "annotator": "a",
    "saved_at": "2026-01-01T00:00:00Z",
    "answers": {"p1": {"distinguishable": "yes", "match": "left"}},
}


def test_items_version_0_read_and_are_written_back_byte_for_byte(tmp_path):
    path = tmp_path / "items.json"
    path.write_text(json.dumps(ITEMS, indent=1))  # as `vignette annotate export` always wrote it
    before = path.read_bytes()
    items = read_annotation_items(path)
    assert items.schema_version == 1 and items.items[0].keys == tuple(ITEMS["items"][0]["keys"])
    write_annotation_items(path, items)
    assert path.read_bytes() == before


def test_answers_read_with_or_without_the_optional_keys(tmp_path):
    path = tmp_path / "a.json"
    path.write_text(json.dumps({k: v for k, v in ANSWERS.items() if k not in ("saved_at", "kind")}))
    answers = read_annotation_answers(path)
    assert answers.saved_at is None and answers.answers == ANSWERS["answers"] and answers.annotator == "a"


@pytest.mark.parametrize(
    "data, message",
    [
        ({**ANSWERS, "format": "other/1"}, r"a.json: not a vignette-annotations/1 file \(format 'other/1'\)"),
        ([1, 2], r"a.json: not a vignette-annotations/1 file \(format None\)"),
        ({**ANSWERS, "annotator": 5}, r"a.json: annotator: expected str, got 5"),
        ({**ANSWERS, "answers": []}, r"a.json: answers: "),
        ({**ANSWERS, "colour": "red"}, r"a.json: colour: unknown key"),
    ],
)
def test_a_bad_answers_file_is_named(tmp_path, data, message):
    (tmp_path / "a.json").write_text(json.dumps(data))
    with pytest.raises(AnnotationError, match=message):
        read_annotation_answers(tmp_path / "a.json")
