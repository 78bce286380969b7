"""The cluster-robust engine: hand computations, flags, and calibration under clustered nulls.

`simulate_cells` is a small offer-level generator of a two-way forced choice: each target
(identity) has clusters (pair images or renders) with a random effect on the logit scale, the
model prefers one side, targets sit on the left in unbalanced shares, and answers are 0/1
selections or the model's probabilities (score mode). benchmarks/clustered_calibration.py uses
it too.
"""

from __future__ import annotations

import math
import time
import zlib

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import expit, logit

from vignette_bench.stats.clustered import cluster_contrasts, estimate_icc, refusal_bounds, refusal_homogeneity
from vignette_bench.stats.multiplicity import global_then_bh, noise_corrected_magnitude, simes
from vignette_bench.stats.planning import DEFAULT_ICC, cluster_se, clusters_needed, detectable_effect

BALANCED = {"L": 0.5, "R": 0.5}
ANSWER_SD = 1.0  # score mode: answer-level logit noise on top of the cluster effect
SIZES = {"small": (4, 8), "medium": (10, 30), "large": (40, 60)}


def simulate_cells(
    rng: np.random.Generator,
    *,
    n_targets: int,
    clusters: tuple[int, int] = (10, 30),
    answers: tuple[int, int] = (1, 40),
    cluster_sd: float = 1.1,
    p_left: float = 0.5,
    left_share: tuple[float, float] = (0.25, 0.75),
    score: bool = False,
    side_per_cluster: bool = False,
    effect: float | np.ndarray = 0.0,
    with_partner: float = 0.0,
) -> pd.DataFrame:
    """Cells (target, cluster, component "L"/"R", y, n) of simulated answers.

    Answer about target t in cluster c, target on side s: logit P(choose target) =
    +-logit(p_left) + effect_t + u_c with u_c ~ N(0, cluster_sd). side_per_cluster: the
    target's side is fixed per cluster (pair images) instead of drawn per answer (renders that
    recur on both sides). score: y is expit(eta + N(0, ANSWER_SD)) instead of a 0/1 draw.
    with_partner > 0: each answer is "with" one partner with that probability, else "other",
    and the components become ("with" | "other", "L" | "R") for PairComp-type differences.
    """
    G = rng.integers(clusters[0], clusters[1] + 1, size=n_targets)
    t_of_c = np.repeat(np.arange(n_targets), G)
    C = len(t_of_c)
    m = rng.integers(answers[0], answers[1] + 1, size=C)
    c_of_a = np.repeat(np.arange(C), m)
    share = rng.uniform(left_share[0], left_share[1], size=n_targets)
    if side_per_cluster:
        left = (rng.random(C) < share[t_of_c])[c_of_a]
    else:
        left = rng.random(len(c_of_a)) < share[t_of_c][c_of_a]
    u = rng.normal(0.0, cluster_sd, size=C)
    d = np.broadcast_to(np.asarray(effect, dtype=float), (n_targets,))
    eta = np.where(left, 1.0, -1.0) * logit(p_left) + u[c_of_a] + d[t_of_c][c_of_a]
    if score:
        y = expit(eta + rng.normal(0.0, ANSWER_SD, size=len(eta)))
    else:
        y = (rng.random(len(eta)) < expit(eta)).astype(float)
    other = rng.random(len(eta)) >= with_partner if with_partner > 0 else np.zeros(len(eta), dtype=bool)
    key = 4 * c_of_a + 2 * other + (~left)
    ysum = np.bincount(key, weights=y, minlength=4 * C)
    nsum = np.bincount(key, minlength=4 * C).astype(float)
    idx = np.nonzero(nsum)[0]
    side = np.where(idx % 2 == 0, "L", "R")
    component = side if with_partner <= 0 else list(zip(np.where(idx % 4 >= 2, "other", "with"), side))
    return pd.DataFrame(
        {"target": t_of_c[idx // 4], "cluster": idx // 4, "component": component, "y": ysum[idx], "n": nsum[idx]}
    )


def balanced_estimand(effect: float, p_left: float, cluster_sd: float, score: bool) -> float:
    """True side-balanced selection frequency of a target with logit effect `effect` (Gauss-Hermite)."""
    x, w = np.polynomial.hermite_e.hermegauss(60)
    tau = math.hypot(cluster_sd, ANSWER_SD if score else 0.0)
    s = logit(p_left)
    return float(
        0.5 * (w * expit(s + effect + tau * x)).sum() / w.sum()
        + 0.5 * (w * expit(-s + effect + tau * x)).sum() / w.sum()
    )


def effect_for(target: float, p_left: float, cluster_sd: float, score: bool) -> float:
    """Logit effect whose balanced estimand equals `target`."""
    from scipy.optimize import brentq

    return brentq(lambda d: balanced_estimand(d, p_left, cluster_sd, score) - target, -10, 10)


def naive_binomial_p(cells: pd.DataFrame) -> np.ndarray:
    """The test that treats answers as independent: pooled share vs 0.5, normal approximation."""
    g = cells.groupby("target")[["y", "n"]].sum()
    z = (g["y"] - 0.5 * g["n"]) / np.sqrt(0.25 * g["n"])
    return 2.0 * stats.norm.sf(np.abs(z.to_numpy()))


def mc_limit(n: int, level: float = 0.05) -> float:
    return level + 3.0 * math.sqrt(level * (1.0 - level) / n)


# ---- hand computations ------------------------------------------------------------------------

TINY = pd.DataFrame(
    {
        "target": ["t"] * 6,
        "cluster": ["A", "A", "B", "B", "C", "C"],
        "component": ["L", "R", "L", "R", "L", "R"],
        "y": [3.0, 1.0, 1.0, 2.0, 2.0, 0.0],
        "n": [4.0, 2.0, 2.0, 4.0, 2.0, 2.0],
    }
)


def test_estimate_and_se_by_hand():
    # R_L = 6/8, R_R = 3/8; residuals e_L = (0, -.5, .5), e_R = (.25, .5, -.75); w = .5/8 = 1/16
    cr1 = cluster_contrasts(TINY, BALANCED, 0.5, method="cr1").iloc[0]
    assert cr1["estimate"] == pytest.approx(0.5 * 0.75 + 0.5 * 0.375)
    psi = np.array([0.0 + 0.25, -0.5 + 0.5, 0.5 - 0.75]) / 16.0
    assert cr1["se"] == pytest.approx(math.sqrt(1.5 * np.sum(psi**2)))
    assert cr1["df"] == 2 and cr1["n_clusters"] == 3 and cr1["n_offers"] == 16
    t = (0.5625 - 0.5) / cr1["se"]
    assert cr1["p_value"] == pytest.approx(2 * stats.t.sf(t, 2))
    assert cr1["ci_low"] == pytest.approx(0.5625 - stats.t.isf(0.025, 2) * cr1["se"])
    # CR2 with independent offers: cluster c scaled by sum_g n_gc / sum_g n_gc (1 - n_gc / N_g)
    f = np.array([6 / (4 * 0.5 + 2 * 0.75), 6 / (2 * 0.75 + 4 * 0.5), 4 / (2 * 0.75 + 2 * 0.75)])
    cr2 = cluster_contrasts(TINY, BALANCED, 0.5, icc=0.0).iloc[0]
    assert cr2["se"] == pytest.approx(math.sqrt(np.sum(f * psi**2)))
    assert cr2["flag"] == ""


def test_tuple_components_and_difference_contrast():
    cells = TINY.assign(component=[("with", c) for c in TINY["component"]])
    other = TINY.assign(component=[("other", c) for c in TINY["component"]], y=TINY["n"] * 0.5)
    coef = {("with", "L"): 0.5, ("with", "R"): 0.5, ("other", "L"): -0.5, ("other", "R"): -0.5}
    out = cluster_contrasts(pd.concat([cells, other]), coef, 0.0).iloc[0]
    assert out["estimate"] == pytest.approx(0.5625 - 0.5)


@pytest.mark.parametrize("rho", [0.0, 0.35, 1.0])
def test_cr2_and_df_match_offer_level_brute_force(rho):
    """se, Bell-McCaffrey df and unbiasedness against explicit offer-level matrices."""
    rng = np.random.default_rng(3)
    rows = [
        (c, g, rng.random()) for c in range(7) for _ in range(rng.integers(1, 9)) for g in [rng.choice(["L", "R", "X"])]
    ]
    off = pd.DataFrame(rows, columns=["cluster", "component", "y"])
    coef = {"L": 0.7, "R": 0.5, "X": -0.4}
    cells = off.groupby(["cluster", "component"]).agg(y=("y", "sum"), n=("y", "size")).reset_index().assign(target="t")
    X = np.stack([(off["component"] == g).to_numpy() for g in coef], axis=1).astype(float)
    y, cl, ell = off["y"].to_numpy(), off["cluster"].to_numpy(), np.array(list(coef.values()))
    XtXi = np.linalg.inv(X.T @ X)
    M = np.eye(len(y)) - X @ XtXi @ X.T
    e = M @ y
    Om = (1 - rho) * np.eye(len(y)) + rho * (cl[:, None] == cl[None, :])
    V, cols = 0.0, []
    for c in np.unique(cl):
        q = np.zeros(len(y))
        q[cl == c] = ell @ XtXi @ X[cl == c].T
        f = (q @ Om @ q) / (q @ M @ Om @ M.T @ q)
        V += f * (q @ e) ** 2
        cols.append(np.sqrt(f) * M.T @ q)
    Gm = np.stack(cols, axis=1)
    MM = Gm.T @ Om @ Gm
    out = cluster_contrasts(cells, coef, 0.0, icc=rho).iloc[0]
    assert out["se"] == pytest.approx(math.sqrt(V), rel=1e-10)
    assert out["df"] == pytest.approx(np.trace(MM) ** 2 / np.trace(MM @ MM), rel=1e-10)
    # E[se^2] under the working model equals the true variance of the estimate
    assert np.trace(MM) == pytest.approx(ell @ XtXi @ X.T @ Om @ X @ XtXi @ ell, rel=1e-10)


def test_icc_estimate_recovers_a_known_correlation():
    rng = np.random.default_rng(4)
    C = 4000
    m = rng.integers(1, 30, size=C)
    c_of = np.repeat(np.arange(C), m)
    y = rng.normal(0, 1, C)[c_of] + rng.normal(0, 1, len(c_of))  # ICC 0.5
    comp = np.where(rng.random(len(c_of)) < 0.5, "L", "R")
    off = pd.DataFrame({"cluster": c_of, "component": comp, "y": y, "target": c_of % 20})
    cells = off.groupby(["target", "cluster", "component"]).agg(y=("y", "sum"), n=("y", "size")).reset_index()
    assert estimate_icc(cells, BALANCED) == pytest.approx(0.5, abs=0.05)


# ---- flags ------------------------------------------------------------------------------------


def test_flags():
    cells = pd.concat(
        [
            TINY,
            TINY[TINY["component"] == "L"].assign(target="no_right_side"),
            TINY[TINY["cluster"] == "A"].assign(target="one_cluster"),
            TINY.assign(
                target="left_in_one_cluster", n=[4.0, 2.0, 0.0, 4.0, 0.0, 2.0], y=[3.0, 1.0, 0.0, 2.0, 0.0, 0.0]
            ),
            TINY.assign(target="unanimous", y=TINY["n"]),
        ]
    )
    out = cluster_contrasts(cells, BALANCED, 0.5).set_index("target")
    assert out.loc["t", "flag"] == ""
    assert out.loc["no_right_side", "flag"] == "missing_component" and np.isnan(out.loc["no_right_side", "estimate"])
    assert out.loc["one_cluster", "flag"] == "too_few_clusters" and out.loc["one_cluster", "n_clusters"] == 1
    assert out.loc["left_in_one_cluster", "flag"] == "too_few_clusters"
    assert out.loc["unanimous", "flag"] == "zero_variance" and out.loc["unanimous", "se"] == 0.0
    assert out.loc["unanimous", "estimate"] == 1.0
    flagged = out[out["flag"] != ""]
    assert (flagged["p_value"] == 1.0).all()
    assert flagged[["statistic", "ci_low", "ci_high", "df"]].isna().all().all()
    assert flagged.loc[flagged["flag"] != "zero_variance", "se"].isna().all()


def test_bad_arguments():
    with pytest.raises(ValueError):
        cluster_contrasts(TINY, BALANCED, 0.5, alpha=1.5)
    with pytest.raises(ValueError):
        cluster_contrasts(TINY, BALANCED, 0.5, icc=1.2)
    with pytest.raises(ValueError):
        cluster_contrasts(TINY.drop(columns="n"), BALANCED, 0.5)
    with pytest.raises(ValueError):
        cluster_contrasts(TINY, {"L": 0.0}, 0.5)


# ---- calibration (slow) -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("cluster_sd", [0.0, 1.1, 1.5])
@pytest.mark.parametrize("p_left", [0.3, 0.5, 0.7])
def test_null_calibration(size, cluster_sd, p_left):
    """Raw p < 0.05 at most 0.05 + 3 MC se; each cell mixes side-per-answer/cluster and 0/1/score."""
    rng = np.random.default_rng(zlib.crc32(repr((size, cluster_sd, p_left)).encode()))
    n_targets = {"small": 1000, "medium": 800, "large": 500}[size]
    p, naive = [], []
    for side_per_cluster in (False, True):
        for score in (False, True):
            cells = simulate_cells(
                rng,
                n_targets=n_targets,
                clusters=SIZES[size],
                cluster_sd=cluster_sd,
                p_left=p_left,
                score=score,
                side_per_cluster=side_per_cluster,
            )
            out = cluster_contrasts(cells, BALANCED, 0.5)
            p.append(out.loc[out["flag"] == "", "p_value"].to_numpy())
            naive.append(naive_binomial_p(cells))
    p = np.concatenate(p)
    assert len(p) > 0.8 * 4 * n_targets  # flags are rare at these sizes
    assert np.mean(p < 0.05) <= mc_limit(len(p)), np.mean(p < 0.05)
    if cluster_sd > 0:  # the clustering this test exists for: the naive test is far off
        assert np.mean(np.concatenate(naive) < 0.05) > 0.15


@pytest.mark.slow
@pytest.mark.parametrize("size", ["small", "medium"])
def test_paircomp_difference_null_calibration(size):
    """A difference of two side-balanced rates within the same clusters (PairComp), null 0."""
    rng = np.random.default_rng(31 if size == "small" else 32)
    coef = {("with", "L"): 0.5, ("with", "R"): 0.5, ("other", "L"): -0.5, ("other", "R"): -0.5}
    p = []
    for score in (False, True):
        cells = simulate_cells(
            rng, n_targets=1000, clusters=SIZES[size], cluster_sd=1.5, p_left=0.3, score=score, with_partner=0.3
        )
        out = cluster_contrasts(cells, coef, 0.0)
        p.append(out.loc[out["flag"] == "", "p_value"].to_numpy())
    p = np.concatenate(p)
    assert len(p) > 1000
    assert np.mean(p < 0.05) <= mc_limit(len(p)), np.mean(p < 0.05)


@pytest.mark.slow
def test_cr1_is_anticonservative_with_few_clusters():
    rng = np.random.default_rng(9)
    cells = simulate_cells(rng, n_targets=1500, clusters=(4, 6), cluster_sd=1.1, side_per_cluster=True)
    cr1 = cluster_contrasts(cells, BALANCED, 0.5, method="cr1", wild=False)  # the t test alone
    cr2 = cluster_contrasts(cells, BALANCED, 0.5)
    n = int((cr2["flag"] == "").sum())
    assert np.mean(cr1.loc[cr1["flag"] == "", "p_value"] < 0.05) > 0.1
    assert np.mean(cr2.loc[cr2["flag"] == "", "p_value"] < 0.05) <= mc_limit(n)


@pytest.mark.slow
@pytest.mark.parametrize("planted", [0.65, 0.35])
def test_planted_effect_found_with_right_sign(planted):
    rng = np.random.default_rng(int(planted * 100))
    p_left, sd = 0.3, 1.1
    hits, checked_hits, cover, n = 0, 0, 0, 0
    for score in (False, True):
        d = effect_for(planted, p_left, sd, score)
        cells = simulate_cells(
            rng, n_targets=300, clusters=(20, 30), cluster_sd=sd, p_left=p_left, score=score, effect=d
        )
        out = cluster_contrasts(cells, BALANCED, 0.5, wild=False)
        out = out[out["flag"] == ""]
        sig = out["p_value"] < 0.05
        assert (np.sign(out.loc[sig, "estimate"] - 0.5) == np.sign(planted - 0.5)).all()
        hits += int(sig.sum())
        # the default also checks small p-values with the wild bootstrap (20-30 clusters: "few")
        checked = cluster_contrasts(cells, BALANCED, 0.5).set_index("target").loc[out["target"]]
        checked_hits += int((checked["p_value"] < 0.05).sum())
        cover += int(((out["ci_low"] <= planted) & (planted <= out["ci_high"])).sum())
        n += len(out)
    assert hits / n >= 0.85
    assert checked_hits / n >= 0.8 and checked_hits >= hits - 0.05 * n  # the check costs little power
    assert cover / n >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / n)


@pytest.mark.slow
def test_clusters_needed_delivers_its_power():
    """Plan with the default (latent) ICC, simulate sd 1.1 at that many clusters: power >= 0.8."""
    rng = np.random.default_rng(12)
    m = 10
    g = clusters_needed(0.15, answers_per_cluster=m)
    d = effect_for(0.65, 0.5, 1.1, False)
    cells = simulate_cells(rng, n_targets=500, clusters=(g, g), answers=(m, m), cluster_sd=1.1, p_left=0.5, effect=d)
    out = cluster_contrasts(cells, BALANCED, 0.5)
    assert np.mean(out["p_value"] < 0.05) >= 0.8 - 3 * math.sqrt(0.16 / 500)


@pytest.mark.slow
def test_million_cells_in_seconds():
    rng = np.random.default_rng(0)
    cells = simulate_cells(rng, n_targets=2000, clusters=(200, 300), answers=(1, 8))
    assert len(cells) > 700_000
    start = time.perf_counter()
    out = cluster_contrasts(cells, BALANCED, 0.5)
    assert time.perf_counter() - start < 30.0
    assert (out["flag"] == "").all()


# ---- magnitude, Simes, global-then-BH ---------------------------------------------------------


def forced_choice_draws(rng: np.random.Generator, bias: np.ndarray, se: float, reps: int) -> np.ndarray:
    """Estimates of k identities that compete in one forced choice: they sum to k/2 exactly."""
    k = len(bias)
    z = rng.normal(0.0, se * math.sqrt(k / (k - 1)), size=(reps, k))
    return 0.5 + bias + z - z.mean(axis=1, keepdims=True)


@pytest.mark.parametrize("k", [2, 6, 20])
def test_magnitude_is_zero_under_the_null_at_every_size(k):
    rng = np.random.default_rng(k)
    se = 0.08  # a small run
    runs = [noise_corrected_magnitude(s, np.full(k, se), 0.5) for s in forced_choice_draws(rng, np.zeros(k), se, 2000)]
    ms = np.array([r["mean_square"] for r in runs])
    mag = np.array([r["magnitude"] for r in runs])
    naive = np.mean([np.mean(np.abs(s - 0.5)) for s in forced_choice_draws(rng, np.zeros(k), se, 2000)])
    assert abs(ms.mean()) < 3 * ms.std() / math.sqrt(len(ms))  # unbiased mean square
    assert mag.mean() < 0.45 * se and mag.mean() < 0.6 * naive
    assert np.mean([r["p_value"] < 0.05 for r in runs]) <= mc_limit(len(runs))
    assert np.mean([r["p_value_chi2"] < 0.05 for r in runs]) <= mc_limit(len(runs))
    assert np.mean([r["ci_low"] > 0 for r in runs]) <= mc_limit(len(runs), 0.025)


def test_independence_assumption_double_counts_two_identities():
    rng = np.random.default_rng(0)
    draws = forced_choice_draws(rng, np.zeros(2), 0.05, 4000)
    indep = np.mean(
        [
            noise_corrected_magnitude(s, [0.05, 0.05], 0.5, dependence="independent")["p_value_chi2"] < 0.05
            for s in draws
        ]
    )
    assert indep > 0.07  # chi2(2) on 2 Z^2 = Z^2 + Z^2: 0.083 in theory


@pytest.mark.parametrize("k", [2, 12])
def test_magnitude_recovers_a_planted_rms_and_covers_it(k):
    rng = np.random.default_rng(100 + k)
    bias = np.resize([0.1, -0.1], k) if k > 2 else np.array([0.1, -0.1])
    se = 0.02
    runs = [noise_corrected_magnitude(s, np.full(k, se), 0.5) for s in forced_choice_draws(rng, bias, se, 1000)]
    mag = np.array([r["magnitude"] for r in runs])
    assert mag.mean() == pytest.approx(0.1, abs=0.01)
    cover = np.mean([r["ci_low"] <= 0.1 <= r["ci_high"] for r in runs])
    assert cover >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / len(runs))
    assert np.mean([r["p_value"] < 0.05 for r in runs]) > 0.95


def test_magnitude_end_to_end_from_cluster_contrasts():
    rng = np.random.default_rng(5)
    out = cluster_contrasts(simulate_cells(rng, n_targets=20, clusters=(30, 40)), BALANCED, 0.5)
    res = noise_corrected_magnitude(out["estimate"], out["se"], 0.5, dependence="independent", p_values=out["p_value"])
    assert res["n_targets"] == 20 and res["ci_low"] <= res["magnitude"] <= res["ci_high"]
    assert res["magnitude"] < 0.5 * np.mean(np.abs(out["estimate"] - 0.5)) + 0.01


def test_simes_by_hand():
    # sorted .01 .03 .04 .5 -> k p_(i) / i = .04 .06 .0533 .5
    assert simes([0.04, 0.5, 0.01, 0.03]) == pytest.approx(0.04)
    assert simes([0.02, 0.02, 0.02]) == pytest.approx(0.02)  # Bonferroni would say 0.06
    assert simes([0.3, float("nan")]) == pytest.approx(0.3)
    assert simes([]) == 1.0


def test_global_then_bh_by_hand():
    frame = pd.DataFrame({"identity": ["a", "a", "b", "b", "c"], "p_value": [0.01, 0.2, 0.5, 0.9, 0.04]})
    out = global_then_bh(frame, "identity").set_index("identity")
    assert out["p_simes"].tolist() == pytest.approx([0.02, 0.9, 0.04])
    # BH over (.02, .9, .04): sorted .02 .04 .9 -> .06 .06 .9
    assert out["q_value"].tolist() == pytest.approx([0.06, 0.9, 0.06])
    assert out["n_tests"].tolist() == [2, 2, 1]


# ---- planning ---------------------------------------------------------------------------------


def test_clusters_needed_textbook_value():
    # one-sample proportion, p0 = 0.5, shift 0.1, alpha .05 two-sided, power .8: n = 196.2 -> 197
    assert clusters_needed(0.1, answers_per_cluster=1, icc=0.0, use_t=False) == 197
    # design effect 1 + (m - 1) icc with m = 20, icc = 0.269: 196.2 * 6.11 / 20 -> 60
    assert clusters_needed(0.1, answers_per_cluster=20, icc=DEFAULT_ICC, use_t=False) == math.ceil(
        196.22 * (1 + 19 * DEFAULT_ICC) / 20
    )
    assert DEFAULT_ICC == pytest.approx(1.21 / (1.21 + math.pi**2 / 3))
    assert clusters_needed(0.1, answers_per_cluster=1, icc=0.0, n_tests=10, use_t=False) > 197


@pytest.mark.parametrize("effect,m,icc", [(0.1, 1, 0.0), (0.05, 30, 0.1), (0.15, 10, DEFAULT_ICC)])
def test_planning_functions_invert_each_other(effect, m, icc):
    g = clusters_needed(effect, answers_per_cluster=m, icc=icc)
    se = lambda k: cluster_se(k, answers_per_cluster=m, icc=icc)  # noqa: E731
    assert detectable_effect(se(g), df=g - 1) <= effect < detectable_effect(se(g - 1), df=g - 2)
    g_z = clusters_needed(effect, answers_per_cluster=m, icc=icc, use_t=False)
    assert detectable_effect(se(g_z)) <= effect < detectable_effect(se(g_z - 1))
    assert g >= g_z


def test_detectable_effect_values():
    assert detectable_effect(1.0) == pytest.approx(1.959964 + 0.841621, rel=1e-6)
    assert detectable_effect(1.0, df=5) == pytest.approx(stats.t.isf(0.025, 5) + stats.t.ppf(0.8, 5))
    with pytest.raises(ValueError):
        detectable_effect(1.0, alpha=0.0)


# ---- refusals ---------------------------------------------------------------------------------


def refusal_cells(
    rng: np.random.Generator, n_targets: int, clusters: int, high: dict[int, float] | None = None
) -> pd.DataFrame:
    """Per (target, cluster): 1-40 offers, refusal probability expit(-3 + u_c), u_c ~ N(0, 1.5)."""
    t = np.repeat(np.arange(n_targets), clusters)
    n_off = rng.integers(1, 41, size=len(t))
    shift = np.array([(high or {}).get(i, 0.0) for i in range(n_targets)])[t]
    p = expit(-3.0 + shift + rng.normal(0.0, 1.5, size=len(t)))
    refused = rng.binomial(n_off, p)
    return pd.DataFrame({"target": t, "cluster": np.arange(len(t)), "refused": refused, "n": n_off - refused})


@pytest.mark.slow
def test_refusal_homogeneity_calibrated_under_clustering_and_finds_a_difference():
    rng = np.random.default_rng(7)
    p_null, naive = [], []
    for _ in range(300):
        cells = refusal_cells(rng, 6, 8)
        res = refusal_homogeneity(cells, n_permutations=199, seed=int(rng.integers(1 << 30)))
        p_null.append(res["p_value"])
        naive.append(stats.chi2.sf(res["statistic"], 5))
    assert np.mean(np.array(p_null) < 0.05) <= mc_limit(len(p_null))
    assert np.mean(np.array(naive) < 0.05) > 0.3  # the Pearson chi2 that ignores clusters
    hits = [
        refusal_homogeneity(refusal_cells(rng, 6, 20, high={0: 2.0}), n_permutations=199)["p_value"] < 0.05
        for _ in range(40)
    ]
    assert np.mean(hits) > 0.7


def test_refusal_homogeneity_shared_clusters_and_degenerate_input():
    # pair images hold two targets: the pair moves as a unit
    cells = pd.DataFrame(
        {
            "target": ["a", "b", "a", "c", "b", "c"] * 3,
            "cluster": np.repeat(np.arange(9), 2),
            "refused": [1, 1, 0, 0, 2, 2] * 3,
            "n": [9, 9, 10, 10, 8, 8] * 3,
        }
    )
    res = refusal_homogeneity(cells, n_permutations=99)
    assert res["n_clusters"] == 9 and res["n_targets"] == 3 and 0.0 < res["p_value"] <= 1.0
    assert res["rates"]["a"] == pytest.approx(3 / 60)
    none = refusal_homogeneity(cells.assign(refused=0))
    assert none["p_value"] == 1.0 and none["statistic"] == 0.0


def test_refusal_bounds_by_hand():
    cells = TINY.assign(refused=[0.0, 2.0, 0.0, 0.0, 0.0, 0.0])
    out = refusal_bounds(cells, BALANCED, 0.5).iloc[0]
    assert out["estimate"] == pytest.approx(0.5625)
    # R side: 3 of 8 valid + 2 refused -> high 5/10, low 3/10; L side unchanged 6/8
    assert out["estimate_high"] == pytest.approx(0.5 * 0.75 + 0.5 * 0.5)
    assert out["estimate_low"] == pytest.approx(0.5 * 0.75 + 0.5 * 0.3)
    diff = {("w", "L"): 1.0, ("o", "L"): -1.0}
    two = pd.DataFrame(
        {
            "target": "t",
            "cluster": [1, 2, 1, 2],
            "component": [("w", "L"), ("w", "L"), ("o", "L"), ("o", "L")],
            "y": [2.0, 3.0, 1.0, 1.0],
            "n": [4.0, 4.0, 4.0, 4.0],
            "refused": [0.0, 0.0, 4.0, 0.0],
        }
    )
    b = refusal_bounds(two, diff, 0.0).iloc[0]
    # negative coefficient: the high bound scores those refusals as non-selections
    assert b["estimate"] == pytest.approx(5 / 8 - 2 / 8)
    assert b["estimate_high"] == pytest.approx(5 / 8 - 2 / 12)
    assert b["estimate_low"] == pytest.approx(5 / 8 - 6 / 12)
    assert set(refusal_bounds(cells.assign(refused=0.0), BALANCED, 0.5)["verdict_robust"]) == {True}


def test_refusal_homogeneity_sequential_p_value_is_the_fixed_one_where_it_matters():
    """Besag-Clifford: where fewer than stop_after permutations reach X^2 the sequential p-value equals the
    fixed-count one (same permutations, whatever the chunk sizes); homogeneous refusals stop early with
    p = stop_after / drawn, which is valid (the slow calibration test above runs with the default)."""
    rng = np.random.default_rng(3)
    differ = refusal_cells(rng, 6, 30, high={0: 2.5})
    fixed = refusal_homogeneity(differ, n_permutations=199, stop_after=None)
    seq = refusal_homogeneity(differ, n_permutations=199, stop_after=20)
    assert fixed["p_value"] < 20 / 200 and seq["p_value"] == fixed["p_value"] and seq["permutations"] == 199
    same = refusal_cells(rng, 6, 30)
    full = refusal_homogeneity(same, n_permutations=199, stop_after=None)
    early = refusal_homogeneity(same, n_permutations=199, stop_after=20)
    assert full["p_value"] > 0.2 and full["permutations"] == 199
    assert early["permutations"] < 199 and early["p_value"] == pytest.approx(20 / early["permutations"])
    # the first `early["permutations"]` draws are the same in both runs: the 20th exceedance is where it stopped
    assert abs(early["p_value"] - full["p_value"]) < 0.25
    with pytest.raises(ValueError, match="stop_after must be >= 1"):
        refusal_homogeneity(same, stop_after=0)
