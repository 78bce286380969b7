"""SelectionRecord: the loader's info.description; version 0 is the untyped record it wrote before."""

from __future__ import annotations

import json

import pytest

from vignette_bench.formats.base import FormatError
from vignette_bench.formats.selection import SelectionRecord

FILTERS = {
    "gender": ["female"],
    "dimensions": None,
    "identities": None,
    "identity_match": "all",
    "activities": None,
    "time_use": None,
    "exclude_near_synonyms": False,
    "representativeness": None,
}
V0 = {  # exactly what vignette.load_dataset wrote into info.description before the record was typed
    "source": "/data/source",
    "config": "identity_contrast",
    "split": "test",
    "filters": FILTERS,
    "orders": "rule",
    "sample": 20,
    "seed": 3,
    "rows": 20,
    "size": [672, 336],
    "seam": 32,
    "on_missing": "raise",
    "coverage": "limited to the identities and activities with renders in the source",
    "renders_per_cell": 1,
    "composition": "full renders",
}


def test_version_0_migrates() -> None:
    record = SelectionRecord.from_json(json.dumps(V0), "info.description")
    assert record.schema_version == SelectionRecord.SCHEMA_VERSION == 1
    assert record.skipped_missing_renders == 0 and record.filters.gender == ("female",) and record.size == (672, 336)
    skipped = SelectionRecord.from_json({**V0, "skipped_missing_renders": 2}, "info.description")
    assert skipped.skipped_missing_renders == 2
    again = SelectionRecord.from_json(record.to_json(), "info.description")
    assert again == record and again.to_json()["filters"] == FILTERS


def test_bad_records_name_the_key() -> None:
    with pytest.raises(FormatError, match=r"info.description: filters.gender: "):
        SelectionRecord.from_json({**V0, "filters": {**FILTERS, "gender": "female"}}, "info.description")
    with pytest.raises(FormatError, match=r"filters: missing filter key\(s\) \['time_use'\]"):
        SelectionRecord.from_json({**V0, "filters": {k: v for k, v in FILTERS.items() if k != "time_use"}}, "x")
    with pytest.raises(FormatError, match="rows: missing"):
        SelectionRecord.from_json({k: v for k, v in V0.items() if k != "rows"}, "info.description")
    with pytest.raises(FormatError, match="newer vignette"):
        SelectionRecord.from_json({**V0, "schema_version": 99}, "info.description")
