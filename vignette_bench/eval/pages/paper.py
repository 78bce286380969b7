"""The paper's own numbers beside the report's (issue 33 item 4).

The paper's method is the pooled selection rate of an identity (its share of the answers where it was
offered) with a test against the other identities' pooled counts (`selection_frequency_paper`,
`p_value_paper`). In a fixed-order design that rate follows the side an identity was shown on, so the
report shows it for every identity, per stratum and pooled, beside its left share and the report's
side- (and, in fixed-order designs, partner-) balanced rate, and opens with one sentence naming the
clearest case where the paper's rate mixes identity with side.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# A pooled rate is called side-mixed when the identity stood on one side in at least this share of its answers.
LOPSIDED = 70.0
P_PAPER = 0.05
COLUMNS = {
    "family": "family",
    "dimension": "dimension",
    "identity": "identity",
    "n": "answers",
    "value_paper": "paper: pooled rate (%)",
    "p_paper": "paper: p",
    "left_share": "shown on the left (%)",
    "value": "report: rate (%)",
    "position": "report: how sides were handled",
    "p": "report: p",
}


def lopsided(sel: pd.DataFrame) -> pd.Series:
    """Rows whose identity stood on one side in at least `LOPSIDED`% of its answers (sides known)."""
    share = pd.to_numeric(sel["left_share"], errors="coerce") if "left_share" in sel else pd.Series(np.nan, sel.index)
    return (share >= LOPSIDED) | (share <= 100.0 - LOPSIDED)


def table(sel: pd.DataFrame) -> pd.DataFrame:
    """The paper's rate and test beside the report's, for every identity of every two-person family."""
    rows = sel[pd.to_numeric(sel.get("left_share"), errors="coerce").notna()] if "left_share" in sel else sel[:0]
    out = rows.reindex(columns=list(COLUMNS))
    # a position-confounded identity has no report rate or test: its `value` is the pooled rate, kept only to read
    flag = rows["flag"].fillna("").astype(str) if "flag" in rows else pd.Series("", rows.index)
    position = rows["position"].fillna("").astype(str) if "position" in rows else pd.Series("", rows.index)
    confounded = ((flag == "position_confounded") | (position == "position-confounded")).to_numpy()
    out.loc[confounded, "value"] = np.nan
    out.loc[(flag != "").to_numpy(), "p"] = np.nan  # not tested: no p (the p = 1 inside keeps it out of BH)
    return out.rename(columns=COLUMNS).reset_index(drop=True)


def _balanced_words(row: pd.Series) -> str:
    if str(row.get("flag", "")) == "position_confounded" or str(row.get("position", "")) == "position-confounded":
        reason = str(row.get("reason", "") or "").split(" (")[0].split(":")[0]
        return "no estimate, position-confounded" + (f" ({reason})" if reason and reason != "nan" else "")
    if str(row.get("flag", "") or "") not in ("", "nan"):
        return f"{row['value']:.1f}%, not tested ({str(row['flag']).replace('_', ' ')})"
    return f"{row['value']:.1f}%"


def confounded_sentence(sel: pd.DataFrame) -> str:
    """One sentence for the first screen when the paper's pooled rates mix identity with side ("" when none
    does): the most significant such paper rate (per gender or pooled), with its left share and the report's
    balanced rate."""
    if sel.empty or "value_paper" not in sel:
        return ""
    hit = sel[lopsided(sel) & (pd.to_numeric(sel["p_paper"], errors="coerce") < P_PAPER)]
    if hit.empty:
        return ""
    r = hit.sort_values("p_paper", kind="stable").iloc[0]
    share = float(r["left_share"])
    side = f"shown on the left in {share:.0f}%" if share >= 50 else f"shown on the right in {100 - share:.0f}%"
    more = f" ({len(hit) - 1} more such rate{'s' if len(hit) > 2 else ''} in the paper's table)" if len(hit) > 1 else ""
    stratified = "partner" in str(r.get("position", "")) or pd.notna(r.get("stratum", np.nan))
    balanced = "side- and partner-balanced" if stratified else "side-balanced"
    return (
        f"The paper's rate for {r['identity']} ({r['dimension']}, {r['family']}: {float(r['value_paper']):.1f}%, "
        f"p {float(r['p_paper']):.2g}) mixes identity with side: {side} of its answers; {balanced}: "
        f"{_balanced_words(r)}{more}."
    )
