"""Verdict q-values when an identity is tested in several strata (issue 33 item 1).

In a stratified design an identity has several verdict rows (per gender and "both genders"), which are
one question asked of one identity. Counting them as separate identities in Benjamini–Hochberg lets one
real effect (three significant rows) loosen the threshold for every other identity, and in simulations
of the original design 12% of reports with one real effect then accused another identity. So the
identity is the unit of BH, its strata are tested inside it (Benjamini & Bogomolov 2014, selective
inference on families of hypotheses):

1. Simes over the identity's rows' p-values gives its group p; BH over the G groups gives the group q;
   R groups are selected (q < α).
2. Within a selected group its rows are tested by BH at level α R / G; a row's q is
   max(group q, within-group BH q x G / R).

A group of one row (no strata) keeps its group q, so designs without strata get exactly the q-values of
BH over identities.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from vignette_bench.stats import distributions
from vignette_bench.stats.multiplicity import simes


def two_level_q(p: np.ndarray, group: np.ndarray, alpha: float) -> np.ndarray:
    """Per row (its p and its group label), the two-level q-value described above."""
    p = np.asarray(p, float)
    codes, labels = pd.factorize(pd.Series(group, dtype=object))
    G = len(labels)
    if G == 0:
        return np.zeros(0)
    p_group = np.array([simes(p[codes == g]) for g in range(G)])
    q_group = distributions.bh_adjust(p_group)
    R = int((q_group < alpha).sum())
    out = q_group[codes].copy()
    for g in range(G):
        rows = np.flatnonzero(codes == g)
        if len(rows) > 1:
            within = distributions.bh_adjust(p[rows]) * G / max(R, 1)
            out[rows] = np.minimum(1.0, np.maximum(q_group[g], within))
    return out
