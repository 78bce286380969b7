"""`SelectionRecord`: the loader's record of what a pair dataset holds, kept in ``DatasetInfo.description``.

`vignette.load_dataset` writes it (source, config, filters, sample and seed, orders, pixels, rows);
the runner reads it back and keeps it in run.json (``dataset.selection``), so a run says exactly
which pairs it asked about. Version 0 is the untyped JSON object the loader wrote before this class:
the same keys, with ``skipped_missing_renders`` only present when renders were skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from vignette_bench.formats.base import Format, FormatError
from vignette_bench.formats.pair_config import ConfigName, PairFilters

SelectionFilters = PairFilters  # the filters that were applied, as `vignette.PairSpace` took them (older name)


class SelectionRecord(Format):
    """What one `load_dataset` call selected and how its images are composed."""

    SCHEMA_VERSION: ClassVar[int] = 1
    FILE: ClassVar[str] = (
        "`DatasetInfo.description` of every pair dataset (JSON text): written by vignette_bench/loader/load.py, "
        "read by vignette_bench/eval/runtime/plan.py (open_pairs) into run.json's `dataset.selection`"
    )

    schema_version: int = SCHEMA_VERSION
    source: str  # the source root URL (or absolute folder)
    config: ConfigName
    split: str  # as given, e.g. "test" or "test[:100]"
    filters: PairFilters  # the filters applied (null: no restriction)
    orders: Literal["rule", "both", "balanced"]
    sample: int | None  # pairs sampled; null: every pair
    seed: int | None  # the sample's seed; null without a sample
    rows: int  # rows selected (before any skipped for missing renders)
    size: tuple[int, int]  # width, height of a composed pair
    seam: int
    on_missing: Literal["raise", "skip"]
    coverage: str  # how the source's renders limit the space (a sentence)
    renders_per_cell: int  # the most renders any cell has (k of `vignette build render --renders-per-cell`)
    composition: str  # what the pixels are composed from: full renders or reduced copies (a sentence)
    skipped_missing_renders: int = 0  # rows dropped with on_missing="skip" (map-style datasets)

    @classmethod
    def upgrade(cls, data: Any, file: str) -> dict[str, Any]:
        out = super().upgrade(data, file)
        # the loader writes every filter (null: no restriction); a record lacking one is not the loader's
        filters = out.get("filters")
        missing = [k for k in PairFilters.model_fields if k not in filters] if isinstance(filters, Mapping) else []
        if missing:
            raise FormatError(file, "filters", f"missing filter key(s) {missing}")
        return out

    @classmethod
    def migrate(cls, data: dict[str, Any], version: int, file: str) -> dict[str, Any]:
        if version == 0:  # the untyped record: identical keys; the skip count was left out when nothing was skipped
            return {**data, "skipped_missing_renders": data.get("skipped_missing_renders", 0)}
        return super().migrate(data, version, file)
