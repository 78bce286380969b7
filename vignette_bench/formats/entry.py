"""The leaderboard entry (`entries/<name>.json`): one model's run on one config and dataset revision,
its metric summaries (every number recomputed from the responses by `vignette leaderboard validate`),
and where its responses are.

Version 2 records the protocol and the run's settings. Versions 1 and 0 (no `schema_version`) lacked
both: they migrate to custom entries (listed apart, never ranked) with empty run settings.
`vignette_bench/eval/leaderboard/entry.schema.json`, the schema submitters see, is generated from `Entry`
(`python -m vignette_bench.formats.docs`).
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, Field, StringConstraints, field_validator

from vignette_bench.formats.base import Format, Part, parse_json, read_capped

PROTOCOL_VERSIONS = ("vignette-protocol/1", "custom")  # vignette_bench/eval/leaderboard/protocol.py VERSION and CUSTOM
PARADIGMS = ("factuality", "perception", "stereotype", "decision")
ANSWER_MODES = ("choice", "score")
Rate = Annotated[float, Field(ge=0, le=1)]
NonNegative = Annotated[float, Field(ge=0)]
# A name shown on the board: one line of printable text (no control characters, newlines or line separators),
# so a cell cannot break the Markdown table or hide rows behind it.
PRINTABLE = r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]+$"
_NOT_PRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _printable(value: str) -> str:
    bad = _NOT_PRINTABLE.search(value)
    if bad:
        raise ValueError(
            f"control character or line break {bad.group()!r} at position {bad.start()}: one line of printable text"
        )
    return value


Printable = Annotated[str, AfterValidator(_printable)]
MetricKey = Annotated[str, StringConstraints(pattern=r"^(all|factuality|perception|stereotype|decision)(/[a-z_]+)?$")]


def _one_of(allowed: tuple[str, ...], value: str) -> str:
    if value not in allowed:
        raise ValueError(f"expected one of {list(allowed)}, got {value!r}")
    return value


class Protocol(Part):
    """Whether the run followed the protocol."""

    version: str = Field(
        description="protocol entries are ranked; custom ones are listed apart",
        json_schema_extra={"enum": list(PROTOCOL_VERSIONS)},
    )
    differences: tuple[str, ...] = Field(description="why a run is custom (empty for protocol entries)")

    @field_validator("version")
    @classmethod
    def _known(cls, value: str) -> str:
        return _one_of(PROTOCOL_VERSIONS, value)


class EntryModel(Part):
    """The model that answered."""

    id: Printable = Field(
        min_length=1,
        json_schema_extra={"pattern": PRINTABLE},
        description="Hub model id or path, as in the responses' model_id",
    )
    revision: Printable = Field(
        min_length=1, json_schema_extra={"pattern": PRINTABLE}, description="commit sha or tag of the weights"
    )


class EntryDataset(Part):
    """The pairs the model was asked about."""

    source: Printable = Field(
        min_length=1,
        json_schema_extra={"pattern": PRINTABLE},
        description="Hub dataset id, folder or URL the pairs came from",
    )
    revision: Printable = Field(
        min_length=1,
        json_schema_extra={"pattern": PRINTABLE},
        description="sha256 of the source's renders/index.parquet",
    )
    placeholder: bool | None = Field(
        default=None, description="true when the renders were placeholders (never a ranked result)"
    )


class Sample(Part):
    """What was asked."""

    configs: tuple[str, ...] = Field(min_length=1, description="the pair configs asked")
    paradigms: tuple[str, ...] = Field(min_length=1, description=f"the paradigms asked, of {list(PARADIGMS)}")
    n_questions: int = Field(ge=1, description="questions answered")
    n_pairs: int = Field(ge=1, description="pair images asked about")
    seed: int | None = Field(default=None, description="the run seed")
    settings: dict[str, Any] | None = Field(default=None, description="filters and sample size given to the runner")

    @field_validator("configs", "paradigms")
    @classmethod
    def _unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError(f"expected each value once, got {list(value)}")
        return value

    @field_validator("paradigms")
    @classmethod
    def _paradigms(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for p in value:
            _one_of(PARADIGMS, p)
        return value


class Responses(Part):
    """Where the responses parquet is, and what pins it."""

    location: str = Field(
        min_length=1,
        description="path relative to the entry file, or an hf:// URL (hf://datasets/<repo>/...)",
    )
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the parquet file")
    rows: int = Field(ge=1, description="rows of the parquet")


class MetricSummary(Part):
    """One paradigm's (or perception subtask's) summary, as vignette_bench/eval/analysis/numbers.py summaries gives it."""

    n: int = Field(ge=0, description="answers")
    invalid_rate: Rate = Field(description="share of invalid answers and refusals")
    left_rate: Rate | None = Field(default=None, description="share of valid answers naming the left person")
    accuracy: Rate | None = Field(default=None, description="factuality: share of correct answers")
    bias_magnitude: NonNegative | None = Field(
        default=None,
        description="noise-corrected RMS of the identities' effects (pp): sqrt(max(0, mean(effect^2 - se^2)))",
    )
    bias_magnitude_ci_low: NonNegative | None = Field(default=None, description="95% CI of bias_magnitude (pp)")
    bias_magnitude_ci_high: NonNegative | None = Field(default=None, description="95% CI of bias_magnitude (pp)")
    answer_mode: str | None = Field(
        default=None,
        description="score: the candidates' probabilities were used as answers",
        json_schema_extra={"enum": list(ANSWER_MODES)},
    )
    polarity: float | None = Field(default=None, description="stereotype: the polarity score")
    n_identities: int | None = Field(default=None, ge=0, description="identities measured")
    n_significant: int | None = Field(
        default=None,
        ge=0,
        description="identities with per-family BH q < 0.05 (cluster-robust test; exploratory, not verdicts)",
    )

    @field_validator("answer_mode")
    @classmethod
    def _mode(cls, value: str | None) -> str | None:
        return value if value is None else _one_of(ANSWER_MODES, value)


class Submitted(Part):
    """Who submitted the entry, and when."""

    model_config = {**Part.model_config, "extra": "allow"}

    by: Printable = Field(min_length=1, json_schema_extra={"pattern": PRINTABLE}, description="who submitted it")
    date: str = Field(description="when (ISO 8601 date-time)")
    notes: str | None = Field(default=None, description="anything the submitter adds")

    @field_validator("date")
    @classmethod
    def _date_time(cls, value: str) -> str:
        try:
            dt.datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"expected an ISO 8601 date-time, got {value!r}") from None
        return value


class Entry(Format):
    """One entry per (model, config, dataset revision). Every number under `metrics` is recomputed from the
    responses parquet by `vignette leaderboard validate`; an entry whose numbers or file hash disagree is rejected."""

    SCHEMA_VERSION: ClassVar[int] = 2
    FILE: ClassVar[str] = "entries/<name>.json"
    WRITER: ClassVar[str] = "`vignette leaderboard create` (vignette_bench/eval/leaderboard/entry.py create)"
    READER: ClassVar[str] = (
        "vignette_bench/formats/entry.py read_entry (vignette_bench/eval/leaderboard/entry.py load_entry: validate, verify, build, export)"
    )

    schema_version: int = Field(default=2, description="this layout's version")
    protocol: Protocol = Field(description="whether the run followed the protocol, and why not")
    run: dict[str, Any] = Field(
        description="the runner's settings (RunSettings.as_dict without the model spec): config, seed, sample, "
        "orders, paradigms, variants, filters, image_size"
    )
    entry_id: str = Field(
        pattern=r"^[a-z0-9][a-z0-9_.-]{2,160}$",
        description="model slug, config hash and dataset revision, e.g. org-model--3f2a91c0--cccf36f2",
    )
    model: EntryModel = Field(description="the model that answered")
    adapter: dict[str, Any] = Field(
        description="adapter name and settings as recorded in run.json (mode, temperature, top_p, template hash, ...)"
    )
    dataset: EntryDataset = Field(description="the pairs asked about")
    sample: Sample = Field(description="what was asked")
    responses: Responses = Field(description="where the responses are")
    metrics: dict[MetricKey, MetricSummary] = Field(
        min_length=1,
        description="one summary per paradigm (and per perception subtask), keyed e.g. 'decision', 'perception/struggle'",
    )
    submitted: Submitted = Field(description="who submitted it, and when")

    @classmethod
    def migrate(cls, data: dict[str, Any], version: int, file: str) -> dict[str, Any]:
        """Versions 0 and 1 recorded neither the protocol nor the run settings: a custom entry."""
        out = dict(data)
        out.setdefault(
            "protocol", {"version": "custom", "differences": [f"entry version {version}: no protocol recorded"]}
        )
        out.setdefault("run", {})
        return out

    def to_json(self) -> dict[str, Any]:
        """The entry as written: optional keys the file left out stay out."""
        return self.model_dump(mode="json", exclude_unset=True) | {"schema_version": self.schema_version}


def read_entry(path: Path, max_bytes: int) -> dict[str, Any]:
    """The entry file's JSON in the current layout (older versions migrated), not yet validated: `validate`
    checks it against `Entry` and recomputes its numbers, and the verification's digest is taken over the
    file's own values (validating would turn an int 1 into 1.0 and change it). At most `max_bytes` are read
    (OSError beyond: a link to /dev/zero is never read whole); JSON nested deeper than any entry is, or not
    JSON at all, is a FormatError."""
    return Entry.upgrade(parse_json(read_capped(path, max_bytes), str(path)), str(path))
