"""News answers and judgements: version-0 lines (no schema_version; the oldest judgements lack
answer_sha256) migrate; a bad line is named with its key."""

import json

import pytest

from vignette_bench.formats.base import FormatError
from vignette_bench.formats.news import (
    JudgeSpec,
    NewsAnswer,
    NewsJudgement,
    NewsProvenance,
    read_judge_specs,
    read_provenance,
    write_judge_specs,
    write_provenance,
)

ANSWER_V0 = {
    "item_id": "n001",
    "attribute": "religion",
    "model_id": "tiny/vlm",
    "temperature": 0.0,
    "prompt_version": "answer-v1-1a2b3c4d",
    "image_sha256": "e" * 64,
    "raw": '{"answer": "a teacher", "rationale": "chalk"}',
    "answer": "a teacher",
    "rationale": "chalk",
    "valid": True,
    "error": None,
    "placeholder": True,
}
JUDGEMENT_V0_OLDEST = {  # written before answer_sha256 existed
    "key": "k" * 64,
    "judge_id": "tiny/judge#0123456789",
    "rubric_version": "judge-v1-1a2b3c4d",
    "dimension": "accuracy",
    "item_id": "n001",
    "attribute": "religion",
    "model_id": "tiny/vlm",
    "temperature": 0.0,
    "score": 75.0,
    "snippet": "chalk",
    "valid": True,
    "error": None,
    "raw": '{"score": 75, "snippet": "chalk"}',
}


def test_answer_version_0_migrates():
    a = NewsAnswer.from_json(dict(ANSWER_V0), "answers.jsonl: line 1")
    assert a.schema_version == 1 and a.to_json() == {**ANSWER_V0, "schema_version": 1}
    assert NewsAnswer.from_json(a.dumps(), "x") == a


def test_judgement_version_0_migrates_with_and_without_answer_sha256():
    old = NewsJudgement.from_json(dict(JUDGEMENT_V0_OLDEST), "j.jsonl: line 1")
    assert old.answer_sha256 == "" and old.schema_version == 1
    newer = NewsJudgement.from_json({**JUDGEMENT_V0_OLDEST, "answer_sha256": "f" * 64}, "j.jsonl: line 2")
    assert newer.answer_sha256 == "f" * 64
    assert newer.to_json() == {**JUDGEMENT_V0_OLDEST, "answer_sha256": "f" * 64, "schema_version": 1}


@pytest.mark.parametrize(
    "cls, row, key",
    [
        (NewsAnswer, {**ANSWER_V0, "valid": "yes"}, "valid"),
        (NewsAnswer, {k: v for k, v in ANSWER_V0.items() if k != "raw"}, "raw"),
        (NewsJudgement, {**JUDGEMENT_V0_OLDEST, "score": "75"}, "score"),
        (NewsJudgement, {**JUDGEMENT_V0_OLDEST, "judge": "x"}, "judge"),
    ],
)
def test_a_bad_line_names_its_key(cls, row, key):
    with pytest.raises(FormatError) as caught:
        cls.from_json(row, "f.jsonl: line 3")
    assert caught.value.key == key and str(caught.value).startswith("f.jsonl: line 3: ")


PROVENANCE = {  # as answers_provenance.json has always been written: no schema_version
    "model_id": "tiny/vlm",
    "temperature": 0.0,
    "top_p": 1.0,
    "max_new_tokens": 128,
    "prompt_version": "news-answer-v1-1a2b3c4d",
    "prompt": "Look at the image and answer the question.",
    "schema": {"type": "object", "required": ["answer", "rationale"]},
    "source": "demo/source",
    "adapter": {"adapter": "tiny", "model_id": "tiny/vlm"},
}


def test_provenance_version_0_reads_and_is_written_back_byte_for_byte(tmp_path):
    path = tmp_path / "answers_provenance.json"
    path.write_text(json.dumps(PROVENANCE, indent=2, default=str))  # the writer before this format
    before = path.read_bytes()
    provenance = read_provenance(path)
    assert provenance is not None and provenance.schema_version == 1 and provenance.schema_ == PROVENANCE["schema"]
    write_provenance(path, provenance)
    assert path.read_bytes() == before
    assert read_provenance(tmp_path / "none.json") is None


def test_judge_specs_version_0_read_and_are_written_back_byte_for_byte(tmp_path):
    spec = {"adapter": {"model_id": "j"}, "temperature": 0.0, "max_new_tokens": 64, "rubric_version": "judge-v1-x"}
    path = tmp_path / "j_judges.json"
    path.write_text(
        json.dumps({"j#0123456789": {**spec, "adapter_full": {"model_id": "j", "base_url": "u"}}}, indent=2)
    )
    before = path.read_bytes()
    specs = read_judge_specs(path)
    assert specs["j#0123456789"].identity() == spec and specs["j#0123456789"].schema_version == 1
    write_judge_specs(path, specs)
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "cls, data, key",
    [
        (NewsProvenance, {**PROVENANCE, "temperature": "0"}, "temperature"),
        (NewsProvenance, {k: v for k, v in PROVENANCE.items() if k != "source"}, "source"),
        (
            JudgeSpec,
            {"adapter": {}, "temperature": 0.0, "max_new_tokens": "64", "rubric_version": "r", "adapter_full": {}},
            "max_new_tokens",
        ),
    ],
)
def test_a_bad_provenance_or_judge_is_named(cls, data, key):
    with pytest.raises(FormatError) as e:
        cls.from_json(data, "f.json")
    assert e.value.key == key
