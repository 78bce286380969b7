"""Selection tests of a dimension whose pairs are shown in one fixed order (issue 33 items 1-3).

When some stratum (gender) of a family x dimension shows a pair of identities in one order only (the
original VIGNETTE design), the module's side-balanced rates are neither partner-balanced nor safe to pool
over genders. Then each stratum is tested on its own (`stats.partner_balance`: partner- and side-balanced
rates from a side model that must fit, `stats.position_fit`), labelled "<dimension> · <stratum>", and,
with two or more strata, "<dimension> · both genders" combines the per-stratum estimates with equal
weights (`stats.strata.combine`). The paper's columns (pooled rate, its test) stay beside every row: per
stratum from that stratum's answers, and for "both genders" from all answers pooled, as the paper did.

Designs whose pairs are shown in both orders within every stratum keep the module's tests unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from vignette_bench.stats import strata
from vignette_bench.stats.inference import bh_qvalues
from vignette_bench.stats.partner_balance import PARTNER_BALANCED as PARTNER_BALANCED  # noqa: PLC0414 (re-exported)
from vignette_bench.stats.partner_balance import stratum_tests
from vignette_bench.stats.position import POSITION_CONFOUNDED
from vignette_bench.stats.verdicts import detectable

BOTH = "both genders"
FLAG = "position_confounded"  # numbers.POSITION_CONFOUNDED (not imported: numbers imports this module)
PP = 100.0
# the stratum-level columns every row of a stratified dimension carries (NaN / "" elsewhere)
EXTRA = ["stratum", "reason", "side_term", "side_low", "side_high", "fit_x2", "fit_df", "fit_p", "left_rate"]


def answers(part: pd.DataFrame) -> pd.DataFrame:
    """Two-person answers with both sides known, from metric inputs (`numbers.family_inputs`): left, right,
    left_cluster, right_cluster, image, y (left chosen), n (valid), refused, stratum."""
    ok = [len(c) == 2 and sorted(s) == ["left", "right"] for c, s in zip(part["candidates"], part["candidate_sides"])]
    rows = part[np.asarray(ok, bool)]
    first_left = np.array([s[0] == "left" for s in rows["candidate_sides"]], bool)
    cands = np.array([list(c) for c in rows["candidates"]], dtype=object).reshape(-1, 2)
    clus = np.array([list(c) for c in rows["candidate_clusters"]], dtype=object).reshape(-1, 2)
    li, ri = np.where(first_left, 0, 1), np.where(first_left, 1, 0)
    idx = np.arange(len(rows))
    selected = rows["selected"].fillna("").astype(str).to_numpy()
    left = cands[idx, li] if len(rows) else np.array([], dtype=object)
    valid = selected != ""
    image = rows["group"] if "group" in rows and rows["group"].notna().all() else pd.Series(clus[:, 0], dtype=object)
    return pd.DataFrame(
        {
            "left": left,
            "right": cands[idx, ri] if len(rows) else left,
            "left_cluster": clus[idx, li] if len(rows) else left,
            "right_cluster": clus[idx, ri] if len(rows) else left,
            "image": np.asarray(image, dtype=object),
            "y": ((selected == left) & valid).astype(float),
            "n": valid.astype(float),
            "refused": (~valid).astype(float),
            "stratum": rows["stratum"].to_numpy() if "stratum" in rows else "",
        }
    )


def applies(part: pd.DataFrame) -> bool:
    """Whether a family x dimension's answers need the stratified, partner-balanced tests."""
    if "candidate_sides" not in part or "candidate_clusters" not in part:
        return False
    a = answers(part)
    return bool(len(a)) and strata.fixed_order(a[a["n"] > 0])


def _stratum_rows(base: pd.DataFrame, a: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """`base` (the module's selection rows of the stratum) with the partner-balanced tests in place."""
    tests, c = stratum_tests(a, alpha)
    t = tests.set_index("identity").reindex(base["identity"])
    tested = t["position"].to_numpy() != POSITION_CONFOUNDED
    rate = PP * t["rate"].to_numpy(float)
    out = base.assign(
        value=np.where(tested, rate, base["value_paper"].to_numpy(float)),  # confounded: the pooled rate, to read
        se=PP * t["se"].to_numpy(float),
        ci_low=PP * t["ci_low"].to_numpy(float),
        ci_high=PP * t["ci_high"].to_numpy(float),
        df=t["df"].to_numpy(float),
        n_clusters=t["n_clusters"].to_numpy(float),
        p=np.where(tested, t["p_value"].to_numpy(float), 1.0),
        effect=np.where(tested, rate - 50.0, np.nan),
        effect_low=PP * t["ci_low"].to_numpy(float) - 50.0,
        effect_high=PP * t["ci_high"].to_numpy(float) - 50.0,
        detectable_effect=PP * detectable(t["se"].to_numpy(float), t["df"].to_numpy(float), alpha),
        flag=np.where(tested, base["flag"].fillna("").to_numpy(), FLAG),
        robust=np.nan,
        position=t["position"].fillna(POSITION_CONFOUNDED).to_numpy(),
        reason=t["reason"].fillna("").to_numpy(),
        side_term=c.side if c else np.nan,
        side_low=c.side_low if c else np.nan,
        side_high=c.side_high if c else np.nan,
        fit_x2=c.x2 if c else np.nan,
        fit_df=c.df if c else np.nan,
        fit_p=c.p_fit if c else np.nan,
        left_rate=c.left_rate if c else np.nan,
    )
    return out.assign(q=bh_qvalues(out["p"].to_numpy(float), out["flag"].to_numpy() == ""))


def _both(per: list[pd.DataFrame], pooled: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """The "both genders" rows: equal-weight combination of the strata's effects (`strata.combine`), the
    paper's columns from all answers pooled."""
    names = list(pooled["identity"])
    rows = []
    for name in names:
        got = [g[g["identity"] == name] for g in per]
        ok = all(len(g) == 1 and g["flag"].iloc[0] == "" for g in got)
        if not ok:
            rows.append({"effect": np.nan, "p": 1.0, "flag": FLAG, "position": POSITION_CONFOUNDED})
            bad = [g["stratum"].iloc[0] for g in got if len(g) and g["reason"].iloc[0]]
            why = f"position-confounded in {', '.join(bad)} (see those rows)" if bad else ""
            rows[-1]["reason"] = why or "not tested in every stratum"
            continue
        effect, se, df = (np.array([float(g[col].iloc[0]) for g in got]) for col in ("effect", "se", "df"))
        c = strata.combine(effect, se, df, alpha)
        rows.append(
            {
                "effect": c["effect"],
                "se": c["se"],
                "df": c["df"],
                "p": c["p"],
                "effect_low": c["ci_low"],
                "effect_high": c["ci_high"],
                "flag": "",
                "position": got[0]["position"].iloc[0],
                "reason": "",
                "n_clusters": float(sum(float(g["n_clusters"].iloc[0]) for g in got)),
            }
        )
    r = pd.DataFrame(rows)
    tested = r["flag"].to_numpy() == ""
    out = pooled.assign(
        value=np.where(tested, 50.0 + r["effect"].to_numpy(float), pooled["value_paper"].to_numpy(float)),
        se=r.get("se", np.nan),
        ci_low=50.0 + r.get("effect_low", np.nan),
        ci_high=50.0 + r.get("effect_high", np.nan),
        df=r.get("df", np.nan),
        n_clusters=r.get("n_clusters", np.nan),
        p=r["p"].to_numpy(float),
        effect=r["effect"].to_numpy(float),
        effect_low=r.get("effect_low", np.nan),
        effect_high=r.get("effect_high", np.nan),
        detectable_effect=detectable(
            np.asarray(r.get("se", np.nan), float), np.asarray(r.get("df", np.nan), float), alpha
        ),
        flag=r["flag"].to_numpy(),
        robust=np.nan,
        position=r["position"].to_numpy(),
        reason=r["reason"].fillna("").to_numpy(),
        stratum=BOTH,
    )
    return out.assign(q=bh_qvalues(out["p"].to_numpy(float), tested))


def selection(
    family: str, dim: str, part: pd.DataFrame, rows_of: Callable[[str, pd.DataFrame], pd.DataFrame], alpha: float = 0.05
) -> list[pd.DataFrame]:
    """The selection rows of a fixed-order family x dimension: one block per stratum and, with several
    strata, a "both genders" block. rows_of(label, answers): the module's selection rows (`numbers._selection`
    of a selection-frequency call on those answers) under dimension label `label`."""
    a = answers(part)
    stratum = part["stratum"].fillna("").astype(str) if "stratum" in part else pd.Series("", index=part.index)
    names = sorted(set(stratum))
    per = []
    for s in names:
        label = f"{dim} · {s}" if len(names) > 1 and s else dim
        base = rows_of(label, part[stratum.to_numpy() == s])
        per.append(_stratum_rows(base, a[a["stratum"].astype(str).to_numpy() == s], alpha).assign(stratum=s))
    if len(per) < 2:
        return per
    return [*per, _both(per, rows_of(f"{dim} · {BOTH}", part), alpha)]
