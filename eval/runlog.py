"""The append-only answer log of a run: RUN_DIR/log/part-<rank>.jsonl, one JSON object a line.

Each batch of answers is written, flushed and fsync'ed before the next batch is asked, so a
crash (even SIGKILL or power loss) loses at most the batch in flight. A crash mid-write can
leave a torn last line: the reader ignores it and the writer cuts it off before appending.
A broken line anywhere else is corruption and stops the run with the file and line named.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

LOG_DIR = "log"


class LogCorrupt(ValueError):
    """A line other than the last of a log part is not valid JSON."""


def part_path(run_dir: str | Path, rank: int) -> Path:
    return Path(run_dir) / LOG_DIR / f"part-{rank:05d}.jsonl"


def part_paths(run_dir: str | Path) -> list[Path]:
    return sorted((Path(run_dir) / LOG_DIR).glob("part-*.jsonl"))


@dataclass(frozen=True)
class PartScan:
    rows: list[dict[str, Any]]
    good_bytes: int  # length of the file up to the end of its last complete line
    torn: bool  # whether the file ends in a partial line


def scan_part(path: Path) -> PartScan:
    """Read one part; a last line without its newline (a torn write) is left out."""
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    rows = []
    for number, line in enumerate(data[:end].splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise LogCorrupt(
                f"{path}, line {number}: not valid JSON ({e.msg}); only a torn last line is expected after a crash. "
                f"Move the file aside (and rerun to re-ask its questions) or repair the line."
            ) from None
    return PartScan(rows, end, torn=end < len(data))


def read_rows(run_dir: str | Path) -> Iterator[dict[str, Any]]:
    """Every complete answer row of every part, in part then line order."""
    for path in part_paths(run_dir):
        yield from scan_part(path).rows


def done_ids(run_dir: str | Path, retry_invalid: bool = False) -> set[str]:
    """Question ids already answered in any part (with ``retry_invalid``, only validly answered ones)."""
    done: set[str] = set()
    for row in read_rows(run_dir):
        if row.get("valid") or not retry_invalid:
            done.add(row["question_id"])
    return done


class PartWriter:
    """Appends batches of rows to one part durably; repairs a torn last line on open."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.repaired_bytes = 0
        if path.exists():
            scan = scan_part(path)
            if scan.torn:
                self.repaired_bytes = path.stat().st_size - scan.good_bytes
                with open(path, "r+b") as f:
                    f.truncate(scan.good_bytes)
                    f.flush()
                    os.fsync(f.fileno())
        self._file = open(path, "ab")

    def append(self, rows: Iterable[dict[str, Any]]) -> None:
        # One write call per batch, then flush and fsync: the batch is on disk before we go on.
        payload = b"".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in rows)
        if payload:
            self._file.write(payload)
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "PartWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
