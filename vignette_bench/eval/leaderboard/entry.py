"""Leaderboard entries: make one from a RUN_DIR, and validate one by recomputing every number.

An entry is trusted only as far as it can be recomputed: `validate` checks the JSON Schema,
that every number is finite, that the responses file matches its sha256, that the responses
belong to the model the entry names, and that each metric summary equals what the metric
modules give on those responses (`report.numbers.summaries`: the noise-corrected bias magnitude
with its CI, the answer mode, rates and counts). Every failure names the field and the reason.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fsspec
import jsonschema
import pandas as pd

from vignette_bench.eval.report.numbers import summaries
from vignette_bench.eval.report.runs import load_run, placeholder_renders
from vignette_bench.eval.runtime.folder import RunFolder

SCHEMA_PATH = Path(__file__).resolve().parent / "entry.schema.json"
REL_TOL = 1e-9  # recomputation is deterministic; this only absorbs float formatting
ABS_TOL = 1e-9


class EntryError(ValueError):
    """An entry is rejected; ``field`` is the JSON path of the offending value."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class Validated:
    entry: dict
    responses: pd.DataFrame


def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def config_hash(adapter: dict, sample: dict) -> str:
    blob = json.dumps({"adapter": adapter, "sample": sample}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


def create(
    run_dir: str | Path,
    *,
    by: str,
    location: str | None = None,
    entry_path: Path | None = None,
    date: str | None = None,
) -> dict:
    """An entry for one finished run. ``location`` defaults to the parquet's path relative to
    ``entry_path`` (or absolute); publish the parquet and pass its URL for a pull request."""
    run = load_run(run_dir)
    parquet = RunFolder(run.path).responses_path
    if run.responses.empty:
        raise EntryError("responses", f"{parquet} has no rows; nothing to enter")
    record = run.record  # None when the run folder has no record: the responses alone then say who answered
    # the adapter's provenance less its id and revision, which the entry names on their own
    model = record.model.to_json() if record else {}
    model_id = model.pop("model_id", None) or model.pop("id", None) or _one(run.responses, "model_id", "model.id")
    revision = str(model.pop("model_revision", None) or model.pop("revision", None) or "unknown")
    settings = record.settings.as_dict() if record else {}
    adapter = {**model, "variants": settings.get("variants"), "template_hash": record.template_hash if record else None}
    source = (record.dataset.source or record.settings.source if record else "") or "unknown"
    ds_rev = (record.dataset.pinned_revision if record else None) or "unknown"  # the runner's: the index's sha256
    r = run.responses
    sample = {
        "configs": sorted(set(r["config"])) if "config" in r else ["unknown"],
        "paradigms": sorted(set(r["paradigm"])),
        "n_questions": int(len(r)),
        "n_pairs": int(r["pair_id"].nunique()) if "pair_id" in r else int(len(r)),
        "seed": record.settings.seed if record else None,
        "settings": {k: settings[k] for k in ("sample", "filters", "config") if k in settings},
    }
    if location is None:
        location = _relative(parquet, entry_path.parent) if entry_path else str(parquet.resolve())
    entry = {
        "schema_version": 1,
        "entry_id": f"{slug(model_id)}--{config_hash(adapter, sample)}--{slug(ds_rev)[:40]}",
        "model": {"id": model_id, "revision": revision},
        "adapter": adapter,
        "dataset": {"source": source, "revision": ds_rev, "placeholder": placeholder_renders(record)},
        "sample": sample,
        "responses": {"location": location, "sha256": sha256_bytes(parquet.read_bytes()), "rows": int(len(r))},
        "metrics": summaries(r),
        "submitted": {"by": by, "date": date or dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()},
    }
    check_schema(entry)
    check_finite(entry)
    return entry


def _one(frame: pd.DataFrame, column: str, field: str) -> str:
    values = set(frame[column]) if column in frame else set()
    if len(values) != 1:
        raise EntryError(
            field, f"responses hold {len(values)} values of {column!r} ({sorted(values)[:3]}); one run = one model"
        )
    return str(values.pop())


def _relative(path: Path, base: Path) -> str:
    import os

    return os.path.relpath(path.resolve(), base.resolve())


def check_schema(entry: Any) -> None:
    validator = jsonschema.Draft202012Validator(schema(), format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(entry), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        raise EntryError(_path(e.absolute_path) or "(entry)", f"schema: {e.message}")


def _path(parts) -> str:
    return ".".join(str(p) for p in parts)


def check_finite(value: Any, where: str = "") -> None:
    """Reject NaN and ±inf anywhere (JSON allows neither, Python's json writes both)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise EntryError(where or "(entry)", f"non-finite number {value!r}")
    if isinstance(value, dict):
        for k, v in value.items():
            check_finite(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_finite(v, f"{where}.{i}")


def load_entry(path: str | Path) -> dict:
    path = Path(path)
    try:
        # parse_constant rejects NaN/Infinity literals with the field still unknown: name the file
        return json.loads(path.read_text(), parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise EntryError("(entry)", f"{path}: not valid JSON ({e})") from None


def _reject_constant(name: str):
    raise EntryError("(entry)", f"non-finite number {name} in the JSON text")


def read_responses(entry: dict, entry_path: Path) -> bytes:
    loc = entry["responses"]["location"]
    url = loc if "://" in loc or Path(loc).is_absolute() else str((entry_path.parent / loc).resolve())
    try:
        with fsspec.open(url, "rb") as f:
            return f.read()
    except (FileNotFoundError, OSError) as e:
        raise EntryError("responses.location", f"cannot read {url!r}: {e}") from None


def validate(path: str | Path) -> Validated:
    path = Path(path)
    entry = load_entry(path)
    check_finite(entry)
    check_schema(entry)
    data = read_responses(entry, path)
    actual = sha256_bytes(data)
    if actual != entry["responses"]["sha256"]:
        raise EntryError(
            "responses.sha256",
            f"file at {entry['responses']['location']!r} has sha256 {actual}, "
            f"entry says {entry['responses']['sha256']}: the responses changed",
        )
    import io

    frame = pd.read_parquet(io.BytesIO(data), use_threads=False)  # threaded in-memory reads abort pyarrow 26 at exit
    if len(frame) != entry["responses"]["rows"]:
        raise EntryError("responses.rows", f"entry says {entry['responses']['rows']}, file has {len(frame)}")
    if "model_id" in frame:
        models = set(frame["model_id"])
        if models != {entry["model"]["id"]}:
            raise EntryError(
                "model.id", f"entry names {entry['model']['id']!r}, responses were answered by {sorted(models)}"
            )
    sample = entry["sample"]
    checks = {
        "sample.n_questions": (sample["n_questions"], len(frame)),
        "sample.paradigms": (sorted(sample["paradigms"]), sorted(set(frame["paradigm"]))),
    }
    if "pair_id" in frame:
        checks["sample.n_pairs"] = (sample["n_pairs"], int(frame["pair_id"].nunique()))
    if "config" in frame:
        checks["sample.configs"] = (sorted(sample["configs"]), sorted(set(frame["config"])))
    for field, (claimed, real) in checks.items():
        if claimed != real:
            raise EntryError(field, f"entry says {claimed!r}, responses give {real!r}")
    compare(entry["metrics"], summaries(frame), "metrics")
    return Validated(entry, frame)


def compare(claimed: Any, real: Any, where: str) -> None:
    """Every claimed number must equal the recomputed one; keys must match both ways."""
    if isinstance(real, dict):
        if not isinstance(claimed, dict):
            raise EntryError(where, f"expected an object, entry has {claimed!r}")
        for k in sorted(set(claimed) | set(real)):
            if k not in real:
                raise EntryError(f"{where}.{k}", "not computed from the responses (remove it)")
            if k not in claimed:
                raise EntryError(f"{where}.{k}", f"missing; the responses give {real[k]!r}")
            compare(claimed[k], real[k], f"{where}.{k}")
        return
    if real is None or claimed is None or isinstance(real, (bool, str)):
        if claimed != real:
            raise EntryError(where, f"entry says {claimed!r}, responses give {real!r}")
        return
    if isinstance(real, int) and not isinstance(claimed, bool) and isinstance(claimed, int):
        if claimed != real:
            raise EntryError(where, f"entry says {claimed}, responses give {real}")
        return
    if not isinstance(claimed, (int, float)) or isinstance(claimed, bool):
        raise EntryError(where, f"entry says {claimed!r}, expected a number ({real!r})")
    if not math.isclose(claimed, real, rel_tol=REL_TOL, abs_tol=ABS_TOL):
        raise EntryError(where, f"entry says {claimed!r}, responses give {real!r}")


def write_entry(entry: dict, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entry, indent=2, allow_nan=False) + "\n")
    return path
