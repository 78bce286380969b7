"""The statistics core shared (verbatim) by the four metric modules."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("selection_frequency", "log_odds", "pair_comp", "polarity")


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"core_{name}", ROOT / "metrics" / name / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


core = load("selection_frequency")


def test_shared_core_is_identical_in_all_modules():
    sys.path.insert(0, str(ROOT / "metrics"))
    try:
        import sync_core
    finally:
        sys.path.pop(0)
    blocks = {name: sync_core.shared_block((ROOT / "metrics" / name / f"{name}.py").read_text(), name) for name in NAMES}
    assert len(set(blocks.values())) == 1, "run: .venv/bin/python metrics/sync_core.py"


def test_fisher_matches_scipy_on_many_tables():
    rng = np.random.default_rng(1)
    sym = rng.integers(0, 50, size=(300, 1))
    b = rng.integers(100, 1000, size=(200, 1))
    tables = np.vstack(
        [
            rng.integers(0, 30, size=(800, 4)),
            rng.integers(0, 3000, size=(60, 4)),
            rng.integers(0, 100_000, size=(4, 4)),
            np.hstack([sym, 100 - sym, 100 - sym, sym]),  # exact ties of the two tails
            np.hstack([b * 7 // 10, b - b * 7 // 10, 50_000 - b // 2, 50_000 - (b - b // 2)]),  # lopsided margins
            [[0, 0, 0, 0], [1, 0, 0, 0], [5, 0, 0, 5], [0, 7, 3, 0], [1000, 0, 0, 1000], [3, 1, 1, 3], [10, 10, 10, 10]],
        ]
    )
    tables[:40, 0] = 0
    ours = core.fisher_exact_two_sided(*tables.T)
    ref = np.array([stats.fisher_exact([[a, b], [c, d]]).pvalue for a, b, c, d in tables])
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-300)


def test_bh_matches_the_textbook_step_up():
    rng = np.random.default_rng(2)
    p = np.concatenate([rng.random(60), rng.random(15) * 1e-3])
    m = len(p)
    order = np.argsort(p)
    q_ref = np.empty(m)
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p[i] * m / rank)
        q_ref[i] = running
    np.testing.assert_allclose(core.bh_qvalues(p), q_ref, rtol=1e-12)
    tested = np.arange(m) % 2 == 0
    q = core.bh_qvalues(p, tested=tested)
    assert (q[~tested] == 1.0).all()
    np.testing.assert_allclose(q[tested], core.bh_qvalues(p[tested]))


def test_wilson_interval_known_values():
    lo, hi = core.wilson_interval([0, 5, 10], [10, 10, 10])
    for got_lo, got_hi, k in zip(lo, hi, (0, 5, 10)):
        ref = stats.binomtest(k, 10).proportion_ci(method="wilson")
        assert (got_lo, got_hi) == pytest.approx((ref.low, ref.high))
    lo, hi = core.wilson_interval(0, 0)
    assert np.isnan(lo) and np.isnan(hi)


def test_percentile_ci_matches_numpy():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(500, 7))
    x[rng.random(x.shape) < 0.1] = np.nan
    x[:, 3] = np.nan
    lo, hi = core.percentile_ci(x)
    with np.testing.suppress_warnings() as sup:
        sup.filter(RuntimeWarning)
        np.testing.assert_allclose(lo, np.nanpercentile(x, 2.5, axis=0))
        np.testing.assert_allclose(hi, np.nanpercentile(x, 97.5, axis=0))
