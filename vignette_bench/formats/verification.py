"""The verification record (`verifications/<entry_id>.json` beside a leaderboard's entries folder):
what `vignette leaderboard verify` found when it re-asked a random subset of an entry's questions.

Version 1 is the layout `verify` always wrote, plus `schema_version`; a file without the key
(every one written before it existed) is version 0 and reads unchanged.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, field_validator

from vignette_bench.formats.base import Format, Part

MODES = ("greedy", "score", "sampled")


class Mismatch(Part):
    """One re-asked question whose answer differed from the recorded one."""

    question_id: str = Field(description="the question's id")
    recorded: str | None = Field(description="the choice in the entry's responses (null: invalid)")
    re_asked: str | None = Field(description="the choice the model gave when re-asked (null: invalid)")


class Verification(Format):
    """What re-asking a random subset of an entry's questions found (vignette_bench/eval/leaderboard/verify.py)."""

    SCHEMA_VERSION: ClassVar[int] = 1
    FILE: ClassVar[str] = "verifications/<entry_id>.json"
    WRITER: ClassVar[str] = "`vignette leaderboard verify` (vignette_bench/eval/leaderboard/verify.py)"
    READER: ClassVar[str] = "verify.load_verification (the board and `vignette leaderboard export`)"

    schema_version: int = Field(default=1, description="this layout's version")
    entry_id: str = Field(description="the entry verified")
    entry_digest: str = Field(
        description="sha256 of the entry without responses.location: the verification holds only while it matches"
    )
    model_spec: str = Field(description="the model spec that was re-asked")
    mode: str = Field(description="how answers were compared", json_schema_extra={"enum": list(MODES)})
    n_checked: int = Field(description="questions re-asked")
    n_agreed: int = Field(description="re-asked answers that agree with the recorded ones")
    agreement: float = Field(description="n_agreed / n_checked")
    max_prob_diff: float | None = Field(description="score mode: the largest probability difference")
    prob_tol: float | None = Field(description="score mode: the per-probability tolerance used")
    near_tie_flips: int = Field(description="score mode: choices that flipped on a recorded near-tie (agreeing)")
    p_value: float | None = Field(description="sampled mode: binomial test of agreement against chance")
    passed: bool = Field(description="whether the entry passed")
    reason: str = Field(description="the outcome in words")
    date: str = Field(description="when (UTC, ISO 8601)")
    hardware: str = Field(description="machine, python, GPU and torch of the re-asking run")
    mismatches: tuple[Mismatch, ...] = Field(description="up to 10 disagreeing answers")

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, value: str) -> str:
        if value not in MODES:
            raise ValueError(f"expected one of {list(MODES)}, got {value!r}")
        return value

    @classmethod
    def migrate(cls, data: dict[str, Any], version: int, file: str) -> dict[str, Any]:
        """Version 0 is version 1 without the key."""
        return dict(data)
