"""News answers and judgements: version-0 lines (no schema_version; the oldest judgements lack
answer_sha256) migrate; a bad line is named with its key."""

import pytest

from vignette_bench.formats.base import FormatError
from vignette_bench.formats.news import NewsAnswer, NewsJudgement

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
