"""The append-only JSONL log's reading half: one JSON object a line, a torn last line left out.

A run's answer log (RUN_DIR/log/part-*.jsonl) and the news stages' logs (answers.jsonl, the judgements)
are written by vignette_bench/eval/runtime/runlog.py `PartWriter`, one batch a write; a crash mid-write can
leave a torn last line, which every reader here ignores. A broken line anywhere else is corruption: the
error names the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vignette_bench.errors import VignetteError


class LogCorrupt(VignetteError):
    """A line other than the last of a log part is not valid JSON."""


@dataclass(frozen=True)
class PartScan:
    rows: list[dict[str, Any]]
    good_bytes: int  # length of the file up to the end of its last complete line
    torn: bool  # whether the file ends in a partial line


def tail_state(path: Path) -> tuple[int, bool]:
    """(bytes up to the end of the last complete line, whether a torn line follows), reading only the tail."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        end = size
        while end > 0:
            start = max(0, end - 65536)
            f.seek(start)
            chunk = f.read(end - start)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                good = start + cut + 1
                return good, good < size
            end = start
    return 0, size > 0


def iter_part(path: Path) -> Iterator[dict[str, Any]]:
    """The complete rows of one part, streamed; a last line without its newline (a torn write) is left out."""
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            if not line.endswith(b"\n"):
                return  # torn last line
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as e:
                raise LogCorrupt(
                    f"{path}, line {number}: not valid JSON ({e.msg}); only a torn last line is expected after a crash. "
                    f"Move the file aside (and rerun to re-ask its questions) or repair the line."
                ) from None


def scan_part(path: Path) -> PartScan:
    """All complete rows of one part, and where its torn tail (if any) starts."""
    good, torn = tail_state(path)
    return PartScan(list(iter_part(path)), good, torn)
