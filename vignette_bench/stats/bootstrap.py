"""Intervals from replicates: percentiles, the group (pair image) bootstrap, intervals for differences."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sparse

from vignette_bench.stats.counts import VALUE_NAMES
from vignette_bench.stats.inference import Z95


def percentile_ci(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2.5 and 97.5 percentiles over replicates (axis 0), skipping replicates where the statistic is undefined.

    Same interpolation as numpy's default ("linear"); NaN where no replicate is defined.
    """
    s = np.sort(samples, axis=0)  # NaN sorts last
    m = (~np.isnan(samples)).sum(axis=0)
    cols = np.arange(s.shape[1])
    out = []
    for q in (0.025, 0.975):
        pos = q * np.maximum(m - 1, 0)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, np.maximum(m - 1, 0))
        frac = pos - lo
        v = s[lo, cols] * (1.0 - frac) + s[hi, cols] * frac
        out.append(np.where(m > 0, v, np.nan))
    return out[0], out[1]


def collapse_groups(frame: pd.DataFrame, keys: list[str]) -> tuple[pd.DataFrame, np.ndarray | None]:
    """Sum a (keys + group) count table over groups; also return each row's cell index (None without groups)."""
    if "group" not in frame.columns:
        return frame.reset_index(drop=True), None
    if len(frame) == 0:
        return frame.drop(columns="group").reset_index(drop=True), np.zeros(0, dtype=np.int64)
    dims = [int(frame[k].max()) + 1 for k in keys]
    codes, uniq = pd.factorize(np.ravel_multi_index([frame[k].to_numpy() for k in keys], dims))
    cells = pd.DataFrame(dict(zip(keys, np.unravel_index(uniq, dims))))
    for v in VALUE_NAMES:
        cells[v] = np.bincount(codes, weights=frame[v].to_numpy(float), minlength=len(uniq))
    return cells, codes


def group_bootstrap(
    frame: pd.DataFrame,
    cell_codes: np.ndarray,
    n_cells: int,
    statistic: Any,
    n_samples: int,
    seed: int,
    chunk: int = 25,
) -> np.ndarray:
    """Bootstrap replicates of `statistic` resampling whole groups (pair images).

    Poisson(1) weights per group (the Poisson bootstrap, a standard large-sample stand-in for
    drawing groups with replacement). `statistic(offered, selected, selected_sq)` takes
    (B, n_cells) arrays and returns (B, n_outputs); the result is (n_samples, n_outputs).
    """
    group_codes, groups = pd.factorize(frame["group"])
    shape = (len(groups), n_cells)
    mats = [
        sparse.csr_matrix((frame[v].to_numpy(float), (group_codes, cell_codes)), shape=shape).T.tocsr()
        for v in ("offered", "selected", "selected_sq")
    ]
    rng = np.random.default_rng(seed)
    out = []
    for start in range(0, n_samples, chunk):
        w = rng.poisson(1.0, size=(len(groups), min(chunk, n_samples - start))).astype(float)
        out.append(statistic(*[np.asarray(m @ w).T for m in mats]))
    return np.concatenate(out, axis=0)


def difference_ci(
    frame: pd.DataFrame,
    cell_codes: np.ndarray | None,
    n_cells: int,
    statistic: Any,
    est: np.ndarray,
    var: np.ndarray,
    opts: dict[str, Any],
) -> tuple[np.ndarray, np.ndarray, str]:
    """95% interval for a difference: group bootstrap when groups were given, else normal (Wald)."""
    n_boot = int(opts["bootstrap_samples"])
    if cell_codes is not None and n_boot > 0:
        reps = group_bootstrap(
            frame, cell_codes, n_cells, lambda *m: statistic(*m, need_var=False)[0], n_boot, int(opts["seed"])
        )
        lo, hi = percentile_ci(reps)
        return lo, hi, f"percentile bootstrap over groups (Poisson weights, {n_boot} samples, seed {int(opts['seed'])})"
    se = np.sqrt(var)
    # Differences of percentages live in [-100, 100].
    return (
        np.clip(est - Z95 * se, -100.0, 100.0),
        np.clip(est + Z95 * se, -100.0, 100.0),
        "normal (Wald) from per-answer variance; answers treated as independent",
    )
