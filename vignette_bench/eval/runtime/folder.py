"""A run folder (the --out of `vignette run`): the only code that knows its file names.

    run.json                 the run record (vignette_bench/formats/run_record.py): settings, model and dataset provenance
    plan.parquet             the pair plan: pair rows without images, in the order they are asked
    taxonomy/                the source's taxonomy, copied once: the questions' words come from it
    log/part-<rank>.jsonl    the append-only answer log of each process (runlog.py)
    log/sessions.jsonl       one line per session: rank, host, pid, batch size, command line
    responses.parquet        the merged answers (responses.py), written by merge

`RunFolder` names one piece per entry above, each a small class that owns its file or folder:
``folder.record``, ``folder.plan``, ``folder.taxonomy``, ``folder.log`` and ``folder.responses``.

Whole files are written atomically (a temp file in the same folder, fsync, os.replace; vignette_bench/atomic.py),
so a reader or a crash never meets half a file; the log is appended batch by batch instead.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from vignette_bench.atomic import _TEMP_NAME, _alive, _host, _writer, atomic_write
from vignette_bench.eval.runtime.runlog import PartWriter
from vignette_bench.formats.jsonl import iter_part
from vignette_bench.formats.responses import with_response_columns
from vignette_bench.formats.run_record import RunRecord, read_run_record, run_record_is_current


@dataclass(frozen=True)
class RecordFile:
    """run.json: the run record, read migrated to the current version."""

    path: Path

    def exists(self) -> bool:
        return self.path.is_file()

    def read(self) -> RunRecord:
        """The record, migrated to the current version; RecordError names the file and the bad key."""
        return read_run_record(self.path)

    def write(self, record: RunRecord) -> Path:
        text = json.dumps(record.to_json(), indent=2, sort_keys=True, allow_nan=False) + "\n"
        return atomic_write(self.path, lambda tmp: tmp.write_text(text))

    def migrate(self) -> bool:
        """Rewrite an older record in the current version; False when it already was."""
        record, current = run_record_is_current(self.path)
        if current:
            return False
        self.write(record)
        return True


@dataclass(frozen=True)
class TableFile:
    """A parquet file of the folder (the plan), written whole."""

    path: Path

    def exists(self) -> bool:
        return self.path.is_file()

    def read(self, columns: Sequence[str] | None = None, filters: Any = None) -> pa.Table:
        return pq.read_table(self.path, columns=columns, filters=filters)

    def write(self, table: pa.Table) -> Path:
        return atomic_write(self.path, lambda tmp: pq.write_table(table, tmp))


@dataclass(frozen=True)
class ResponsesFile(TableFile):
    """responses.parquet: the merged answers; older runs' files read with today's columns."""

    def read(self, columns: Sequence[str] | None = None, filters: Any = None) -> pa.Table:
        """The merged answers; columns an older run did not write (key_left, key_right) read as nulls."""
        present = pq.read_schema(self.path).names
        read = None if columns is None else [c for c in columns if c in present]
        return with_response_columns(pq.read_table(self.path, columns=read, filters=filters), columns)

    def write_bytes(self, data: bytes) -> Path:
        """The exact bytes of a responses file (a copy whose sha256 is cited elsewhere)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return atomic_write(self.path, lambda tmp: tmp.write_bytes(data))


@dataclass(frozen=True)
class RunLog:
    """log/: one append-only answer part per process (rank), and one line per session."""

    path: Path
    PART = "part-{rank:05d}.jsonl"
    SESSIONS = "sessions.jsonl"

    @property
    def sessions_path(self) -> Path:
        return self.path / self.SESSIONS

    def part_path(self, rank: int) -> Path:
        return self.path / self.PART.format(rank=rank)

    def part_paths(self) -> list[Path]:
        return sorted(self.path.glob("part-*.jsonl"))

    def files(self) -> list[Path]:
        """Every log file (parts and sessions): evidence that a run started here."""
        return sorted(self.path.glob("*.jsonl")) if self.path.is_dir() else []

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every complete answer row of every part, in part then line order (streamed)."""
        for path in self.part_paths():
            yield from iter_part(path)

    def writer(self, rank: int) -> PartWriter:
        """The appender of rank's part; it holds the part's lock (runlog.ShardBusy if another process does)."""
        return PartWriter(self.part_path(rank))

    def append_session(self, session: dict[str, Any]) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.sessions_path, "a") as f:
            f.write(json.dumps(session) + "\n")


@dataclass(frozen=True)
class TaxonomyCopy:
    """taxonomy/: the source's taxonomy, copied once, so that a run's words never change under it."""

    path: Path

    def kept(self) -> Path | None:
        return self.path if self.path.exists() else None

    def keep(self, base: str) -> Path:
        """Copy the taxonomy at `base` (any fsspec folder) once; a later session keeps the first copy."""
        from vignette_bench.remote import read_url
        from vignette_bench.taxonomy import MAX_TAXONOMY_FILE_BYTES, TAXONOMY_FILES, load_taxonomy

        if not self.path.exists():
            tmp = self.path.parent / f".{self.path.name}.{_writer()}.tmp"
            tmp.mkdir(parents=True, exist_ok=True)
            for name in TAXONOMY_FILES:
                (tmp / name).write_bytes(read_url(f"{base.rstrip('/')}/{name}", MAX_TAXONOMY_FILE_BYTES))
            load_taxonomy(tmp)  # validate before keeping it
            try:
                os.rename(tmp, self.path)
            except OSError:  # another rank kept its identical copy first
                shutil.rmtree(tmp, ignore_errors=True)
        return self.path


class RunFolder:
    """The run folder at `path`: its pieces, and what concerns the folder as a whole."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.record = RecordFile(self.path / "run.json")
        self.plan = TableFile(self.path / "plan.parquet")
        self.taxonomy = TaxonomyCopy(self.path / "taxonomy")
        self.log = RunLog(self.path / "log")
        self.responses = ResponsesFile(self.path / "responses.parquet")

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    def __fspath__(self) -> str:
        return str(self.path)

    def create(self) -> RunFolder:
        self.log.path.mkdir(parents=True, exist_ok=True)
        return self

    def remove_stale_temporaries(self) -> list[Path]:
        """Delete the temp files and folders that processes of this host left when they were killed
        (their pid is gone); a live writer's, or another host's on a shared file system, stay."""
        removed = []
        for folder in (self.path, self.log.path):
            for p in folder.glob(".*.tmp") if folder.is_dir() else ():
                m = _TEMP_NAME.match(p.name)
                if m is None or m["host"] != _host() or _alive(int(m["pid"])):
                    continue
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
                removed.append(p)
        return removed
