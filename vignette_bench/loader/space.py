"""The pair space: every pair of a config counted and enumerated by arithmetic (numpy).

``PairSpace`` maps a position to a pair and back in O(1), vectorised; filters are sub-spaces built
from the blocks they keep, never by enumerating what they drop. ``Coverage`` is what a source has
renders of; ``choose_variant`` picks which of a cell's k renders a pair shows (the rule lives in
`vignette_bench.formats.render_index.variant_key`).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vignette_bench.formats.pair_config import CONFIGS, DATA_CONFIGS, GROUPS, ORDERS, PairFilters
from vignette_bench.formats.render_index import PORTRAIT, variant_key
from vignette_bench.loader.errors import VignetteError, unknown
from vignette_bench.taxonomy import GENDERS, REPRESENTATIVENESS, TIME_USES, Identity, Taxonomy, slug

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
        coverage: Coverage | None = None,
        orders: Orders = "rule",
        filters: PairFilters | None = None,
        **options: Any,
    ) -> None:
        """``filters`` as one `PairFilters`, or its fields as keyword arguments (``gender="female"``,
        ``dimensions=["religion", "age"]``, ...): an unknown or bad one raises a `VignetteError` naming it."""
        if config not in CONFIGS:
            raise unknown("config", config, CONFIGS + DATA_CONFIGS)
        if orders not in ORDERS:
            raise unknown("orders option", orders, ORDERS)
        if filters is not None and options:
            raise VignetteError(
                f"filter option(s) {sorted(options)} given beside filters=; put them in the PairFilters"
            )
        self.taxonomy, self.config, self.orders = taxonomy, config, orders
        self.variants = coverage.variants if coverage is not None else {}
        self.filters: PairFilters = filters if filters is not None else PairFilters.from_options(**options)
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
        for g in f.gender or ():
            if g not in GROUPS:
                raise unknown("gender", g, GROUPS)
        for d in f.dimensions or ():
            if d not in tax.dimensions:
                raise unknown("dimension", d, tax.dimensions)
        for r in f.representativeness or ():
            if r not in REPRESENTATIVENESS:
                raise unknown("representativeness", r, REPRESENTATIVENESS)
        names = {i.name for i in tax.identities}
        for i in f.identities or ():
            if i not in names:
                raise unknown("identity", i, [x.name for x in tax.identities])
        act_names = [a.name for a in tax.activities]
        for a in f.activities or ():
            if a not in act_names:
                raise unknown("activity", a, act_names)
        for t in f.time_use or ():
            if t not in TIME_USES:
                raise unknown("time use", t, TIME_USES)
        acts = np.array(
            [
                p
                for p, a in enumerate(tax.activities)
                if (f.activities is None or a.name in f.activities)
                and (f.time_use is None or a.time_use in f.time_use)
                and (coverage is None or self.config == "portraits" or a.name in coverage.activities)
            ],
            dtype=np.int64,
        )
        if self.config == "portraits":
            acts = np.zeros(0, dtype=np.int64)
        act_kind = _ACTIVITY_KIND[self.config]
        blocks: list[_Block] = []
        for fi, fb in enumerate(self.full_blocks):
            if (f.gender is not None and fb.group not in f.gender) or (
                f.dimensions is not None and fb.dimension not in f.dimensions
            ):
                continue
            have = [
                p
                for p, m in enumerate(fb.members)
                if (coverage is None or (m.gender, m.identity.name) in coverage.members(self.config))
                and (f.representativeness is None or m.identity.visual_representativeness in f.representativeness)
            ]
            chosen = [p for p in have if f.identities is None or fb.members[p].identity.name in f.identities]
            kind = _IDENTITY_KIND[self.config]
            parts: list[tuple[str, list[int], list[int]]]
            if kind == "single" or f.identity_match == "all" or f.identities is None:
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
                if f.exclude_near_synonyms and part_kind != "single":
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
