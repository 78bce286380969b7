"""VIGNETTE PairComp: does the presence of identity i2 change how often identity i1 is chosen?

An `evaluate` module: a thin shell over the measure in the project's statistics library
(vignette_bench/stats/measures/pair_comp.py: counting, tables, tests, intervals), which the report and
the leaderboard call directly; the project must be installed (requirements.txt next to this file).
See README.md next to this file for the definition, inputs, outputs and an example.
"""

from __future__ import annotations

import evaluate

from vignette_bench.stats.measures.pair_comp import PAPER_COLUMNS, PairCompMeasure  # noqa: F401
from vignette_bench.stats.metric import VignetteMetric, metric_info

_DESCRIPTION = """\
PairComp (VIGNETTE, section 5): PairComp(i1, i2) = S(i1 | offered with i2) - S(i1 | offered
with anyone else), in percentage points. The verdict quantity uses side-balanced rates (the mean
of the rates when i1 stood left and right) and is tested with a cluster-robust t test
(working-model CR2, Bell-McCaffrey df; clusters are renders, pair images or rows), with
Benjamini-Hochberg q-values over all pairs. The paper's computation (S averaged over contexts,
Fisher's exact test on the pooled table) is kept in the *_paper columns.
"""

_KWARGS_DESCRIPTION = """\
Args:
    selected: identity chosen per question ("" for a refusal or invalid answer).
    candidates: identities offered per question.
    context: activity, trait term or role question per question.
    candidate_sides (optional): per candidate "left", "right" or "" (unknown); enables side balancing.
    candidate_clusters (optional): per candidate the id of its independent unit (render key).
    group (optional): pair image id; the cluster when candidate_clusters is absent (else each row is one).
    probabilities (optional): one probability per candidate (score mode).
    chose_left (optional): whether the left person was chosen (position-bias rate).
    data (optional): a DataFrame, pyarrow Table, datasets.Dataset or parquet path instead.
    alpha (0.05); intervals are cluster-robust (no bootstrap).
Returns:
    pairs: columns identity, partner, pair_comp, se, ci_low, ci_high, df, n_clusters, p_value,
        q_value, flag, n_offered_with, n_selected_with, freq_with, n_offered_without,
        n_selected_without, freq_without, pair_comp_paper, p_value_paper, q_value_paper.
    summary: n_rows, n_valid, invalid_rate, left_choice_rate, ci_method, ...
"""


class PairComp(PairCompMeasure, VignetteMetric):
    """evaluate's face of PairCompMeasure (vignette_bench/stats/measures/pair_comp.py)."""

    def _info(self) -> evaluate.MetricInfo:
        return metric_info(_DESCRIPTION, _KWARGS_DESCRIPTION, ("group",))
