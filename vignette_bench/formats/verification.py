"""The verification record (`verifications/<entry_id>.json` beside a leaderboard's entries folder):
what `vignette leaderboard verify` found when it re-asked a random subset of an entry's questions.

Version 2 adds what makes a record impossible to write by hand: the model id and revision the re-asking
model reported, and an Ed25519 signature by a maintainer key (`signed_by`: the key's id; `signature`:
over every other field, vignette_bench/eval/leaderboard/signing.py). The board shows "verified" only
for a valid signature by a key its `maintainers.json` lists. Version 1 is the layout `verify` always
wrote, plus `schema_version`; a file without the key is version 0. Both migrate unsigned (their
signature fields null), so they read but verify nothing. Version 3 adds what the submitter cannot steer:
`subset_seed` (drawn at random when `verify` runs; the subset is redrawn from it by anyone) and
`endpoint` (where the model answered: on the maintainer's machine, or a provider's own API on the
allow-list). Version 2 records drew the subset from the entry's digest, which a submitter can grind:
they migrate with both null and verify nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, field_validator

from vignette_bench.formats.base import Format, Part, read_capped

MODES = ("greedy", "score", "sampled")
KEY_ID_PATTERN = r"^[0-9a-f]{16}$"


class Mismatch(Part):
    """One re-asked question whose answer differed from the recorded one."""

    question_id: str = Field(description="the question's id")
    recorded: str | None = Field(description="the choice in the entry's responses (null: invalid)")
    re_asked: str | None = Field(description="the choice the model gave when re-asked (null: invalid)")


class Verification(Format):
    """What re-asking a random subset of an entry's questions found (vignette_bench/eval/leaderboard/verify.py)."""

    SCHEMA_VERSION: ClassVar[int] = 3
    FILE: ClassVar[str] = "verifications/<entry_id>.json"
    WRITER: ClassVar[str] = "`vignette leaderboard verify` (vignette_bench/eval/leaderboard/verify.py)"
    READER: ClassVar[str] = (
        "vignette_bench/formats/verification.py read_verification (verify.verification_status: the board and `vignette leaderboard export`)"
    )

    schema_version: int = Field(default=3, description="this layout's version")
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
    model_id: str | None = Field(
        default=None, description="the model id the re-asking model reported (equal to the entry's model.id)"
    )
    model_revision: str | None = Field(
        default=None, description="the revision the re-asking model reported (equal to the entry's model.revision)"
    )
    subset_seed: int | None = Field(
        default=None,
        ge=0,
        description="the seed drawn at random when verify ran (not from the entry): the re-asked questions are "
        "numpy.random.default_rng(subset_seed).choice(sorted question ids, n_checked, replace=False); "
        "null in records before version 3 (never shown as verified)",
    )
    endpoint: str | None = Field(
        default=None,
        description='where the model answered: "local" (weights or a reference model run by the maintainer) or a '
        "provider's base URL on verify's allow-list; null in records before version 3",
    )
    signed_by: str | None = Field(
        default=None,
        pattern=KEY_ID_PATTERN,
        description="id of the maintainer key that signed (sha256 of the raw Ed25519 public key, first 16 hex digits)",
    )
    signature: str | None = Field(
        default=None,
        description="base64 Ed25519 signature over every other field (null: unsigned, never shown as verified)",
    )

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, value: str) -> str:
        if value not in MODES:
            raise ValueError(f"expected one of {list(MODES)}, got {value!r}")
        return value

    @classmethod
    def migrate(cls, data: dict[str, Any], version: int, file: str) -> dict[str, Any]:
        """Version 0 is version 1 without the key; versions 0 and 1 were never signed: the new fields are null."""
        out = dict(data)
        for key in ("model_id", "model_revision", "signed_by", "signature", "subset_seed", "endpoint"):
            out.setdefault(key, None)
        return out


class MaintainerKey(Part):
    """One maintainer's public key."""

    name: str = Field(min_length=1, description="who holds the private half")
    public_key: str = Field(pattern=r"^[A-Za-z0-9+/]{43}=$", description="the raw 32-byte Ed25519 public key, base64")


class MaintainerKeys(Format):
    """The public keys whose signatures make a verification count (`vignette leaderboard build` reads them).
    The private halves are never committed; `vignette leaderboard keygen` makes a pair (docs/leaderboard.md)."""

    SCHEMA_VERSION: ClassVar[int] = 1
    FILE: ClassVar[str] = "maintainers.json (beside the entries and verifications folders)"
    WRITER: ClassVar[str] = "a maintainer, by hand (`vignette leaderboard keygen` prints the line to add)"
    READER: ClassVar[str] = (
        "vignette_bench/formats/verification.py read_maintainer_keys (signing.load_keys: build, export)"
    )

    schema_version: int = Field(default=1, description="this layout's version")
    keys: tuple[MaintainerKey, ...] = Field(description="the maintainers' public keys")

    @classmethod
    def migrate(cls, data: dict[str, Any], version: int, file: str) -> dict[str, Any]:
        """A hand-written file may leave out `schema_version` (version 0): the same layout."""
        return dict(data)


def read_verification(path: Path) -> Verification:
    """A verification record, migrated; FormatError names the file and key, OSError when it cannot be read."""
    return Verification.from_json(Path(path).read_bytes(), str(path))


def write_verification(path: Path, record: Verification) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record.dumps())
    return path


def read_maintainer_keys(path: Path, max_bytes: int) -> MaintainerKeys:
    """A maintainers.json, read only up to `max_bytes` (OSError beyond); FormatError when it does not match."""
    return MaintainerKeys.from_json(read_capped(path, max_bytes), str(path))
