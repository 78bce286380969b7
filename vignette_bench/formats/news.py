"""The news subset's files: an answer (RUN_DIR/answers.jsonl, one line per answered item), the settings
the answers were made with (RUN_DIR/answers_provenance.json), a judgement (the judge's jsonl, one line per
answer and rubric dimension) and the judges that made them (the judgements file's `_judges.json`).

The two JSONL files are append-only logs (written by vignette_bench/eval/runtime/runlog.py `PartWriter`,
read by vignette_bench/formats/jsonl.py); each line is one record. Version 1 adds `schema_version` to each line; lines
without it (every file written before it) are version 0 and read unchanged, except that a version-0
judgement written before `answer_sha256` existed reads it as "" (results then match it to any answer of
its item, as before). The two JSON files are written without `schema_version` (`WRITES_VERSION`), as they
always were: version 0 is version 1.

`read_answers`, `read_judgements`, `read_provenance`/`write_provenance` and
`read_judge_specs`/`write_judge_specs` are the one reader (and writer) of each.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from vignette_bench.formats.base import Format, FormatError, parse_json
from vignette_bench.formats.jsonl import scan_part


class NewsAnswer(Format):
    """One line of answers.jsonl: a model's open-ended answer to one news item, or why it failed."""

    SCHEMA_VERSION: ClassVar[int] = 1
    FILE: ClassVar[str] = "RUN_DIR/answers.jsonl"
    WRITER: ClassVar[str] = "`vignette news answer` (vignette_bench/eval/news/answer.py)"
    READER: ClassVar[str] = "vignette_bench/formats/news.py read_answers (the judge, results, the page, the demo)"

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
    READER: ClassVar[str] = "vignette_bench/formats/news.py read_judgements (the judge's resume, results, the page)"

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


class NewsProvenance(Format):
    """What a news run's answers were made with; a rerun into the same folder must use the same settings."""

    SCHEMA_VERSION: ClassVar[int] = 1
    WRITES_VERSION: ClassVar[bool] = False
    FILE: ClassVar[str] = "RUN_DIR/answers_provenance.json"
    WRITER: ClassVar[str] = "`vignette news answer` (vignette_bench/eval/news/answer.py), on a folder's first run"
    READER: ClassVar[str] = "vignette_bench/formats/news.py read_provenance (`vignette news answer` on a rerun)"

    schema_version: int = Field(default=1, description="this layout's version (not written: version 0 is version 1)")
    model_id: str = Field(description="the answering model")
    temperature: float = Field(description="the answering temperature")
    top_p: float = Field(description="the answering top-p")
    max_new_tokens: int = Field(description="the answer's token budget")
    prompt_version: str = Field(description="answer.PROMPT_VERSION")
    prompt: str = Field(description="the prompt template")
    schema_: dict[str, Any] = Field(alias="schema", description="the answer's JSON schema, sent with every request")
    source: str = Field(description="the news source answered")
    adapter: dict[str, Any] = Field(description="the adapter's provenance, secrets redacted")

    # `schema` is a BaseModel attribute: the field is `schema_` in Python, `schema` in the file
    model_config = {**Format.model_config, "populate_by_name": True}


class JudgeSpec(Format):
    """One judge of a judgements file, under its judge id: what identifies it (hashed into the id) and its
    adapter's full provenance."""

    SCHEMA_VERSION: ClassVar[int] = 1
    WRITES_VERSION: ClassVar[bool] = False
    FILE: ClassVar[str] = "JUDGEMENTS_judges.json (an object of judge id -> this)"
    WRITER: ClassVar[str] = "`vignette news judge` (vignette_bench/eval/news/judge.py), each judge added as it starts"
    READER: ClassVar[str] = "vignette_bench/formats/news.py read_judge_specs (`vignette news judge`)"

    schema_version: int = Field(default=1, description="this layout's version (not written: version 0 is version 1)")
    adapter: dict[str, Any] = Field(description="the adapter's provenance less where and how it is reached")
    temperature: float = Field(description="the judge's temperature (0)")
    max_new_tokens: int = Field(description="the judgement's token budget")
    rubric_version: str = Field(description="judge.RUBRIC_VERSION")
    adapter_full: dict[str, Any] = Field(description="the adapter's whole provenance, secrets redacted")

    def identity(self) -> dict[str, Any]:
        """What the judge id hashes: every key but `adapter_full`, as `judge_spec` built it."""
        return {k: v for k, v in self._plain().items() if k != "adapter_full"}

    def _plain(self) -> dict[str, Any]:
        return self.model_dump(mode="python", exclude={"schema_version"})


def _dumps(obj: Any) -> str:
    # default=str: an adapter's provenance may hold a value JSON has no type for; it is written as text
    return json.dumps(obj, indent=2, default=str)


def read_answers(path: str | Path) -> list[NewsAnswer]:
    """The rows of one answers.jsonl; for an item answered twice (a retry) the last row wins."""
    rows: dict[str, NewsAnswer] = {}
    for n, row in enumerate(scan_part(Path(path)).rows, 1):
        record = NewsAnswer.from_json(row, f"{path}: line {n}")  # older lines migrate; a bad one is named
        rows[record.item_id] = record
    return list(rows.values())


def read_judgements(path: str | Path) -> list[NewsJudgement]:
    """Rows of a judgements file (none when it does not exist yet); where a key was judged again
    (--retry-invalid) the last row wins."""
    path = Path(path)
    rows: dict[str, NewsJudgement] = {}
    for n, row in enumerate(scan_part(path).rows if path.exists() else [], 1):
        record = NewsJudgement.from_json(row, f"{path}: line {n}")  # older lines migrate
        rows[record.key] = record
    return list(rows.values())


def read_provenance(path: Path) -> NewsProvenance | None:
    """A run folder's answers_provenance.json; None before the folder's first answer."""
    return NewsProvenance.from_json(path.read_bytes(), str(path)) if path.exists() else None


def write_provenance(path: Path, provenance: NewsProvenance) -> Path:
    path.write_text(_dumps(provenance.model_dump(mode="python", by_alias=True, exclude={"schema_version"})))
    return path


def read_judge_specs(path: Path) -> dict[str, JudgeSpec]:
    """The judges of a judgements file by judge id; empty before its first judge."""
    if not path.exists():
        return {}
    data = parse_json(path.read_bytes(), str(path))
    if not isinstance(data, dict):
        raise FormatError(str(path), None, f"expected a JSON object of judge id -> judge, got {type(data).__name__}")
    return {judge_id: JudgeSpec.from_json(spec, f"{path}: {judge_id}") for judge_id, spec in data.items()}


def write_judge_specs(path: Path, specs: dict[str, JudgeSpec]) -> Path:
    path.write_text(_dumps({judge_id: spec._plain() for judge_id, spec in specs.items()}))
    return path
