"""split_contrasts sums a target's "other keys" part per (cluster, side) instead of repeating every owner
cell for each of the owner's targets; the estimators only use those sums, so the results must equal the
plain expansion's (here: every owner cell, part 0 for the target's key, 1 otherwise)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vignette_bench.stats.clustered import estimate_icc, variance_setting
from vignette_bench.stats.verdicts import side_balanced_contrasts, split_contrasts


def _expanded(cells: pd.DataFrame, target_owner: np.ndarray, target_key: np.ndarray) -> pd.DataFrame:
    """The reference: for each target, all of its owner's cells, split by key. The working iccs are the owners'
    pooled rates' (two-way: clustered by own, partner and (own, partner) cluster)."""
    icc = estimate_icc(cells.assign(target=cells["owner"], component=0), {0: 1.0})
    partner_icc = None
    if "partner_cluster" in cells:
        partner_icc = tuple(
            estimate_icc(cells.assign(target=cells["owner"], cluster=by, component=0), {0: 1.0})
            for by in (cells["partner_cluster"], cells["cluster"] + "|" + cells["partner_cluster"])
        )
    frames = []
    for t, (o, k) in enumerate(zip(target_owner, target_key)):
        mine = cells[cells["owner"] == o]
        frames.append(mine.assign(target=t, part=np.where(mine["key"] == k, 0, 1)))
    frame = pd.concat(frames)[
        ["target", "cluster", *(["partner_cluster"] if "partner_cluster" in cells else []), "side", "part", "y", "n"]
    ]
    return side_balanced_contrasts(
        frame, {0: 1.0, 1: -1.0}, 0.0, 0.05, icc=icc, constant_parts=True, partner_icc=partner_icc
    )


# key_step: sparse key codes, too many (owner, key) codes for a lookup table: targets are found by sorted search
# no_sides: every side unknown, so every target pooled (answers imported without sides): summed over sides at once
@pytest.mark.parametrize("no_sides", [False, True])
@pytest.mark.parametrize("key_step", [1, 10_000_000])
@pytest.mark.parametrize("crossed", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_split_contrasts_equal_the_expanded_cells(seed: int, crossed: bool, key_step: int, no_sides: bool) -> None:
    rng = np.random.default_rng(seed)
    rows = []
    n_key, n_cluster = 6, 25
    for o in range(4):
        for c in rng.choice(n_cluster, size=rng.integers(5, n_cluster), replace=False):
            for s in rng.choice([0, 1, 2], size=rng.integers(1, 3), replace=False):  # left, right, unknown
                for k in rng.choice(n_key, size=rng.integers(1, n_key + 1), replace=False):
                    n = int(rng.integers(0, 5))
                    rows.append((o, k * key_step, f"img{c}", s, int(rng.integers(0, n + 1)) if n else 0, n))
    cells = pd.DataFrame(rows, columns=["owner", "key", "cluster", "side", "y", "n"])
    if no_sides:
        cells["side"] = 2
    if crossed:  # two-way: each cell's partner cluster (a cell is per (owner, key, cluster, partner, side))
        cells = cells.assign(partner_cluster=[f"p{v}" for v in rng.integers(0, 4, len(cells))])
    targets = cells[["owner", "key"]].drop_duplicates().sample(frac=1, random_state=seed)
    target_owner = np.r_[targets["owner"].to_numpy(), 0]
    target_key = np.r_[targets["key"].to_numpy(), (n_key + 1) * key_step]  # a target with no cells of its own
    with variance_setting("cr2"):
        want = _expanded(cells, target_owner, target_key).sort_index()
    # one chunk, and many: the working iccs are estimated once, so no result depends on the chunks
    for max_rows in (4_000_000, 9):
        with variance_setting("cr2"):  # the t test: the bootstrap's draws follow the clusters' (label) order
            got = split_contrasts(
                cells, cells["owner"].to_numpy(), cells["key"].to_numpy(), target_owner, target_key, max_rows=max_rows
            ).sort_index()
        assert list(got.index) == list(want.index) and list(got.columns) == list(want.columns)
        for col in want.columns:
            if want[col].dtype.kind == "f":
                np.testing.assert_allclose(got[col].to_numpy(), want[col].to_numpy(), rtol=1e-12, atol=1e-12)
            else:
                assert got[col].tolist() == want[col].tolist(), col


def _one_sided_cells(seed: int) -> pd.DataFrame:
    """A fixed-order design: owner 0 always left, owner 1 always right, owner 2 left with key 0 and right with
    every other key, owner 3 with no side known."""
    rng = np.random.default_rng(seed)
    rows = []
    for o in range(4):
        for c in range(12):
            for k in range(4):
                side = {0: 0, 1: 1, 2: 0 if k == 0 else 1, 3: 2}[o]
                n = int(rng.integers(1, 6))
                rows.append((o, k, f"img{c}", side, int(rng.integers(0, n + 1)), n))
    return pd.DataFrame(rows, columns=["owner", "key", "cluster", "side", "y", "n"])


@pytest.mark.parametrize("seed", [0, 1])
def test_one_sided_targets_are_side_matched_pooled_or_untested(seed: int) -> None:
    cells = _one_sided_cells(seed)
    targets = cells[["owner", "key"]].drop_duplicates()
    t_owner, t_key = targets["owner"].to_numpy(), targets["key"].to_numpy()
    with variance_setting("cr2"):
        want = _expanded(cells, t_owner, t_key).sort_index()
        got = split_contrasts(cells, cells["owner"].to_numpy(), cells["key"].to_numpy(), t_owner, t_key).sort_index()
    for col in want.columns:
        if want[col].dtype.kind == "f":
            np.testing.assert_allclose(got[col].to_numpy(), want[col].to_numpy(), rtol=1e-12, atol=1e-12)
        else:
            assert got[col].tolist() == want[col].tolist(), col
    sides = dict(zip(zip(t_owner.tolist(), t_key.tolist()), got["sides"].tolist()))
    assert {sides[(0, k)] for k in range(4)} == {"left only (side-matched)"}
    assert {sides[(1, k)] for k in range(4)} == {"right only (side-matched)"}
    assert sides[(2, 0)] == "no side shared (position-confounded)"  # key 0 left, the others right
    assert {sides[(3, k)] for k in range(4)} == {"pooled (sides unknown)"}
    confounded = got[got["sides"] == "no side shared (position-confounded)"]
    assert (confounded["flag"] == "position_confounded").all() and (confounded["p_value"] == 1.0).all()
    # the side-matched contrast is the difference of the two parts' rates on that side
    mine = cells[cells["owner"] == 0]
    own = mine[mine["key"] == 1]
    other = mine[mine["key"] != 1]
    target = int(np.flatnonzero((t_owner == 0) & (t_key == 1))[0])
    rate = own["y"].sum() / own["n"].sum() - other["y"].sum() / other["n"].sum()
    assert got.loc[target, "estimate"] == pytest.approx(rate, abs=1e-12)


def test_partner_clusters_equal_to_own_give_the_one_way_test() -> None:
    """A partner_cluster column that never differs from the own cluster (single-person questions, no render
    keys) is the one-way test, as `cluster_contrasts` treats such cells."""
    cells = _one_sided_cells(0)
    args = (cells["owner"].to_numpy(), cells["key"].to_numpy(), np.array([0, 1, 2, 3]), np.array([0, 1, 2, 3]))
    with variance_setting("cr2"):
        one_way = split_contrasts(cells, *args)
        same = split_contrasts(cells.assign(partner_cluster=cells["cluster"]), *args)
    pd.testing.assert_frame_equal(same, one_way)
