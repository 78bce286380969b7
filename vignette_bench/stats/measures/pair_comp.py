"""The pair comp measure: its tables and tests from counted answers (no `evaluate`).

The evaluate module vignette_bench/metrics/pair_comp/pair_comp.py is a thin
shell over this class;
its README.md there is the card (definition, inputs, outputs, an example).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from vignette_bench.stats import (
    CountStore,
    bh_qvalues,
    check_clustering,
    check_one_sided,
    clustering_label,
    fisher_with_bh,
    indicator,
    right_sparse,
    safe_div,
    side_counts,
    significance_counts,
    split_contrasts,
    to_lists,
)
from vignette_bench.stats.measure import Measure


class PairCompMeasure(Measure):
    """PairComp for every ordered pair of identities offered together."""

    CELL_KEYS = ("identity", "partner", "context")
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
    # The paper's columns need per-context sums; the tests per (pair, cluster, side): not their product.
    VIEWS = (CELL_KEYS, ("cluster", "pcluster", "side", "identity", "partner"))
    VIEW_VALUES = {VIEWS[1]: ("offered", "selected")}  # the tests' sums

    def _compute_counts(self, store: CountStore, opts: dict[str, Any]) -> dict[str, Any]:
        alpha = float(opts["alpha"])
        two_way = check_clustering(opts["clustering"])
        frame = store.cells(self.VIEWS[1])
        crossed = two_way and bool((frame["pcluster"] != frame["cluster"]).any())
        cells = store.cells(self.CELL_KEYS)
        paper = _paper(cells, len(store.vocabs["identity"].names), len(store.vocabs["context"].names))
        # The verdict: i1's offers split into with i2 / with anyone else, side-balanced, by cluster.
        # unique per (identity, partner, cluster, side, pcluster), and pcluster is cluster unless crossed
        by_cluster = frame[
            ["identity", "partner", "cluster", "side", *(["pcluster"] if crossed else []), "selected", "offered"]
        ]
        tests = split_contrasts(
            by_cluster.rename(columns={"selected": "y", "offered": "n", "pcluster": "partner_cluster"}),
            by_cluster["identity"].to_numpy(),
            by_cluster["partner"].to_numpy(),
            paper["pair_i1"],
            paper["pair_i2"],
            alpha,
            two_way=crossed,
            match_sides=check_one_sided(opts["one_sided"]),
            max_rows=2_000_000,  # 10M answers: peak 2.5 -> 1.6 GB; no result depends on the chunks
        ).reindex(np.arange(len(paper["pair_i1"])))
        flag = paper["flag"].copy()
        flag[flag == ""] = tests["flag"].fillna("missing_component").to_numpy(object)[flag == ""]
        tested = flag == ""
        p = np.where(tested, tests["p_value"].fillna(1.0).to_numpy(float), 1.0)
        est = tests["estimate"].to_numpy(float)
        out = pd.DataFrame(
            {
                "identity": store.vocabs["identity"].decode(paper["pair_i1"]),
                "partner": store.vocabs["identity"].decode(paper["pair_i2"]),
                "pair_comp": 100.0 * np.where(paper["flag"] == "", est, np.nan),
                "se": 100.0 * tests["se"].to_numpy(float),
                "ci_low": 100.0 * tests["ci_low"].to_numpy(float),
                "ci_high": 100.0 * tests["ci_high"].to_numpy(float),
                "df": tests["df"].to_numpy(float),
                "n_clusters": tests["n_clusters"].fillna(0).to_numpy(int),
                "p_value": p,
                "q_value": bh_qvalues(p, tested=tested),
                "flag": flag,
                "sides": tests["sides"].fillna("").to_numpy(object),
                **{k: paper[k] for k in PAPER_COLUMNS},
            }
        ).sort_values(["identity", "partner"], kind="stable")
        balanced = tests["side_balanced"].fillna(False).astype(bool)
        return {
            "pairs": to_lists(out),
            "summary": {
                "n_pairs": int(len(out)),
                **significance_counts(out["p_value"], out["q_value"], alpha),
                "n_significant_paper": int((out["q_value_paper"] < alpha).sum()),
                "side_balanced": bool(len(out) and balanced.all()),
                **side_counts(out["sides"]),
                "clustering": clustering_label(store.cluster_unit or "rows", crossed),
                "ci_method": "cluster-robust t interval (CR2, Bell-McCaffrey df)",
                "test": "cluster-robust t (working-model CR2, Bell-McCaffrey df): side-balanced rate of i1 with i2 "
                "minus with anyone else, vs 0; BH over pairs",
                "test_paper": "Fisher exact two-sided: i1 chosen/not chosen when offered with i2 vs with anyone else "
                "(pooled counts)",
            },
        }


PAPER_COLUMNS = (
    "n_offered_with",
    "n_selected_with",
    "freq_with",
    "n_offered_without",
    "n_selected_without",
    "freq_without",
    "pair_comp_paper",
    "p_value_paper",
    "q_value_paper",
)


def _paper(cells: pd.DataFrame, n_id: int, n_ctx: int) -> dict[str, np.ndarray]:
    """The VIGNETTE authors' computation, unchanged: context-averaged rates, Fisher on pooled counts."""
    n_id, n_ctx = max(n_id, 1), max(n_ctx, 1)
    i1 = cells["identity"].to_numpy()
    i2 = cells["partner"].to_numpy()
    ctx = cells["context"].to_numpy()
    n_cells = len(cells)
    pair_code, pairs = pd.factorize(i1 * n_id + i2)
    u_code, us = pd.factorize(i1 * n_ctx + ctx)
    pair_i1, pair_i2 = pairs // n_id, pairs % n_id
    to_pair = indicator(np.arange(n_cells), pair_code, (n_cells, len(pairs)))
    to_u = indicator(np.arange(n_cells), u_code, (n_cells, len(us)))
    u_to_id = indicator(np.arange(len(us)), us // n_ctx, (len(us), n_id))
    opt, sel = (cells[v].to_numpy(float)[None, :] for v in ("offered", "selected"))
    present = opt > 0
    rate = safe_div(sel, opt, 0.0)
    den_w = right_sparse(present.astype(float), to_pair)
    s_w = safe_div(right_sparse(rate, to_pair), den_w)
    # i1's answers per context with everyone; "without i2" removes the i2 cells from these.
    t_o, t_s = right_sparse(opt, to_u), right_sparse(sel, to_u)
    pres_u = (t_o > 0).astype(float)
    r_all = safe_div(t_s, t_o, 0.0)
    base_num = right_sparse(r_all, u_to_id)[:, pair_i1]
    base_den = right_sparse(pres_u, u_to_id)[:, pair_i1]
    w_o = t_o[:, u_code] - opt
    w_s = t_s[:, u_code] - sel
    has_w = w_o > 0.5
    # A context where i1 met only i2 leaves the "without" average (drop); others swap rates.
    corr = (safe_div(w_s, w_o, 0.0) - r_all[:, u_code]) * present
    drop = (present & ~has_w).astype(float)
    den_o = base_den - right_sparse(drop, to_pair)
    s_o = safe_div(base_num + right_sparse(corr, to_pair), den_o)
    s_w, s_o = s_w[0], s_o[0]
    # Pooled counts for Fisher's table.
    o_w = right_sparse(opt, to_pair)[0]
    r_w = right_sparse(sel, to_pair)[0]
    o_id = np.bincount(i1, weights=opt[0], minlength=n_id)[pair_i1]
    r_id = np.bincount(i1, weights=sel[0], minlength=n_id)[pair_i1]
    o_o, r_o = o_id - o_w, r_id - r_w
    flag = np.full(len(pairs), "", dtype=object)
    flag[~np.isfinite(s_o)] = "never_without_partner"
    flag[o_w <= 0] = "no_valid_answers"
    defined = flag == ""
    p, q = fisher_with_bh(r_w, o_w - r_w, r_o, o_o - r_o, defined)
    keep = np.where(defined, 1.0, np.nan)
    return {
        "pair_i1": pair_i1,
        "pair_i2": pair_i2,
        "flag": flag,
        "n_offered_with": o_w,
        "n_selected_with": r_w,
        "freq_with": 100.0 * s_w,
        "n_offered_without": o_o,
        "n_selected_without": r_o,
        "freq_without": 100.0 * s_o,
        "pair_comp_paper": 100.0 * (s_w - s_o) * keep,
        "p_value_paper": p,
        "q_value_paper": q,
    }
