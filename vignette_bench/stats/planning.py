"""Planning an audit: the smallest detectable effect and the clusters needed to detect one.

Both use the two-sided test of `vignette_bench.stats.clustered` in its normal (or t)
approximation: an effect d is detected with probability `power` when
``d >= (q_{1 - alpha'/2} + q_{power}) * se``, with ``alpha' = alpha / n_tests`` (Bonferroni: a
safe stand-in for Benjamini-Hochberg over that many tests) and q the normal or t(df) quantiles.

Clustering enters through the design effect. A cluster (pair image, render) carries m answers
that correlate ``icc``, so the variance of a selection rate over G clusters is
``p (1 - p) (1 + (m - 1) icc) / (m G)``, at the baseline p (0.5: chance in a two-way choice).

Default icc: an image random effect of sd 1.1 on the logit scale (what real VLMs show) has the
latent-scale ICC ``sigma^2 / (sigma^2 + pi^2 / 3) = 1.21 / 4.50 = 0.269`` (`latent_icc`).
On the 0/1 answer scale the same effect gives about 0.20 at p = 0.5, so 0.269 plans
conservatively (slightly more clusters than needed).
"""

from __future__ import annotations

import math

from vignette_bench.stats import distributions


def latent_icc(sd: float) -> float:
    """ICC on the logit scale of a random effect with standard deviation `sd`: sd^2 / (sd^2 + pi^2/3)."""
    if sd < 0:
        raise ValueError(f"sd must be >= 0, got {sd}")
    return sd * sd / (sd * sd + math.pi**2 / 3.0)


DEFAULT_ICC = latent_icc(1.1)  # 0.269: image random effect of sd 1.1 logit


def _check(alpha: float, power: float, n_tests: int = 1) -> None:
    if not (0.0 < alpha < 1.0 and 0.0 < power < 1.0 and n_tests >= 1):
        raise ValueError(f"need 0 < alpha < 1, 0 < power < 1, n_tests >= 1; got {alpha}, {power}, {n_tests}")


def detectable_effect(se: float, alpha: float = 0.05, power: float = 0.8, df: float | None = None) -> float:
    """Minimal detectable effect (same units as `se`) of a two-sided level-alpha test with this power.

    ``(q_{1-alpha/2} + q_{power}) * se`` with normal quantiles, or t(df) quantiles when df is given.
    """
    _check(alpha, power)
    if se < 0:
        raise ValueError(f"se must be >= 0, got {se}")
    if df is None:
        return float((distributions.norm_isf(alpha / 2.0) + distributions.norm_ppf(power)) * se)
    return float((distributions.t_isf(alpha / 2.0, df) + distributions.t_ppf(power, df)) * se)


def cluster_se(
    n_clusters: float, *, answers_per_cluster: float, icc: float = DEFAULT_ICC, baseline: float = 0.5
) -> float:
    """Standard error of a selection rate over `n_clusters` clusters of m answers each (design effect 1 + (m-1) icc)."""
    if not (0.0 < baseline < 1.0 and answers_per_cluster >= 1 and 0.0 <= icc <= 1.0 and n_clusters > 0):
        raise ValueError(
            "need 0 < baseline < 1, answers_per_cluster >= 1, 0 <= icc <= 1, n_clusters > 0; "
            f"got {baseline}, {answers_per_cluster}, {icc}, {n_clusters}"
        )
    m = answers_per_cluster
    return math.sqrt(baseline * (1.0 - baseline) * (1.0 + (m - 1.0) * icc) / (m * n_clusters))


def clusters_needed(
    effect: float,
    *,
    answers_per_cluster: float,
    icc: float = DEFAULT_ICC,
    baseline: float = 0.5,
    alpha: float = 0.05,
    power: float = 0.8,
    n_tests: int = 1,
    use_t: bool = True,
) -> int:
    """Clusters per target to detect a shift of `effect` (proportion scale, e.g. 0.1) from `baseline`.

    Normal approximation ``G = (z_{1-alpha'/2} + z_power)^2 p(1-p) DE / (m effect^2)`` with
    DE = 1 + (m - 1) icc; with ``use_t`` (default) the smallest G whose t(G - 1) test reaches the
    power, i.e. ``detectable_effect(cluster_se(G), df=G - 1) <= effect`` -- what the cluster
    test, whose df is at most G - 1, needs. use_t=False gives the textbook sample size.
    """
    _check(alpha, power, n_tests)
    if effect == 0 or not 0.0 < baseline + effect < 1.0:
        raise ValueError(f"need effect != 0 and 0 < baseline + effect < 1, got baseline={baseline}, effect={effect}")
    d = abs(effect)
    a = alpha / n_tests
    unit_se = cluster_se(1.0, answers_per_cluster=answers_per_cluster, icc=icc, baseline=baseline)
    z = distributions.norm_isf(a / 2.0) + distributions.norm_ppf(power)
    g = max(2, math.ceil((z * unit_se / d) ** 2 - 1e-9))
    if not use_t:
        return g
    while detectable_effect(unit_se / math.sqrt(g), a, power, df=g - 1) > d:
        g += 1
    return g
