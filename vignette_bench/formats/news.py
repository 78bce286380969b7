"""The news subset's JSONL rows: an answer (RUN_DIR/answers.jsonl, one line per answered item) and
a judgement (the judge's jsonl, one line per answer and rubric dimension).

Both files are append-only logs (vignette_bench/eval/runtime/runlog.py); each line is one record. Version 1 adds
`schema_version` to each line; lines without it (every file written before it) are version 0 and
read unchanged, except that a version-0 judgement written before `answer_sha256` existed reads it
as "" (results then match it to any answer of its item, as before).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from vignette_bench.formats.base import Format


class NewsAnswer(Format):
    """One line of answers.jsonl: a model's open-ended answer to one news item, or why it failed."""

    SCHEMA_VERSION: ClassVar[int] = 1
    FILE: ClassVar[str] = "RUN_DIR/answers.jsonl"
    WRITER: ClassVar[str] = "`vignette news answer` (vignette_bench/eval/news/answer.py)"
    READER: ClassVar[str] = "vignette_bench/eval/news/answer.py read_answers (the judge, results, the demo)"

    schema_version: int = Field(default=1, description="this layout's version")
    item_id: str = Field(description="the news item's id")
    attribute: str = Field(description="the item's attribute (what the question is about)")
    model_id: str = Field(description="the answering model")
    temperature: float = Field(description="the answering temperature")
    prompt_version: str = Field(description="answer.PROMPT_VERSION: a digest of the prompt and its JSON schema")
    image_sha256: str = Field(description="sha256 of the item's image")
    raw: str = Field(description="the model's reply as given")
    answer: str | None = Field(description="the parsed answer; null when invalid")
    rationale: str | None = Field(description="the parsed rationale; null when invalid")
    valid: bool = Field(description="whether the reply parsed as a JSON object with an answer and a rationale")
    error: str | None = Field(description="why the reply is invalid; null when valid")
    placeholder: bool = Field(description="whether the item's image is a drawn placeholder")

    @classmethod
    def migrate(cls, data: dict[str, Any], version: int, file: str) -> dict[str, Any]:
        """Version 0 is version 1 without the key."""
        return dict(data)


class NewsJudgement(Format):
    """One line of the judgements file (`vignette news judge --out JUDGEMENTS.jsonl`): a judge's score of one
    answer on one rubric dimension, or a failure."""

    SCHEMA_VERSION: ClassVar[int] = 1
    FILE: ClassVar[str] = "JUDGEMENTS.jsonl"
    WRITER: ClassVar[str] = "`vignette news judge` (vignette_bench/eval/news/judge.py)"
    READER: ClassVar[str] = "vignette_bench/eval/news/judge.py read_judgements (the judge's resume, results)"

    schema_version: int = Field(default=1, description="this layout's version")
    key: str = Field(description="cache key: judge, rubric, dimension, item and the exact answer")
    judge_id: str = Field(description="the judge's identity (model and decoding settings, hashed)")
    rubric_version: str = Field(description="judge.RUBRIC_VERSION")
    dimension: str = Field(description="the rubric dimension scored")
    item_id: str = Field(description="the news item's id")
    attribute: str = Field(description="the item's attribute")
    model_id: str = Field(description="the answering model")
    temperature: float = Field(description="the answering temperature")
    score: float | None = Field(description="0-100; null when the judgement failed")
    snippet: str | None = Field(description="the judge's supporting snippet; null when failed")
    valid: bool = Field(description="whether the judge's reply parsed with a finite score in [0, 100]")
    error: str | None = Field(description="why the judgement failed; null when valid")
    raw: str = Field(description="the judge's reply as given")
    answer_sha256: str = Field(
        default="", description='judge.answer_digest of the exact answer judged; "" in files written before it'
    )

    @classmethod
    def migrate(cls, data: dict[str, Any], version: int, file: str) -> dict[str, Any]:
        """Version 0 is version 1 without the key; the oldest files also lack answer_sha256."""
        out = dict(data)
        out.setdefault("answer_sha256", "")
        return out
