"""The statistics library of the VIGNETTE metric modules (vignette_bench/metrics/<name>/<name>.py).

The four `evaluate` modules import their counting and statistics from here, so each holds only
its measure's definition. One job per module:

* `inference`: Wilson intervals, Fisher's exact test (vectorised), Benjamini-Hochberg q-values
  (`fisher_with_bh`: both for a family of tables), the per-cell variance of a selection rate,
  counts of significant tests and the power helper `answers_needed`.
* `counts`: name codes (`Vocab`), summing over cells (`aggregate`, `aggregate_offers`) and the
  `CountStore` that turns answer rows into counts per cell.
* `arrow_input`: any accepted input (keyword lists, DataFrame, Arrow, Dataset, parquet path) as
  Arrow tables of bounded size under the contract's column names.
* `bootstrap`: percentile intervals, the group (pair image) bootstrap, intervals for differences.
* `arrays`: guarded division, sparse sums and columnar output.
* `metric`: `VignetteMetric`, the `evaluate.Metric` base that counts inputs as they arrive, and
  `metric_info`, a measure's evaluate MetricInfo (texts, citation, declared inputs).
"""

from vignette_bench.stats.arrays import indicator, right_sparse, safe_div, to_lists
from vignette_bench.stats.arrow_input import (
    ALIASES,
    ARROW_TYPES,
    BATCH_ROWS,
    column,
    is_wanted,
    list_values,
    rename,
    table_from,
    to_arrow,
)
from vignette_bench.stats.bootstrap import collapse_groups, difference_ci, group_bootstrap, percentile_ci
from vignette_bench.stats.counts import VALUE_NAMES, CountStore, Vocab, aggregate, aggregate_offers
from vignette_bench.stats.inference import (
    Z95,
    answers_needed,
    bh_qvalues,
    cell_variance,
    fisher_exact_two_sided,
    fisher_with_bh,
    significance_counts,
    wilson_interval,
)
from vignette_bench.stats.metric import VIGNETTE_CITATION, VignetteMetric, metric_info

__all__ = [
    "ALIASES",
    "ARROW_TYPES",
    "BATCH_ROWS",
    "VALUE_NAMES",
    "VIGNETTE_CITATION",
    "Z95",
    "CountStore",
    "VignetteMetric",
    "Vocab",
    "aggregate",
    "aggregate_offers",
    "answers_needed",
    "bh_qvalues",
    "cell_variance",
    "collapse_groups",
    "column",
    "difference_ci",
    "fisher_exact_two_sided",
    "fisher_with_bh",
    "group_bootstrap",
    "indicator",
    "is_wanted",
    "list_values",
    "metric_info",
    "percentile_ci",
    "rename",
    "right_sparse",
    "safe_div",
    "significance_counts",
    "table_from",
    "to_arrow",
    "to_lists",
    "wilson_interval",
]
