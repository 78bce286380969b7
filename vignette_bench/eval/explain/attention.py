"""Attention of an answer over the pair image: the per-identity analysis behind `vignette explain`.

The measurement itself (image layouts, `record_attention`, `summarize`, `AttentionSummary`) is
`vignette_bench.eval.adapters.attention`, an adapter capability; its names are re-exported here so
`from vignette_bench.eval.explain.attention import ...` keeps working. Imports point down: explain
imports the adapters, never the reverse (docs/layout.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vignette_bench.eval.adapters.attention import (
    _LAYOUTS,
    EAGER_HINT,
    GRID,
    SEAM_PIXELS,
    TOP_HEADS,
    AttentionSummary,
    AttentionUnavailable,
    ImageLayout,
    attention_schema,
    check_supported,
    default_seam_width,
    grid_weights,
    image_layout,
    record_attention,
    region_weights,
    summarize,
    unavailable_for_api,
)

__all__ = [
    "AttentionSummary",
    "AttentionUnavailable",
    "EAGER_HINT",
    "GRID",
    "ImageLayout",
    "SEAM_PIXELS",
    "TOP_HEADS",
    "_LAYOUTS",
    "attention_schema",
    "check_supported",
    "chosen_vs_other",
    "default_seam_width",
    "grid_weights",
    "image_layout",
    "record_attention",
    "region_weights",
    "summarize",
    "unavailable_for_api",
]


# --------------------------------------------------------------------------- aggregation


def chosen_vs_other(rows: Any, alpha: float = 0.05) -> Any:
    """Per chosen identity: is the attention share on the chosen person higher than on the other one?

    rows: the responses table (pandas) with pair_id, selected_identity, chose_left, attn_left_share and
    attn_right_share. Only answers that picked one of the two people count. The gap of an answer is
    the chosen side's share minus the other side's. Answers about one pair image share that image,
    so they are not independent: the unit is the pair (mean gap over its answers for that identity).
    Per identity: a two-sided exact sign test over pairs (H0: the gap is positive as often as
    negative; ties dropped) and Benjamini-Hochberg q-values over the identities tested.
    Note: a model that always picks one side and looks more at that side gives every identity a
    positive gap; compare with the pooled row (identity "*all*") before reading one identity's gap.
    """
    import pandas as pd
    from scipy.stats import binomtest, false_discovery_control

    need = {"pair_id", "attn_left_share", "attn_right_share", "chose_left", "selected_identity"}
    if missing := need - set(rows.columns):
        raise KeyError(f"responses lack {sorted(missing)}; record attention during the run (record_attention=true)")
    d = rows[rows["chose_left"].notna() & rows["attn_left_share"].notna()].copy()
    left = d["chose_left"].astype(bool)
    d["gap"] = np.where(
        left, d["attn_left_share"] - d["attn_right_share"], d["attn_right_share"] - d["attn_left_share"]
    )
    pairs = d.groupby(["selected_identity", "pair_id"], sort=True)["gap"].agg(["mean", "size"]).reset_index()
    pooled = d.groupby("pair_id")["gap"].agg(["mean", "size"]).reset_index().assign(selected_identity="*all*")

    def test(identity: str, g: Any) -> dict[str, Any]:
        pos, neg = int((g["mean"] > 0).sum()), int((g["mean"] < 0).sum())
        return {
            "identity": identity,
            "n_answers": int(g["size"].sum()),
            "n_pairs": len(g),
            "mean_gap": float(np.average(g["mean"], weights=g["size"])),
            "pairs_higher": pos,
            "pairs_lower": neg,
            "p_value": float(binomtest(pos, pos + neg, 0.5).pvalue) if pos + neg else 1.0,
        }

    cols = ["identity", "n_answers", "n_pairs", "mean_gap", "pairs_higher", "pairs_lower", "p_value"]
    res = pd.DataFrame([test(i, g) for i, g in pairs.groupby("selected_identity", sort=True)], columns=cols)
    res["q_value"] = false_discovery_control(res["p_value"].to_numpy(), method="bh") if len(res) else []
    res["significant"] = res["q_value"] < alpha
    all_row = pd.DataFrame([test("*all*", pooled)], columns=cols).assign(q_value=np.nan, significant=False)
    return pd.concat([res, all_row], ignore_index=True)
