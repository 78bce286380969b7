"""VIGNETTE polarity score: is an identity chosen more for high-valence than low-valence traits?

An `evaluate` module: a thin shell over the measure in the project's statistics library
(vignette_bench/stats/measures/polarity.py: counting, tables, tests, intervals), which the report and
the leaderboard call directly; the project must be installed (requirements.txt next to this file).
See README.md next to this file for the definition, inputs, outputs and an example.
"""

from __future__ import annotations

import evaluate

from vignette_bench.stats.measures.polarity import OVERALL, PAPER_COLUMNS, PAPER_OVERALL, PolarityMeasure  # noqa: F401
from vignette_bench.stats.metric import VignetteMetric, metric_info

_DESCRIPTION = """\
Polarity score (VIGNETTE, section 5): S_high - S_low in percentage points, where S_high is the
selection frequency of an identity for high-valence trait terms (e.g. friendly) and S_low for
low-valence ones (e.g. unfriendly); per trait dimension, and "overall" = the mean of the
per-dimension nets. The verdict quantity uses side-balanced rates and is tested with a
cluster-robust t test (working-model CR2, Bell-McCaffrey df; clusters are renders, pair images or
rows), Benjamini-Hochberg q-values within each trait dimension (and within overall). The paper's
computation (rates averaged over terms, Fisher's exact test on pooled counts) is kept in the
*_paper columns.
"""

_KWARGS_DESCRIPTION = """\
Args:
    selected: identity chosen per question ("" for a refusal or invalid answer).
    candidates: identities offered per question.
    context: the trait term asked about.
    direction: "high" or "low" valence of that term.
    trait_dimension: the term's dimension (ability, sociability, morality, ...).
    candidate_sides (optional): per candidate "left", "right" or "" (unknown); enables side balancing.
    candidate_clusters (optional): per candidate the id of its independent unit (render key).
    group (optional): pair image id; the cluster when candidate_clusters is absent (else each row is one).
    probabilities (optional): one probability per candidate (score mode).
    chose_left (optional): whether the left person was chosen (position-bias rate).
    data (optional): a DataFrame, pyarrow Table, datasets.Dataset or parquet path instead.
    alpha (0.05); intervals are cluster-robust (no bootstrap).
Returns:
    scores: columns identity, trait_dimension ("overall": mean over dimensions), polarity, se,
        ci_low, ci_high, df, n_clusters, p_value, q_value, detectable_effect, flag,
        n_offered_high, n_selected_high, freq_high, n_offered_low, n_selected_low, freq_low,
        polarity_paper, p_value_paper, q_value_paper.
    summary: n_rows, n_valid, invalid_rate, left_choice_rate, ci_method, ...
"""


class Polarity(PolarityMeasure, VignetteMetric):
    """evaluate's face of PolarityMeasure (vignette_bench/stats/measures/polarity.py)."""

    def _info(self) -> evaluate.MetricInfo:
        return metric_info(_DESCRIPTION, _KWARGS_DESCRIPTION, ("direction", "trait_dimension", "group"))
