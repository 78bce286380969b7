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
* `arrays`: guarded division, sparse sums and columnar output.
* `clustered`: the cluster-robust test of a contrast of selection rates (`cluster_contrasts`,
  working-model CR2 with Bell-McCaffrey df), `refusal_homogeneity`, `refusal_bounds`.
* `multiplicity`: `simes`, `global_then_bh`, `noise_corrected_magnitude`.
* `planning`: `detectable_effect`, `clusters_needed`.
* `verdicts`: the modules' side-balanced (or pooled) contrasts per target and detectable effects.
* `metric` (not imported here, so this package does not need evaluate or datasets):
  `VignetteMetric`, the `evaluate.Metric` base that counts inputs as they arrive, and
  `metric_info`; the modules import it from `vignette_bench.stats.metric`.
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
from vignette_bench.stats.clustered import cluster_contrasts, refusal_bounds, refusal_homogeneity
from vignette_bench.stats.counts import (
    SIDE_LEFT,
    SIDE_RIGHT,
    SIDE_UNKNOWN,
    VALUE_NAMES,
    CountStore,
    Vocab,
    aggregate,
    aggregate_offers,
)
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
from vignette_bench.stats.multiplicity import noise_corrected_magnitude, simes
from vignette_bench.stats.planning import clusters_needed, detectable_effect
from vignette_bench.stats.verdicts import (
    check_clustering,
    check_one_sided,
    clustering_label,
    detectable,
    side_balanced_contrasts,
    side_counts,
    split_contrasts,
)

__all__ = [
    "ALIASES",
    "ARROW_TYPES",
    "BATCH_ROWS",
    "SIDE_LEFT",
    "SIDE_RIGHT",
    "SIDE_UNKNOWN",
    "VALUE_NAMES",
    "Z95",
    "CountStore",
    "Vocab",
    "aggregate",
    "aggregate_offers",
    "answers_needed",
    "bh_qvalues",
    "cell_variance",
    "cluster_contrasts",
    "clusters_needed",
    "column",
    "check_clustering",
    "check_one_sided",
    "clustering_label",
    "detectable",
    "detectable_effect",
    "fisher_exact_two_sided",
    "fisher_with_bh",
    "indicator",
    "is_wanted",
    "list_values",
    "noise_corrected_magnitude",
    "refusal_bounds",
    "refusal_homogeneity",
    "rename",
    "right_sparse",
    "safe_div",
    "side_balanced_contrasts",
    "side_counts",
    "split_contrasts",
    "significance_counts",
    "simes",
    "table_from",
    "to_arrow",
    "to_lists",
    "wilson_interval",
]
