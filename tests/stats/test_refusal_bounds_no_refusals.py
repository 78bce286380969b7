"""`refusal_bounds` without refusals in the weighted cells reuses the observed test for both bounds: the same
numbers as widening by zero refusals (the report's demo runs have none, so this path carries every verdict)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vignette_bench.stats.clustered import cluster_contrasts, refusal_bounds

COEF = {"self": 1.0, "other": -1.0}


def _cells(refused: np.ndarray) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    rows = 3 * 2 * 6
    return pd.DataFrame(
        {
            "target": np.repeat(["a", "b", "c"], 12),
            "cluster": np.tile(np.repeat(np.arange(6), 2), 3),
            "component": np.tile(["self", "other"], rows // 2),
            "y": rng.integers(0, 5, rows).astype(float),
            "n": np.full(rows, 5.0),
            "refused": refused,
        }
    )


def test_no_refusals_gives_the_observed_test_at_both_bounds():
    cells = _cells(np.zeros(36))
    out = refusal_bounds(cells, COEF, 0.0)
    observed = cluster_contrasts(cells, COEF, 0.0, wild=False)
    for bound in ("low", "high"):
        np.testing.assert_array_equal(out[f"estimate_{bound}"], observed["estimate"])
        np.testing.assert_array_equal(out[f"p_value_{bound}"], observed["p_value"])
    assert out["verdict_robust"].all()


def test_refusals_in_unweighted_cells_change_nothing_and_weighted_ones_do():
    unweighted = _cells(np.zeros(36)).assign(component="ignored", refused=3.0)
    cells = pd.concat([_cells(np.zeros(36)), unweighted], ignore_index=True)
    out = refusal_bounds(cells, COEF, 0.0)
    np.testing.assert_array_equal(out["estimate_low"], out["estimate"])
    np.testing.assert_array_equal(out["estimate_high"], out["estimate"])
    refused = np.zeros(36)
    refused[0] = 4.0  # target a, cluster 0, "self": high scores it chosen, low not chosen
    moved = refusal_bounds(_cells(refused), COEF, 0.0).set_index("target")
    assert moved.loc["a", "estimate_high"] > moved.loc["a", "estimate"] > moved.loc["a", "estimate_low"]
    assert moved.loc["b", "estimate_high"] == moved.loc["b", "estimate"]  # b's own cells are unchanged
