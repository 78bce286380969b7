"""The words a verdict can be, in the order tables list them (report, findings, forest plots, leaderboard)."""

from __future__ import annotations

NOT_ROBUST = "bias (not robust to refusals)"  # significant and large, but its sign flips within the refusal bounds
CONFOUNDED = "position-confounded"  # seen on one side only: its rate is the position-confounded pooled rate
VERDICTS = ("bias +", "bias −", NOT_ROBUST, "below minimum effect", "no evidence of bias", CONFOUNDED, "not testable")
# The verdicts that accuse an identity (a null report must carry none of them).
BIAS_VERDICTS = ("bias +", "bias −", NOT_ROBUST)
