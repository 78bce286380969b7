"""An append-only JSONL log, one JSON object a line: a run's answers (RunFolder.part_path) and the
news stages' logs.

Each batch of answers is written (one ``write`` call) and flushed before the next batch is asked:
from then on the operating system holds it, so a crash of the process (even SIGKILL) loses only the
batch in flight. Durability against power loss is by time, not by batch: the file is fsync'ed at
most every `SYNC_EVERY_S` seconds (a batch appended sooner is fsync'ed by a timer when that second is
up) and when the writer closes, so a power cut loses at most the last second of answers (one fsync per
batch of 16 was 40% of a random-responder run's CPU). A crash mid-write can leave a torn last line:
the reader ignores it and the writer cuts it off before appending. A broken line anywhere else is
corruption and stops the run with the file and line named. The reading half (`scan_part`, `iter_part`)
is the format's: vignette_bench/formats/jsonl.py.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from vignette_bench.errors import VignetteError
from vignette_bench.formats.jsonl import tail_state


class ShardBusy(VignetteError, RuntimeError):
    """Another live process holds this shard's part."""


SYNC_EVERY_S = 1.0  # power loss loses at most this much of the log (a process crash loses nothing written)


class PartWriter:
    """Appends batches of rows to one part; repairs a torn last line on open. Each batch reaches the OS
    before `append` returns; fsync runs at most every ``sync_every`` seconds (a batch appended sooner is
    fsync'ed by a timer thread once the interval is up: no batch waits longer) and on `close`."""

    def __init__(self, path: Path, sync_every: float | None = None):
        self.path = path
        self.sync_every = SYNC_EVERY_S if sync_every is None else sync_every
        self._synced = time.monotonic()
        self.syncs = 0  # fsyncs of appended rows (tests and benchmarks count them)
        self._sync_lock = threading.Lock()  # append's fsync, the timer's, close's
        self._timer: threading.Timer | None = None
        path.parent.mkdir(parents=True, exist_ok=True)
        # One process per part: a second one on the same shard would answer the same questions again.
        # The OS drops the lock when the process dies, so a killed run never blocks its own resume.
        self._lock_path = path.with_name(path.name + ".lock")
        self._lock = self._take_lock()
        self.repaired_bytes = 0
        if path.exists():
            good, torn = tail_state(path)
            if torn:
                self.repaired_bytes = path.stat().st_size - good
                with open(path, "r+b") as f:
                    f.truncate(good)
                    f.flush()
                    os.fsync(f.fileno())
        self._file = open(path, "ab")

    def _take_lock(self) -> Any:
        """The part's lock file, opened and flock'ed. `close` deletes it (no lock files are left behind), so a
        file locked here may have been deleted by its previous holder between our open and our flock: then
        the lock guards nothing, and we take the new file instead."""
        while True:
            lock = open(self._lock_path, "a+")
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.close()
                raise ShardBusy(
                    f"{self.path}: another process is answering this shard now; wait for it, or give this one "
                    "another --shard or --out"
                ) from None
            try:
                current = os.stat(self._lock_path).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(lock.fileno()).st_ino:
                return lock
            lock.close()  # deleted by the holder we waited for: lock the file that is there now

    def append(self, rows: Iterable[dict[str, Any]]) -> None:
        # One write call per batch, then flush: the OS has the batch (a killed process loses none of it).
        # fsync (the disk has it: power loss) once `sync_every` seconds have passed since the last one.
        payload = b"".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in rows)
        if payload:
            self._file.write(payload)
            self._file.flush()
            wait = self.sync_every - (time.monotonic() - self._synced)
            if wait <= 0:
                self.sync()
            elif self._timer is None:  # fsync'ed when the interval is up, even if no other batch comes
                self._timer = threading.Timer(wait, self._sync_when_due)
                self._timer.daemon = True
                self._timer.start()

    def sync(self) -> None:
        """fsync what was appended (each append has already flushed it to the OS)."""
        with self._sync_lock:
            if self._file.closed:
                return
            os.fsync(self._file.fileno())
            self._synced = time.monotonic()
            self.syncs += 1

    def _sync_when_due(self) -> None:
        with self._sync_lock:
            self._timer = None
        self.sync()

    def close(self) -> None:
        try:
            timer = self._timer
            if timer is not None:
                timer.cancel()
            if not self._file.closed:
                try:
                    self.sync()  # at exit: everything appended is on disk
                finally:
                    with self._sync_lock:
                        self._file.close()
        finally:
            if not self._lock.closed:
                self._lock_path.unlink(missing_ok=True)  # while still held: see _take_lock
                self._lock.close()  # releases the shard

    def __enter__(self) -> PartWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
