"""The files of a board repository and what each may be: where it lies, how large, never a link.

A board repository (what `vignette leaderboard init` makes) holds::

    maintainers.json                       the maintainer keys whose signatures count (maintainers only)
    entries/<entry_id>.json                one entry per file, named by its entry_id
    runs/<entry_id>/responses.parquet      the responses an entry's location names (../runs/<entry_id>/...)
    verifications/<entry_id>.json          a maintainer's signed record (maintainers only)
    .github/workflows/board.yml, README.md the template's CI and card

A pull request may only add an entry and its responses (`checkpr.py`). The caps are a choice: room for far
larger entries and records than `create` and `verify` write (an entry holds one summary per metric family, a
record at most ten mismatches), the responses cap is GitHub's own per-file limit, and all are far below what
hurts a CI runner: a link to /dev/zero or a 30 MB "entry" is refused before it is read. They hold in `build`
too, for entries, verifications and maintainers.json, whether or not a pull request is being checked, and in
`vignette upload results`, which never publishes a linked or oversized record or key file.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

KiB, MiB = 1 << 10, 1 << 20
ENTRY_MAX_BYTES = 256 * KiB
RESPONSES_MAX_BYTES = 100 * MiB  # GitHub's own per-file limit; larger runs publish to hf:// instead
VERIFICATION_MAX_BYTES = 64 * KiB
KEYS_MAX_BYTES = 64 * KiB
OTHER_MAX_BYTES = 1 * MiB  # the template's README, workflow and .gitkeep files

ENTRY = re.compile(r"entries/([a-z0-9][a-z0-9-]{0,199})\.json")
RESPONSES = re.compile(r"runs/([a-z0-9][a-z0-9-]{0,199})/responses\.parquet")
VERIFICATION = re.compile(r"verifications/([a-z0-9][a-z0-9-]{0,199})\.json")
KEYS = "maintainers.json"


def cap(rel: str) -> int:
    """The size cap of a board file by its path relative to the board folder."""
    if ENTRY.fullmatch(rel):
        return ENTRY_MAX_BYTES
    if RESPONSES.fullmatch(rel):
        return RESPONSES_MAX_BYTES
    if VERIFICATION.fullmatch(rel):
        return VERIFICATION_MAX_BYTES
    if rel == KEYS:
        return KEYS_MAX_BYTES
    return OTHER_MAX_BYTES


def problem(path: Path, max_bytes: int) -> str | None:
    """Why a board file on disk cannot be read as one (a link, not a regular file, over the cap), or None.
    Looked at with lstat: nothing is followed and nothing is opened."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"cannot be read ({e.strerror or type(e).__name__})"
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link; a board holds regular files only (the link is not followed)"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_size > max_bytes:
        return f"{st.st_size:,} bytes, over the cap of {max_bytes:,} for this file; refused unread"
    return None
