"""Where the protocol sample lies in a source and what its ``protocol/<config>/manifest.json`` says.

protocol_sample.py writes the sample and then calls the card; the card (and the upload's card) read
which configs are complete and how many rows they hold. The reading lives here, below both, so the
card does not import the writer that calls it (tests/test_layout.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vignette_bench.errors import VignetteError

PROTOCOL_DIR = "protocol"
MANIFEST = "manifest.json"
SHARD_KEYS = {"file": str, "rows": int, "bytes": int, "sha256": str, "arrow_bytes": int}
SPLIT = "test"


class ProtocolSampleError(VignetteError):
    """The protocol sample cannot be built or does not match its manifest; the message says what to do."""


def protocol_configs() -> tuple[str, ...]:
    from vignette_bench.eval.leaderboard.protocol import CONFIGS

    return CONFIGS


def read_manifest(folder: Path) -> dict[str, Any] | None:
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ProtocolSampleError(
            f"{path}: unreadable ({e}); delete it and rerun `vignette build protocol-sample`"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("shards"), list) or not isinstance(data.get("rows"), int):
        raise ProtocolSampleError(f"{path}: not a protocol-sample manifest; delete it and rerun")
    for i, shard in enumerate(data["shards"]):
        bad = [k for k, t in SHARD_KEYS.items() if not isinstance(shard, dict) or not isinstance(shard.get(k), t)]
        if bad:
            raise ProtocolSampleError(f"{path}: shards[{i}] lacks or mistypes {bad}; delete the file and rerun")
    return data


def complete_configs(root: Path) -> list[str]:
    """Protocol configs of `root` whose manifest is complete (what the card declares), in protocol order."""
    out = []
    for config in protocol_configs():
        manifest = read_manifest(root / PROTOCOL_DIR / config)
        if manifest is not None and manifest.get("complete"):
            out.append(config)
    return out
