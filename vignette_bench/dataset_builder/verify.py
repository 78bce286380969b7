"""``vignette build verify SOURCE``: check that a source's index and shards agree byte for byte."""

from __future__ import annotations

import argparse
import hashlib
import tarfile
from dataclasses import dataclass
from pathlib import Path

import fsspec
import pandas as pd
from tqdm.auto import tqdm

from vignette_bench.dataset_builder.records import RecordError
from vignette_bench.dataset_builder.shard import INDEX_PATH, ShardError, read_image_bytes, scan_shard


@dataclass(frozen=True)
class Problem:
    shard: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.shard}: key {self.key!r}: {self.message}"


def verify_source(root: str, progress: bool = True) -> list[Problem]:
    """Check that the index and the shards agree byte for byte; return every disagreement.

    For each index row: the shard holds ``<key>.<ext>`` at exactly that offset and length, and
    the bytes there (read by range, as a user would) have the recorded sha256. Every image in
    a shard must be in the index, and no key may appear twice.
    """
    root = str(root).rstrip("/")
    reindex_hint = f"rebuild the index with `vignette build shard --reindex {root}`"
    try:
        with fsspec.open(f"{root}/{INDEX_PATH}", "rb") as f:
            index = pd.read_parquet(f)
    except FileNotFoundError:
        return [Problem(INDEX_PATH, "", f"index missing; {reindex_hint}")]
    problems: list[Problem] = []
    dup = index[index.key.duplicated(keep=False)]
    for key, g in dup.groupby("key"):
        problems.append(
            Problem(
                ",".join(sorted(set(g.shard))), str(key), f"key appears {len(g)} times in the index; {reindex_hint}"
            )
        )
    fs, base = fsspec.core.url_to_fs(root)
    shards = sorted(set(index.shard))
    if "file" in fs.protocol:  # a local folder: also catch shards the index forgot
        shards = sorted(set(shards) | {f"renders/{Path(p).name}" for p in fs.glob(f"{base}/renders/*.tar")})
    for shard in tqdm(shards, desc="verify", unit="shard", disable=not progress):
        try:
            actual = {r.key: r for r in scan_shard(root, shard, with_sha=False)}
        except (FileNotFoundError, ShardError, RecordError, tarfile.TarError) as e:
            problems.append(
                Problem(shard, "", f"cannot read shard ({e}); re-download it, or delete it and re-run shard")
            )
            continue
        rows = index[index.shard == shard]
        for row in rows.itertuples(index=False):
            a = actual.get(row.key)
            if a is None:
                problems.append(Problem(shard, row.key, f"in the index but not in the shard; {reindex_hint}"))
                continue
            if (a.offset, a.length, a.format) != (row.offset, row.length, row.format):
                problems.append(
                    Problem(
                        shard,
                        row.key,
                        f"index says offset {row.offset}, length {row.length}, {row.format}; shard has {a.offset}, {a.length}, {a.format}; {reindex_hint}",
                    )
                )
                continue
            data = read_image_bytes(root, shard, int(row.offset), int(row.length))
            if hashlib.sha256(data).hexdigest() != row.sha256:
                problems.append(
                    Problem(
                        shard,
                        row.key,
                        f"bytes at offset {row.offset} do not match the index sha256; the shard is corrupt: re-download it, or delete it and re-run shard",
                    )
                )
        for key in sorted(set(actual) - set(rows.key)):
            problems.append(Problem(shard, key, f"in the shard but not in the index; {reindex_hint}"))
    return problems


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="source folder or fsspec URL (holding renders/index.parquet)")


def main(args: argparse.Namespace) -> int:
    problems = verify_source(args.source)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) in {args.source}")
        return 1
    with fsspec.open(f"{str(args.source).rstrip('/')}/{INDEX_PATH}", "rb") as f:
        n = len(pd.read_parquet(f))
    print(f"ok: all {n} index rows match their shard bytes (offset, length, sha256)")
    return 0
