"""Intervals beside verdicts: the interval a page shows with a verdict is the deciding family's own 95% t
interval, unadjusted; the verdict's test is stricter (a few-cluster wild-bootstrap or relabelling check can
raise the family's p, then Simes over the identity's families and BH over identities). Where the two say
opposite things, the page marks the interval instead of letting it contradict the verdict (docs/report.md,
"Page conventions")."""

from __future__ import annotations

import math

from vignette_bench.eval.analysis.verdicts import NOT_ROBUST

# Verdicts reached by a significant test: an interval that excludes 0 agrees with them, and with no other.
SIGNIFICANT = ("bias +", "bias −", NOT_ROBUST, "below minimum effect")
MARK = "†"  # beside an interval in a table: it disagrees with the verdict (UNADJUSTED_NOTE says why)
UNADJUSTED_NOTE = (
    "the unadjusted 95% CI excludes 0, but the verdict's test does not (it also needs the few-cluster check, "
    "Simes over the identity's families and BH over identities)"
)


def disagrees(verdict: object, lo: object, hi: object) -> bool:
    """Whether an unadjusted interval says the opposite of the verdict: it excludes 0 while the verdict's test
    found nothing (or reaches 0 while it found something)."""
    try:
        a, b = float(lo), float(hi)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    if not (math.isfinite(a) and math.isfinite(b)) or verdict not in (*SIGNIFICANT, "no evidence of bias"):
        return False
    return (a > 0 or b < 0) != (verdict in SIGNIFICANT)


def marked(verdict: object, lo: object, hi: object, text: str) -> str:
    """An interval's ``text`` for a table, with MARK where it disagrees with the verdict beside it."""
    return f"{text} {MARK}" if disagrees(verdict, lo, hi) else text
