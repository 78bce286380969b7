"""vignette_bench.stats.bootstrap: percentiles, collapsing groups, the group bootstrap, intervals for differences."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vignette_bench.stats import VALUE_NAMES, Z95, collapse_groups, difference_ci, group_bootstrap, percentile_ci


def test_percentile_ci_matches_numpy():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(500, 7))
    x[rng.random(x.shape) < 0.1] = np.nan
    x[:, 3] = np.nan
    lo, hi = percentile_ci(x)
    with np.testing.suppress_warnings() as sup:
        sup.filter(RuntimeWarning)
        np.testing.assert_allclose(lo, np.nanpercentile(x, 2.5, axis=0))
        np.testing.assert_allclose(hi, np.nanpercentile(x, 97.5, axis=0))


def counts_frame(seed: int = 0, rows: int = 40) -> pd.DataFrame:
    """A (identity, context, group) count table as CountStore.cells() gives it."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {"identity": rng.integers(0, 3, rows), "context": rng.integers(0, 2, rows), "group": rng.integers(0, 6, rows)}
    )
    frame = frame.drop_duplicates().reset_index(drop=True)
    frame["offered"] = rng.integers(1, 9, len(frame)).astype(float)
    frame["selected"] = np.floor(frame["offered"] * rng.random(len(frame)))
    frame["selected_sq"] = frame["selected"]
    frame["inv_k"] = frame["offered"] / 2
    frame["offered_invalid"] = rng.integers(0, 2, len(frame)).astype(float)
    return frame


def test_collapse_groups_sums_over_groups_and_maps_rows_to_cells():
    frame = counts_frame()
    keys = ["identity", "context"]
    cells, codes = collapse_groups(frame, keys)
    ref = frame.groupby(keys)[list(VALUE_NAMES)].sum()
    got = cells.set_index(keys).sort_index()
    pd.testing.assert_frame_equal(got, ref, check_dtype=False)
    # Each row's code points at the cell with its keys.
    np.testing.assert_array_equal(cells.loc[codes, keys].to_numpy(), frame[keys].to_numpy())
    # Without groups: the table itself, no codes; empty with groups: no codes either.
    plain, none = collapse_groups(frame.drop(columns="group"), keys)
    assert none is None and len(plain) == len(frame)
    empty, zero = collapse_groups(frame.iloc[:0], keys)
    assert "group" not in empty.columns and zero.shape == (0,)


def test_group_bootstrap_replicates_are_poisson_weighted_group_sums():
    frame = counts_frame(1)
    cells, codes = collapse_groups(frame, ["identity", "context"])
    n_cells, seed, n_samples = len(cells), 5, 30
    reps = group_bootstrap(frame, codes, n_cells, lambda o, s, q: np.hstack([o, s]), n_samples, seed, chunk=25)
    assert reps.shape == (n_samples, 2 * n_cells)
    # By hand: groups in order of first appearance, Poisson(1) weights drawn chunk by chunk.
    group_codes, groups = pd.factorize(frame["group"])
    per_group = {v: np.zeros((len(groups), n_cells)) for v in ("offered", "selected")}
    for v in per_group:
        np.add.at(per_group[v], (group_codes, codes), frame[v].to_numpy())
    rng = np.random.default_rng(seed)
    w = np.hstack([rng.poisson(1.0, size=(len(groups), c)) for c in (25, 5)]).astype(float)
    np.testing.assert_allclose(reps[:, :n_cells], w.T @ per_group["offered"])
    np.testing.assert_allclose(reps[:, n_cells:], w.T @ per_group["selected"])
    # Without resampling the replicates would all equal the totals; with it they vary.
    assert reps[:, :n_cells].std(axis=0).min() > 0


def rate_difference(o, s, q, need_var=True):
    """Cell 0's rate minus cell 1's, in points; variance of each rate is p(1-p)/n."""
    r = s / o
    est = 100.0 * (r[:, :1] - r[:, 1:2])
    if not need_var:
        return (est,)
    return est, 1e4 * (r[:, :1] * (1 - r[:, :1]) / o[:, :1] + r[:, 1:2] * (1 - r[:, 1:2]) / o[:, 1:2])


def test_difference_ci_normal_without_groups_and_bootstrap_with_them():
    opts = {"bootstrap_samples": 200, "seed": 3}
    est, var = np.array([30.0, -95.0]), np.array([25.0, 100.0])
    lo, hi, method = difference_ci(pd.DataFrame(), None, 2, rate_difference, est, var, opts)
    assert lo.tolist() == pytest.approx([30 - Z95 * 5, -100.0]) and hi.tolist() == pytest.approx(
        [30 + Z95 * 5, -95 + Z95 * 10]
    )
    assert method.startswith("normal (Wald)")
    # With groups: 20 groups, each answering 10 questions in cell 0 and 10 in cell 1.
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"identity": np.repeat([0, 1], 20), "group": np.tile(np.arange(20), 2), "offered": 10.0})
    frame["selected"] = rng.binomial(10, np.where(frame["identity"] == 0, 0.7, 0.4)).astype(float)
    frame["selected_sq"] = frame["selected"]
    frame["inv_k"], frame["offered_invalid"] = 5.0, 0.0
    cells, codes = collapse_groups(frame, ["identity"])
    obs = [cells[v].to_numpy(float)[None, :] for v in ("offered", "selected", "selected_sq")]
    est, var = (x[0] for x in rate_difference(*obs))
    lo, hi, method = difference_ci(frame, codes, len(cells), rate_difference, est, var, opts)
    assert method == "percentile bootstrap over groups (Poisson weights, 200 samples, seed 3)"
    assert lo[0] < est[0] < hi[0]
    # By hand: the same Poisson weights per group, the statistic on the weighted sums, then percentiles.
    g = np.random.default_rng(3)
    group_codes, groups = pd.factorize(frame["group"])
    reps = []
    for c in [25] * 8:
        w = g.poisson(1.0, size=(len(groups), c)).astype(float)
        sums = [np.zeros((c, len(cells))) for _ in range(3)]
        for k, v in enumerate(("offered", "selected", "selected_sq")):
            for row in range(len(frame)):
                sums[k][:, codes[row]] += w[group_codes[row]] * frame[v].iloc[row]
        reps.append(rate_difference(*sums, need_var=False)[0])
    reps = np.concatenate(reps)
    assert (lo[0], hi[0]) == pytest.approx((np.percentile(reps[:, 0], 2.5), np.percentile(reps[:, 0], 97.5)))
    # No bootstrap samples asked for: the normal interval even with groups.
    assert difference_ci(frame, codes, len(cells), rate_difference, est, var, {**opts, "bootstrap_samples": 0})[
        2
    ].startswith("normal")
