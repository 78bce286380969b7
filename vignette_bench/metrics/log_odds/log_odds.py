"""VIGNETTE log-odds ratio: is an identity chosen more in one context than in all the others?

An `evaluate` module: a thin shell over the measure in the project's statistics library
(vignette_bench/stats/measures/log_odds.py: counting, tables, tests, intervals), which the report and
the leaderboard call directly; the project must be installed (requirements.txt next to this file).
See README.md next to this file for the definition, inputs, outputs and an example.
"""

from __future__ import annotations

import evaluate

from vignette_bench.stats.measures.log_odds import LogOddsMeasure  # noqa: F401
from vignette_bench.stats.metric import VignetteMetric, metric_info

_DESCRIPTION = """\
Log-odds ratio (VIGNETTE, section 5) for every (identity, context) cell: the add-one smoothed
odds that identity i is chosen when offered in context a, over the same odds in all other
contexts, natural log. Each cell is tested with a cluster-robust t test (working-model CR2,
Bell-McCaffrey df; clusters are renders, pair images or rows) of the side-balanced selection rate
in a minus in all other contexts (same sign as the log-odds), with Benjamini-Hochberg q-values
over all cells. The paper's Fisher exact test and Wald interval are kept in the *_paper columns.
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
    alpha: significance level for the reported counts (default 0.05).
Returns:
    cells: columns identity, context, log_odds, difference, se, ci_low, ci_high, df, n_clusters,
        p_value, q_value, flag, n_selected, n_offered, n_selected_other, n_offered_other,
        log_odds_paper, ci_low_paper, ci_high_paper, p_value_paper, q_value_paper.
    summary: n_rows, n_valid, invalid_rate, left_choice_rate, left_choice_p_value, ...
"""


class LogOdds(LogOddsMeasure, VignetteMetric):
    """evaluate's face of LogOddsMeasure (vignette_bench/stats/measures/log_odds.py)."""

    def _info(self) -> evaluate.MetricInfo:
        return metric_info(_DESCRIPTION, _KWARGS_DESCRIPTION, ("group",))
