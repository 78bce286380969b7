"""VIGNETTE pairs as Hugging Face datasets: the pair space, lazy composition, sources.

The benchmark's 31.5M paired images are never stored. A *source* (a local folder, a base URL or
a Hub dataset repo, one layout: docs/FORMATS.md) holds one render per (gender, identity,
activity) and a portrait per (gender, identity); this module

* counts and enumerates every pair by arithmetic (``PairSpace``: position <-> pair in O(1),
  vectorised with numpy, filters composed from sub-spaces, never enumerating what they drop);
* reads a pair's two renders with two ranged reads (``renders/index.parquet`` gives each image's
  shard, byte offset and length) through one fsspec code path, and
* composes them side by side with a soft seam when a row is accessed (``compose``).

``load_dataset(path, name)`` returns a real ``datasets.Dataset`` (``streaming=False``) or
``datasets.IterableDataset`` with the Features of docs/FORMATS.md. CLI::

    vignette info [--source S] [--json]
    vignette show CONFIG --index N --out pair.png [--source S]

Docs: docs/vignette.md.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import io
import json
import logging
import os
import re
import sys
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from fsspec import AbstractFileSystem

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

from vignette_bench.dataset_builder import index_schema
from vignette_bench.dataset_builder.records import variant_key
from vignette_bench.taxonomy import GENDERS, REPRESENTATIVENESS, TIME_USES, Identity, Taxonomy, load_taxonomy, slug

logger = logging.getLogger("vignette")

CONFIGS = ("identity_contrast", "activity_contrast", "identity_activity_contrast", "portraits")
# Plain data, handed to datasets.load_dataset itself: the renders (WebDataset shards) and the parquet
# configs a source's card declares (the index, the news subset, each pair config's rows without images).
DATA_CONFIGS = ("renders", "index", "news") + tuple(f"{c}_specs" for c in CONFIGS)
GROUPS = ("male", "female", "mixed")  # pair gender; "mixed" is the man-woman pair of the gender dimension
SPLIT = "test"
DEFAULT_SOURCE = "hf://datasets/vignette-bench/vignette"
DEFAULT_SIZE = (672, 336)  # the paper fed models 672x336 pairs
DEFAULT_SEAM = 32  # pixels of cross-fade between the two halves at the output size
INDEX_PATH = "renders/index.parquet"
KEY_RE = re.compile(r"^[a-z0-9_-]+$")
SHARD_RE = re.compile(r"^renders/[a-z0-9_-]+\.tar$")
IMAGE_EXTENSIONS = {"jpeg": ("jpg", "jpeg"), "webp": ("webp",)}
TAR_BLOCK = 512
PORTRAIT = "portrait"

# How the identity part and the activity part of each config are built.
_IDENTITY_KIND = {
    "identity_contrast": "comb",
    "identity_activity_contrast": "comb",
    "portraits": "comb",
    "activity_contrast": "single",
}
_ACTIVITY_KIND = {
    "identity_contrast": "one",
    "identity_activity_contrast": "ordered",
    "portraits": "none",
    "activity_contrast": "comb",
}


# --------------------------------------------------------------------------------------- errors


class VignetteError(ValueError):
    """Bad input; the message names what was wrong and what to use instead."""


class SourceError(VignetteError):
    """A source cannot be read (network, size); the message names the URL and what to check."""


CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0
RETRIES = 3  # transient network errors: retried with exponential backoff
BACKOFF_S = 0.5
MAX_INDEX_BYTES = 512 * 1024**2  # the full index is ~7 MB


class MissingRenderError(LookupError):
    """A pair needs a render that the source does not have."""


class CorruptRenderError(ValueError):
    """A render's bytes cannot be decoded, or the shard disagrees with the index."""


def _unknown(kind: str, name: Any, valid: Iterable[str]) -> VignetteError:
    valid = list(valid)
    close = difflib.get_close_matches(str(name), valid, n=1)
    hint = f" Closest match: {close[0]!r}." if close else ""
    return VignetteError(f"unknown {kind} {name!r}.{hint} Valid {kind} names: {', '.join(valid)}")


def _as_tuple(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return (value,) if isinstance(value, str) else tuple(value)


# --------------------------------------------------------------------------- combinatorics (numpy)


def comb2(n: int) -> int:
    return n * (n - 1) // 2


def rank_comb(i: np.ndarray, j: np.ndarray, n: int) -> np.ndarray:
    """Lexicographic rank of the pair i < j among the C(n, 2) pairs of range(n)."""
    return i * n - i * (i + 1) // 2 + (j - i - 1)


def unrank_comb(r: np.ndarray, n: int | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of ``rank_comb``: closed form (a quadratic's root), then a +-1 float fix-up."""
    r = np.asarray(r, dtype=np.int64)
    b = 2 * n - 1
    i = np.floor((b - np.sqrt(np.maximum(b * b - 8.0 * r, 0.0))) / 2).astype(np.int64)
    i = np.clip(i, 0, np.maximum(n - 2, 0))
    start = i * n - i * (i + 1) // 2
    i = np.where(start > r, i - 1, i)
    nxt = (i + 1) * n - (i + 1) * (i + 2) // 2
    i = np.where(nxt <= r, i + 1, i)
    start = i * n - i * (i + 1) // 2
    return i, r - start + i + 1


def _unskip(r: np.ndarray, excluded: np.ndarray) -> np.ndarray:
    """Rank among the kept items -> raw rank, skipping the sorted ``excluded`` raw ranks."""
    if len(excluded) == 0:
        return r
    adjusted = excluded - np.arange(len(excluded))
    return r + np.searchsorted(adjusted, r, side="right")


# ------------------------------------------------------------------------------------ the space


@dataclass(frozen=True)
class Member:
    """An identity as rendered in one pair group (its surface form in ``gender``)."""

    identity: Identity
    gender: str  # the render gender, male | female

    @property
    def form(self) -> str:
        return self.identity.form(self.gender)  # type: ignore[arg-type]

    def key(self, activity: str = "") -> str:
        return f"{self.gender}-{slug(self.identity.dimension)}-{slug(self.identity.name)}-{slug(activity) if activity else PORTRAIT}"


@dataclass(frozen=True)
class FullBlock:
    """One (pair gender, dimension) of a config's unfiltered space; members in taxonomy order."""

    group: str
    dimension: str
    members: tuple[Member, ...]
    offset: int  # first index of this block in the config's space
    n_activity_part: int  # size of the activity part per identity part

    def member_position(self, name: str) -> int | None:
        for p, m in enumerate(self.members):
            if m.identity.name == name:
                return p
        return None


@dataclass(frozen=True, eq=False)
class _Block:
    """A sub-space of one full block: chosen members and activities, minus excluded identity pairs.

    ``kind`` is ``comb`` (pairs within ``left``), ``cross`` (one from ``left``, one from ``right``)
    or ``single`` (one member). Sizes and decoding are pure arithmetic on these small arrays.
    """

    full: int
    kind: str
    left: np.ndarray  # member positions in the full block, increasing
    right: np.ndarray
    excluded: np.ndarray  # raw identity-part ranks dropped (near-synonyms), increasing
    acts: np.ndarray  # activity positions (taxonomy order), increasing
    act_kind: str

    @property
    def n_identity_raw(self) -> int:
        if self.kind == "comb":
            return comb2(len(self.left))
        if self.kind == "cross":
            return len(self.left) * len(self.right)
        return len(self.left)

    @property
    def n_identity(self) -> int:
        return self.n_identity_raw - len(self.excluded)

    @property
    def n_activity(self) -> int:
        return _activity_part_size(self.act_kind, len(self.acts))

    @property
    def size(self) -> int:
        return self.n_identity * self.n_activity

    def identity_rank(self, a: int, b: int) -> int | None:
        """Raw rank of the member pair at full positions (a, b) in this block, or None."""
        la, lb = np.searchsorted(self.left, a), np.searchsorted(self.left, b)
        in_left = lambda p, q: q < len(self.left) and self.left[q] == p  # noqa: E731
        if self.kind == "comb" and in_left(a, la) and in_left(b, lb):
            return int(rank_comb(np.asarray(min(la, lb)), np.asarray(max(la, lb)), len(self.left)))
        if self.kind == "cross":
            for x, y in ((a, b), (b, a)):
                ix, iy = np.searchsorted(self.left, x), np.searchsorted(self.right, y)
                if in_left(x, ix) and iy < len(self.right) and self.right[iy] == y:
                    return int(ix * len(self.right) + iy)
        return None

    def decode_identities(self, ip: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Identity-part ranks (after exclusions) -> (first member, second member or -1)."""
        ip = _unskip(ip, self.excluded)
        if self.kind == "comb":
            x, y = unrank_comb(ip, len(self.left))
            return self.left[x], self.left[y]
        if self.kind == "cross":
            a, b = self.left[ip // len(self.right)], self.right[ip % len(self.right)]
            return np.minimum(a, b), np.maximum(a, b)
        return self.left[ip], np.full_like(ip, -1)


def _decode_activities(ap: np.ndarray, acts: np.ndarray, act_kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Activity-part ranks -> (activity 1, activity 2) positions; -1 for portraits."""
    k = len(acts)
    if act_kind == "one":
        return acts[ap], acts[ap]
    if act_kind == "comb":
        x, y = unrank_comb(ap, k)
        return acts[x], acts[y]
    if act_kind == "ordered":
        x, y = ap // (k - 1), ap % (k - 1)
        return acts[x], acts[y + (y >= x)]
    return np.full_like(ap, -1), np.full_like(ap, -1)


def _activity_part_size(kind: str, k: int) -> int:
    return {"one": k, "comb": comb2(k), "ordered": k * (k - 1), "none": 1}[kind]


@dataclass(frozen=True)
class Coverage:
    """What a source has renders for: (gender, identity) members and activities, per kind."""

    activity_members: frozenset[tuple[str, str]]
    portrait_members: frozenset[tuple[str, str]]
    activities: frozenset[str]
    # k per variant-0 key, for cells rendered k > 1 times (``vignette build render --renders-per-cell``)
    variants: dict[str, int] = field(default_factory=dict, compare=False)

    def members(self, config: str) -> frozenset[tuple[str, str]]:
        return self.portrait_members if config == "portraits" else self.activity_members


def choose_variant(key: str, config: str, index: int, variants: dict[str, int]) -> str:
    """Which of a cell's k renders a pair shows: fixed by the pair (both orders alike) and the cell.

    A stable hash (crc32, not Python's salted ``hash``) of the pair's full-space index (the same in
    both orders and under any filter) and the cell spreads an identity's pairs over its k renders, so
    one render's look is one cluster among k, not the identity's only face. Cells rendered once keep
    their key (the paper's design).
    """
    k = variants.get(key, 1)
    if k <= 1:
        return key
    return variant_key(key, zlib.crc32(f"{config}/{index}|{key}".encode()) % k)


@dataclass(frozen=True)
class PairSpec:
    """One pair, in left/right order; ``index`` is its position in the config's full space."""

    config: str
    index: int
    gender: str
    dimension: str
    identity_left: str
    identity_right: str
    form_left: str
    form_right: str
    activity_left: str
    activity_right: str
    key_left: str
    key_right: str
    swapped: bool
    pair_id: str


Orders = Literal["rule", "both", "balanced"]
ORDERS: tuple[str, ...] = ("rule", "both", "balanced")


class PairFilters(TypedDict):
    """What a PairSpace keeps (None: no restriction on that field)."""

    gender: tuple[str, ...] | None
    dimensions: tuple[str, ...] | None
    identities: tuple[str, ...] | None
    identity_match: Literal["all", "any"]
    activities: tuple[str, ...] | None
    time_use: tuple[str, ...] | None
    exclude_near_synonyms: bool
    representativeness: tuple[str, ...] | None


class PairSpace:
    """The pairs of one config, optionally filtered; position <-> pair by arithmetic.

    The full (unfiltered) space is a concatenation of blocks, one per (pair gender, dimension), in
    the order male, female, mixed and taxonomy dimension order. Inside a block, pairs are ordered
    by identity part (lexicographic pair rank over taxonomy order), then activity part (one
    activity; ordered (a1 != a2) for identity_activity_contrast; unordered a1 < a2 for
    activity_contrast). ``PairSpec.index`` is always the position in that full space, so ids and
    indices do not change with filters.

    Filters (all optional, combined with AND) build sub-blocks arithmetically:
    ``gender`` (male | female | mixed), ``dimensions``, ``identities`` (with
    ``identity_match="all"``: every identity of the pair is listed; ``"any"``: at least one is),
    ``activities`` and ``time_use`` (every activity of the pair must pass),
    ``exclude_near_synonyms`` (drop taxonomy.near_synonyms pairs), ``representativeness`` (only
    identities whose ``Identity.visual_representativeness`` is listed), ``coverage`` (only members and
    activities a source has renders for).

    Left/right rule: the canonical pair is (first, second) in taxonomy order; ``swapped`` (the second
    stands left) is the parity of the pair's rank inside its full block. Consecutive pairs
    alternate, so every identity (activity, for activity_contrast) stands on each side equally
    often up to rounding; the rule depends only on the pair, never on filters or file order.
    ``orders="both"`` yields every pair twice: position 2k is the rule's order, 2k+1 the mirror.
    ``orders="balanced"`` yields every pair once (positions 0..n-1, the rule's order: the rule already
    balances the whole space); its samples orient the sampled pairs so that every identity stands left
    within one offer of half its appearances (``sample``), using the mirror addresses n + k (pair k,
    mirrored) where the rule's order would unbalance the sample.
    """

    def __init__(
        self,
        taxonomy: Taxonomy,
        config: str,
        *,
        gender: str | Sequence[str] | None = None,
        dimensions: str | Sequence[str] | None = None,
        identities: str | Sequence[str] | None = None,
        identity_match: Literal["all", "any"] = "all",
        activities: str | Sequence[str] | None = None,
        time_use: str | Sequence[str] | None = None,
        exclude_near_synonyms: bool = False,
        representativeness: str | Sequence[str] | None = None,
        coverage: Coverage | None = None,
        orders: Orders = "rule",
    ) -> None:
        if config not in CONFIGS:
            raise _unknown("config", config, CONFIGS + DATA_CONFIGS)
        if orders not in ORDERS:
            raise _unknown("orders option", orders, ORDERS)
        if identity_match not in ("all", "any"):
            raise _unknown("identity_match option", identity_match, ("all", "any"))
        self.taxonomy, self.config, self.orders = taxonomy, config, orders
        self.variants = coverage.variants if coverage is not None else {}
        self.filters: PairFilters = {
            "gender": _as_tuple(gender),
            "dimensions": _as_tuple(dimensions),
            "identities": _as_tuple(identities),
            "identity_match": identity_match,
            "activities": _as_tuple(activities),
            "time_use": _as_tuple(time_use),
            "exclude_near_synonyms": exclude_near_synonyms,
            "representativeness": _as_tuple(representativeness),
        }
        self.full_blocks = _full_blocks(taxonomy, config)
        self.full_size = (
            self.full_blocks[-1].offset + _full_block_size(config, self.full_blocks[-1]) if self.full_blocks else 0
        )
        self.blocks = self._filtered_blocks(coverage)
        sizes = np.array([b.size for b in self.blocks], dtype=np.int64)
        self._offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.n_pairs = int(self._offsets[-1])
        self._acts = self.blocks[0].acts if self.blocks else np.zeros(0, np.int64)
        self._n_act = max(1, _activity_part_size(_ACTIVITY_KIND[config], len(self._acts)))
        self._block_full = np.array([b.full for b in self.blocks], dtype=np.int64)
        self._n_left = np.array([len(b.left) for b in self.blocks], dtype=np.int64)
        self._left_base = (
            np.concatenate([[0], np.cumsum(self._n_left)[:-1]]).astype(np.int64)
            if self.blocks
            else np.zeros(0, np.int64)
        )
        self._left_cat = np.concatenate([b.left for b in self.blocks]) if self.blocks else np.zeros(0, np.int64)
        kinds = {b.kind for b in self.blocks}
        self._plain_kind = kinds.pop() if len(kinds) == 1 and not any(len(b.excluded) for b in self.blocks) else ""
        self._full_offsets = np.array([b.offset for b in self.full_blocks], dtype=np.int64)
        self._full_act = np.array([b.n_activity_part for b in self.full_blocks], dtype=np.int64)
        self._full_n = np.array([len(b.members) for b in self.full_blocks], dtype=np.int64)

    @cached_property
    def _tables(self) -> _Tables:
        return _Tables.build(self.taxonomy, self.full_blocks)  # only when string columns are asked for

    # ---- construction

    def _filtered_blocks(self, coverage: Coverage | None) -> list[_Block]:
        f, tax = self.filters, self.taxonomy
        for g in f["gender"] or ():
            if g not in GROUPS:
                raise _unknown("gender", g, GROUPS)
        for d in f["dimensions"] or ():
            if d not in tax.dimensions:
                raise _unknown("dimension", d, tax.dimensions)
        for r in f["representativeness"] or ():
            if r not in REPRESENTATIVENESS:
                raise _unknown("representativeness", r, REPRESENTATIVENESS)
        names = {i.name for i in tax.identities}
        for i in f["identities"] or ():
            if i not in names:
                raise _unknown("identity", i, [x.name for x in tax.identities])
        act_names = [a.name for a in tax.activities]
        for a in f["activities"] or ():
            if a not in act_names:
                raise _unknown("activity", a, act_names)
        for t in f["time_use"] or ():
            if t not in TIME_USES:
                raise _unknown("time use", t, TIME_USES)
        acts = np.array(
            [
                p
                for p, a in enumerate(tax.activities)
                if (f["activities"] is None or a.name in f["activities"])
                and (f["time_use"] is None or a.time_use in f["time_use"])
                and (coverage is None or self.config == "portraits" or a.name in coverage.activities)
            ],
            dtype=np.int64,
        )
        if self.config == "portraits":
            acts = np.zeros(0, dtype=np.int64)
        act_kind = _ACTIVITY_KIND[self.config]
        blocks: list[_Block] = []
        for fi, fb in enumerate(self.full_blocks):
            if (f["gender"] is not None and fb.group not in f["gender"]) or (
                f["dimensions"] is not None and fb.dimension not in f["dimensions"]
            ):
                continue
            have = [
                p
                for p, m in enumerate(fb.members)
                if (coverage is None or (m.gender, m.identity.name) in coverage.members(self.config))
                and (f["representativeness"] is None or m.identity.visual_representativeness in f["representativeness"])
            ]
            chosen = [p for p in have if f["identities"] is None or fb.members[p].identity.name in f["identities"]]
            kind = _IDENTITY_KIND[self.config]
            parts: list[tuple[str, list[int], list[int]]]
            if kind == "single" or f["identity_match"] == "all" or f["identities"] is None:
                parts = [(kind, chosen, [])]
            else:  # any: pairs within the chosen ones, plus chosen x the others
                parts = [("comb", chosen, []), ("cross", chosen, [p for p in have if p not in chosen])]
            for part_kind, left, right in parts:
                block = _Block(
                    fi,
                    part_kind,
                    np.array(left, np.int64),
                    np.array(right, np.int64),
                    np.zeros(0, np.int64),
                    acts,
                    act_kind,
                )
                if f["exclude_near_synonyms"] and part_kind != "single":
                    block = self._without_synonyms(block, fb)
                if block.size > 0:
                    blocks.append(block)
        return blocks

    def _without_synonyms(self, block: _Block, fb: FullBlock) -> _Block:
        ranks = set()
        for s in self.taxonomy.near_synonyms:
            a, b = fb.member_position(s.identity_a), fb.member_position(s.identity_b)
            if a is not None and b is not None:
                r = block.identity_rank(a, b)
                if r is not None:
                    ranks.add(r)
        excluded = np.array(sorted(ranks), dtype=np.int64)
        return _Block(block.full, block.kind, block.left, block.right, excluded, block.acts, block.act_kind)

    # ---- sizes

    def __len__(self) -> int:
        return self.n_pairs * (2 if self.orders == "both" else 1)

    def sizes(self) -> dict[tuple[str, str], int]:
        """Pairs per (pair gender, dimension), in block order (orientations not counted)."""
        out: dict[tuple[str, str], int] = {}
        for b in self.blocks:
            fb = self.full_blocks[b.full]
            out[(fb.group, fb.dimension)] = out.get((fb.group, fb.dimension), 0) + b.size
        return out

    # ---- decoding

    def decode(self, positions: np.ndarray | Sequence[int]) -> dict[str, np.ndarray]:
        """Vectorised: positions -> integer codes (full block, members, activities, index, swapped).

        Returned arrays: ``block`` (full block), ``first``/``second`` (member positions in taxonomy
        order; second is -1 for activity_contrast), ``act1``/``act2`` (activity positions, -1 for
        portraits; equal for identity_contrast), ``index`` (full-space index), ``swapped``.
        """
        pos = np.asarray(positions, dtype=np.int64).reshape(-1)
        n_addresses = 2 * self.n_pairs if self.orders == "balanced" else len(self)  # balanced: + mirror addresses
        if pos.size and (pos.min() < 0 or pos.max() >= n_addresses):
            bad = int(pos[(pos < 0) | (pos >= n_addresses)][0])
            raise IndexError(
                f"{self.config}: position {bad} out of range; this selection has {len(self)} rows (0..{len(self) - 1})"
            )
        flip = np.zeros(pos.shape, dtype=bool)
        if self.orders == "both":
            pos, flip = pos // 2, (pos % 2).astype(bool)
        elif self.orders == "balanced":
            flip = pos >= self.n_pairs
            pos = np.where(flip, pos - self.n_pairs, pos)
        out: dict[str, np.ndarray] = {}
        which = np.searchsorted(self._offsets, pos, side="right") - 1
        ip, ap = np.divmod(pos - self._offsets[which], self._n_act)  # every block shares the activity part
        out["act1"], out["act2"] = _decode_activities(ap, self._acts, _ACTIVITY_KIND[self.config])
        out["block"] = self._block_full[which]
        if self._plain_kind == "comb":  # one formula for all blocks: gather each block's n and members
            base = self._left_base[which]
            x, y = unrank_comb(ip, self._n_left[which])
            out["first"], out["second"] = self._left_cat[base + x], self._left_cat[base + y]
        elif self._plain_kind == "single":
            out["first"], out["second"] = self._left_cat[self._left_base[which] + ip], np.full_like(ip, -1)
        else:  # exclusions or cross blocks: block by block
            out["first"], out["second"] = np.empty_like(ip), np.empty_like(ip)
            for bi in np.unique(which):
                sel = which == bi
                out["first"][sel], out["second"][sel] = self.blocks[bi].decode_identities(ip[sel])
        out["index"] = self._encode(out)
        rank_in_block = out["index"] - self._full_offsets[out["block"]]
        out["swapped"] = (rank_in_block % 2).astype(bool) ^ flip
        return out

    def _encode(self, c: dict[str, np.ndarray]) -> np.ndarray:
        n_members, n_act = self._full_n[c["block"]], self._full_act[c["block"]]
        if self.config == "activity_contrast":
            ident = c["first"]
        else:
            f = c["first"]
            ident = f * n_members - f * (f + 1) // 2 + (c["second"] - f - 1)
        K = len(self.taxonomy.activities)
        a1, a2 = c["act1"], c["act2"]
        act = {
            "one": a1,
            "comb": a1 * K - a1 * (a1 + 1) // 2 + (a2 - a1 - 1),
            "ordered": a1 * (K - 1) + a2 - (a2 > a1),
            "none": np.zeros_like(a1),
        }[_ACTIVITY_KIND[self.config]]
        return self._full_offsets[c["block"]] + ident * n_act + act

    def __getitem__(self, position: int) -> PairSpec:
        if not isinstance(position, (int, np.integer)):
            raise TypeError("PairSpace[position] takes one int; use decode() or columns() for many")
        if position < 0:
            position += len(self)
        c = {k: int(v[0]) for k, v in self.decode([position]).items()}
        fb = self.full_blocks[c["block"]]
        first, second = fb.members[c["first"]], fb.members[c["second"]] if c["second"] >= 0 else None
        a1, a2 = (self.taxonomy.activities[c[k]].name if c[k] >= 0 else "" for k in ("act1", "act2"))
        sw = bool(c["swapped"])
        if self.config == "activity_contrast":
            ml = mr = first
            al, ar = (a2, a1) if sw else (a1, a2)
        else:
            assert second is not None
            ml, mr = (second, first) if sw else (first, second)
            al, ar = (a2, a1) if sw and self.config == "identity_activity_contrast" else (a1, a2)
        ids = (
            slug(ml.identity.name)
            if self.config == "activity_contrast"
            else f"{slug(ml.identity.name)}+{slug(mr.identity.name)}"
        )
        acts = {"portraits": PORTRAIT, "identity_contrast": slug(al)}.get(self.config, f"{slug(al)}+{slug(ar)}")
        pair_id = f"{self.config}/{fb.group}/{slug(fb.dimension)}/{ids}/{acts}/L{int(sw)}"
        return PairSpec(
            self.config,
            c["index"],
            fb.group,
            fb.dimension,
            ml.identity.name,
            mr.identity.name,
            ml.form,
            mr.form,
            al,
            ar,
            choose_variant(ml.key(al), self.config, c["index"], self.variants),
            choose_variant(mr.key(ar), self.config, c["index"], self.variants),
            sw,
            pair_id,
        )

    def index_of(self, spec: PairSpec) -> int:
        """The full-space index of a pair (inverse of decoding), checked against its pair_id."""
        parsed = self.parse_pair_id(spec.pair_id)
        if parsed != spec.index:
            raise VignetteError(f"pair {spec.pair_id!r} has index {parsed}, not {spec.index}")
        return parsed

    def parse_pair_id(self, pair_id: str) -> int:
        """Full-space index of a ``pair_id`` (``config/gender/dimension/ids/activities/L0|L1``)."""
        parts = pair_id.split("/")
        if len(parts) != 6 or parts[0] != self.config or parts[5] not in ("L0", "L1"):
            raise VignetteError(
                f"malformed pair_id {pair_id!r} for {self.config}; expected {self.config}/GENDER/DIMENSION/IDENTITIES/ACTIVITIES/L0|L1"
            )
        _, group, dim_slug, ids, acts, side = parts
        for fi, fb in enumerate(self.full_blocks):  # noqa: B007  # fi is used after the loop
            if fb.group == group and slug(fb.dimension) == dim_slug:
                break
        else:
            raise VignetteError(f"pair_id {pair_id!r}: no {group}/{dim_slug} block in {self.config}")
        slugs = [slug(m.identity.name) for m in fb.members]
        act_slugs = [slug(a.name) for a in self.taxonomy.activities]
        try:
            people = [slugs.index(s) for s in ids.split("+")]
            doing = [] if acts == PORTRAIT else [act_slugs.index(s) for s in acts.split("+")]
        except ValueError:
            raise VignetteError(f"pair_id {pair_id!r}: unknown identity or activity slug") from None
        swapped = side == "L1"
        if self.config == "activity_contrast":
            a1, a2 = (doing[1], doing[0]) if swapped else (doing[0], doing[1])
            codes = (people[0], -1, a1, a2)
        else:
            first, second = (people[1], people[0]) if swapped else (people[0], people[1])
            if self.config == "identity_activity_contrast":
                a1, a2 = (doing[1], doing[0]) if swapped else (doing[0], doing[1])
            else:
                a1 = a2 = doing[0] if doing else -1
            codes = (first, second, a1, a2)
        c = {k: np.array([v], np.int64) for k, v in zip(("first", "second", "act1", "act2"), codes)}
        c["block"] = np.array([fi], np.int64)
        return int(self._encode(c)[0])

    def columns(self, positions: np.ndarray | Sequence[int]) -> dict[str, pa.Array]:
        """Vectorised: positions -> the pair-row columns of docs/FORMATS.md (without the image)."""
        c = self.decode(positions)
        cols = self._tables.columns(self.config, c)
        if self.variants:
            indices = cols["index"].to_pylist()
            for side in ("key_left", "key_right"):
                keys = cols[side].to_pylist()
                cols[side] = pa.array(
                    [choose_variant(k, self.config, i, self.variants) for k, i in zip(keys, indices)], pa.string()
                )
        return cols

    # ---- sampling

    def sample(self, n: int, seed: int) -> np.ndarray:
        """``n`` distinct pairs, seeded and balanced; returns sorted positions.

        Pairs are allotted to blocks in proportion to their number of identities (largest
        remainder), so every identity is about equally represented whatever its dimension's size;
        inside a block, identity pairs and activity parts are dealt from fresh random permutations
        in turn (each is used once before any repeats), collisions redrawn at random. With
        ``orders="both"`` each sampled pair comes in both orders (2n positions). With
        ``orders="balanced"`` each comes once, oriented by `_balanced_flips` (n positions in pair order;
        a mirrored pair k has position n_pairs + k).
        """
        if n < 0 or n > self.n_pairs:
            raise VignetteError(f"cannot sample {n} pairs: this selection of {self.config} has {self.n_pairs}")
        rng = np.random.default_rng(seed)
        weights = np.array([len(b.left) + len(b.right) for b in self.blocks], dtype=np.float64)
        caps = np.array([b.size for b in self.blocks], dtype=np.int64)
        quota = _allot(n, weights, caps)
        picked = [
            self._offsets[i] + _sample_block(b, int(q), rng) for i, (b, q) in enumerate(zip(self.blocks, quota)) if q
        ]
        pos = np.sort(np.concatenate(picked)) if picked else np.zeros(0, np.int64)
        if self.orders == "both":
            pos = np.stack([2 * pos, 2 * pos + 1], axis=1).reshape(-1)
        elif self.orders == "balanced" and len(pos):
            pos = pos + self.n_pairs * self._balanced_flips(pos, seed)
        return pos

    def side_units(self, positions: np.ndarray | Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Global ids of what stands (left, right) at each position: members, or activities for activity_contrast."""
        c = self.decode(positions)
        if self.config == "activity_contrast":  # one identity on both sides: its activities take the sides
            a, b = c["act1"], c["act2"]
        else:
            base = np.concatenate([[0], np.cumsum([len(fb.members) for fb in self.full_blocks])])[c["block"]]
            a, b = base + c["first"], base + c["second"]
        sw = c["swapped"]
        return np.where(sw, b, a), np.where(sw, a, b)

    def _balanced_flips(self, pos: np.ndarray, seed: int) -> np.ndarray:
        """Which of the pairs at rule positions ``pos`` to mirror so that sides balance per identity.

        Each pair is an edge between its two side units (members; activities for activity_contrast).
        Odd-degree vertices are joined to a dummy vertex, so every connected component has an Euler
        circuit; walking it and putting each edge's tail on the left gives every vertex as many left
        as right offers, and dropping the dummy edges leaves each within one half of an offer of half.
        Edge order and start vertices are shuffled by the seed, so the orientation owes nothing to
        taxonomy order. Returns a bool array (True: mirror the rule's order).
        """
        rule_left, rule_right = self.side_units(pos)
        left = _euler_orientation(rule_left, rule_right, np.random.default_rng([seed, 0xBA1]))
        return ~left


def _euler_orientation(u: np.ndarray, v: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Orient the edges (u[i], v[i]) of a multigraph so that |out − in| <= 1 at every vertex.

    Returns a bool array: True keeps u[i] -> v[i], False reverses it. Hierholzer's algorithm on the
    graph plus a dummy vertex joined to every odd-degree vertex (iterative; O(edges)).
    """
    m = len(u)
    ids, inv = np.unique(np.concatenate([u, v]), return_inverse=True)
    a, b = inv[:m], inv[m:]
    dummy = len(ids)
    deg = np.bincount(np.concatenate([a, b]), minlength=dummy)
    odd = np.flatnonzero(deg % 2)
    ea = np.concatenate([a, odd]).astype(np.int64)  # edges m.. are the dummy edges
    eb = np.concatenate([b, np.full(len(odd), dummy)]).astype(np.int64)
    order = rng.permutation(len(ea))
    adj: list[list[int]] = [[] for _ in range(dummy + 1)]
    for e in order.tolist():
        adj[ea[e]].append(e)
        adj[eb[e]].append(e)
    used = np.zeros(len(ea), dtype=bool)
    forward = np.ones(len(ea), dtype=bool)
    for start in rng.permutation(dummy + 1).tolist():
        if not adj[start]:
            continue
        stack = [start]
        while stack:  # each edge is oriented as it is first walked: the walk leaves by its tail
            x = stack[-1]
            while adj[x] and used[adj[x][-1]]:
                adj[x].pop()
            if not adj[x]:
                stack.pop()
                continue
            e = adj[x].pop()
            used[e] = True
            forward[e] = ea[e] == x
            stack.append(int(eb[e] if ea[e] == x else ea[e]))
    return forward[:m]


def _allot(n: int, weights: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """Split n in proportion to weights (largest remainder), never above caps."""
    quota = np.zeros(len(weights), dtype=np.int64)
    left = n
    open_ = caps > 0
    while left > 0:
        w = np.where(open_, weights, 0.0)
        share = left * w / w.sum()
        add = np.floor(share).astype(np.int64)
        order = np.argsort(-(share - add), kind="stable")
        add[order[: left - add.sum()]] += 1
        add = np.minimum(add, caps - quota)
        quota += add
        left -= int(add.sum())
        open_ = quota < caps
    return quota


def _sample_block(block: _Block, k: int, rng: np.random.Generator) -> np.ndarray:
    size, n_i, n_a = block.size, block.n_identity, block.n_activity
    if 2 * k > size:
        return np.sort(rng.permutation(size)[:k])
    deal = lambda m: np.concatenate([rng.permutation(m) for _ in range(-(-k // m))])[:k]  # noqa: E731
    ranks = np.unique(deal(n_i) * n_a + deal(n_a))
    while len(ranks) < k:  # collisions of (identity part, activity part): redraw uniformly
        extra = np.setdiff1d(rng.integers(0, size, size=2 * (k - len(ranks))), ranks)
        ranks = np.union1d(ranks, rng.permutation(extra)[: k - len(ranks)])
    return ranks


def _full_block_size(config: str, fb: FullBlock) -> int:
    n = len(fb.members)
    return (n if _IDENTITY_KIND[config] == "single" else comb2(n)) * fb.n_activity_part


def _full_blocks(taxonomy: Taxonomy, config: str) -> list[FullBlock]:
    """Blocks of the unfiltered space: male dims, female dims, then the man-woman block."""
    k = _activity_part_size(_ACTIVITY_KIND[config], len(taxonomy.activities))
    specs: list[tuple[str, str, tuple[Member, ...]]] = []
    for gender in GENDERS:
        for d in taxonomy.dimensions:
            if d == "gender" and config != "activity_contrast":
                continue  # pairs of the gender dimension are man with woman: the "mixed" block
            specs.append((gender, d, tuple(Member(i, gender) for i in taxonomy.identities_in(d, gender))))
    if config != "activity_contrast" and "gender" in taxonomy.dimensions:
        mixed = tuple(Member(i, i.genders()[0]) for i in taxonomy.identities_in("gender") if len(i.genders()) == 1)
        specs.append(("mixed", "gender", mixed))
    blocks, offset = [], 0
    for g, d, members in specs:
        fb = FullBlock(g, d, members, offset, k)
        blocks.append(fb)
        offset += _full_block_size(config, fb)
    return blocks


@dataclass(frozen=True, eq=False)
class _Tables:
    """Name lookups for turning integer codes into string columns with pyarrow."""

    member_base: np.ndarray  # first global member id of each full block
    group: pa.Array
    dim_slug: pa.Array
    dimension: pa.Array
    name: pa.Array  # per global member
    form: pa.Array
    ident_slug: pa.Array
    key_prefix: pa.Array
    act_name: pa.Array  # per activity, plus "" at the end for "none"
    act_slug: pa.Array  # plus "portrait" at the end

    @staticmethod
    def build(taxonomy: Taxonomy, blocks: list[FullBlock]) -> _Tables:
        members = [m for b in blocks for m in b.members]
        base = np.concatenate([[0], np.cumsum([len(b.members) for b in blocks])]).astype(np.int64)
        s = lambda xs: pa.array(list(xs), pa.string())  # noqa: E731
        return _Tables(
            base,
            s(b.group for b in blocks),
            s(slug(b.dimension) for b in blocks),
            s(b.dimension for b in blocks),
            s(m.identity.name for m in members),
            s(m.form for m in members),
            s(slug(m.identity.name) for m in members),
            s(m.key()[: -len(PORTRAIT) - 1] for m in members),
            s([a.name for a in taxonomy.activities] + [""]),
            s([slug(a.name) for a in taxonomy.activities] + [PORTRAIT]),
        )

    def columns(self, config: str, c: dict[str, np.ndarray]) -> dict[str, pa.Array]:
        sw = c["swapped"]
        base = self.member_base[c["block"]]
        if config == "activity_contrast":
            ml = mr = base + c["first"]
            al, ar = np.where(sw, c["act2"], c["act1"]), np.where(sw, c["act1"], c["act2"])
        else:
            ml, mr = base + np.where(sw, c["second"], c["first"]), base + np.where(sw, c["first"], c["second"])
            al, ar = (
                (np.where(sw, c["act2"], c["act1"]), np.where(sw, c["act1"], c["act2"]))
                if config == "identity_activity_contrast"
                else (c["act1"], c["act2"])
            )
        n_acts = len(self.act_name) - 1
        al, ar = np.where(al < 0, n_acts, al), np.where(ar < 0, n_acts, ar)
        t = lambda arr, idx: arr.take(pa.array(idx))  # noqa: E731
        join = lambda sep, *xs: pc.binary_join_element_wise(*xs, sep)  # noqa: E731
        n = len(sw)
        const = lambda v: pa.array(np.full(n, v, dtype=object), pa.string())  # noqa: E731
        group, dim_slug = t(self.group, c["block"]), t(self.dim_slug, c["block"])
        key_left = join("-", t(self.key_prefix, ml), t(self.act_slug, al))
        key_right = join("-", t(self.key_prefix, mr), t(self.act_slug, ar))
        if config == "activity_contrast":
            ids = t(self.ident_slug, ml)
        else:
            ids = join("+", t(self.ident_slug, ml), t(self.ident_slug, mr))
        if config in ("activity_contrast", "identity_activity_contrast"):
            acts = join("+", t(self.act_slug, al), t(self.act_slug, ar))
        else:
            acts = t(self.act_slug, al)
        side = pa.array(np.where(sw, "L1", "L0").astype(object), pa.string())
        pair_id = join("/", const(config), group, dim_slug, ids, acts, side)
        return {
            "pair_id": pair_id,
            "index": pa.array(c["index"], pa.int64()),
            "config": const(config),
            "gender": group,
            "dimension": t(self.dimension, c["block"]),
            "identity_left": t(self.name, ml),
            "identity_right": t(self.name, mr),
            "form_left": t(self.form, ml),
            "form_right": t(self.form, mr),
            "activity_left": t(self.act_name, al),
            "activity_right": t(self.act_name, ar),
            "key_left": key_left,
            "key_right": key_right,
            "swapped": pa.array(sw, pa.bool_()),
        }


# ------------------------------------------------------------------------------------- sources


def resolve_source(path: str | os.PathLike[str] | None) -> str:
    """A source root URL: a local folder, any fsspec URL (http(s)://, hf://, file://) or a Hub id."""
    if path is None or str(path) == "vignette":
        return DEFAULT_SOURCE
    text = str(path)
    if "://" in text:
        return text.rstrip("/")
    if os.path.isdir(text):
        return os.path.abspath(text)
    if re.fullmatch(r"[\w.-]+/[\w.-]+", text) and not os.path.exists(text):
        return f"hf://datasets/{text}"
    raise VignetteError(
        f"source {text!r} not found: not a folder, not a URL (http://..., hf://datasets/ID) and not a Hub dataset id (owner/name)"
    )


class Source:
    """One fsspec code path for every source; counts requests and bytes; safe across fork."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.root = resolve_source(path)
        self._fs: Any = None
        self._pid = -1
        self.requests = 0
        self.bytes_read = 0

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "_fs": None, "_pid": -1, "requests": 0, "bytes_read": 0}

    def _filesystem(self) -> tuple[Any, str]:
        import fsspec

        if self._fs is None or self._pid != os.getpid():  # a forked worker gets its own client
            options: dict[str, Any] = {}
            if self.root.startswith(("http://", "https://")):
                import aiohttp

                # aiohttp's default waits 300 s on a stalled server and then raises a bare TimeoutError
                options["client_kwargs"] = {
                    "timeout": aiohttp.ClientTimeout(
                        total=None, sock_connect=CONNECT_TIMEOUT_S, sock_read=READ_TIMEOUT_S
                    )
                }
            self._fs, self._base = fsspec.core.url_to_fs(self.root, **options)
            self._pid = os.getpid()
        return self._fs, self._base

    def url(self, relative: str) -> str:
        return f"{self.root}/{relative}"

    @property
    def _range_options(self) -> dict[str, Any]:
        # HfFileSystem reads through a buffered file whose default read-ahead (a 5 MiB block) turned each
        # ranged read of a render into a read to the end of its shard (15.6x the bytes): fetch the range only.
        return {"cache_type": "none"} if self.root.startswith("hf://") else {}

    def read(
        self, relative: str, start: int | None = None, end: int | None = None, max_bytes: int | None = None
    ) -> bytes:
        """Bytes of a file (or of [start, end)): one request, retried with backoff on transient network
        errors; FileNotFoundError names the URL; other failures end in a SourceError naming URL and cause.
        ``max_bytes`` refuses a whole-file read larger than that (an endless or wrong file)."""
        fs, base = self._filesystem()
        url = self.url(relative)
        retries = RETRIES if "://" in self.root and not self.root.startswith("file://") else 0  # network only
        for attempt in range(retries + 1):
            try:
                if max_bytes is not None and start is None and end is None:
                    # one ranged GET for at most max_bytes + 1: an endless file is never read whole
                    data = fs.cat_file(f"{base}/{relative}", start=0, end=max_bytes + 1)
                    if len(data) > max_bytes:
                        raise SourceError(f"{url}: larger than {max_bytes:,} bytes; is this the right source?")
                else:
                    data = fs.cat_file(f"{base}/{relative}", start=start, end=end, **self._range_options)
                break
            except FileNotFoundError as e:
                raise FileNotFoundError(f"{url}: not found in source {self.root}") from e
            except SourceError:
                raise
            except (OSError, TimeoutError, ConnectionError) as e:  # aiohttp's errors are OSErrors or TimeoutErrors
                status = getattr(getattr(e, "response", None), "status_code", None)  # the Hub client's HTTP errors
                if status in (401, 403, 404):  # asking again cannot help
                    raise SourceError(
                        f"{url}: HTTP {status} ({type(e).__name__}); check the repo id, its revision and your "
                        "token (HF_TOKEN) for a private or gated repo"
                    ) from e
                if attempt == retries:
                    raise SourceError(
                        f"{url}: {type(e).__name__} after {retries + 1} attempt(s) ({e or 'no reply'}); "
                        "check the URL and the network, or use a local copy of the source"
                    ) from e
                time.sleep(BACKOFF_S * 2**attempt)
            except Exception as e:  # e.g. aiohttp.ClientError subclasses that are neither
                if type(e).__module__.startswith("aiohttp") and attempt < retries:
                    time.sleep(BACKOFF_S * 2**attempt)
                    continue
                raise SourceError(f"{url}: {type(e).__name__}: {e}") from e
        self.requests += 1
        self.bytes_read += len(data)
        return data


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

    COLUMNS = index_schema.REQUIRED
    # indexes written before k renders per cell lack `variant` (all variant 0); reduced copies are optional
    OPTIONAL_COLUMNS = ("variant", *index_schema.REDUCED_COLUMNS)

    def __init__(self, source: Source, table: pa.Table) -> None:
        self.source = source
        where = source.url(INDEX_PATH)
        problems = index_schema.index_problems(table, where)
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
        # reduced copies (dataset_builder/reduced.py): key -> (location, width, height)
        self.reduced: dict[str, tuple[RenderLocation, int, int]] = {}
        if index_schema.REDUCED_COLUMNS[0] in table.column_names:
            for r in table.select(["key", *index_schema.REDUCED_COLUMNS]).to_pylist():
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
            # use_threads=False: pyarrow 26 aborts the interpreter at exit ("terminate called without
            # an active exception") after a threaded read from an in-memory file; the index is small.
            table = pq.read_table(io.BytesIO(data), use_threads=False)
        except (pa.ArrowInvalid, KeyError, OSError) as e:
            raise CorruptRenderError(
                f"{source.url(INDEX_PATH)}: unreadable ({e}); rebuild it with `vignette build shard`"
            ) from e
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


# ---------------------------------------------------------------------------------- composition


@lru_cache(maxsize=16)
def _seam_mask(overlap: int, height: int):
    """L mask for the left tile's overlap strip: a linear ramp from opaque to transparent."""
    from PIL import Image

    row = np.round(np.linspace(1, 0, overlap + 2, dtype=np.float32)[1:-1] * 255).astype(np.uint8)
    return Image.fromarray(np.broadcast_to(row, (height, overlap)).copy(), mode="L")


def _tile(data: bytes, tile_w: int, height: int) -> PILImage:
    """Decode (at reduced scale where the format allows) and cover-crop to tile_w x height."""
    from PIL import Image

    opened = Image.open(io.BytesIO(data))
    if opened.format == "JPEG":
        opened.draft("RGB", (tile_w, height))  # DCT scaling: decode at 1/2, 1/4 or 1/8 when big enough
    img: PILImage = opened.convert("RGB") if opened.mode != "RGB" else opened
    w, h = img.size
    box: tuple[float, float, float, float]
    if w * height > h * tile_w:  # wider than the tile: crop the sides
        cw = h * tile_w / height
        box = ((w - cw) / 2, 0, (w + cw) / 2, h)
    else:
        ch = w * height / tile_w
        box = (0, (h - ch) / 2, w, (h + ch) / 2)
    return img.resize((tile_w, height), Image.Resampling.BILINEAR, box=box)


def compose(
    left: bytes, right: bytes, size: tuple[int, int] = DEFAULT_SIZE, seam: int = DEFAULT_SEAM, image_format: str = "PNG"
):
    """Two encoded renders side by side, cross-faded over ``seam`` pixels, as one PIL image.

    Each render is cover-cropped (centre) to a tile of (width + seam) / 2 x height, so no person is
    distorted; the tiles overlap by ``seam`` pixels in the middle, where the left fades into the
    right. ``.format`` is set to ``image_format`` (outlines requires it).
    """
    from PIL import Image

    width, height = size
    if width < 2 or height < 1 or not 0 <= seam < width:
        raise VignetteError(f"bad output size {size} / seam {seam}: need width >= 2, height >= 1, 0 <= seam < width")
    tile_w = (width + seam + 1) // 2
    overlap = 2 * tile_w - width
    out = Image.new("RGB", (width, height))
    out.paste(_tile(right, tile_w, height), (width - tile_w, 0))
    left_tile = _tile(left, tile_w, height)
    solid = tile_w - overlap  # plain copy up to the seam; only the overlap strip is blended
    out.paste(left_tile.crop((0, 0, solid, height)), (0, 0))
    if overlap:
        out.paste(left_tile.crop((solid, 0, tile_w, height)), (solid, 0), _seam_mask(overlap, height))
    out.format = image_format
    return out


@dataclass
class Composer:
    """Composes pair images from keys; picklable (workers re-open their own connection)."""

    reader: RenderReader
    size: tuple[int, int] = DEFAULT_SIZE
    seam: int = DEFAULT_SEAM
    image_format: str = "PNG"
    use_reduced: bool = True  # compose from the renders' reduced copies where both fit (versioned pixels)

    def render(self, key: str) -> bytes:
        return self.reader.read(key)[0]

    def _fits(self, key: str) -> bool:
        """Whether `key` has a reduced copy that covers a tile without upscaling."""
        copy = self.reader.index.reduced.get(key)
        if copy is None:
            return False
        tile_w = (self.size[0] + self.seam + 1) // 2
        return copy[1] >= tile_w and copy[2] >= self.size[1]

    def pair(self, key_left: str, key_right: str):
        reduced = self.use_reduced and self._fits(key_left) and self._fits(key_right)
        left, loc_l = self.reader.read(key_left, reduced)
        right, loc_r = self.reader.read(key_right, reduced)
        for data, loc in ((left, loc_l), (right, loc_r)):
            _check_header(data, loc, self.reader.index.source.url(loc.shard))
        try:
            return compose(left, right, self.size, self.seam, self.image_format)
        except (OSError, SyntaxError, ValueError) as e:
            if isinstance(e, VignetteError):
                raise
            bad = _first_undecodable(((left, loc_l), (right, loc_r)))
            where = (
                f"{self.reader.index.source.url(bad.shard)} at byte {bad.offset}" if bad else "one of the two renders"
            )
            name = bad.key if bad else f"{key_left} / {key_right}"
            raise CorruptRenderError(
                f"render {name!r} in {where} cannot be decoded ({e}); re-render it and rebuild the shard"
            ) from e


MAX_RENDER_PIXELS = 4096 * 4096  # renders are 1024²; a header claiming more is refused before decoding
_PIL_FORMATS = {"jpeg": "JPEG", "webp": "WEBP"}


def _check_header(data: bytes, loc: RenderLocation, where: str) -> None:
    """Format and size from the header only, so a huge or mislabelled image is never decoded."""
    import warnings

    from PIL import Image

    try:
        with warnings.catch_warnings():  # the size is checked below, against a far smaller limit than PIL's
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as im:
                fmt, (w, h) = im.format, im.size
    except Image.DecompressionBombError:
        raise CorruptRenderError(
            f"render {loc.key!r} in {where} at byte {loc.offset}: the header claims an image far above "
            f"{MAX_RENDER_PIXELS:,} pixels; downscale it and rebuild the shard"
        ) from None
    except Exception as e:  # noqa: BLE001 - any failure to read an untrusted header
        raise CorruptRenderError(
            f"render {loc.key!r} in {where} at byte {loc.offset}: cannot be decoded "
            f"(unreadable image header, {type(e).__name__}); re-render it and rebuild the shard"
        ) from None
    if fmt != _PIL_FORMATS.get(loc.format):
        raise CorruptRenderError(
            f"render {loc.key!r} in {where} at byte {loc.offset}: the image is {fmt}, the index says {loc.format}; re-encode it with `vignette build shard`"
        )
    if w * h > MAX_RENDER_PIXELS:
        raise CorruptRenderError(
            f"render {loc.key!r} in {where} at byte {loc.offset}: {w}x{h} is above {MAX_RENDER_PIXELS:,} pixels; downscale it and rebuild the shard"
        )


def _first_undecodable(items: Iterable[tuple[bytes, RenderLocation]]) -> RenderLocation | None:
    from PIL import Image

    for data, loc in items:
        try:
            Image.open(io.BytesIO(data)).load()
        except Exception:  # noqa: BLE001 - any decoder failure marks this one as the culprit
            return loc
    return None


# ----------------------------------------------------------------------------------- datasets


# ------------------------------------------------------------------ the image column: vignette://


PAIR_PROTOCOL = "vignette"


def pair_url(root: str, key_left: str, key_right: str, size: tuple[int, int], seam: int, reduced: bool = True) -> str:
    """Where a pair image "lives": ``vignette://<quoted source root>/<W>x<H>/<seam>/<left>/<right>.png``.

    The ``image`` column of every pair dataset holds such a path (no bytes), exactly as a plain image
    dataset holds file paths, so every `datasets` operation treats it as one: formats decode it, column
    operations and metadata reads never touch it, and ``push_to_hub``/``embed_table_storage`` read its
    bytes through fsspec like any remote file. `PairFileSystem` composes the pair when it is opened.
    ``reduced=False`` (composed from the full renders, never their reduced copies) is written as a ``f``
    after the seam, so any process that opens the path composes the same pixels.
    """
    from urllib.parse import quote

    flag = "" if reduced else "f"
    return f"{PAIR_PROTOCOL}://{quote(root, safe='')}/{size[0]}x{size[1]}/{seam}{flag}/{key_left}/{key_right}.png"


def _parse_pair_url(path: str) -> tuple[str, str, str, tuple[int, int], int, bool]:
    """(source root, left key, right key, size, seam, reduced) of a pair image path."""
    from urllib.parse import unquote

    body = path.split("://", 1)[-1]
    parts = body.split("/")
    if len(parts) != 5 or not parts[4].endswith(".png") or "x" not in parts[1]:
        raise VignetteError(f"{path!r} is not a vignette pair image path (vignette://SOURCE/WxH/SEAM/LEFT/RIGHT.png)")
    width, height = (int(v) for v in parts[1].split("x"))
    seam, reduced = (parts[2][:-1], False) if parts[2].endswith("f") else (parts[2], True)
    return unquote(parts[0]), parts[3], parts[4][: -len(".png")], (width, height), int(seam), reduced


class PairFileSystem(AbstractFileSystem):  # type: ignore[misc]
    """Read-only fsspec filesystem whose files are composed pair images (PNG). Registered for the
    ``vignette`` protocol on import and through the ``fsspec.specs`` entry point, so any process that has
    the package installed (DataLoader workers, a ``load_from_disk`` elsewhere) can open the paths."""

    protocol = PAIR_PROTOCOL
    root_marker = ""
    cachable = True

    # One composer per (source, size, seam, reduced, process), shared by every instance: load_dataset puts the
    # index it already read here, so opening the images reads no index twice.
    composers: dict[tuple[str, tuple[int, int], int, bool, int], Composer] = {}

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        text = str(path[0] if isinstance(path, list) else path)
        return text.split("://", 1)[-1] if text.startswith(f"{PAIR_PROTOCOL}://") else text

    def _composer(self, root: str, size: tuple[int, int], seam: int, reduced: bool = True) -> Composer:
        key = (root, size, seam, reduced, os.getpid())  # a forked worker opens its own reader
        if key not in PairFileSystem.composers:
            reader = RenderReader(RenderIndex.load(Source(root)))
            PairFileSystem.composers[key] = Composer(reader, size, seam, use_reduced=reduced)
        return PairFileSystem.composers[key]

    composed = 0  # pairs composed in this process (tests check that metadata reads compose none)

    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        root, left, right, size, seam, reduced = _parse_pair_url(path)
        PairFileSystem.composed += 1
        image = self._composer(root, size, seam, reduced).pair(left, right)
        buf = io.BytesIO()
        image.save(buf, format="PNG", compress_level=1)  # fast; embedded copies (push_to_hub) stay compact
        return buf.getvalue()[start:end]

    def _open(self, path: str, mode: str = "rb", **kwargs: Any):
        if mode != "rb":
            raise VignetteError(f"{path}: pair images are read-only")
        return io.BytesIO(self.cat_file(path))

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        # The exact size needs the pair composed; readers only use it to plan (datasets' save_to_disk
        # estimates shard sizes with it), so give the size of a typical PNG of that area instead.
        _, _, _, (w, h), *_ = _parse_pair_url(path)
        return {"name": path, "size": w * h, "type": "file"}

    def ls(self, path: str, detail: bool = True, **kwargs: Any):
        info = self.info(path)
        return [info] if detail else [info["name"]]


def _register_protocol() -> None:
    import fsspec

    fsspec.register_implementation(PAIR_PROTOCOL, PairFileSystem, clobber=True)


_register_protocol()


def features():
    """The pair-row Features of docs/FORMATS.md."""
    import datasets

    s = datasets.Value("string")
    return datasets.Features(
        {
            "pair_id": s,
            "index": datasets.Value("int64"),
            "config": s,
            "gender": s,
            "dimension": s,
            "identity_left": s,
            "identity_right": s,
            "form_left": s,
            "form_right": s,
            "activity_left": s,
            "activity_right": s,
            "key_left": s,
            "key_right": s,
            "swapped": datasets.Value("bool"),
            "image": datasets.Image(),
        }
    )


@dataclass(frozen=True, eq=False)
class Selection:
    """Rows to serve: all positions of a space, or an explicit array (a sample, in pair order)."""

    space: PairSpace
    positions: np.ndarray | None = None  # None: 0..len(space)-1
    start: int = 0
    stop: int | None = None

    def __len__(self) -> int:
        n = len(self.space) if self.positions is None else len(self.positions)
        stop = n if self.stop is None else min(self.stop, n)
        return max(0, stop - self.start)

    def positions_at(self, lo: int, hi: int) -> np.ndarray:
        lo, hi = self.start + lo, self.start + hi
        return np.arange(lo, hi, dtype=np.int64) if self.positions is None else self.positions[lo:hi]


@dataclass(frozen=True, eq=False)
class _Plan:
    selection: Selection
    index: RenderIndex | None
    on_missing: str
    image_prefix: str = ""  # pair_url up to the keys: the image column is prefix + left + "/" + right + ".png"
    chunk: int = 2048


def _image_column(prefix: str, cols: dict[str, pa.Array]) -> pa.Array:
    """The ``image`` column: Image structs holding a vignette:// path and no bytes (see `pair_url`)."""
    n = len(cols["key_left"])
    paths = pc.binary_join_element_wise(
        pa.array(np.full(n, prefix, dtype=object), pa.string()),
        cols["key_left"],
        pa.array(np.full(n, "/", dtype=object), pa.string()),
        cols["key_right"],
        pa.array(np.full(n, ".png", dtype=object), pa.string()),
        "",
    )
    return pa.StructArray.from_arrays([pa.nulls(n, pa.binary()), paths], names=["bytes", "path"])


def _present(plan: _Plan, cols: dict[str, pa.Array]) -> np.ndarray:
    if plan.index is None:
        return np.ones(len(cols["key_left"]), dtype=bool)
    keys = plan.index.keys
    ok = pc.and_(pc.is_in(cols["key_left"], value_set=keys), pc.is_in(cols["key_right"], value_set=keys))
    return np.asarray(ok.to_numpy(zero_copy_only=False), dtype=bool)


def _missing_message(plan: _Plan, cols: dict[str, pa.Array], ok: np.ndarray) -> str:
    i = int(np.flatnonzero(~ok)[0])
    keys = set(plan.index.locations) if plan.index else set()
    key = next(k for k in (cols["key_left"][i].as_py(), cols["key_right"][i].as_py()) if k not in keys)
    root = plan.index.source.root if plan.index else "?"
    return (
        f"render {key!r} (pair {cols['pair_id'][i].as_py()}) is missing from source {root}; "
        f"{int((~ok).sum())} pair(s) in this stretch need missing renders. Render them, or pass on_missing='skip'"
    )


def _generate_rows(plan: _Plan, ranges: list[tuple[int, int]], images: bool = True) -> Iterator[dict[str, Any]]:
    """Streaming generator over its share of ``ranges`` (datasets shards gen_kwargs lists)."""
    for lo, hi in ranges:
        skipped = 0
        for a in range(lo, hi, plan.chunk):
            cols = plan.selection.space.columns(plan.selection.positions_at(a, min(hi, a + plan.chunk)))
            ok = _present(plan, cols)
            if not ok.all():
                if plan.on_missing == "raise":
                    raise MissingRenderError(_missing_message(plan, cols, ok))
                skipped += int((~ok).sum())
            extra = {"image": _image_column(plan.image_prefix, cols)} if images else {}
            rows = pa.table({**cols, **extra}).to_pylist()
            for row, keep in zip(rows, ok):
                if keep:
                    yield row
        if skipped:
            logger.warning(
                "skipped %d pair(s) of rows [%d, %d) whose renders are missing from the source", skipped, lo, hi
            )


_SHARD_COUNTS = (5040, 2520, 720, 360, 240, 120, 60, 24, 12, 6, 2, 1)  # divisible by common worker/node counts


def _ranges(n: int, num_shards: int | None) -> list[tuple[int, int]]:
    k = num_shards or next(c for c in _SHARD_COUNTS if c <= max(n, 1))
    bounds = np.linspace(0, n, k + 1).astype(np.int64)
    return [(int(bounds[i]), int(bounds[i + 1])) for i in range(k)]


def _split_bounds(split: str, n: int) -> tuple[int, int]:
    """Rows [lo, hi) of `n` that a datasets split string selects: ``test``, ``test[:100]``,
    ``test[10%:20%]``, ``test[-50:]`` (datasets' own parser, so slices mean what they mean everywhere)."""
    import datasets

    try:
        parts = datasets.ReadInstruction.from_spec(split or "").to_absolute({SPLIT: n})
    except (ValueError, AssertionError) as e:
        raise VignetteError(
            f"unknown split {split!r} ({e}); the pair configs have one split, {SPLIT!r} "
            "(slices like 'test[:100]', 'test[10%:20%]' or 'test[-50:]' work)"
        ) from None
    if len(parts) != 1:
        raise VignetteError(f"split {split!r}: one slice of {SPLIT!r} at a time (no '+'); concatenate the datasets")
    return parts[0].from_, parts[0].to


def load_dataset(
    path: str | os.PathLike[str] | None = DEFAULT_SOURCE,
    name: str | None = None,
    *,
    split: str = SPLIT,
    streaming: bool = False,
    gender: str | Sequence[str] | None = None,
    dimensions: str | Sequence[str] | None = None,
    identities: str | Sequence[str] | None = None,
    identity_match: Literal["all", "any"] = "all",
    activities: str | Sequence[str] | None = None,
    time_use: str | Sequence[str] | None = None,
    exclude_near_synonyms: bool = False,
    representativeness: str | Sequence[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
    orders: Orders = "rule",
    size: tuple[int, int] = DEFAULT_SIZE,
    seam: int = DEFAULT_SEAM,
    image_format: str = "PNG",
    on_missing: Literal["raise", "skip"] = "raise",
    cache_size: int = 128,
    max_rows: int = 1_000_000,
    num_shards: int | None = None,
    images: bool = True,
    reduced: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    keep_in_memory: bool = False,
    num_proc: int | None = None,
    **kwargs: Any,
):
    """VIGNETTE pairs as a ``datasets.Dataset`` (or ``IterableDataset`` with ``streaming=True``).

    ``path`` is the source: a local folder, a base URL, ``hf://datasets/ID`` or a Hub id
    ``owner/name`` (``"vignette"`` means ``DEFAULT_SOURCE``). ``name`` is a pair config
    (``CONFIGS``) or a data config (``renders``, ``news``: handed to ``datasets.load_dataset``
    with ``split``, ``streaming`` and ``kwargs``). The pair space is limited to the identities and
    activities the source has renders for. Filters: see ``PairSpace``. ``sample=N`` takes N pairs,
    seeded by ``seed`` and balanced (``PairSpace.sample``). ``orders``: ``"rule"`` (one order per pair,
    by the left/right rule), ``"both"`` (every pair in both orders) or ``"balanced"`` (one order per pair,
    chosen so that every identity of a sample stands left within one offer of half). Images are composed when a row is read.
    Map-style tables hold one row of metadata per pair, so they are refused above ``max_rows``
    (stream instead, filter, or sample). What was selected (filters, sample seed, source) is
    recorded as JSON in ``info.description``. ``images=False`` gives the metadata only: no image column,
    nothing downloaded or composed. ``reduced=True`` composes from the renders' reduced copies where the
    source has them (``vignette build reduce``; ~4x faster, slightly different pixels, recorded as
    ``composition`` in ``info.description``); ``reduced=False`` always composes the full renders.

    As with ``datasets.load_dataset``, a map-style table is an Arrow file memory-mapped from
    ``cache_dir`` (default: the datasets cache, ``HF_DATASETS_CACHE/vignette``), named by the sha256 of
    its contents: two loads of the same selection share one file, a rebuilt source gives a new one, and
    a dataset pickles (DataLoader workers) as a path, not as its rows. ``keep_in_memory=True`` keeps it
    in memory instead. ``num_proc`` is accepted for datasets compatibility; there is nothing to prepare
    in parallel (rows are arithmetic, images are composed when read).
    """
    import datasets

    if name in DATA_CONFIGS:
        return _load_data_config(path, name, split=split, streaming=streaming, **kwargs)
    if name not in CONFIGS:
        raise _unknown("config", name, CONFIGS + DATA_CONFIGS)
    if kwargs:
        raise VignetteError(f"unexpected option(s) {sorted(kwargs)} for a pair config; see help(vignette.load_dataset)")
    if on_missing not in ("raise", "skip"):
        raise _unknown("on_missing option", on_missing, ("raise", "skip"))
    if num_proc is not None and (isinstance(num_proc, bool) or not isinstance(num_proc, int) or num_proc < 1):
        raise VignetteError(f"num_proc={num_proc!r}: expected a whole number >= 1 or None")
    _split_bounds(split, 0)  # a bad split string is named before anything is read
    source = Source(path)
    index = RenderIndex.load(source)  # first: if the source cannot be read, this says so (not "taxonomy missing")
    taxonomy = load_taxonomy(source.url("taxonomy"))
    _check_coverage(index.coverage, taxonomy, source)
    _warn_uncovered(index.coverage, name, identities, activities)
    space = PairSpace(
        taxonomy,
        name,
        gender=gender,
        dimensions=dimensions,
        identities=identities,
        identity_match=identity_match,
        activities=activities,
        time_use=time_use,
        exclude_near_synonyms=exclude_near_synonyms,
        representativeness=representativeness,
        coverage=index.coverage,
        orders=orders,
    )
    positions = space.sample(sample, seed) if sample is not None else None
    lo, hi = _split_bounds(split, len(space) if positions is None else len(positions))
    selection = Selection(space, positions, lo, hi)
    if len(selection) == 0:
        raise VignetteError(
            f"{name}: the filters select no pairs from source {source.root} (filters {space.filters}); widen them"
        )
    if image_format != "PNG":
        raise VignetteError(f"image_format {image_format!r}: pair images are served as PNG (vignette:// paths)")
    size = (int(size[0]), int(size[1]))
    image_prefix = pair_url(source.root, "", "", size, seam, reduced).removesuffix("//.png") + "/"
    composer = Composer(RenderReader(index, cache_size), size, seam, use_reduced=reduced)
    PairFileSystem.composers[(source.root, size, seam, reduced, os.getpid())] = composer
    record = {
        "source": source.root,
        "config": name,
        "split": split,
        "filters": space.filters,
        "orders": orders,
        "sample": sample,
        "seed": seed if sample is not None else None,
        "rows": len(selection),
        "size": list(size),
        "seam": seam,
        "on_missing": on_missing,
        "coverage": "limited to the identities and activities with renders in the source",
        "renders_per_cell": max(index.coverage.variants.values(), default=1),
        "composition": _composition(composer, index),
    }
    plan = _Plan(selection, index, on_missing, image_prefix)
    if streaming:
        feats = features()
        if not images:
            del feats["image"]
        ds = datasets.IterableDataset.from_generator(
            _generate_rows,
            features=feats,
            split=datasets.NamedSplit(SPLIT),
            gen_kwargs={"plan": plan, "ranges": _ranges(len(selection), num_shards), "images": images},
        )
        ds.info.description = json.dumps(record)
        ds.info.config_name = name
        return ds
    if len(selection) > max_rows:
        raise VignetteError(
            f"{name}: {len(selection):,} pairs selected, above max_rows={max_rows:,} for a map-style table "
            f"(~{len(selection) * 300 / 1e9:.1f} GB of metadata). Pass streaming=True, narrow the filters, sample=N, or raise max_rows"
        )
    cols = space.columns(selection.positions_at(0, len(selection)))
    ok = _present(plan, cols)
    if not ok.all():
        if on_missing == "raise":
            raise MissingRenderError(_missing_message(plan, cols, ok))
        record["skipped_missing_renders"] = int((~ok).sum())
        logger.warning("%s: skipped %d pair(s) whose renders are missing from %s", name, int((~ok).sum()), source.root)
        mask = pa.array(ok)
        cols = {k: v.filter(mask) for k, v in cols.items()}
    feats = features()
    if images:
        cols["image"] = _image_column(image_prefix, cols)
    else:
        del feats["image"]
    table = pa.table(cols, schema=feats.arrow_schema)
    info = datasets.DatasetInfo(description=json.dumps(record), features=feats, config_name=name)
    if keep_in_memory:
        return datasets.Dataset(datasets.table.InMemoryTable(table), info=info, split=datasets.NamedSplit(SPLIT))
    folder = (
        os.fspath(cache_dir) if cache_dir is not None else os.path.join(datasets.config.HF_DATASETS_CACHE, "vignette")
    )
    return datasets.Dataset.from_file(_arrow_file(table, folder, name), info=info, split=datasets.NamedSplit(SPLIT))


def _arrow_file(table: pa.Table, folder: str, name: str) -> str:
    """`table` as an Arrow stream file in `folder` (the format datasets memory-maps), named by the sha256
    of its bytes: an existing file is reused, and no two selections can share a name."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    data = sink.getvalue()
    path = os.path.join(folder, f"{name}-{hashlib.sha256(memoryview(data)).hexdigest()[:32]}.arrow")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(memoryview(data))
            os.replace(tmp, path)  # concurrent loaders write the same bytes; the last rename wins
        except OSError as e:
            raise VignetteError(
                f"cannot write the pair table to {folder} ({e}); pass cache_dir=... or keep_in_memory=True"
            ) from e
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return path


def _composition(composer: Composer, index: RenderIndex) -> str:
    """What the pair pixels are composed from, for the dataset record (pixels differ between the two)."""
    if not composer.use_reduced or not index.reduced:
        return "full renders"
    fits = sum(composer._fits(k) for k in index.locations)
    return f"reduced copies where both renders of a pair have one covering the tile ({fits} of {len(index.locations)} renders)"


def _warn_uncovered(coverage: Coverage, config: str, identities: Any, activities: Any) -> None:
    """Names asked for that the source has no renders of would be dropped silently: say so."""
    people = {i for _, i in coverage.members(config)}
    for kind, asked, have in (
        ("identities", _as_tuple(identities), people),
        ("activities", _as_tuple(activities), coverage.activities),
    ):
        if config == "portraits" and kind == "activities":
            continue
        outside = sorted(set(asked or ()) - set(have))
        if outside:
            logger.warning("%s: the source has no renders of %s %s; they are left out", config, kind, outside)


def _check_coverage(coverage: Coverage, taxonomy: Taxonomy, source: Source) -> None:
    """Renders of identities or activities the source's taxonomy lacks would be dropped unseen: refuse."""
    members = coverage.activity_members | coverage.portrait_members
    people = sorted({i for _, i in members} - {x.name for x in taxonomy.identities})
    acts = sorted(coverage.activities - {a.name for a in taxonomy.activities})
    for kind, names, file in (("identities", people, "identities.csv"), ("activities", acts, "activities.csv")):
        if names:
            raise VignetteError(
                f"{source.url(INDEX_PATH)}: renders of {kind} {names[:5]} that {source.url('taxonomy/' + file)} "
                "does not list; add them to the taxonomy or rebuild the source without them"
            )


def _load_data_config(path: Any, name: str, **kwargs: Any):
    import datasets

    root = resolve_source(path)
    if name == "renders":
        # WebDataset shards, read with the webdataset builder named explicitly: datasets applies one
        # builder to every config of a repository (the card's configs are all parquet). The shards are
        # the ones the index lists (a base URL cannot be listed).
        index = RenderIndex.load(Source(root))
        shards = sorted({loc.shard for loc in index.locations.values()})
        split = kwargs.pop("split", None) or "test"
        return datasets.load_dataset(
            "webdataset", data_files={split.split("[")[0]: [f"{root}/{s}" for s in shards]}, split=split, **kwargs
        )
    if root.startswith("hf://datasets/"):
        target = root[len("hf://datasets/") :]
    elif "://" not in root:
        target = root
    else:
        raise VignetteError(
            f"the {name!r} config of a URL source cannot be listed over HTTP; pass data_files "
            "to datasets.load_dataset('parquet', ...) or use a local folder / Hub id"
        )
    return datasets.load_dataset(target, name, **kwargs)


def open_pair(path: str | os.PathLike[str] | None, config: str, index: int, **options: Any):
    """One composed pair by its full-space index (random access: two ranged reads)."""
    source = Source(path)
    space = PairSpace(load_taxonomy(source.url("taxonomy")), config)
    if not 0 <= index < len(space):
        raise VignetteError(f"{config}: index {index} out of range (0..{len(space) - 1})")
    spec = space[index]
    composer = Composer(RenderReader(RenderIndex.load(source)), **options)
    return spec, composer.pair(spec.key_left, spec.key_right)


# ------------------------------------------------------------------------------------------- CLI


def info_table(taxonomy: Taxonomy, coverage: Coverage | None = None) -> dict[str, Any]:
    """Sizes of every config per pair gender and dimension, with totals."""
    out: dict[str, Any] = {"configs": {}, "total": 0}
    for config in CONFIGS:
        space = PairSpace(taxonomy, config, coverage=coverage)
        rows = [{"gender": g, "dimension": d, "pairs": n} for (g, d), n in space.sizes().items()]
        out["configs"][config] = {"total": space.n_pairs, "by_gender_dimension": rows}
        out["total"] += space.n_pairs
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="VIGNETTE pair configs: sizes and single pairs.")
    sub = parser.add_subparsers(dest="command", required=True)
    p_info = sub.add_parser("info", help="pairs per config x gender x dimension, and totals")
    p_info.add_argument("--source", help="a source (folder, URL, Hub id); default: the packaged taxonomy")
    p_info.add_argument("--json", action="store_true", help="print JSON")
    p_show = sub.add_parser("show", help="write one composed pair to an image file")
    p_show.add_argument("config", help=", ".join(CONFIGS))
    p_show.add_argument("--index", type=int, required=True, help="position in the config's full pair space")
    p_show.add_argument("--out", required=True, help="output image path (format from the suffix)")
    p_show.add_argument("--source", default=DEFAULT_SOURCE)
    p_show.add_argument("--size", default=f"{DEFAULT_SIZE[0]}x{DEFAULT_SIZE[1]}", help="WIDTHxHEIGHT")
    p_show.add_argument("--seam", type=int, default=DEFAULT_SEAM)
    args = parser.parse_args(argv)
    try:
        if args.command == "info":
            if args.source:
                index = RenderIndex.load(Source(args.source))
                table = info_table(load_taxonomy(index.source.url("taxonomy")), index.coverage)
                table["source"] = index.source.root
            else:
                table = info_table(load_taxonomy())
                table["source"] = "packaged taxonomy (vignette_bench/taxonomy)"
            print(json.dumps(table, indent=2) if args.json else _format_info(table))
        else:
            if args.config not in CONFIGS:
                raise _unknown("config", args.config, CONFIGS)
            w, _, h = args.size.partition("x")
            spec, image = open_pair(args.source, args.config, args.index, size=(int(w), int(h)), seam=args.seam)
            image.save(args.out)
            print(f"{spec.pair_id}\t{spec.key_left} | {spec.key_right}\t-> {args.out}")
    except (VignetteError, MissingRenderError, CorruptRenderError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def _format_info(table: dict[str, Any]) -> str:
    lines = [f"source: {table['source']}"]
    for config, body in table["configs"].items():
        lines.append(f"\n{config}: {body['total']:,} pairs")
        for r in body["by_gender_dimension"]:
            lines.append(f"  {r['gender']:<7} {r['dimension']:<22} {r['pairs']:>12,}")
    lines.append(f"\ntotal: {table['total']:,} pairs")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
