"""Leaderboard entries: make one from a RUN_DIR, and validate one by recomputing every number.

An entry is trusted only as far as it can be recomputed: `validate` checks the typed entry (vignette_bench/formats/entry.py `Entry`),
that every number is finite, that the responses file (read only from ``hf://`` or from inside the
entries' folder, size-capped) matches its sha256 and the responses schema, that the responses
belong to the model the entry names, that a protocol entry answered exactly the protocol's
questions (`protocol.expected_question_ids`, rebuilt from the source), that the dataset revision and
placeholder status agree with the source's index (the board's official source only: official.py; another
source an entry names is never fetched, and the entry is custom), that the derived columns follow from the
plan and the recorded choice, and that each metric summary equals what the
metric modules give on those responses (`analysis.numbers.summaries`). Every failure names the field
and the reason; nothing of a foreign file (content, hash) is echoed. Whether the model really gave
these answers is `verify`'s job (re-asking a random subset).
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
import pandas as pd

from vignette_bench import atomic
from vignette_bench.errors import VignetteError
from vignette_bench.eval.analysis.numbers import summaries
from vignette_bench.eval.leaderboard import names
from vignette_bench.eval.leaderboard.boardfiles import ENTRY_MAX_BYTES
from vignette_bench.eval.leaderboard.official import Official
from vignette_bench.eval.leaderboard.protocol import CUSTOM, VERSION, classify
from vignette_bench.eval.runs import load_run, placeholder_renders
from vignette_bench.eval.runtime.folder import RunFolder
from vignette_bench.formats.base import FormatError
from vignette_bench.formats.entry import Entry, read_entry
from vignette_bench.formats.responses import REQUIRED_COLUMNS
from vignette_bench.loader.reader import MAX_INDEX_BYTES

SCHEMA_PATH = Path(__file__).resolve().parent / "entry.schema.json"  # generated from formats.entry.Entry
SCHEMA_VERSION = Entry.SCHEMA_VERSION
MAX_RESPONSES_BYTES = 1 << 30  # 1 GiB: a full protocol run is a few MB; anything far larger is refused unread
# The responses columns validate and verify rely on, with the Arrow type family each must have.
RESPONSE_TYPES = {
    "question_id": "string",
    "pair_id": "string",
    "config": "string",
    "paradigm": "string",
    "model_id": "string",
    "modality": "string",
    "valid": "bool",
    "choice": "string",
}
REL_TOL = 1e-9  # recomputation is deterministic; this only absorbs float formatting
ABS_TOL = 1e-9


class EntryError(VignetteError):
    """An entry is rejected; ``field`` is the JSON path of the offending value."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class Validated:
    entry: dict
    responses: pd.DataFrame
    protocol: str  # protocol.VERSION when the entry is a protocol entry, else protocol.CUSTOM
    dataset_checked: bool  # revision and placeholder status confirmed against the source's index
    modalities: tuple[str, ...]  # what the model saw: ("image",), ("text",) or both
    custom_because: tuple[str, ...] = ()  # why the board lists it as custom (an entry's own claim aside)


def schema() -> dict:
    return Entry.json_schema()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def config_hash(adapter: dict, sample: dict) -> str:
    blob = json.dumps({"adapter": adapter, "sample": sample}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


def entry_id_of(model_id: str, adapter: dict, sample: dict, dataset_revision: str) -> str:
    """Model, config hash (adapter + sample settings) and dataset revision: `create` names an entry so, and
    `validate` recomputes it, so an entry cannot take another's id (and with it its row and verification)."""
    return f"{slug(model_id)}--{config_hash(adapter, sample)}--{slug(dataset_revision)[:40]}"


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
    by = names.normal_submitter(by)
    run = load_run(run_dir)
    parquet = RunFolder(run.path).responses_path
    if run.responses.empty:
        raise EntryError("responses", f"{parquet} has no rows; nothing to enter")
    record = run.record
    if record is None:
        raise EntryError(
            "run",
            f"{run.path}: no run.json; an entry is made from a runner's folder (responses.parquet + run.json), "
            "whose record names the dataset source and revision the entry must carry",
        )
    # the adapter's provenance less its id and revision, which the entry names on their own
    model = record.model.to_json()
    model_id = model.pop("model_id", None) or model.pop("id", None) or _one(run.responses, "model_id", "model.id")
    revision = str(model.pop("model_revision", None) or model.pop("revision", None) or "unknown")
    settings = record.settings.as_dict()
    adapter = {**model, "variants": settings.get("variants"), "template_hash": record.template_hash}
    source = record.dataset.source or record.settings.source
    ds_rev = record.dataset.pinned_revision  # the runner's: the index's sha256
    if not source or not ds_rev:
        raise EntryError(
            "dataset",
            f"{run.path}/run.json names no dataset {'source' if not source else 'revision'}; rerun with vignette run",
        )
    r = run.responses
    sample = {
        "configs": sorted(set(r["config"])) if "config" in r else ["unknown"],
        "paradigms": sorted(set(r["paradigm"])),
        "n_questions": int(len(r)),
        "n_pairs": int(r["pair_id"].nunique()) if "pair_id" in r else int(len(r)),
        "seed": record.settings.seed,
        "settings": {k: settings[k] for k in ("sample", "filters", "config") if k in settings},
    }
    if location is None:
        location = _relative(parquet, entry_path.parent) if entry_path else str(parquet.resolve())
    run_settings = {k: v for k, v in settings.items() if k != "model"}  # the spec may hold a URL or key
    if not record.simulated:
        version, why = classify(run_settings, source)
    else:
        version, why = CUSTOM, ["no runner record (simulated or hand-made responses)"]
    entry = {
        "schema_version": SCHEMA_VERSION,
        "protocol": {"version": version, "differences": why},
        "run": run_settings,
        "entry_id": entry_id_of(model_id, adapter, sample, ds_rev),
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


def check_schema(entry: Any) -> Entry:
    """The entry as the typed `Entry` (vignette_bench/formats/entry.py); a mismatch names the field. A missing or unknown key
    is named at the object that holds it ("(entry)" at the top), with the key in the reason."""
    try:
        typed = Entry.from_json(entry, "(entry)")
    except FormatError as e:
        field, reason = e.key or "(entry)", e.reason
        if reason in ("missing", "unknown key") or reason.startswith(("missing (", "unknown key (")):
            parent, _, leaf = field.rpartition(".")
            field, reason = parent or "(entry)", f"{leaf}: {reason}"
        raise EntryError(field, f"schema: {reason}") from None
    bad = names.entry_problem(entry)  # one spelling per name, nothing invisible (names.py)
    if bad:
        raise EntryError(*bad)
    return typed


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
    """The entry's JSON in the current layout (older versions migrated: vignette_bench/formats/entry.py); `validate`
    checks it. Read through the formats layer's parser, which refuses JSON nested deeper than any entry is
    (formats.base.MAX_DEPTH) instead of ending in a RecursionError; NaN/Infinity are refused by `check_finite`."""
    path = Path(path)
    try:
        return read_entry(path, ENTRY_MAX_BYTES)  # a link to /dev/zero or a 30 MB "entry" is never read whole
    except OSError as e:
        raise EntryError("(entry)", f"{path}: cannot be read ({e.strerror or type(e).__name__})") from None
    except FormatError as e:
        raise EntryError(e.key or "(entry)", e.reason) from None


def responses_url(entry: dict, entry_path: Path) -> str:
    """Where the responses may be read: ``hf://`` (the Hub), or a relative path that stays inside the folder
    holding the entries (a pull request adds both). Absolute paths, other URL schemes, ``..`` out of the
    folder and symlinks out of it are refused before anything is opened."""
    loc = entry["responses"]["location"]
    if "://" in loc:
        if not loc.startswith("hf://"):
            raise EntryError("responses.location", "only hf:// URLs or paths inside the entries' folder are accepted")
        return loc
    if Path(loc).is_absolute():
        raise EntryError("responses.location", "an absolute path is not accepted; give a path relative to the entry")
    root = entry_path.resolve().parent.parent  # entries/ and the runs beside it: the pull request's tree
    target = (entry_path.parent / loc).resolve()
    if root not in target.parents:
        raise EntryError(
            "responses.location", f"{loc!r} points outside {root.name}/; keep the responses beside the entries"
        )
    if not target.is_file():
        raise EntryError("responses.location", f"{loc!r}: not found (or not a regular file)")
    return str(target)


def fetch_responses(entry: dict, entry_path: Path, max_bytes: int = MAX_RESPONSES_BYTES) -> bytes:
    """The bytes of the responses file the entry names (hf:// or inside the entries' folder), capped; `validate`
    checks them with the responses format's own checks (formats.responses.check_table)."""
    url = responses_url(entry, entry_path)
    try:
        with fsspec.open(url, "rb") as f:
            data = f.read(max_bytes + 1)
    except (FileNotFoundError, OSError) as e:
        raise EntryError(
            "responses.location", f"cannot read {entry['responses']['location']!r}: {type(e).__name__}"
        ) from None
    if len(data) > max_bytes:
        raise EntryError("responses.location", f"file is larger than {max_bytes:,} bytes; refused")
    return data


# Every column a metric or a check reads: what the runner writes (formats.responses REQUIRED_COLUMNS) and the
# render keys (the clusters of the cluster-robust intervals). A file without one is refused, never read around.
ENTRY_COLUMNS = (*dict.fromkeys((*RESPONSE_TYPES, *REQUIRED_COLUMNS, "key_left", "key_right")),)


def check_responses(frame: pd.DataFrame, table_schema: Any) -> None:
    """The columns validate and verify rely on, with the right types (a string 'valid' is not a bool)."""
    import pyarrow as pa

    for name in ENTRY_COLUMNS:
        if name not in table_schema.names and name not in RESPONSE_TYPES:
            raise EntryError(
                f"responses.{name}",
                "column missing from the responses (a metric or a check reads it); submit the runner's parquet "
                "as written",
            )

    kinds = {"string": (pa.types.is_string, pa.types.is_large_string), "bool": (pa.types.is_boolean,)}
    for name, kind in RESPONSE_TYPES.items():
        if name not in table_schema.names:
            raise EntryError(
                f"responses.{name}", "column missing from the responses; submit the runner's parquet as written"
            )
        t = table_schema.field(name).type
        if not any(test(t) for test in kinds[kind]) and not pa.types.is_null(t):
            raise EntryError(f"responses.{name}", f"column has type {t}, expected {kind}")
    dup = frame["question_id"].duplicated()
    if dup.any():
        raise EntryError(
            "responses.question_id",
            f"{int(dup.sum())} question(s) answered twice, e.g. {frame['question_id'][dup].iloc[0]!r}",
        )


def source_index(source: str) -> tuple[str, bool]:
    """(sha256 of the source's render index, whether any render is a placeholder)."""
    import io

    import vignette

    data = vignette.Source(source).read(vignette.INDEX_PATH, max_bytes=MAX_INDEX_BYTES)  # capped while streaming
    import pyarrow.parquet as pq

    column = pq.read_table(io.BytesIO(data), columns=["placeholder"], use_threads=False).column("placeholder")
    placeholder = bool(any(column.to_pylist()))
    return sha256_bytes(data), placeholder


def validate(path: str | Path, official: Official | None = None) -> Validated:
    """The entry, its responses and how the board counts it. Only the official source (the maintainer's, default
    the published dataset) is read to check the dataset and rebuild the plan; another source an entry names is
    never fetched unless ``official.read_others``, and such an entry is custom (listed, never ranked)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vignette_bench.formats.responses import ResponsesError, check_table

    path = Path(path)
    entry = load_entry(path)
    check_finite(entry)
    check_schema(entry)
    data = fetch_responses(entry, path)
    if sha256_bytes(data) != entry["responses"]["sha256"]:
        raise EntryError("responses.sha256", "the file's sha256 differs from the entry's: the responses changed")
    try:
        # ParquetFile.read starts no pool thread (pq.read_table does, and pyarrow 26 aborts at exit after one)
        table = pq.ParquetFile(pa.BufferReader(data)).read(use_threads=False)
    except Exception as e:  # any parse failure of an untrusted file
        raise EntryError("responses.location", f"not a parquet file ({type(e).__name__})") from None
    frame = table.to_pandas()
    check_responses(frame, table.schema)
    try:  # the one responses reader's checks: choice among the options, derived columns, probabilities
        check_table(table, "responses")
    except ResponsesError as e:
        raise EntryError("responses", str(e)) from None
    if len(frame) != entry["responses"]["rows"]:
        raise EntryError("responses.rows", f"entry says {entry['responses']['rows']}, file has {len(frame)}")
    models = set(frame["model_id"])
    if models != {entry["model"]["id"]}:
        raise EntryError(
            "model.id", f"entry names {entry['model']['id']!r}, responses were answered by {sorted(models)}"
        )
    sample = entry["sample"]
    checks = {
        "sample.n_questions": (sample["n_questions"], len(frame)),
        "sample.paradigms": (sorted(sample["paradigms"]), sorted(set(frame["paradigm"]))),
        "sample.n_pairs": (sample["n_pairs"], int(frame["pair_id"].nunique())),
        "sample.configs": (sorted(sample["configs"]), sorted(set(frame["config"]))),
    }
    for field, (claimed, real) in checks.items():
        if claimed != real:
            raise EntryError(field, f"entry says {claimed!r}, responses give {real!r}")
    official = official or Official.default()
    source = entry["dataset"]["source"]
    readable = official.may_read(source)
    dataset_checked = _check_dataset(entry) if readable else False
    if not readable:
        _check_recorded_settings(entry)  # needs no source
    version, why = _check_protocol(entry, frame, official) if readable else (CUSTOM, [_not_official(source)])
    compare(entry["metrics"], summaries(frame), "metrics")
    _check_adapter_mode(entry)  # after the metrics: their answer modes are then the recomputed ones
    _check_entry_id(entry)  # last: a field edited by hand is named above rather than as a changed id
    modalities = tuple(sorted(set(frame["modality"])))
    return Validated(entry, frame, version, dataset_checked, modalities, tuple(why))


def _not_official(source: str) -> str:
    from vignette_bench.redaction import redact

    return f"source {redact(str(source))[:200]!r} is not the board's official source (not read)"


def _check_entry_id(entry: dict) -> None:
    want = entry_id_of(entry["model"]["id"], entry.get("adapter") or {}, entry["sample"], entry["dataset"]["revision"])
    if entry["entry_id"] != want:
        raise EntryError(
            "entry_id", f"{entry['entry_id']!r} is not this entry's id; its model, settings and dataset give {want!r}"
        )


def _check_dataset(entry: dict) -> bool:
    """Revision and placeholder status from the source's index, not from the entry; False when the source
    cannot be read (then a protocol entry is refused and a custom one is shown as unchecked)."""
    ds = entry["dataset"]
    try:
        digest, placeholder = source_index(ds["source"])
    except Exception:
        if entry.get("protocol", {}).get("version") == VERSION:
            raise EntryError(
                "dataset.source", "cannot be read: a protocol entry must name a source anyone can read"
            ) from None
        return False
    if ds["revision"] != digest:
        raise EntryError("dataset.revision", "differs from the sha256 of the source's renders/index.parquet")
    if bool(ds.get("placeholder")) != placeholder:
        raise EntryError(
            "dataset.placeholder", f"entry says {ds.get('placeholder')!r}, the source's index says {placeholder}"
        )
    return True


def _check_protocol(entry: dict, frame: pd.DataFrame, official: Official) -> tuple[str, list[str]]:
    """(protocol.VERSION or CUSTOM, why custom). A protocol entry must have the protocol's settings and answer
    exactly its questions, each as the plan asks it (options in the plan's order: another seed shows there, though
    question ids do not); it is the protocol only on the official source, in the official wording and taxonomy.
    A custom entry's answered questions must be those its own recorded settings ask, when the source can be read
    to rebuild them. Called only for a source the board may read (`Official.may_read`)."""
    from vignette_bench.eval.leaderboard.protocol import (
        Plan,
        differences,
        plan_for,
        planned_questions,
        protocol_settings,
        source_pairs,
    )
    from vignette_bench.formats.run_record import RunSettings

    claimed = entry.get("protocol", {}).get("version", CUSTOM)
    run = entry.get("run") or {}
    source = entry["dataset"]["source"]
    _check_recorded_settings(entry)
    plan: Plan
    if claimed == VERSION and not official.names(source):  # read at the maintainer's request: never ranked
        claimed, why = CUSTOM, [_not_official(source).replace("(not read)", "(read at the maintainer's request)")]
    else:
        why = [] if claimed == VERSION else ["the entry is custom"]
    if claimed != VERSION:
        if not run:
            return CUSTOM, why  # an older entry recorded no settings: nothing to rebuild with (listed, never ranked)
        try:
            settings = RunSettings.from_json({**run, "model": "", "source": source}, "(entry)", "run")
        except FormatError as e:
            raise EntryError(e.key or "run", e.reason) from None
        try:
            plan = planned_questions(settings)
        except Exception:  # an unreadable source: the custom entry is listed with its dataset unchecked
            return CUSTOM, why
        # complete: a run answers every question its settings plan (merge refuses less), so fewer answers are a
        # chosen subset; before, a cherry-picked custom subset validated as "ok"
        _check_answered(entry, frame, plan, complete=True, claimed="the entry's run settings")
        return CUSTOM, why
    config = str(run.get("config"))
    try:
        plan_spec = plan_for(config, source_pairs(source, config))
    except KeyError as e:
        raise EntryError("run.config", str(e.args[0])) from None
    diff = differences(run, plan_spec)
    if diff:
        raise EntryError("run", f"claims {VERSION} but differs: {'; '.join(diff)}")
    plan = planned_questions(protocol_settings(plan_spec, source, ""))
    _check_answered(entry, frame, plan, complete=True)
    unofficial = official.differences(entry)  # edited wording or taxonomy on the official renders
    return (CUSTOM, unofficial) if unofficial else (VERSION, [])


def _check_recorded_settings(entry: dict) -> None:
    """`sample.seed`, `sample.settings` and `adapter.variants` repeat the run settings (which the plan checks): they
    must agree."""
    run, sample = entry.get("run") or {}, entry["sample"]
    if not run:
        return
    if sample.get("seed") is not None and sample["seed"] != run.get("seed"):
        raise EntryError("sample.seed", f"entry says {sample['seed']!r}, its run settings say {run.get('seed')!r}")
    adapter = entry.get("adapter") or {}
    if "variants" in adapter and "variants" in run and adapter["variants"] != run["variants"]:
        raise EntryError(
            "adapter.variants", f"entry says {adapter['variants']!r}, its run settings say {run['variants']!r}"
        )
    derived = {k: run[k] for k in ("sample", "filters", "config") if k in run}
    if sample.get("settings") is not None and sample["settings"] != derived:
        raise EntryError("sample.settings", f"entry says {sample['settings']!r}, its run settings give {derived!r}")


def _check_answered(entry: dict, frame: pd.DataFrame, plan: Any, complete: bool, claimed: str = VERSION) -> None:
    """Every answered question is a planned one, asked as planned; with `complete`, every planned one is answered.
    (The wording's hash is compared with the official one by `Official.differences`: another is custom.)"""
    from vignette_bench.eval.leaderboard.protocol import derived_differences, plan_differences

    expected, got = set(plan.questions), set(frame["question_id"])
    missing, extra = expected - got, got - expected
    if complete and (missing or extra):
        raise EntryError(
            "responses.question_id",
            f"{claimed} {'asks' if claimed == VERSION else 'ask'} {len(expected)} questions; {len(missing)} of them have no answer and {len(extra)} "
            "answers are not in that plan (a chosen subset of a run's answers, or another plan's; submit every "
            "answer the run gave"
            + ("; another plan is not the protocol: submit it as custom)" if claimed == VERSION else ")"),
        )
    if extra:
        raise EntryError(
            "responses.question_id",
            f"{len(extra)} answered question(s) are not in the plan the entry's run settings give, "
            f"e.g. {sorted(extra)[0]!r}",
        )
    if "options" not in frame.columns:
        raise EntryError(
            "responses.options", "column missing from the responses; submit the runner's parquet as written"
        )
    diffs = plan_differences(frame, plan)
    if diffs:
        column, qid, have, want = diffs[0]
        raise EntryError(
            f"responses.{column}",
            f"question {qid!r} has {have!r}, the plan rebuilt from the run settings and source asks {want!r} "
            f"({len({d[1] for d in diffs})} question(s) differ: answers of another seed, wording or plan)",
        )
    derived = derived_differences(frame, plan)
    if derived:
        column, qid, have, want = derived[0]
        raise EntryError(
            f"responses.{column}",
            f"question {qid!r} has {have!r}, but its recorded choice in the plan rebuilt from the run settings and "
            f"source gives {want!r} ({len({d[1] for d in derived})} question(s) differ): a derived column follows "
            "from the choice, it is never taken from the file",
        )


def _check_adapter_mode(entry: dict) -> None:
    """`adapter.mode` says whether the model was scored; the responses say whether probabilities were recorded."""
    mode = (entry.get("adapter") or {}).get("mode")
    if mode is None:
        return
    scored = any(m.get("answer_mode") == "score" for m in entry["metrics"].values())
    if (mode == "score") != scored:
        raise EntryError(
            "adapter.mode",
            f"entry says {mode!r}, the responses {'carry' if scored else 'carry no'} answer probabilities",
        )


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


def write_new_entry(entry: dict, path: Path) -> Path:
    """Write a new entry file; never over another entry. The file is named by `entry_id` (model, config
    and dataset revision: one entry per such triple is what the board ranks), so a second submission of the
    same triple would replace the first: refused, naming both, unless the file holds the same responses by
    the same submitter (making the entry again, e.g. with another location)."""
    if path.exists():
        try:
            old = load_entry(path)
            same = (old["responses"]["sha256"], old["submitted"]["by"]) == (
                entry["responses"]["sha256"],
                entry["submitted"]["by"],
            )
            held = f"submitted by {old['submitted']['by']!r}, responses sha256 {old['responses']['sha256'][:12]}…"
        except (EntryError, KeyError, TypeError):
            same, held = False, "a file that is not a readable entry"
        if not same:
            raise EntryError(
                "entry_id",
                f"{path} already holds another entry for this model, config and dataset revision ({held}); this one "
                f"is submitted by {entry['submitted']['by']!r}, responses sha256 {entry['responses']['sha256'][:12]}…. "
                "An entry is never overwritten: remove that file deliberately to replace it, or write to another --out",
            )
    return write_entry(entry, path)


def write_entry(entry: dict, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    # atomic: a full disk left a truncated entry (2,048 bytes) that blocked the rerun
    return atomic.write_text(path, json.dumps(entry, indent=2, allow_nan=False) + "\n")
