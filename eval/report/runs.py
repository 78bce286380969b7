"""Read a RUN_DIR (responses.parquet + run.json) and say plainly what it lacks."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

# Columns the report needs (docs/FORMATS.md, "Responses"); the rest are optional.
REQUIRED = ("question_id", "paradigm", "subtask", "dimension", "context", "identity_left", "identity_right",
            "activity_left", "selected_identity", "candidates", "valid", "chose_left")
PARADIGMS = ("factuality", "perception", "stereotype", "decision")


class RunError(ValueError):
    """A run folder cannot be read; the message names the file and what to do."""


@dataclass(frozen=True)
class Run:
    path: Path
    name: str  # model id (or folder name) shown in tables
    info: dict
    responses: pd.DataFrame
    problems: tuple[str, ...] = field(default=())  # what is missing, in words


def load_run(run_dir: str | Path) -> Run:
    run_dir = Path(run_dir)
    parquet = run_dir / "responses.parquet"
    if not run_dir.is_dir():
        raise RunError(f"{run_dir}: not a folder; pass the RUN_DIR written by `python -m eval.run`")
    if not parquet.is_file():
        logs = sorted((run_dir / "log").glob("*.jsonl")) if (run_dir / "log").is_dir() else []
        hint = (f" ({len(logs)} log file(s) found: the run has not finished or was not merged; "
                "rerun `python -m eval.run` with the same arguments to resume and write the parquet)") if logs else ""
        raise RunError(f"{parquet}: missing{hint}")
    info = {}
    if (run_dir / "run.json").is_file():
        try:
            info = json.loads((run_dir / "run.json").read_text())
        except json.JSONDecodeError as e:
            raise RunError(f"{run_dir / 'run.json'}: not valid JSON ({e})") from None
    frame = pd.read_parquet(parquet)
    missing_cols = [c for c in REQUIRED if c not in frame.columns]
    if missing_cols:
        raise RunError(f"{parquet}: missing column(s) {missing_cols}; see docs/FORMATS.md (Responses)")
    problems = []
    if info == {}:
        problems.append(f"{run_dir / 'run.json'} is missing: model id, revision and settings are unknown")
    if frame.empty:
        problems.append("responses.parquet has no rows: nothing was answered")
    else:
        valid = frame.groupby("paradigm")["valid"].sum()
        for p, n in valid.items():
            if n == 0:
                problems.append(f"{p}: every answer is invalid or a refusal — no selection to measure")
    return Run(run_dir, model_name(info, run_dir), info, frame, tuple(problems))


def placeholder_renders(info: dict) -> bool:
    """True when a run answered placeholder renders: as recorded, or read from its source's index."""
    ds = info.get("dataset") if isinstance(info.get("dataset"), dict) else {}
    if "placeholder" in ds:
        return bool(ds["placeholder"])
    if info.get("simulated"):
        return True
    source = ds.get("source") or (info.get("settings") or {}).get("source")
    if not source:
        return False
    try:
        import fsspec

        with fsspec.open(f"{str(source).rstrip('/')}/renders/index.parquet", "rb") as f:
            return bool(pd.read_parquet(f, columns=["placeholder"])["placeholder"].any())
    except Exception:  # a Hub id offline, or a moved folder: unknown, so not claimed
        return False


def missing_paradigms(frame: pd.DataFrame) -> list[str]:
    """What the runs of one model lack, in words (checked over all of its runs together)."""
    present = set(frame["paradigm"]) if len(frame) else set()
    hint = {"stereotype": "a portraits run", "factuality": "an identity_contrast run",
            "perception": "an identity_contrast run", "decision": "an identity_contrast run"}
    return [f"no {p} questions (add {hint[p]} with --paradigms including {p})" for p in PARADIGMS if p not in present]


def model_name(info: dict, run_dir: Path) -> str:
    model = info.get("model")
    if isinstance(model, dict):  # runner: {"model_id", "model_revision", ...}
        for key in ("model_id", "id"):
            if model.get(key):
                return str(model[key])
    for key in ("model_id", "model"):
        if isinstance(info.get(key), str):
            return info[key]
    return run_dir.name
