"""When the stratified, partner-balanced tests apply (`stats.strata.fixed_order`).

The original VIGNETTE design keeps one order per pair across all its images; the protocol draws an order per
pair image. A small protocol run shows most pairs once, so "seen in one order only" must not be read as a fixed
design (it sent honest leaderboard models to "position-confounded" and out of the ranking)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from vignette_bench.stats.strata import fixed_order, one_order_test

IDS = [f"id{i}" for i in range(6)]


def _frame(
    images_per_pair: int, fixed: bool, seed: int = 0, strata: tuple[str, ...] = ("female", "male")
) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for stratum in strata:
        for a, b in itertools.combinations(IDS, 2):
            for k in range(images_per_pair):
                swap = False if fixed else bool(rng.integers(2))
                left, right = (b, a) if swap else (a, b)
                for _question in range(3):  # several questions per image: one presentation
                    rows.append({"left": left, "right": right, "image": f"{a}+{b}/act{k}", "stratum": stratum})
    return pd.DataFrame(rows)


def test_pairs_shown_once_say_nothing_about_the_design():
    multi, one_order, p = one_order_test(*(_frame(1, fixed=True)[c].to_numpy() for c in ("left", "right", "image")))
    assert (multi, one_order, p) == (0, 0, 1.0)
    assert not fixed_order(_frame(1, fixed=True))
    assert not fixed_order(_frame(1, fixed=False))


def test_a_fixed_order_across_images_is_found():
    assert fixed_order(_frame(3, fixed=True))
    # in one stratum only is enough: its identities are one-sided there
    mixed = pd.concat([_frame(3, fixed=True, strata=("female",)), _frame(3, fixed=False, strata=("male",))])
    assert fixed_order(mixed)


def test_random_orders_per_image_are_not_a_fixed_order():
    found = sum(fixed_order(_frame(k, fixed=False, seed=s)) for k in (2, 3, 4) for s in range(100))
    assert found <= 3, found  # alpha 1e-3 per stratum, two strata, 300 frames


def test_the_count_is_tested_against_its_chance_under_random_orders():
    f = _frame(2, fixed=False, seed=1, strata=("all",))
    multi, one_order, p = one_order_test(f["left"].to_numpy(), f["right"].to_numpy(), f["image"].to_numpy())
    assert multi == 15 and 0 < p <= 1.0
    # with two images a pair is seen in one order half the time by chance: a count near 7.5 is no evidence
    assert p > 0.01 or one_order > 11
