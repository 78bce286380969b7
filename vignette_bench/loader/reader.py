"""The render index (``renders/index.parquet``) and the reader of render bytes.

``RenderIndex`` loads and validates the index (schema: `vignette_bench.formats.render_index`) and
says what the source covers; ``RenderReader`` reads one render with one ranged request (tar header
+ image data), checks the header and the sha256, and keeps a small LRU cache.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from vignette_bench.formats import render_index
from vignette_bench.formats.render_index import IMAGE_EXTENSIONS, INDEX_PATH, TAR_BLOCK
from vignette_bench.loader.errors import CorruptRenderError, MissingRenderError
from vignette_bench.loader.sources import Source
from vignette_bench.loader.space import Coverage

MAX_INDEX_BYTES = 512 * 1024**2  # the full index is ~7 MB


@dataclass(frozen=True)
class RenderLocation:
    key: str
    shard: str
    offset: int
    length: int
    sha256: str
    format: str


class RenderIndex:
    """``renders/index.parquet``: where each render's image bytes lie; validated on load."""

    COLUMNS = render_index.REQUIRED
    # indexes written before k renders per cell lack `variant` (all variant 0); reduced copies are optional
    OPTIONAL_COLUMNS = ("variant", *render_index.REDUCED_COLUMNS)

    def __init__(self, source: Source, table: pa.Table) -> None:
        self.source = source
        where = source.url(INDEX_PATH)
        problems = render_index.index_problems(table, where)
        if problems:
            more = f" (and possibly more; showing {len(problems)})" if len(problems) >= 20 else ""
            raise CorruptRenderError(
                "; ".join(problems[:3])
                + more
                + "; rebuild the index with `vignette build shard --reindex --out SOURCE`"
            )
        rows = table.select(list(self.COLUMNS)).to_pylist()
        self.locations: dict[str, RenderLocation] = {
            r["key"]: RenderLocation(r["key"], r["shard"], int(r["offset"]), int(r["length"]), r["sha256"], r["format"])
            for r in rows
        }
        # reduced copies (vignette_bench/dataset_builder/reduced.py): key -> (location, width, height)
        self.reduced: dict[str, tuple[RenderLocation, int, int]] = {}
        if render_index.REDUCED_COLUMNS[0] in table.column_names:
            for r in table.select(["key", *render_index.REDUCED_COLUMNS]).to_pylist():
                if r["reduced_shard"] is not None:
                    loc = RenderLocation(
                        r["key"],
                        r["reduced_shard"],
                        r["reduced_offset"],
                        r["reduced_length"],
                        r["reduced_sha256"],
                        "jpeg",
                    )
                    self.reduced[r["key"]] = (loc, int(r["reduced_width"]), int(r["reduced_height"]))
        self.keys = pa.array(list(self.locations), pa.string())
        self.coverage = Coverage(
            frozenset((r["gender"], r["identity"]) for r in rows if r["kind"] == "activity"),
            frozenset((r["gender"], r["identity"]) for r in rows if r["kind"] == "portrait"),
            frozenset(r["activity"] for r in rows if r["kind"] == "activity"),
            _render_variants(table, where),
        )

    @staticmethod
    def load(source: Source) -> RenderIndex:
        import pyarrow.parquet as pq

        try:
            data = source.read(INDEX_PATH, max_bytes=MAX_INDEX_BYTES)
        except FileNotFoundError as e:
            raise FileNotFoundError(
                f"{source.url(INDEX_PATH)}: no render index in source {source.root}; is this a VIGNETTE source (docs/FORMATS.md)?"
            ) from e
        try:
            # No thread at all: pyarrow 26 aborts the interpreter at exit ("terminate called without an
            # active exception") once a read has started a pool thread, and pq.read_table starts one
            # even with use_threads=False (its dataset layer); ParquetFile.read does not. The index is small.
            table = pq.ParquetFile(pa.BufferReader(data)).read(use_threads=False)
        except (pa.ArrowInvalid, KeyError, OSError) as e:
            raise CorruptRenderError(
                f"{source.url(INDEX_PATH)}: unreadable ({e}); rebuild it with `vignette build shard`"
            ) from e
        if table.num_rows == 0:  # before: "the filters select no pairs", which sent a user to the filters
            raise CorruptRenderError(
                f"{source.url(INDEX_PATH)}: the index has no rows (no render was sharded into source {source.root}); "
                "render and shard it (`vignette build shard --out SOURCE`), or name the right source"
            )
        missing = [c for c in RenderIndex.COLUMNS if c not in table.column_names]
        if missing:
            raise CorruptRenderError(
                f"{source.url(INDEX_PATH)}: missing column(s) {missing}; rebuild it with `vignette build shard --reindex --out SOURCE`"
            )
        wanted = list(RenderIndex.COLUMNS) + [c for c in RenderIndex.OPTIONAL_COLUMNS if c in table.column_names]
        return RenderIndex(source, table.select(wanted))

    def locate(self, key: str) -> RenderLocation:
        try:
            return self.locations[key]
        except KeyError:
            raise MissingRenderError(
                f"render {key!r} is missing from source {self.source.root} ({INDEX_PATH} has no such key); render it, or pass on_missing='skip'"
            ) from None


def _render_variants(table: pa.Table, where: str) -> dict[str, int]:
    """k per variant-0 key for cells with k > 1 renders; variants must run 0..k-1 with no gap."""
    if "variant" not in table.column_names:
        return {}
    found: dict[str, set[int]] = {}
    for key, v in zip(table.column("key").to_pylist(), table.column("variant").to_pylist()):
        if v:
            base = key[: -len(f"-v{v}")] if isinstance(v, int) and v > 0 and key.endswith(f"-v{v}") else None
            if base is None:
                raise CorruptRenderError(
                    f"{where}: key {key!r} has variant {v!r} but a variant-{v} key ends in '-v{v}'; rebuild the index with `vignette build shard`"
                )
            found.setdefault(base, {0}).add(v)
    keys = set(table.column("key").to_pylist())
    for base, vs in found.items():
        if base not in keys:
            vs = vs - {0}
        if vs != set(range(len(vs))):
            missing = sorted(set(range(max(vs) + 1)) - vs)
            raise CorruptRenderError(
                f"{where}: cell {base!r} has renders {sorted(vs)} but lacks variant(s) {missing}; render them "
                "(`vignette build render --renders-per-cell K`) and rebuild the shards"
            )
    return {base: len(vs) for base, vs in found.items()}


def _check_tar_header(header: bytes, loc: RenderLocation, where: str) -> None:
    """The ustar header just before the image data must name this key and this length."""

    def fail(what: str) -> CorruptRenderError:
        return CorruptRenderError(
            f"{where}: the index disagrees with the shard for render {loc.key!r} at byte {loc.offset}: {what}; rebuild the index with `vignette build shard`"
        )

    if len(header) != TAR_BLOCK or header[257:262] != b"ustar":
        raise fail("no tar header precedes the image data")
    try:
        stored = int(header[148:156].split(b"\0")[0].strip() or b"0", 8)
        size = int(header[124:136].split(b"\0")[0].strip() or b"0", 8)
    except ValueError:
        raise fail("malformed tar header") from None
    if sum(header[:148]) + 8 * 32 + sum(header[156:]) != stored:
        raise fail("tar header checksum mismatch")
    name = header[:100].split(b"\0")[0].decode("utf-8", "replace")
    prefix = header[345:500].split(b"\0")[0].decode("utf-8", "replace")
    name = f"{prefix}/{name}" if prefix else name
    if name not in {f"{loc.key}.{ext}" for ext in IMAGE_EXTENSIONS[loc.format]}:
        raise fail(f"member is {name!r}")
    if header[156:157] not in (b"0", b"\0"):
        raise fail(f"member {name!r} is not a regular file")
    if size != loc.length:
        raise fail(f"member {name!r} holds {size} bytes, the index says {loc.length}")


class RenderReader:
    """Render bytes by key: one ranged read (tar header + image data), validated; small LRU cache."""

    def __init__(self, index: RenderIndex, cache_size: int = 128) -> None:
        self.index, self.cache_size = index, cache_size
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"index": self.index, "cache_size": self.cache_size}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["index"], state["cache_size"])  # type: ignore[misc]

    def fork(self) -> RenderReader:
        """A reader for this process over the same index, starting from this one's cache (after a fork)."""
        copy = RenderReader(self.index, self.cache_size)
        copy._cache = OrderedDict(self._cache)
        return copy

    def read(self, key: str, reduced: bool = False) -> tuple[bytes, RenderLocation]:
        """The render's bytes, or (``reduced``) those of its reduced copy, which must exist."""
        loc = self.index.reduced[key][0] if reduced else self.index.locate(key)
        cache_key = f"{key}\0reduced" if reduced else key
        with self._lock:
            if cache_key in self._cache:
                self._cache.move_to_end(cache_key)
                return self._cache[cache_key], loc
        src = self.index.source
        where = src.url(loc.shard)
        try:
            blob = src.read(loc.shard, loc.offset - TAR_BLOCK, loc.offset + loc.length)
        except FileNotFoundError as e:
            raise MissingRenderError(f"render {key!r}: its shard {where} is missing from source {src.root}") from e
        if len(blob) != TAR_BLOCK + loc.length:
            raise CorruptRenderError(
                f"{where}: render {key!r}: got {len(blob)} bytes for [{loc.offset - TAR_BLOCK}, {loc.offset + loc.length}), expected {TAR_BLOCK + loc.length}; "
                "the shard is truncated, the index is stale, or the server ignores HTTP Range requests"
            )
        _check_tar_header(blob[:TAR_BLOCK], loc, where)
        data = blob[TAR_BLOCK:]
        if loc.sha256 and hashlib.sha256(data).hexdigest() != loc.sha256:
            raise CorruptRenderError(
                f"{where}: render {key!r} at byte {loc.offset}: sha256 differs from the index; the shard is corrupt or the index is stale"
            )
        with self._lock:
            self._cache[cache_key] = data
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return data, loc
