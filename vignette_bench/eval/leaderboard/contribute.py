"""`vignette leaderboard create RUN`: an entry the board accepts, from a run folder anywhere.

`validate` reads responses only from ``hf://`` or from inside the board (the folder above ``entries/``), so an
entry pointing at a run folder elsewhere would be refused. Without ``--location`` the run's responses are
therefore copied into the board as ``runs/<entry_id>/responses.parquet`` (the layout `boardfiles` documents and
`check-pr` accepts) and the entry names ``../runs/<entry_id>/responses.parquet``; a pull request adds exactly
those two files. With ``--location`` (published responses) nothing is copied.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from vignette_bench import atomic
from vignette_bench.eval.leaderboard.entry import EntryError, create, write_new_entry
from vignette_bench.eval.runtime.folder import RunFolder


def create_in_board(run: str | Path, *, by: str, entries: Path, location: str | None = None) -> Path:
    """Write ``entries/<entry_id>.json`` (and, without `location`, the responses beside it); returns the entry's
    path. Refuses, writing nothing, when either file would replace another's."""
    entries = Path(entries)
    entry = create(run, by=by, location=location or "pending", entry_path=entries / "_new.json")
    eid = entry["entry_id"]
    path = entries / f"{eid}.json"
    if location is not None:
        return write_new_entry(entry, path)
    target = entries.parent / "runs" / eid / "responses.parquet"
    data = RunFolder(Path(run)).responses.path.read_bytes()
    if hashlib.sha256(data).hexdigest() != entry["responses"]["sha256"]:
        raise EntryError("responses", f"{run}: responses.parquet changed while the entry was made; run create again")
    entry["responses"]["location"] = f"../runs/{eid}/responses.parquet"
    copied = False
    if target.exists() or target.is_symlink():
        if target.is_symlink() or not target.is_file() or target.read_bytes() != data:
            raise EntryError(
                "responses.location",
                f"{target} already holds other responses; an entry's responses are never replaced (remove that "
                "file deliberately, or write to another --out)",
            )
    try:
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            copied = True
            atomic.write_bytes(target, data)  # a full disk leaves no truncated copy that would block the rerun
        return write_new_entry(entry, path)
    except (EntryError, OSError):
        if copied:  # leave the board as it was
            target.unlink(missing_ok=True)
            if target.parent.is_dir() and not any(target.parent.iterdir()):
                target.parent.rmdir()
        raise
