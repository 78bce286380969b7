"""The VIGNETTE measures' shared plumbing, without `evaluate`: inputs are counted as they arrive.

A measure subclasses Measure, names its cell keys (CELL_KEYS), the input columns it accepts
(WANTED_COLUMNS) and its options with defaults (OPTION_DEFAULTS), and computes its tables from a
CountStore in `_compute_counts`. Each measure lives in vignette_bench/stats/measures/; the evaluate
module of the same name (vignette_bench/metrics/<name>/<name>.py) adds only evaluate's MetricInfo.
"""

from __future__ import annotations

import abc
from typing import Any

import pyarrow as pa

from vignette_bench.stats.arrow_input import table_from
from vignette_bench.stats.counts import CountStore
from vignette_bench.stats.heap import reuse_freed_memory


class Measure(metaclass=abc.ABCMeta):
    """A VIGNETTE measure without `evaluate`: add_batch/add accumulate counts (not rows); compute reads
    counts. The report and the leaderboard use measures directly (importing `evaluate` costs seconds: it
    imports transformers and torch); the evaluate modules in vignette_bench/metrics are thin shells over them.
    """

    CELL_KEYS: tuple[str, ...] = ("identity", "context")
    # Every measure's cells are also keyed by cluster, side and the partner's cluster, for the
    # cluster-robust tests (two-way where the partner's render is known).
    TEST_KEYS: tuple[str, ...] = ("cluster", "side", "pcluster")
    # The input columns (contract names) and the options with their defaults; set by each measure.
    WANTED_COLUMNS: tuple[str, ...] = ()
    OPTION_DEFAULTS: dict[str, Any] = {}
    # The key sets the store sums over (`CountStore` views); empty: one view of all keys.
    VIEWS: tuple[tuple[str, ...], ...] = ()
    # The sums each view keeps (`CountStore` view_values); a view not named keeps all of VALUE_NAMES.
    VIEW_VALUES: dict[tuple[str, ...], tuple[str, ...]] = {}
    _counts: CountStore | None  # what add_batch has counted since the last compute

    def _store(self) -> CountStore:
        store = getattr(self, "_counts", None)
        if store is None:
            store = self._new_store()
            self._counts = store
        return store

    def _new_store(self) -> CountStore:
        return CountStore(self.CELL_KEYS + self.TEST_KEYS, self.WANTED_COLUMNS, self.VIEWS, self.VIEW_VALUES)

    def add_batch(self, *, data: Any = None, use_probabilities: bool = True, **columns: Any) -> None:
        """Add answered questions: keyword columns (lists), or `data` = DataFrame, Arrow table, Dataset or parquet path.

        Only counts are kept, so memory is bounded by the number of cells, not rows.
        """
        unknown = sorted(set(columns) - set(self.WANTED_COLUMNS) - {"predictions", "references"})
        if unknown:
            raise ValueError(f"unknown inputs {unknown}; accepted: {sorted(self.WANTED_COLUMNS)}")
        if data is None:
            columns = {k: v for k, v in columns.items() if v is not None and k not in ("predictions", "references")}
            if not columns:
                return
            data = columns
        elif any(v is not None for k, v in columns.items() if k not in ("predictions", "references")):
            raise ValueError("give either `data` or keyword columns, not both")
        with reuse_freed_memory():
            for table in table_from(data, self.WANTED_COLUMNS):
                store = self._store()
                store.add_table(table, use_probabilities=use_probabilities)
        # Arrow's allocator keeps the read batches' freed memory (the decoded batches); the tests
        # that follow need it more
        pa.default_memory_pool().release_unused()

    def add(self, **row: Any) -> None:
        """Add one answered question (keyword values for one row)."""
        columns: dict[str, Any] = {k: [v] for k, v in row.items()}
        self.add_batch(**columns)

    def compute(self, *, data: Any = None, use_probabilities: bool = True, **kwargs: Any) -> dict[str, Any]:
        """Compute from everything added so far plus these inputs; then start afresh.

        Options (keywords): alpha (default 0.05) and each measure's own (OPTION_DEFAULTS).
        """
        columns = {k: v for k, v in kwargs.items() if k in self.WANTED_COLUMNS}
        options = {
            k: v for k, v in kwargs.items() if k not in self.WANTED_COLUMNS and k not in ("predictions", "references")
        }
        bad = sorted(set(options) - set(self.OPTION_DEFAULTS))
        if bad:
            raise ValueError(
                f"unknown options {bad}; accepted inputs {sorted(self.WANTED_COLUMNS)} and options {sorted(self.OPTION_DEFAULTS)}"
            )
        opts = {**self.OPTION_DEFAULTS, **options}
        with reuse_freed_memory():  # one block for counting and tests: the heap is trimmed once, at the end
            if data is not None or any(v is not None for v in columns.values()):
                self.add_batch(data=data, use_probabilities=use_probabilities, **columns)
            store = getattr(self, "_counts", None) or self._new_store()
            self._counts = None
            result = self._compute_counts(store, opts)
        result["summary"] = {
            **store.summary(),
            **result.get("summary", {}),
            "options": {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in opts.items()},
            "use_probabilities": use_probabilities,
        }
        return result

    @abc.abstractmethod
    def _compute_counts(self, store: CountStore, opts: dict[str, Any]) -> dict[str, Any]:
        """The metric's tables from the accumulated counts."""
