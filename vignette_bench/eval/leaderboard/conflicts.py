"""One row per set of answers and per ranked (model, revision, configs, dataset revision).

The same answers under two model names would be two rows (one model counted twice, or a copy taking an honest
model's numbers); two protocol entries of the same model on the same data would let a submitter keep the best of
several tries (another seed changes the entry id). Such entries are a conflict, named in both rows' reasons:
all of them are rejected, since the board cannot tell which is the original, and a maintainer removes the
extra file deliberately. `check-pr` refuses a pull request that would create one.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from vignette_bench.eval.leaderboard.protocol import VERSION

if TYPE_CHECKING:
    from vignette_bench.eval.leaderboard.board import Accepted


def answers_digest(frame: pd.DataFrame) -> str:
    """sha256 of the answers alone (question, choice, validity, probabilities), whatever the model is called
    or however the parquet was written: two entries with the same value gave the same answers."""
    cols = [c for c in ("question_id", "choice", "valid", "probabilities") if c in frame.columns]
    rows = frame[cols].sort_values("question_id")
    h = hashlib.sha256()
    for rec in rows.itertuples(index=False):
        h.update(json.dumps([_plain(v) for v in rec], separators=(",", ":")).encode() + b"\n")
    return h.hexdigest()


def _plain(value: Any) -> Any:
    if value is None or (isinstance(value, float) and value != value):
        return None
    if hasattr(value, "tolist"):
        return value.tolist()
    return value if isinstance(value, (str, bool, int, float)) else str(value)


def ranked_key(entry: dict) -> tuple[str, ...] | None:
    """What one protocol entry per board stands for; None for a custom entry (listed, never ranked)."""
    if (entry.get("protocol") or {}).get("version") != VERSION:
        return None
    model = entry["model"]
    return (
        unicodedata.normalize("NFKC", str(model["id"])).casefold(),
        str(model["revision"]),
        "+".join(sorted(entry["sample"]["configs"])),
        str(entry["dataset"]["revision"]),
    )


def split(accepted: list[Accepted]) -> tuple[list[Accepted], list[tuple[Path, str]]]:
    """(entries without a conflict, [(path, reason)] for every entry in one)."""
    groups: dict[tuple[str, Any], list[Accepted]] = defaultdict(list)
    for a in accepted:
        groups[("answers", answers_digest(a.validated.responses))].append(a)
        key = ranked_key(a.entry)
        if key is not None:
            groups[("ranked", key)].append(a)
    reasons: dict[Path, str] = {}
    for (kind, _), members in groups.items():
        if len(members) < 2:
            continue
        for a in members:
            others = ", ".join(sorted(b.path.name for b in members if b is not a))
            why = (
                f"the same answers as {others} (one set of answers is one entry, under one name)"
                if kind == "answers"
                else f"a second {VERSION} entry of the same model, revision, config and dataset as {others}"
            )
            reasons.setdefault(a.path, f"conflict: {why}; a maintainer keeps one and removes the other file")
    kept = [a for a in accepted if a.path not in reasons]
    return kept, sorted(reasons.items())
