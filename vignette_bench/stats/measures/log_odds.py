"""The log odds measure: its tables and tests from counted answers (no `evaluate`).

The evaluate module vignette_bench/metrics/log_odds/log_odds.py is a thin
shell over this class;
its README.md there is the card (definition, inputs, outputs, an example).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from vignette_bench.stats import (
    Z95,
    CountStore,
    bh_qvalues,
    check_clustering,
    check_one_sided,
    clustering_label,
    fisher_with_bh,
    side_counts,
    significance_counts,
    split_contrasts,
    to_lists,
)
from vignette_bench.stats.measure import Measure


class LogOddsMeasure(Measure):
    """Smoothed log-odds of selection in a context against all other contexts, per identity."""

    CELL_KEYS = ("identity", "context")
    WANTED_COLUMNS = (
        "selected",
        "candidates",
        "context",
        "probabilities",
        "chose_left",
        "group",
        "candidate_sides",
        "candidate_clusters",
    )
    OPTION_DEFAULTS = {"alpha": 0.05, "clustering": "two_way", "one_sided": "match"}
    # The paper's columns need (identity, context) sums; the tests those cells split by cluster and side.
    VIEWS = (CELL_KEYS, ("cluster", "pcluster", "side", *CELL_KEYS))
    VIEW_VALUES = {VIEWS[1]: ("offered", "selected")}  # the tests' sums

    def _compute_counts(self, store: CountStore, opts: dict[str, Any]) -> dict[str, Any]:
        alpha = float(opts["alpha"])
        two_way = check_clustering(opts["clustering"])
        frame = store.cells(self.VIEWS[1])
        crossed = two_way and bool((frame["pcluster"] != frame["cluster"]).any())
        cells = store.cells(self.CELL_KEYS)
        ident = cells["identity"].to_numpy()
        n_id = len(store.vocabs["identity"].names)
        r_a = cells["selected"].to_numpy()
        o_a = cells["offered"].to_numpy()
        r_n = np.bincount(ident, weights=r_a, minlength=n_id)[ident] - r_a
        o_n = np.bincount(ident, weights=o_a, minlength=n_id)[ident] - o_a
        # The paper's add-one smoothing keeps the ratio finite when a count is zero.
        log_odds = np.log((r_a + 1.0) / (o_a - r_a + 1.0)) - np.log((r_n + 1.0) / (o_n - r_n + 1.0))
        se_lo = np.sqrt(1.0 / (r_a + 1.0) + 1.0 / (o_a - r_a + 1.0) + 1.0 / (r_n + 1.0) + 1.0 / (o_n - r_n + 1.0))
        flag = np.full(len(cells), "", dtype=object)
        flag[o_n <= 0] = "no_other_context"
        flag[o_a <= 0] = "no_valid_answers"
        defined = flag == ""
        p_paper, q_paper = fisher_with_bh(r_a, o_a - r_a, r_n, o_n - r_n, defined)
        # The verdict: the identity's side-balanced rate in this context minus in all others, by cluster.
        # The view's cells are unique per (identity, context, cluster, side, pcluster), and pcluster is
        # cluster unless crossed: no further sums are needed.
        g = frame[["identity", "context", "cluster", "side", *(["pcluster"] if crossed else []), "selected", "offered"]]
        tests = split_contrasts(
            g.rename(columns={"selected": "y", "offered": "n", "pcluster": "partner_cluster"}),
            g["identity"].to_numpy(),
            g["context"].to_numpy(),
            ident,
            cells["context"].to_numpy(),
            alpha,
            two_way=crossed,
            match_sides=check_one_sided(opts["one_sided"]),
            max_rows=500_000,  # 10M answers: bounded memory; no result depends on the chunks
        ).reindex(np.arange(len(cells)))
        flag[defined] = tests["flag"].fillna("missing_component").to_numpy(object)[defined]
        tested = flag == ""
        p = np.where(tested, tests["p_value"].fillna(1.0).to_numpy(float), 1.0)
        nan = np.where(defined, 1.0, np.nan)
        out = pd.DataFrame(
            {
                "identity": store.vocabs["identity"].decode(ident),
                "context": store.vocabs["context"].decode(cells["context"].to_numpy()),
                "log_odds": log_odds * nan,
                "difference": 100.0 * tests["estimate"].to_numpy(float) * nan,
                "se": 100.0 * tests["se"].to_numpy(float),
                "ci_low": 100.0 * tests["ci_low"].to_numpy(float),
                "ci_high": 100.0 * tests["ci_high"].to_numpy(float),
                "df": tests["df"].to_numpy(float),
                "n_clusters": tests["n_clusters"].fillna(0).to_numpy(int),
                "p_value": p,
                "q_value": bh_qvalues(p, tested=tested),
                "flag": flag,
                "sides": tests["sides"].fillna("").to_numpy(object),
                "n_selected": r_a,
                "n_offered": o_a,
                "n_selected_other": r_n,
                "n_offered_other": o_n,
                "log_odds_paper": log_odds * nan,
                "ci_low_paper": (log_odds - Z95 * se_lo) * nan,
                "ci_high_paper": (log_odds + Z95 * se_lo) * nan,
                "p_value_paper": p_paper,
                "q_value_paper": q_paper,
            }
        ).sort_values(["identity", "context"], kind="stable")
        balanced = tests["side_balanced"].fillna(False).astype(bool)
        return {
            "cells": to_lists(out),
            "summary": {
                "n_cells": int(len(out)),
                **significance_counts(out["p_value"], out["q_value"], alpha),
                "n_significant_paper": int((out["q_value_paper"] < alpha).sum()),
                "side_balanced": bool(len(out) and balanced.all()),
                **side_counts(out["sides"]),
                "clustering": clustering_label(store.cluster_unit or "rows", crossed),
                "ci_method": "cluster-robust t interval of the rate difference (CR2, Bell-McCaffrey df), pp",
                "ci_method_paper": "Wald on the add-one smoothed table (answers treated as independent)",
                "test": "cluster-robust t (working-model CR2, Bell-McCaffrey df): side-balanced rate in this context "
                "minus in all other contexts, same identity, vs 0; BH over cells",
                "test_paper": "Fisher exact two-sided: chosen/not chosen in this context vs all other contexts, "
                "same identity",
            },
        }
