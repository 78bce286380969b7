"""`label_permutation_check`: one-vs-rest rate contrasts checked by relabelling clusters within strata (issue 27)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vignette_bench.stats import clustered
from vignette_bench.stats.clustered import cluster_contrasts, label_permutation_check


def owned_clusters(seed: int, targets: int = 12, per_target: int = 8, all_or_none: bool = False) -> pd.DataFrame:
    """One row per cluster (target, stratum, y, n): each target has one cluster per stratum (an activity); a
    cluster's accuracy is exp(u) / (exp(u) + 3), u ~ N(0, 1) (a render effect in a four-option softmax), or, with
    all_or_none, 1 when u > 0 else 0 (score mode: the most probable option is the answer). No target effect."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(targets):
        for s in range(per_target):
            u = rng.normal()
            n = int(rng.integers(2, 10))
            y = float(n * (u > 0)) if all_or_none else float(rng.binomial(n, np.exp(u) / (np.exp(u) + 3.0)))
            rows.append((f"id{t:02d}", f"act{s}", f"r{t}_{s}", y, float(n)))
    return pd.DataFrame(rows, columns=["target", "stratum", "cluster", "y", "n"])


def one_vs_rest(clusters: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The factuality-style contrast (own accuracy minus the others') by `cluster_contrasts`, and its checked p."""
    cells = pd.concat(
        [
            clusters.assign(target=t, component=np.where(clusters["target"] == t, "self", "other"))
            for t in clusters["target"].unique()
        ],
        ignore_index=True,
    )
    tests = cluster_contrasts(cells, {"self": 1.0, "other": -1.0}, 0.0)
    return tests, label_permutation_check(clusters, tests)


def test_all_or_none_clusters_hold_the_level_only_with_the_check():
    """Clusters that are all right or all wrong (score mode): an identity whose 8 renders all agree has no
    own-component variance, so the t test (and the symmetric wild bootstrap) reject far too often; the
    relabelling p-value is exact under exchangeable clusters. Checked in the tail Simes and BH use (p < 0.001)."""
    raw = checked = total = 0
    for seed in range(150):
        tests, p = one_vs_rest(owned_clusters(seed, all_or_none=True))
        ok = tests["flag"].to_numpy() == ""
        total += len(tests)
        raw += int((tests["p_value"].to_numpy()[ok] < 0.001).sum())
        checked += int((p[ok] < 0.001).sum())
    se = np.sqrt(0.001 * 0.999 / total)
    assert raw / total > 0.001 + 3 * se  # the failure the check is for
    assert checked / total <= 0.001 + 3 * se


def test_the_check_only_raises_p_and_only_where_it_could_matter(monkeypatch):
    clusters = owned_clusters(3)
    tests, p = one_vs_rest(clusters)
    before = tests["p_value"].to_numpy()
    assert (p >= before).all()
    screened = (before < clustered.SCREEN) & (tests["flag"].to_numpy() == "")
    assert (p[~screened] == before[~screened]).all()
    monkeypatch.setattr(clustered, "FEW_CLUSTERS", 8)  # 8 clusters per target: no longer "few"
    np.testing.assert_array_equal(label_permutation_check(clusters, tests), before)


def test_a_real_difference_keeps_a_small_p():
    clusters = owned_clusters(4)
    strong = clusters["target"] == "id00"
    clusters.loc[strong, "y"] = clusters.loc[strong, "n"]  # always right: accuracy 1 against ~0.3
    tests, p = one_vs_rest(clusters)
    row = tests.index[tests["target"] == "id00"][0]
    assert p[row] < 0.001


def test_p_does_not_depend_on_row_order_or_cluster_names():
    clusters = owned_clusters(5)
    tests, p = one_vs_rest(clusters)
    shuffled = clusters.sample(frac=1.0, random_state=1).reset_index(drop=True)
    shuffled["cluster"] = [f"x{i}" for i in np.random.default_rng(2).permutation(len(shuffled))]
    np.testing.assert_array_equal(label_permutation_check(shuffled, tests), p)


def test_relabelling_stays_within_strata():
    """The target keeps as many clusters per stratum as it has: a stratum where every cluster is right and one
    where every cluster is wrong cannot trade places, so an identity that is right exactly where everyone is right
    is no different from the rest (p = 1 from the relabelling)."""
    rows = [(f"id{t}", s, f"r{t}{s}", float(4 * (s == "easy")), 4.0) for t in range(6) for s in ("easy", "hard")]
    rows += [(f"id{t}", "mid", f"m{t}", float(t % 2 * 4), 4.0) for t in range(6)]
    clusters = pd.DataFrame(rows, columns=["target", "stratum", "cluster", "y", "n"])
    tests = pd.DataFrame({"target": ["id0"], "p_value": [0.001], "flag": [""]})
    # id0 is wrong in "mid" like id2 and id4: its contrast is one of the two values every relabelling gives
    assert label_permutation_check(clusters, tests)[0] > 0.2
