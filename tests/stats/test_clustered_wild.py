"""The wild cluster bootstrap check of `cluster_contrasts` for targets with few clusters (issue 27)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vignette_bench.stats import clustered
from vignette_bench.stats.clustered import cluster_contrasts

COEF = {"L": 0.5, "R": 0.5}


@pytest.fixture(autouse=True, params=["quadratic", "rows"])
def wild_form(request, monkeypatch):
    """Every test runs with both ways of computing t*: the precomputed quadratic form in the weights, and a pass
    over the finest cells per draw (`_WildDesign`)."""
    monkeypatch.setattr(clustered, "_WILD_FORM", request.param)
    return request.param


def few_cluster_cells(seed: int, targets: int = 6, clusters: int = 6, partners: int = 0) -> pd.DataFrame:
    """One cell per (target, cluster, component[, partner]); a cluster random effect (sd 1.2 logit) and
    a side preference, no target effect. Clusters are named so that their first appearance is sorted."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(targets):
        for c in range(clusters):
            effect = rng.normal(0.0, 1.2)
            for side, shift in (("L", -0.7), ("R", 0.7)):
                for p in range(max(partners, 1)):
                    n = int(rng.integers(2, 9))
                    y = rng.binomial(n, 1.0 / (1.0 + np.exp(-(effect + shift))))
                    rows.append((t, f"t{t}c{c:02d}", f"p{(c + p) % 4}", side, float(y), float(n)))
    cells = pd.DataFrame(rows, columns=["target", "cluster", "partner_cluster", "component", "y", "n"])
    return cells if partners else cells.drop(columns="partner_cluster")


def captured_designs(monkeypatch, cells: pd.DataFrame, **kwargs) -> list:
    """(design, statistic) of every bootstrap `cluster_contrasts` runs, with the screen opened to every target."""
    seen = []
    real = clustered._wild_bootstrap_p

    def spy(design, stat, rng):
        seen.append((design, stat))
        return real(design, stat, rng)

    monkeypatch.setattr(clustered, "_wild_bootstrap_p", spy)
    monkeypatch.setattr(clustered, "SCREEN", 1.01)
    cluster_contrasts(cells, COEF, 0.5, wild=True, **kwargs)
    return seen


def restricted_sample(cells: pd.DataFrame, v_by_cluster: dict, null: float = 0.5) -> pd.DataFrame:
    """y* = R~ n + v e~ computed here from the cells (the null imposed on the side rates, then one weight per
    own cluster), independently of the module's arrays."""
    tot = cells.groupby("component")[["y", "n"]].sum()
    R = tot["y"] / tot["n"]
    a = pd.Series(COEF)
    Rr = R - (a / tot["n"]) * ((a * R).sum() - null) / (a * a / tot["n"]).sum()
    fit = cells["component"].map(Rr) * cells["n"]
    return cells.assign(y=fit + cells["cluster"].map(v_by_cluster) * (cells["y"] - fit))


@pytest.mark.parametrize("two_way", [False, True])
def test_bootstrap_samples_are_studentised_like_the_data(monkeypatch, two_way):
    """A bootstrap draw's t* is the statistic `cluster_contrasts` itself gives the restricted sample y*
    (one-way CR2 with a fixed working icc; two-way with CR1, whose scales need no icc), and the weights
    v = 1 give back the data's own statistic."""
    cells = few_cluster_cells(3, targets=3, partners=2 if two_way else 0)
    kw = {"method": "cr1"} if two_way else {"icc": 0.3}
    seen = captured_designs(monkeypatch, cells, **kw)
    assert len(seen) == 3
    rng = np.random.default_rng(0)
    for t, (design, stat) in enumerate(seen):
        assert design.statistics(np.ones((1, design.G_own)))[0] == pytest.approx(stat, rel=1e-9)
        sub = cells[cells["target"] == t]
        names = list(dict.fromkeys(sub["cluster"]))
        assert design.G_own == len(names)
        v = clustered.WEBB[rng.integers(0, 6, (4, design.G_own))]
        for draw in v:
            # the j-th cluster (sorted names) gets the weight column of its content rank
            star = restricted_sample(sub, dict(zip(names, draw[design.column_of])))
            direct = cluster_contrasts(star, COEF, 0.5, wild=False, **kw)["statistic"].iloc[0]
            assert design.statistics(draw[None, :])[0] == pytest.approx(direct, rel=1e-8)


def test_bootstrap_only_raises_p_and_only_where_a_verdict_could_hinge_on_it():
    cells = few_cluster_cells(5, targets=40)
    t_only = cluster_contrasts(cells, COEF, 0.5, wild=False)
    checked = cluster_contrasts(cells, COEF, 0.5, wild=True)
    assert (checked["p_value"] >= t_only["p_value"]).all()
    moved = checked["p_value"] > t_only["p_value"]
    assert moved.any()  # some small p-values are checked and raised
    assert (t_only.loc[moved, "p_value"] < clustered.SCREEN).all()
    # everything but the p-value is the t test's
    pd.testing.assert_frame_equal(checked.drop(columns="p_value"), t_only.drop(columns="p_value"))
    # with many clusters in every component the t reference is used alone
    many = few_cluster_cells(5, targets=10, clusters=clustered.FEW_CLUSTERS)
    pd.testing.assert_frame_equal(
        cluster_contrasts(many, COEF, 0.5, wild=True), cluster_contrasts(many, COEF, 0.5, wild=False)
    )


def test_bootstrap_p_value_is_a_share_of_draws(monkeypatch):
    """Without the sequential stop the p-value is (1 + exceedances) / (draws + 1), exceedances counted here."""
    cells = few_cluster_cells(7, targets=1)
    seen = captured_designs(monkeypatch, cells, icc=0.2)
    design, stat = seen[0]
    monkeypatch.setattr(clustered, "WILD_STOP", 10**9)
    monkeypatch.setattr(clustered, "WILD_DRAWS", 999)
    p = clustered._wild_bootstrap_p(design, stat, np.random.default_rng(11))
    rng = np.random.default_rng(11)
    tstar = np.concatenate(
        [design.statistics(clustered.WEBB[rng.integers(0, 6, (b, design.G_own))]) for b in (500, 499)]
    )
    assert p == pytest.approx((1 + np.sum(np.abs(tstar) >= abs(stat) * (1 - 1e-12))) / 1000)


def _bootstrapped(monkeypatch, cells: pd.DataFrame, **kwargs) -> pd.DataFrame:
    """`cluster_contrasts` with the screen opened, so that every target's p-value is the bootstrap's or the t test's
    maximum (the check runs for all of them)."""
    monkeypatch.setattr(clustered, "SCREEN", 1.01)
    return cluster_contrasts(cells, COEF, 0.5, wild=True, icc=0.2, **kwargs)


@pytest.mark.parametrize("partners", [0, 3])
def test_p_values_do_not_depend_on_the_order_of_rows_or_on_cluster_names(monkeypatch, partners):
    """Shuffling the cells' rows leaves every output bit-identical; renaming the clusters (as another coding of
    them would, e.g. codes by first appearance) leaves the bootstrap's p-values bit-identical, since the weights
    go to clusters by their content rank, and the t test's equal to rounding."""
    cells = few_cluster_cells(5, targets=10, clusters=7, partners=partners)
    base = _bootstrapped(monkeypatch, cells)
    t_alone = cluster_contrasts(cells, COEF, 0.5, wild=False, icc=0.2)["p_value"].to_numpy()
    booted = base["p_value"].to_numpy() > t_alone  # the bootstrap's p decided these
    assert booted.sum() >= 2
    rng = np.random.default_rng(0)
    for _ in range(3):
        shuffled = cells.sample(frac=1.0, random_state=int(rng.integers(1 << 31))).reset_index(drop=True)
        pd.testing.assert_frame_equal(_bootstrapped(monkeypatch, shuffled), base, check_exact=True)
        names = cells["cluster"].unique()
        renamed = dict(zip(names, [f"z{i:03d}" for i in rng.permutation(len(names))]))
        moved = _bootstrapped(monkeypatch, shuffled.assign(cluster=shuffled["cluster"].map(renamed)))
        np.testing.assert_allclose(moved["statistic"], base["statistic"], rtol=1e-12)
        np.testing.assert_allclose(moved["p_value"], base["p_value"], rtol=1e-12)
        np.testing.assert_array_equal(moved["p_value"].to_numpy()[booted], base["p_value"].to_numpy()[booted])


def test_the_old_label_order_did_move_the_bootstrap(monkeypatch):
    """The check above can fail: weights given by label order (as before) move the p-value when clusters are
    renamed, so the content ranks are what keeps it fixed."""
    cells = few_cluster_cells(5, targets=4, clusters=7)
    names = cells["cluster"].unique()
    renamed = dict(zip(names, [f"z{i:03d}" for i in np.random.default_rng(3).permutation(len(names))]))
    monkeypatch.setattr(clustered, "_content_ranks", lambda n, *rest: np.arange(len(n)))
    by_label = _bootstrapped(monkeypatch, cells)["p_value"].to_numpy()
    by_new_label = _bootstrapped(monkeypatch, cells.assign(cluster=cells["cluster"].map(renamed)))["p_value"].to_numpy()
    assert not np.array_equal(by_label, by_new_label)


def test_content_ranks_break_ties_of_totals_by_the_finest_rows():
    """Two own clusters with equal totals are ranked by their (own, partner) cells, whichever is listed first."""
    n = np.array([[4.0, 2.0], [4.0, 2.0], [1.0, 1.0]])
    y = np.array([[2.0, 1.0], [2.0, 1.0], [0.0, 1.0]])
    # cluster 0 splits as 3 + 1 offers over partners, cluster 1 as 2 + 2 (same totals)
    fine_n = np.array([[3.0, 1.0], [1.0, 1.0], [2.0, 1.0], [2.0, 1.0], [1.0, 1.0]])
    fine_y = np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    rows = np.array([0, 0, 1, 1, 2])
    ranks = clustered._content_ranks(n, y, rows, fine_n, fine_y)
    swapped = clustered._content_ranks(n[[1, 0, 2]], y[[1, 0, 2]], np.array([1, 1, 0, 0, 2]), fine_n, fine_y)
    assert sorted(ranks.tolist()) == [0, 1, 2] and ranks[2] == 0  # the smallest totals first
    assert ranks[0] == swapped[1] and ranks[1] == swapped[0]  # the tie follows the cells, not the listing
    assert ranks[0] != ranks[1]
