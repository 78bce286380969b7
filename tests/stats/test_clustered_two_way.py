"""Two-way (own x partner cluster) variance of `cluster_contrasts` (issue 27)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from vignette_bench.stats.clustered import _psd_clip, cluster_contrasts


def crossed_cells(seed: int, n_cells: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 6, n_cells).astype(float)
    return pd.DataFrame(
        {
            "target": rng.integers(0, 2, n_cells),
            "cluster": rng.integers(0, 7, n_cells),
            "partner_cluster": 100 + rng.integers(0, 5, n_cells),
            "component": rng.integers(0, 2, n_cells),
            "y": rng.binomial(n.astype(int), 0.4).astype(float),
            "n": n,
        }
    )


def test_partner_equal_to_own_cluster_is_the_one_way_test():
    cells = crossed_cells(1)
    same = cells.assign(partner_cluster=cells["cluster"])
    one = cluster_contrasts(cells.drop(columns="partner_cluster"), {0: 0.5, 1: 0.5}, 0.5)
    two = cluster_contrasts(same, {0: 0.5, 1: 0.5}, 0.5)
    pd.testing.assert_frame_equal(one, two)
    off = cluster_contrasts(cells, {0: 0.5, 1: 0.5}, 0.5, two_way=False)
    pd.testing.assert_frame_equal(one, off)


def test_cr1_two_way_variance_by_hand():
    """V = V_own + V_partner - V_intersection of the component rates, each term with G/(G-1), negative
    eigenvalues set to 0, then a'Va; df min(G_own, G_partner) - 1 (CR1, so no working model)."""
    cells = crossed_cells(2)
    coef = {0: 1.0, 1: -1.0}
    a = np.array([1.0, -1.0])
    out = cluster_contrasts(cells, coef, 0.0, method="cr1").set_index("target")
    for t, sub in cells.groupby("target"):
        Y = sub.groupby("component")[["y", "n"]].sum()
        R = Y["y"] / Y["n"]
        resid = (sub["y"] - sub["component"].map(R) * sub["n"]) / sub["component"].map(Y["n"])
        # influence on each component's rate: (cells, 2)
        u = np.zeros((len(sub), 2))
        u[np.arange(len(sub)), sub["component"].to_numpy()] = resid.to_numpy()

        def v(keys, u=u, sub=sub):
            s = pd.DataFrame(u, index=pd.MultiIndex.from_frame(sub[keys])).groupby(level=list(range(len(keys)))).sum()
            return len(s) / (len(s) - 1) * s.to_numpy().T @ s.to_numpy()

        V = v(["cluster"]) + v(["partner_cluster"]) - v(["cluster", "partner_cluster"])
        vals, vecs = np.linalg.eigh(V)
        clipped = vecs @ np.diag(np.clip(vals, 0, None)) @ vecs.T
        assert out.loc[t, "se"] ** 2 == pytest.approx(a @ clipped @ a, rel=1e-9)
        assert out.loc[t, "se"] ** 2 >= a @ V @ a - 1e-12  # clipping only adds variance
        g_own, g_p = sub["cluster"].nunique(), sub["partner_cluster"].nunique()
        assert out.loc[t, "df"] == pytest.approx(min(g_own, g_p) - 1)
        assert out.loc[t, "n_partner_clusters"] == g_p


def test_psd_clip_keeps_psd_matrices_and_removes_negative_eigenvalues():
    A = np.array([[[2.0, 1.0], [1.0, 2.0]], [[1.0, 0.0], [0.0, -1.0]]])
    out = _psd_clip(A)
    np.testing.assert_allclose(out[0], A[0])
    np.testing.assert_allclose(out[1], [[1.0, 0.0], [0.0, 0.0]])


def test_two_identities_get_the_same_se_when_each_rate_is_the_others_complement():
    """With two identities b's selections are a's non-selections: one variance, two-way."""
    rng = np.random.default_rng(3)
    rows = []
    for _ in range(40):
        ra, rb, y, n = rng.integers(0, 5), rng.integers(0, 5), rng.integers(0, 5), 4
        rows += [("a", f"a{ra}", f"b{rb}", 0, y, n), ("b", f"b{rb}", f"a{ra}", 0, n - y, n)]
    cells = pd.DataFrame(rows, columns=["target", "cluster", "partner_cluster", "component", "y", "n"])
    out = cluster_contrasts(cells, {0: 1.0}, 0.5).set_index("target")
    assert out.loc["a", "se"] == pytest.approx(out.loc["b", "se"], rel=1e-9)
    assert out.loc["a", "p_value"] == pytest.approx(out.loc["b", "p_value"], rel=1e-9)


def test_a_variance_rounded_below_zero_is_zero_variance_not_a_warning(monkeypatch):
    """The clipped two-way variance of a target whose clusters all agree can come out a hair below 0 in
    floating point: that is flagged zero_variance (se 0), with no 'invalid value in sqrt' and no NaN test."""
    from vignette_bench.stats import clustered

    cells = crossed_cells(3)
    monkeypatch.setattr(clustered, "_psd_clip", lambda V: np.zeros_like(V) - 1e-30 * np.eye(V.shape[-1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out = cluster_contrasts(cells, {0: 0.5, 1: 0.5}, 0.5, wild=False)
    assert (out["flag"] == "zero_variance").all()
    assert (out["se"] == 0.0).all() and (out["p_value"] == 1.0).all()
