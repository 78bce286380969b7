"""A run folder (the --out of `vignette run`): the only code that knows its file names.

    run.json                 the run record (vignette_bench/formats/run_record.py): settings, model and dataset provenance
    plan.parquet             the pair plan: pair rows without images, in the order they are asked
    taxonomy/                the source's taxonomy, copied once: the questions' words come from it
    log/part-<rank>.jsonl    the append-only answer log of each process (runlog.py)
    log/sessions.jsonl       one line per session: rank, host, pid, batch size, command line
    responses.parquet        the merged answers (responses.py), written by merge

Whole files are written atomically (a temp file in the same folder, fsync, os.replace), so a
reader or a crash never meets half a file; the log is appended batch by batch instead.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from vignette_bench.atomic import _TEMP_NAME, _alive, _host, _writer, atomic_write
from vignette_bench.eval.runtime.runlog import PartWriter
from vignette_bench.formats.jsonl import iter_part
from vignette_bench.formats.responses import with_response_columns
from vignette_bench.formats.run_record import RunRecord, read_run_record, run_record_is_current


class RunFolder:
    RECORD = "run.json"
    PLAN = "plan.parquet"
    RESPONSES = "responses.parquet"
    TAXONOMY = "taxonomy"
    LOG = "log"
    SESSIONS = "sessions.jsonl"  # inside LOG
    PART = "part-{rank:05d}.jsonl"  # inside LOG

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    def __fspath__(self) -> str:
        return str(self.path)

    def create(self) -> RunFolder:
        (self.path / self.LOG).mkdir(parents=True, exist_ok=True)
        return self

    def remove_stale_temporaries(self) -> list[Path]:
        """Delete the temp files and folders that processes of this host left when they were killed
        (their pid is gone); a live writer's, or another host's on a shared file system, stay."""
        removed = []
        for folder in (self.path, self.log_dir):
            for p in folder.glob(".*.tmp") if folder.is_dir() else ():
                m = _TEMP_NAME.match(p.name)
                if m is None or m["host"] != _host() or _alive(int(m["pid"])):
                    continue
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
                removed.append(p)
        return removed

    # --- paths -------------------------------------------------------------------------------
    @property
    def record_path(self) -> Path:
        return self.path / self.RECORD

    @property
    def plan_path(self) -> Path:
        return self.path / self.PLAN

    @property
    def responses_path(self) -> Path:
        return self.path / self.RESPONSES

    @property
    def taxonomy_dir(self) -> Path:
        return self.path / self.TAXONOMY

    @property
    def log_dir(self) -> Path:
        return self.path / self.LOG

    @property
    def sessions_path(self) -> Path:
        return self.log_dir / self.SESSIONS

    def part_path(self, rank: int) -> Path:
        return self.log_dir / self.PART.format(rank=rank)

    def part_paths(self) -> list[Path]:
        return sorted(self.log_dir.glob("part-*.jsonl"))

    def log_files(self) -> list[Path]:
        """Every log file (parts and sessions): evidence that a run started here."""
        return sorted(self.log_dir.glob("*.jsonl")) if self.log_dir.is_dir() else []

    # --- the record ----------------------------------------------------------------------------
    def has_record(self) -> bool:
        return self.record_path.is_file()

    def read_record(self) -> RunRecord:
        """The record, migrated to the current version; RecordError names the file and the bad key."""
        return read_run_record(self.record_path)

    def write_record(self, record: RunRecord) -> Path:
        text = json.dumps(record.to_json(), indent=2, sort_keys=True, allow_nan=False) + "\n"
        return atomic_write(self.record_path, lambda tmp: tmp.write_text(text))

    def migrate(self) -> bool:
        """Rewrite an older record in the current version; False when it already was."""
        record, current = run_record_is_current(self.record_path)
        if current:
            return False
        self.write_record(record)
        return True

    # --- plan and responses --------------------------------------------------------------------
    def has_plan(self) -> bool:
        return self.plan_path.is_file()

    def read_plan(self, columns: Sequence[str] | None = None, filters: Any = None) -> pa.Table:
        return pq.read_table(self.plan_path, columns=columns, filters=filters)

    def write_plan(self, table: pa.Table) -> Path:
        return atomic_write(self.plan_path, lambda tmp: pq.write_table(table, tmp))

    def has_responses(self) -> bool:
        return self.responses_path.is_file()

    def read_responses(self, columns: Sequence[str] | None = None, filters: Any = None) -> pa.Table:
        """The merged answers; columns an older run did not write (key_left, key_right) read as nulls."""
        present = pq.read_schema(self.responses_path).names
        read = None if columns is None else [c for c in columns if c in present]
        table = pq.read_table(self.responses_path, columns=read, filters=filters)
        return with_response_columns(table, columns)

    def write_responses(self, table: pa.Table) -> Path:
        return atomic_write(self.responses_path, lambda tmp: pq.write_table(table, tmp))

    def write_responses_bytes(self, data: bytes) -> Path:
        """The exact bytes of a responses file (a copy whose sha256 is cited elsewhere)."""
        self.path.mkdir(parents=True, exist_ok=True)
        return atomic_write(self.responses_path, lambda tmp: tmp.write_bytes(data))

    # --- the log -------------------------------------------------------------------------------
    def rows(self) -> Iterator[dict[str, Any]]:
        """Every complete answer row of every part, in part then line order (streamed)."""
        for path in self.part_paths():
            yield from iter_part(path)

    def part_writer(self, rank: int) -> PartWriter:
        return PartWriter(self.part_path(rank))

    def append_session(self, session: dict[str, Any]) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.sessions_path, "a") as f:
            f.write(json.dumps(session) + "\n")

    # --- the taxonomy copy ---------------------------------------------------------------------
    def kept_taxonomy(self) -> Path | None:
        return self.taxonomy_dir if self.taxonomy_dir.exists() else None

    def keep_taxonomy(self, base: str) -> Path:
        """Copy the taxonomy at `base` (any fsspec folder) once; a later session keeps the first copy."""
        from vignette_bench.remote import read_url
        from vignette_bench.taxonomy import MAX_TAXONOMY_FILE_BYTES, TAXONOMY_FILES, load_taxonomy

        folder = self.taxonomy_dir
        if not folder.exists():
            tmp = self.path / f".{self.TAXONOMY}.{_writer()}.tmp"
            tmp.mkdir(parents=True, exist_ok=True)
            for name in TAXONOMY_FILES:
                (tmp / name).write_bytes(read_url(f"{base.rstrip('/')}/{name}", MAX_TAXONOMY_FILE_BYTES))
            load_taxonomy(tmp)  # validate before keeping it
            try:
                os.rename(tmp, folder)
            except OSError:  # another rank kept its identical copy first
                shutil.rmtree(tmp, ignore_errors=True)
        return folder


# The temp-name pattern, writer, liveness and atomic write live in vignette_bench/atomic.py (every stage writes
# whole files that way); re-exported here, where the run folder's code and tests have always found them.
