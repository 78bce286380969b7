"""``load_dataset``: VIGNETTE pairs as a Hugging Face ``datasets.Dataset`` or ``IterableDataset``.

Also ``open_pair`` (one pair by index) and ``info_table`` (sizes per config).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vignette_bench.formats.pair_config import CONFIGS, DATA_CONFIGS, SPLIT, PairConfig
from vignette_bench.formats.render_index import INDEX_PATH
from vignette_bench.formats.selection import SelectionRecord
from vignette_bench.loader.compose import Composer
from vignette_bench.loader.errors import MissingRenderError, VignetteError, as_tuple, unknown
from vignette_bench.loader.filesystem import DEFAULT_ENCODING, PairFileSystem, _suffix, pair_url
from vignette_bench.loader.reader import RenderIndex, RenderReader
from vignette_bench.loader.sources import DEFAULT_SOURCE, Source, resolve_source
from vignette_bench.loader.space import Coverage, PairSpace
from vignette_bench.taxonomy import Taxonomy, load_taxonomy

logger = logging.getLogger("vignette")


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
    image_prefix: str = ""  # pair_url up to the keys: the image column is prefix + left + "/" + right + suffix
    image_suffix: str = ".bmp"  # how the pairs are encoded (vignette_bench/loader/filesystem.py, PAIR_ENCODINGS)
    chunk: int = 2048


def _image_column(prefix: str, cols: dict[str, pa.Array], suffix: str = ".bmp") -> pa.Array:
    """The ``image`` column: Image structs holding a vignette:// path and no bytes (see `pair_url`)."""
    n = len(cols["key_left"])
    paths = pc.binary_join_element_wise(
        pa.array(np.full(n, prefix, dtype=object), pa.string()),
        cols["key_left"],
        pa.array(np.full(n, "/", dtype=object), pa.string()),
        cols["key_right"],
        pa.array(np.full(n, suffix, dtype=object), pa.string()),
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
            extra = {"image": _image_column(plan.image_prefix, cols, plan.image_suffix)} if images else {}
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
    pair_config: PairConfig | None = None,
    **options: Any,
):
    """VIGNETTE pairs as a ``datasets.Dataset`` (or ``IterableDataset`` with ``streaming=True``).

        ``path`` is the source: a local folder, a base URL, ``hf://datasets/ID`` or a Hub id
        ``owner/name`` (``"vignette"`` means ``DEFAULT_SOURCE``). ``name`` is a pair config
        (``CONFIGS``) or a data config (``renders``, ``news``: handed to ``datasets.load_dataset``
        with ``split``, ``streaming`` and ``kwargs``). The pair space is limited to the identities and
        activities the source has renders for. ``options`` are the fields of a `PairConfig` (the filters of
    ``PairFilters``: see ``PairSpace``; ``sample``, ``seed``, ``orders``, ``size``, ``seam``, ``reduced``) and
    the serving options below (``split``, ``streaming``, ``image_format``, ``on_missing``, ``cache_size``,
    ``max_rows``, ``num_shards``, ``images``, ``cache_dir``, ``keep_in_memory``, ``num_proc``); an unknown one
    raises a `VignetteError` naming it and the valid ones. ``sample=N`` takes N pairs,
        seeded by ``seed`` and balanced (``PairSpace.sample``). ``orders``: ``"rule"`` (one order per pair,
        by the left/right rule), ``"both"`` (every pair in both orders) or ``"balanced"`` (one order per pair,
        chosen so that every identity of a sample stands left within one offer of half). Images are composed when a row is read.
        Map-style tables hold one row of metadata per pair, so they are refused above ``max_rows``
        (stream instead, filter, or sample). What was selected (filters, sample seed, source) is
        recorded as JSON in ``info.description``. ``images=False`` gives the metadata only: no image column,
        nothing downloaded or composed. ``reduced=True`` composes from the renders' reduced copies where the
        source has them (``vignette build reduce``; ~4x faster, slightly different pixels, recorded as
        ``composition`` in ``info.description``); ``reduced=False`` always composes the full renders.
        ``image_format`` is how a pair reaches ``datasets`` (the image paths' suffix): ``"BMP"`` (default:
        uncompressed, ~0.3 ms to write and read where PNG took ~25 ms) or ``"PNG"`` (a third smaller: what
        ``push_to_hub`` embeds is these bytes, so load with ``image_format="PNG"`` to publish PNG). Same pixels.

        As with ``datasets.load_dataset``, a map-style table is an Arrow file memory-mapped from
        ``cache_dir`` (default: the datasets cache, ``HF_DATASETS_CACHE/vignette``), named by the sha256 of
        its contents: two loads of the same selection share one file, a rebuilt source gives a new one, and
        a dataset pickles (DataLoader workers) as a path, not as its rows. ``keep_in_memory=True`` keeps it
        in memory instead. ``num_proc`` is accepted for datasets compatibility; there is nothing to prepare
        in parallel (rows are arithmetic, images are composed when read).

        ``pair_config`` (a `vignette_bench.formats.pair_config.PairConfig`) gives the selection and the
        pixels as one value instead of its fields as keyword arguments (``name`` may then be left out): the
        way ``datasets.load_dataset`` takes a ``BuilderConfig`` or builds one from ``**config_kwargs``. Either
        way every option is checked before anything is read: a bad value raises a `VignetteError` naming it.
    """
    serving = {k: options.pop(k) for k in _SERVING_DEFAULTS if k in options}
    if name in DATA_CONFIGS and pair_config is None:
        # handed to datasets.load_dataset: the split, streaming and any option neither a pair nor a serving one
        passed = {k: v for k, v in options.items() if k not in PairConfig.model_fields}
        split, streaming = serving.get("split", SPLIT), serving.get("streaming", False)
        return _load_data_config(path, name, split=split, streaming=streaming, **passed)
    if pair_config is None and name not in CONFIGS:
        raise unknown("config", name, CONFIGS + DATA_CONFIGS)
    config = _pair_config(name, pair_config, options)
    num_proc = serving.pop("num_proc", None)
    how = _Serving(**serving)
    _check_serving(how, num_proc)
    return _load_pairs(path, config, how)


@dataclass(frozen=True)
class _Serving:
    """How the selected pairs are served (the rest of load_dataset's options; none changes a pixel)."""

    split: str = SPLIT
    streaming: bool = False
    image_format: str = DEFAULT_ENCODING  # BMP (uncompressed, fast) or PNG: the image paths' suffix
    on_missing: str = "raise"  # or "skip": leave out the pairs whose renders the source lacks
    cache_size: int = 128  # renders held decoded per process
    max_rows: int = 1_000_000  # above this a map-style table is refused (stream, filter or sample instead)
    num_shards: int | None = None  # streaming: how many shards the rows are cut into (default: by size)
    images: bool = True  # False: metadata only, no image column
    cache_dir: str | os.PathLike[str] | None = None  # where the map-style Arrow file goes
    keep_in_memory: bool = False


# load_dataset's serving options and their defaults (num_proc: accepted for datasets compatibility, unused)
_SERVING_DEFAULTS: dict[str, Any] = {**{f.name: f.default for f in fields(_Serving)}, "num_proc": None}


def _pair_config(name: str | None, given: PairConfig | None, options: dict[str, Any]) -> PairConfig:
    """The PairConfig of a call: `pair_config=` as given, or one built (and checked) from the keyword arguments
    (an unknown one is named with every valid option, the PairConfig's and the serving ones)."""
    known = sorted(set(PairConfig.model_fields) - {"schema_version", "config"})
    unknown_keys = sorted(set(options) - set(known))
    if unknown_keys:
        raise VignetteError(
            f"unknown option(s) {unknown_keys} for a pair config; valid: {known + sorted(_SERVING_DEFAULTS)} "
            "(see help(vignette.load_dataset))"
        )
    if given is None:
        return PairConfig.from_options(config=name, **options)
    if not isinstance(given, PairConfig):
        raise VignetteError(
            f"pair_config={given!r}: expected a vignette_bench.formats.pair_config.PairConfig (or leave it out)"
        )
    if name is not None and name != given.config:
        raise VignetteError(f"name {name!r} differs from pair_config.config {given.config!r}; pass only one")
    if options:
        raise VignetteError(
            f"option(s) {sorted(options)} given beside pair_config=; put them in the PairConfig "
            "(pair_config.model_copy(update=...))"
        )
    return given


def _whole_at_least(option: str, value: Any, low: int, none_ok: bool) -> None:
    if value is None and none_ok:
        return
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        allowed = f"a whole number >= {low}" + (" or None" if none_ok else "")
        raise VignetteError(f"{option}={value!r}: expected {allowed}")


def _check_serving(serving: _Serving, num_proc: int | None) -> None:
    """Every serving option is checked before anything is read; errors name the option."""
    if serving.on_missing not in ("raise", "skip"):
        raise unknown("on_missing option", serving.on_missing, ("raise", "skip"))
    _whole_at_least("num_proc", num_proc, 1, none_ok=True)
    _whole_at_least("num_shards", serving.num_shards, 1, none_ok=True)
    _whole_at_least("cache_size", serving.cache_size, 0, none_ok=False)
    _whole_at_least("max_rows", serving.max_rows, 0, none_ok=False)
    _split_bounds(serving.split, 0)  # a bad split string is named before anything is read
    _suffix(serving.image_format)  # BMP or PNG (the path's suffix); anything else is named here


@dataclass(frozen=True, eq=False)
class _Prepared:
    """A selection ready to serve: its rows' plan and the record that goes into info.description."""

    plan: _Plan
    record: dict[str, Any]


def _load_pairs(path: str | os.PathLike[str] | None, config: PairConfig, serving: _Serving):
    prepared = _prepare(path, config, serving)
    if serving.streaming:
        return _iterable_dataset(prepared, config, serving)
    return _map_dataset(prepared, config, serving)


def _prepare(path: str | os.PathLike[str] | None, config: PairConfig, serving: _Serving) -> _Prepared:
    """Read the index and taxonomy, build the filtered space, sample it, slice the split; register the composer."""
    name = config.config
    source = Source(path)
    index = RenderIndex.load(source)  # first: if the source cannot be read, this says so (not "taxonomy missing")
    taxonomy = load_taxonomy(source.url("taxonomy"))
    _check_coverage(index.coverage, taxonomy, source)
    _warn_uncovered(index.coverage, name, config.identities, config.activities)
    space = PairSpace(taxonomy, name, filters=config.filters(), coverage=index.coverage, orders=config.orders)
    positions = space.sample(config.sample, config.seed) if config.sample is not None else None
    lo, hi = _split_bounds(serving.split, len(space) if positions is None else len(positions))
    selection = Selection(space, positions, lo, hi)
    if len(selection) == 0:
        raise VignetteError(
            f"{name}: the filters select no pairs from source {source.root} (filters {space.filters.to_json()}); widen them"
        )
    size, seam, reduced = config.size, config.seam, config.reduced
    suffix = "." + _suffix(serving.image_format)
    image_prefix = (
        pair_url(source.root, "", "", size, seam, reduced, serving.image_format).removesuffix("//" + suffix) + "/"
    )
    composer = Composer(RenderReader(index, serving.cache_size), size, seam, use_reduced=reduced)
    PairFileSystem.composers[(source.root, size, seam, reduced, os.getpid())] = composer
    record = {
        "source": source.root,
        "config": name,
        "split": serving.split,
        "filters": space.filters.to_json(),
        "orders": config.orders,
        "sample": config.sample,
        "seed": config.seed if config.sample is not None else None,
        "rows": len(selection),
        "size": list(size),
        "seam": seam,
        "on_missing": serving.on_missing,
        "coverage": "limited to the identities and activities with renders in the source",
        "renders_per_cell": max(index.coverage.variants.values(), default=1),
        "composition": _composition(composer, index),
    }
    return _Prepared(_Plan(selection, index, serving.on_missing, image_prefix, suffix), record)


def _description(record: dict[str, Any]) -> str:
    """info.description: the selection record, written through its format (vignette_bench/formats/selection.py)."""
    typed = SelectionRecord.from_json({**record, "schema_version": SelectionRecord.SCHEMA_VERSION}, "info.description")
    return json.dumps(typed.to_json())


def _iterable_dataset(prepared: _Prepared, config: PairConfig, serving: _Serving):
    import datasets

    feats = features()
    if not serving.images:
        del feats["image"]
    ds = datasets.IterableDataset.from_generator(
        _generate_rows,
        features=feats,
        split=datasets.NamedSplit(SPLIT),
        gen_kwargs={
            "plan": prepared.plan,
            "ranges": _ranges(len(prepared.plan.selection), serving.num_shards),
            "images": serving.images,
        },
    )
    ds.info.description = _description(prepared.record)
    ds.info.config_name = config.config
    return ds


def _map_dataset(prepared: _Prepared, config: PairConfig, serving: _Serving):
    import datasets

    name, plan, record = config.config, prepared.plan, dict(prepared.record)
    n = len(plan.selection)
    if n > serving.max_rows:
        raise VignetteError(
            f"{name}: {n:,} pairs selected, above max_rows={serving.max_rows:,} for a map-style table "
            f"(~{n * 300 / 1e9:.1f} GB of metadata). Pass streaming=True, narrow the filters, sample=N, or raise max_rows"
        )
    cols = plan.selection.space.columns(plan.selection.positions_at(0, n))
    ok = _present(plan, cols)
    if not ok.all():
        if serving.on_missing == "raise":
            raise MissingRenderError(_missing_message(plan, cols, ok))
        record["skipped_missing_renders"] = int((~ok).sum())
        logger.warning(
            "%s: skipped %d pair(s) whose renders are missing from %s", name, int((~ok).sum()), record["source"]
        )
        mask = pa.array(ok)
        cols = {k: v.filter(mask) for k, v in cols.items()}
    feats = features()
    if serving.images:
        cols["image"] = _image_column(plan.image_prefix, cols, plan.image_suffix)
    else:
        del feats["image"]
    table = pa.table(cols, schema=feats.arrow_schema)
    info = datasets.DatasetInfo(description=_description(record), features=feats, config_name=name)
    if serving.keep_in_memory:
        return datasets.Dataset(datasets.table.InMemoryTable(table), info=info, split=datasets.NamedSplit(SPLIT))
    folder = (
        os.fspath(serving.cache_dir)
        if serving.cache_dir is not None
        else os.path.join(datasets.config.HF_DATASETS_CACHE, "vignette")
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
    # the copies' side names their version: 384-px copies (before issue 25) and 352-px ones give different pixels
    sides = "/".join(str(s) for s in sorted({min(w, h) for _, w, h in index.reduced.values()}))
    return (
        f"reduced copies (shorter side {sides} px) where both renders of a pair have one covering the tile "
        f"({fits} of {len(index.locations)} renders)"
    )


def _warn_uncovered(coverage: Coverage, config: str, identities: Any, activities: Any) -> None:
    """Names asked for that the source has no renders of would be dropped silently: say so."""
    people = {i for _, i in coverage.members(config)}
    for kind, asked, have in (
        ("identities", as_tuple(identities), people),
        ("activities", as_tuple(activities), coverage.activities),
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
