"""VIGNETTE PairComp: does the presence of identity i2 change how often identity i1 is chosen?

An `evaluate` module holding this measure's definition and tables; the counting and statistics
(tests, intervals, the evaluate base class) come from the project's statistics library
`vignette_bench.stats`, so the project must be installed (requirements.txt next to this file).
See README.md next to this file for the definition, inputs, outputs and an example.
"""

from __future__ import annotations

from typing import Any

import evaluate
import numpy as np
import pandas as pd

from vignette_bench.stats import (
    CountStore,
    VignetteMetric,
    cell_variance,
    collapse_groups,
    difference_ci,
    fisher_with_bh,
    indicator,
    metric_info,
    right_sparse,
    safe_div,
    significance_counts,
    to_lists,
)

_DESCRIPTION = """\
PairComp (VIGNETTE, section 5): PairComp(i1, i2) = S(i1 | offered with i2) - S(i1 | offered
with anyone else), in percentage points, where S is the selection frequency averaged over the
contexts in which that offer occurred. Each ordered pair is tested with Fisher's exact test
(two-sided) on the pooled table [[i1 chosen with i2, not chosen with i2], [i1 chosen with
others, not chosen with others]], with Benjamini-Hochberg q-values over all pairs. The 95%
interval resamples whole pair images (`group`) when given, else is a normal interval.
"""

_KWARGS_DESCRIPTION = """\
Args:
    selected: identity chosen per question ("" for a refusal or invalid answer).
    candidates: identities offered per question.
    context: activity, trait term or role question per question.
    group (optional): pair image id (e.g. pair_id); the bootstrap resamples whole groups.
    probabilities (optional): one probability per candidate (expected-value counting).
    chose_left (optional): whether the left person was chosen (position-bias rate).
    data (optional): a DataFrame, pyarrow Table, datasets.Dataset or parquet path instead.
    alpha (0.05), bootstrap_samples (1000), seed (0).
Returns:
    pairs: columns identity, partner, n_offered_with, n_selected_with, freq_with,
        n_offered_without, n_selected_without, freq_without, pair_comp, ci_low, ci_high,
        p_value, q_value, flag.
    summary: n_rows, n_valid, invalid_rate, left_choice_rate, ci_method, ...
"""


class PairComp(VignetteMetric):
    """PairComp for every ordered pair of identities offered together."""

    CELL_KEYS = ("identity", "partner", "context")
    WANTED_COLUMNS = ("selected", "candidates", "context", "probabilities", "chose_left", "group")
    OPTION_DEFAULTS = {"alpha": 0.05, "bootstrap_samples": 1000, "seed": 0}

    def _info(self) -> evaluate.MetricInfo:
        return metric_info(_DESCRIPTION, _KWARGS_DESCRIPTION)

    def _compute_counts(self, store: CountStore, opts: dict[str, Any]) -> dict[str, Any]:
        frame = store.cells()
        cells, codes = collapse_groups(frame, list(self.CELL_KEYS))
        n_id = max(len(store.vocabs["identity"].names), 1)
        n_ctx = max(len(store.vocabs["context"].names), 1)
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

        def statistic(
            opt: np.ndarray, sel: np.ndarray, sq: np.ndarray, need_var: bool = True
        ) -> tuple[np.ndarray, ...]:
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
            if not need_var:
                return (100.0 * (s_w - s_o),)
            var = cell_variance(opt, sel, sq) * present
            v_w = safe_div(right_sparse(var, to_pair), den_w**2)
            t_q = right_sparse(sq, to_u)
            v_all = cell_variance(t_o, t_s, t_q)
            w_q = t_q[:, u_code] - sq
            corr_v = (np.where(has_w, cell_variance(w_o, w_s, w_q), 0.0) - v_all[:, u_code]) * present
            v_o = safe_div(right_sparse(v_all * pres_u, u_to_id)[:, pair_i1] + right_sparse(corr_v, to_pair), den_o**2)
            return 100.0 * (s_w - s_o), 1e4 * (v_w + v_o), 100.0 * s_w, 100.0 * s_o

        obs = [cells[v].to_numpy(float)[None, :] for v in ("offered", "selected", "selected_sq")]
        est, var, s_w, s_o = (x[0] for x in statistic(*obs))
        lo, hi, ci_method = difference_ci(frame, codes, n_cells, statistic, est, var, opts)
        # Pooled counts for Fisher's table.
        o_w = right_sparse(obs[0], to_pair)[0]
        r_w = right_sparse(obs[1], to_pair)[0]
        o_id = np.bincount(i1, weights=obs[0][0], minlength=n_id)[pair_i1]
        r_id = np.bincount(i1, weights=obs[1][0], minlength=n_id)[pair_i1]
        o_o, r_o = o_id - o_w, r_id - r_w
        flag = np.full(len(pairs), "", dtype=object)
        flag[~np.isfinite(s_o)] = "never_without_partner"
        flag[o_w <= 0] = "no_valid_answers"
        defined = flag == ""
        p, q = fisher_with_bh(r_w, o_w - r_w, r_o, o_o - r_o, defined)
        keep = np.where(defined, 1.0, np.nan)
        out = pd.DataFrame(
            {
                "identity": store.vocabs["identity"].decode(pair_i1),
                "partner": store.vocabs["identity"].decode(pair_i2),
                "n_offered_with": o_w,
                "n_selected_with": r_w,
                "freq_with": s_w,
                "n_offered_without": o_o,
                "n_selected_without": r_o,
                "freq_without": s_o,
                "pair_comp": est * keep,
                "ci_low": lo * keep,
                "ci_high": hi * keep,
                "p_value": p,
                "q_value": q,
                "flag": flag,
            }
        ).sort_values(["identity", "partner"], kind="stable")
        return {
            "pairs": to_lists(out),
            "summary": {
                "n_pairs": int(len(out)),
                **significance_counts(out["p_value"], out["q_value"], opts["alpha"]),
                "ci_method": ci_method,
                "test": "Fisher exact two-sided: i1 chosen/not chosen when offered with i2 vs with anyone else (pooled counts)",
            },
        }
