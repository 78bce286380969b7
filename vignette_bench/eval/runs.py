"""The one run loader: read a RUN_DIR (its typed run record and its responses table, through RunFolder)
and say plainly what it lacks. Report, compare and leaderboard all read runs through `load_run`; it
sits below them (it imports only the runtime's RunFolder and the formats), so none imports another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from vignette_bench.errors import VignetteError
from vignette_bench.eval.runtime.folder import RunFolder
from vignette_bench.formats.responses import read_responses
from vignette_bench.formats.run_record import PARADIGMS, RecordError, RunRecord

# Columns the report needs (docs/FORMATS.md, "Responses"); the rest are optional.
REQUIRED = (
    "question_id",
    "paradigm",
    "subtask",
    "dimension",
    "context",
    "identity_left",
    "identity_right",
    "activity_left",
    "selected_identity",
    "candidates",
    "valid",
    "chose_left",
)


class RunError(VignetteError):
    """A run folder cannot be read; the message names the file and what to do."""


@dataclass(frozen=True)
class Run:
    path: Path
    name: str  # model id (or folder name) shown in tables
    responses: pd.DataFrame
    problems: tuple[str, ...] = field(default=())  # what is missing, in words
    record: RunRecord | None = None  # None when the folder has no run record


def load_run(run_dir: str | Path) -> Run:
    folder = RunFolder(run_dir)
    run_dir, parquet = folder.path, folder.responses_path
    if not run_dir.is_dir():
        raise RunError(f"{run_dir}: not a folder; pass the RUN_DIR written by `vignette run`")
    if not parquet.is_file():
        logs = folder.log_files()
        hint = (
            (
                f" ({len(logs)} log file(s) found: the run has not finished or was not merged; "
                "rerun `vignette run` with the same arguments to resume and write the parquet)"
            )
            if logs
            else ""
        )
        raise RunError(f"{parquet}: missing{hint}")
    record = None
    if folder.has_record():
        try:
            record = folder.read_record()  # older records are migrated; a bad one is named with its key
        except RecordError as e:
            raise RunError(str(e)) from None
    frame = read_responses(parquet)  # the one reader: ids unique, rows agree with their choice (ResponsesError)
    missing_cols = [c for c in REQUIRED if c not in frame.columns]
    if missing_cols:
        raise RunError(f"{parquet}: missing column(s) {missing_cols}; see docs/FORMATS.md (Responses)")
    problems = []
    if record is None:
        problems.append(f"{folder.record_path} is missing: model id, revision and settings are unknown")
    if frame.empty:
        problems.append(f"{folder.RESPONSES} has no rows: nothing was answered")
    else:
        valid = frame.groupby("paradigm")["valid"].sum()
        for p, n in valid.items():
            if n == 0:
                problems.append(f"{p}: every answer is invalid or a refusal — no selection to measure")
    return Run(run_dir, model_name(record, run_dir), frame, tuple(problems), record)


def index_digest(run: Run) -> str | None:
    """The sha256 of the render index a run asked about (it pins the images); None when unknown."""
    return run.record.dataset.index_sha256 if run.record is not None else None


def is_simulated(run: Run) -> bool:
    return run.record is not None and run.record.simulated


def placeholder_renders(record: RunRecord | None) -> bool:
    """True when a run answered placeholder renders: as recorded, or read from its source's index."""
    if record is None:
        return False
    if record.dataset.placeholder is not None:
        return record.dataset.placeholder
    if record.simulated:
        return True
    from vignette_bench.eval.runtime.plan import source_placeholder

    return bool(source_placeholder(record.dataset.source or record.settings.source))


def missing_paradigms(frame: pd.DataFrame) -> list[str]:
    """What the runs of one model lack, in words (checked over all of its runs together)."""
    present = set(frame["paradigm"]) if len(frame) else set()
    hint = {
        "stereotype": "a portraits run",
        "factuality": "an identity_contrast run",
        "perception": "an identity_contrast run",
        "decision": "an identity_contrast run",
    }
    return [f"no {p} questions (add {hint[p]} with --paradigms including {p})" for p in PARADIGMS if p not in present]


def model_name(record: RunRecord | None, run_dir: Path) -> str:
    if record is not None and record.model.model_id:
        return record.model.model_id
    id_ = record.model.extra.get("id") if record is not None else None  # an id under the shorter key
    return str(id_) if id_ else run_dir.name
