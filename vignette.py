"""VIGNETTE pairs as Hugging Face datasets: ``from vignette import load_dataset``.

The loader lives in the package `vignette_bench.loader` (one job per module: the pair space,
sources, the render index and reader, composition, the ``vignette://`` filesystem, ``load_dataset``,
the CLI); this module re-exports its public names so ``import vignette`` stays what it always was.
Importing it registers the ``vignette://`` fsspec protocol. CLI::

    vignette info [--source S] [--json]
    vignette show --config CONFIG --index N --out pair.png [--source S]

Docs: docs/vignette.md.
"""

from __future__ import annotations

from vignette_bench.errors import VignetteError
from vignette_bench.formats.pair_config import (
    CONFIGS,
    DATA_CONFIGS,
    DEFAULT_SEAM,
    DEFAULT_SIZE,
    GROUPS,
    ORDERS,
    SPLIT,
    PairConfig,
    PairFilters,
)
from vignette_bench.formats.render_index import (
    IMAGE_EXTENSIONS,
    INDEX_PATH,
    KEY_RE,
    PORTRAIT,
    SHARD_RE,
    TAR_BLOCK,
    variant_key,
)
from vignette_bench.formats.selection import SelectionRecord
from vignette_bench.loader.compose import MAX_RENDER_PIXELS, Composer, compose
from vignette_bench.loader.errors import CorruptRenderError, MissingRenderError
from vignette_bench.loader.filesystem import PAIR_PROTOCOL, PairFileSystem, _parse_pair_url, pair_url
from vignette_bench.loader.load import Selection, features, info_table, load_dataset, open_pair
from vignette_bench.loader.provenance import provenance_digest
from vignette_bench.loader.reader import MAX_INDEX_BYTES, RenderIndex, RenderLocation, RenderReader
from vignette_bench.loader.sources import (
    BACKOFF_S,
    CONNECT_TIMEOUT_S,
    DEFAULT_SOURCE,
    READ_TIMEOUT_S,
    RETRIES,
    Source,
    SourceError,
    resolve_source,
)
from vignette_bench.loader.space import (
    Coverage,
    FullBlock,
    Member,
    Orders,
    PairSpace,
    PairSpec,
    _euler_orientation,
    choose_variant,
    comb2,
    rank_comb,
    unrank_comb,
)
from vignette_bench.taxonomy import Identity, Taxonomy, load_taxonomy, slug

__all__ = [
    "BACKOFF_S",
    "CONFIGS",
    "CONNECT_TIMEOUT_S",
    "DATA_CONFIGS",
    "DEFAULT_SEAM",
    "DEFAULT_SIZE",
    "DEFAULT_SOURCE",
    "GROUPS",
    "IMAGE_EXTENSIONS",
    "INDEX_PATH",
    "KEY_RE",
    "MAX_INDEX_BYTES",
    "MAX_RENDER_PIXELS",
    "ORDERS",
    "PAIR_PROTOCOL",
    "PORTRAIT",
    "READ_TIMEOUT_S",
    "RETRIES",
    "SHARD_RE",
    "SPLIT",
    "TAR_BLOCK",
    "Composer",
    "CorruptRenderError",
    "Coverage",
    "FullBlock",
    "Identity",
    "Member",
    "MissingRenderError",
    "Orders",
    "PairConfig",
    "PairFileSystem",
    "PairFilters",
    "PairSpace",
    "PairSpec",
    "RenderIndex",
    "RenderLocation",
    "RenderReader",
    "Selection",
    "SelectionRecord",
    "Source",
    "SourceError",
    "Taxonomy",
    "VignetteError",
    "_euler_orientation",
    "_parse_pair_url",
    "choose_variant",
    "comb2",
    "compose",
    "features",
    "info_table",
    "load_dataset",
    "load_taxonomy",
    "open_pair",
    "pair_url",
    "provenance_digest",
    "rank_comb",
    "resolve_source",
    "slug",
    "unrank_comb",
    "variant_key",
]
