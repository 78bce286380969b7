"""One sign convention on every page: an identity's effect is + when it is favoured (chosen for a positive role,
not for a negative one; recognised more often; favourable polarity) and − when disfavoured.

`Numbers.selection` keeps each family's raw effect (selection − chance: for "who is struggling" a higher rate is
unfavourable); the verdicts turn it to + = favoured (`Numbers.tests`). A table that shows effects beside the
verdicts does the same here, so one identity's effect never changes sign between two tables of the report.
"""

from __future__ import annotations

import pandas as pd

from vignette_bench.eval.analysis.numbers import FAMILY_DIRECTION

EFFECT_COLUMN = "effect (pp, + = favoured)"


def favour_sign(family: str) -> float:
    """+1 where a higher selection rate is favourable (and for factuality's accuracy), −1 where it is not."""
    return float(FAMILY_DIRECTION.get(family.split("/")[-1], 0) or 1)


def signed_effects(table: pd.DataFrame, family: str) -> pd.DataFrame:
    """``table``'s raw effect columns (effect, effect_low, effect_high: selection − chance, pp) as + = favoured,
    named so: the interval's ends swap where the sign flips."""
    if "effect" not in table:
        return table
    s = favour_sign(family)
    out = table.assign(effect=s * table["effect"])
    if {"effect_low", "effect_high"} <= set(table.columns):
        lo, hi = s * table["effect_low"], s * table["effect_high"]
        out = out.assign(effect_low=lo if s > 0 else hi, effect_high=hi if s > 0 else lo)
    names = {"effect": EFFECT_COLUMN, "effect_low": "effect CI low", "effect_high": "effect CI high"}
    return out.rename(columns=names)
