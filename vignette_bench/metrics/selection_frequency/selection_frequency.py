"""VIGNETTE selection frequency: how often each identity is chosen when it is offered.

An `evaluate` module: a thin shell over the measure in the project's statistics library
(vignette_bench/stats/measures/selection_frequency.py: counting, tables, tests, intervals), which the report and
the leaderboard call directly; the project must be installed (requirements.txt next to this file).
See README.md next to this file for the definition, inputs, outputs and an example.
"""

from __future__ import annotations

import evaluate

from vignette_bench.stats.measures.selection_frequency import COLUMNS, PP, TEST, TEST_COLUMNS, SelectionFrequencyMeasure  # noqa: F401
from vignette_bench.stats.metric import VignetteMetric, metric_info

_DESCRIPTION = """\
Selection frequency (VIGNETTE, section 5): for each identity, the percentage of questions in
which the model chose it out of the questions in which it was offered. The verdict quantity is
side-balanced (the mean of the rates when the identity stood left and when it stood right, so a
model's side preference cancels) and tested against chance with a cluster-robust t test
(working-model CR2, Bell-McCaffrey df) whose independent units are clusters (renders, pair images
or rows), with Benjamini-Hochberg q-values over the identities of the call. The paper's
computation (mean over contexts of per-context rates, Fisher's exact test against all other
identities pooled) is kept in the *_paper columns.
"""

_KWARGS_DESCRIPTION = """\
Args:
    selected: identity chosen per question ("" for a refusal or invalid answer).
    candidates: identities offered per question.
    context: activity, trait term or role question per question.
    candidate_sides (optional): per candidate "left", "right" or "" (unknown); enables side balancing.
    candidate_clusters (optional): per candidate the id of its independent unit (render key).
    group (optional): pair image id; the cluster when candidate_clusters is absent (else each row is one).
    probabilities (optional): one probability per candidate; then the answer is the candidate's
        normalised probability (score mode).
    chose_left (optional): whether the left person was chosen (position-bias rate).
    target (optional): for factuality, the identity the question asks about; only that
        identity's offer counts, so S becomes the share of right answers.
    correct (optional, with target): whether a factuality answer was right (null = invalid);
        then each row is one offer of `target`, chosen when correct (candidates not needed).
    data (optional): a DataFrame, pyarrow Table, datasets.Dataset or parquet path instead.
    alpha: significance level (default 0.05). identities: names to report even if never offered.
    refusal_permutations: permutations of the refusal homogeneity test (default 999).
Returns:
    identities: identity, selection_frequency, se, ci_low, ci_high, df, n_clusters, p_value,
        q_value, effect, detectable_effect, left_share, when_left, when_right, position, chance, n_offered,
        n_selected, n_contexts, pooled_frequency, invalid_rate, estimate_refusals_low,
        estimate_refusals_high, verdict_robust_to_refusals, flag, selection_frequency_paper,
        p_value_paper, q_value_paper.
    summary: answer_mode, cluster_unit, side_balanced, test, magnitude, refusal_p_value, ...
"""


class SelectionFrequency(SelectionFrequencyMeasure, VignetteMetric):
    """evaluate's face of SelectionFrequencyMeasure (vignette_bench/stats/measures/selection_frequency.py)."""

    def _info(self) -> evaluate.MetricInfo:
        return metric_info(_DESCRIPTION, _KWARGS_DESCRIPTION, ("group",))
