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

from vignette_bench.eval.analysis.numbers import POSITION_CONFOUNDED as FLAG_CONFOUNDED
from vignette_bench.stats.position import POSITION_CONFOUNDED

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


def untested_blank(sel: pd.DataFrame) -> pd.DataFrame:
    """`sel` (columns flag, position, value, p, q) without the report's numbers it does not have: a
    position-confounded identity has no rate of the report's and an untested one (any flag) no test. Inside, the
    pooled rate is kept there to read and p = 1 keeps the row out of the corrections; on a page or in a CSV they
    would read as the report's."""
    flag = sel["flag"].fillna("").astype(str)
    confounded = (flag == FLAG_CONFOUNDED) | (sel["position"].fillna("").astype(str) == POSITION_CONFOUNDED)
    untested = flag != ""
    return sel.assign(value=sel["value"].mask(confounded), p=sel["p"].mask(untested), q=sel["q"].mask(untested))


def table(sel: pd.DataFrame) -> pd.DataFrame:
    """The paper's rate and test beside the report's, for every identity of every two-person family."""
    rows = sel[pd.to_numeric(sel.get("left_share"), errors="coerce").notna()] if "left_share" in sel else sel[:0]
    full = rows.reindex(columns=list(dict.fromkeys([*COLUMNS, "flag", "q"])))
    return untested_blank(full)[list(COLUMNS)].rename(columns=COLUMNS).reset_index(drop=True)


def _balanced_words(row: pd.Series) -> str:
    if str(row.get("flag", "")) == FLAG_CONFOUNDED or str(row.get("position", "")) == POSITION_CONFOUNDED:
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
