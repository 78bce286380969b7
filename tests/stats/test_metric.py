"""vignette_bench.stats.metric: the evaluate base class counts inputs and checks names."""

from __future__ import annotations

import inspect
from typing import Any

import datasets
import evaluate
import pandas as pd
import pyarrow as pa
import pytest

from vignette_bench.stats import CountStore, to_lists
from vignette_bench.stats.metric import VIGNETTE_CITATION, VignetteMetric, metric_info


class Toy(VignetteMetric):
    """The smallest measure: the store's cells as they are."""

    CELL_KEYS = ("identity", "context")
    WANTED_COLUMNS = ("selected", "candidates", "context", "group")
    OPTION_DEFAULTS = {"alpha": 0.05, "seed": 0}

    def _info(self) -> evaluate.MetricInfo:
        return metric_info("toy", "inputs")

    def _compute_counts(self, store: CountStore, opts: dict[str, Any]) -> dict[str, Any]:
        return {"cells": to_lists(store.cells()), "summary": {"keys": list(store.keys), "alpha": opts["alpha"]}}


class NoGroup(Toy):
    WANTED_COLUMNS = ("selected", "candidates", "context")


ROWS = dict(selected=["a", "b", ""], candidates=[["a", "b"], ["a", "b"], ["b", "c"]], context=["x", "x", "y"])


def test_base_is_abstract_so_evaluate_picks_the_measure():
    assert inspect.isabstract(VignetteMetric) and not inspect.isabstract(Toy)
    assert "raj2025vignette" in Toy().info.citation


def test_metric_info_declares_the_contract_columns():
    info = metric_info("what it measures", "Args: ...", ("direction", "trait_dimension"))
    assert (info.description, info.inputs_description, info.citation) == (
        "what it measures",
        "Args: ...",
        VIGNETTE_CITATION,
    )
    assert info.features == datasets.Features(
        {
            "selected": datasets.Value("string"),
            "candidates": datasets.List(datasets.Value("string")),
            "context": datasets.Value("string"),
            "candidate_sides": datasets.List(datasets.Value("string")),
            "candidate_clusters": datasets.List(datasets.Value("string")),
            "direction": datasets.Value("string"),
            "trait_dimension": datasets.Value("string"),
        }
    )
    assert list(metric_info("d", "i").features) == [
        "selected",
        "candidates",
        "context",
        "candidate_sides",
        "candidate_clusters",
    ]


def test_add_batch_and_add_accumulate_counts_until_compute():
    metric = Toy()
    metric.add_batch(**{k: v[:2] for k, v in ROWS.items()})
    metric.add(**{k: v[2] for k, v in ROWS.items()})
    res = metric.compute(alpha=0.1)
    cells = pd.DataFrame(res["cells"])
    assert cells["offered"].sum() == 4 and cells["selected"].sum() == 2 and cells["offered_invalid"].sum() == 2
    s = res["summary"]
    assert (s["n_rows"], s["n_valid"], s["alpha"]) == (3, 2, 0.1)
    assert s["options"] == {"alpha": 0.1, "seed": 0} and s["use_probabilities"] is True
    again = metric.compute()  # compute started afresh
    assert again["summary"]["n_rows"] == 0 and again["cells"]["offered"] == []


def test_group_becomes_the_cluster_only_where_the_measure_accepts_it():
    table = pa.table({**ROWS, "pair_id": ["p0", "p0", "p1"]})
    toy = Toy().compute(data=table)
    assert toy["summary"]["keys"] == ["identity", "context", "cluster", "side", "pcluster"]
    assert toy["summary"]["cluster_unit"] == "group" and sorted(set(toy["cells"]["cluster"])) == [0, 1]
    rows = NoGroup().compute(data=table)["summary"]
    assert rows["cluster_unit"] == "rows" and rows["clusters"] == "clusters: rows (independent answers assumed)"
    metric = Toy()
    metric.add_batch(**ROWS)
    with pytest.raises(ValueError, match="clusters come from 'group' but earlier batches' from 'rows'"):
        metric.add_batch(**ROWS, group=["p0", "p0", "p1"])


def test_unknown_names_and_mixed_inputs_are_refused():
    with pytest.raises(ValueError, match=r"unknown inputs \['direction'\]"):
        Toy().add_batch(**ROWS, direction=["high"] * 3)
    with pytest.raises(ValueError, match=r"unknown options \['identities'\]"):
        Toy().compute(**ROWS, identities=["a"])
    with pytest.raises(ValueError, match="either `data` or keyword columns"):
        Toy().add_batch(data=pd.DataFrame(ROWS), context=["x"] * 3)
