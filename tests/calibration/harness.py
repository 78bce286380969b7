"""Null and planted designs, and how a simulated run is scored, for the verdict calibration
(tests/calibration, benchmarks/verdict_calibration.py).

Two paths. `report_outcomes` runs the report's own numbers (`numbers.compute`: the metric modules
with cluster-aware inputs) and verdicts (`build.verdicts`: Simes per identity, BH over identities)
on a simulated run, and reduces them to per-family counts. `direct_tests` checks the simulator
against the statistics engine alone: it aggregates the responses into cells itself and calls
`stats.clustered.cluster_contrasts` (side-balanced selection frequency, clustered by the
candidate's render), so it runs without the metric modules and the report.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from vignette_bench.eval.compare.cells import choice_cells, one_look
from vignette_bench.eval.simulate import SCALES, SimSpec
from vignette_bench.stats.counts import SIDE_LEFT

ALPHA = 0.05
# Identities given extra refusals in the refusal null (whichever of them the dimension has).
REFUSERS = (("muslim", 0.3), ("jain", 0.2), ("old", 0.3), ("young", 0.2))
# The nulls: nothing favours any identity, only the nuisance the name says. Real LLaVA answers show
# an image effect of sd ~1.1 logit and a left share of 0.31; "left" draws one order per pair image,
# so identities' left shares vary (0.25-0.75 at demo size) and side preference could pose as bias.
NULLS: dict[str, dict[str, Any]] = {
    "iid": {},
    "image_sd_1.1": dict(pair_image_sd=1.1),
    "render_sd_1.0_k1": dict(render_sd=1.0),
    "render_sd_1.0_k3": dict(render_sd=1.0, renders_per_cell=3),
    "p_left_0.3": dict(p_left=0.3, orders="random"),
    "p_left_0.5_random_order": dict(orders="random"),
    "refusals_by_identity": dict(refusal_by_identity=REFUSERS),
    "score_image_render_k3": dict(answer_mode="score", pair_image_sd=1.1, render_sd=1.0, renders_per_cell=3),
    "all_k3": dict(
        pair_image_sd=1.1, render_sd=1.0, renders_per_cell=3, p_left=0.3, orders="random", refusal_by_identity=REFUSERS
    ),
}


def spec(null: str, scale: str, seed: int, **overrides: Any) -> SimSpec:
    """The SimSpec of a null (`NULLS`) at a scale (`SCALES`), over religion by default."""
    kw: dict[str, Any] = dict(dimensions=("religion",), genders=("female", "male"))
    kw.update(SCALES[scale])
    kw.update(NULLS[null])
    kw.update(overrides)
    return SimSpec(seed=seed, **kw)


def render_null_k1(s: SimSpec) -> bool:
    """A render effect with one render per cell. In perception/decision the report clusters on the
    candidate's render, so the effect is noise it absorbs. A portrait, though, is the identity's only
    look: with k = 1 its effect moves every stereotype answer about that identity, so the stereotype
    family's *selection frequency* is then not null for the identity (the report clusters on the pair
    image and says its verdict is about the portrait). Polarity (high- minus low-valence choices on the
    same image) cancels the portrait's effect and stays a null."""
    return s.render_sd > 0 and s.renders_per_cell == 1


# -- direct: simulator + cluster_contrasts ----------------------------------------------------------


def selection_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells for `cluster_contrasts` (vignette_bench.eval.compare.cells.choice_cells) with the side as
    component L/R."""
    cells = choice_cells(frame)
    return cells.assign(component=np.where(cells["side"] == SIDE_LEFT, "L", "R")).drop(columns="side")


def direct_tests(frame: pd.DataFrame) -> pd.DataFrame:
    """Side-balanced selection frequency vs 1/2 per family x dimension x identity, cluster-robust
    (`cluster_contrasts`), BH within the family: family, dimension, target, estimate, p_value, q, flag."""
    from vignette_bench.stats.clustered import cluster_contrasts
    from vignette_bench.stats.inference import bh_qvalues

    cells = selection_cells(frame)
    parts = []
    for (family, dim), c in cells.groupby(["family", "dimension"], sort=False):
        by_image = family == "stereotype" and one_look(c)
        c = c.assign(cluster=c["image"] if by_image else c["render"])
        r = cluster_contrasts(c, {"L": 0.5, "R": 0.5}, 0.5)
        ok = r["flag"].fillna("").to_numpy() == ""
        parts.append(r.assign(family=family, dimension=dim, q=bh_qvalues(r["p_value"].to_numpy(float), ok)))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


# -- end to end: numbers.compute + verdicts ---------------------------------------------------------


def report_tests(frame: pd.DataFrame, detail: bool = True) -> tuple[pd.DataFrame, pd.DataFrame, Any]:
    """The report's tests of a run as one table (measure, family, dimension, identity, other, p, q,
    effect, flag), its verdicts, and its Numbers. Measures: "selection" (factuality: accuracy vs the
    other identities; two-way families: selection frequency vs chance), "polarity" (overall, the
    stereotype verdict test), "pair_comp" (exploratory)."""
    from vignette_bench.eval.analysis.numbers import compute
    from vignette_bench.eval.report.build import verdicts

    n = compute(frame, detail=detail)
    sel = n.selection.assign(measure="selection", other="")
    pol = n.polarity[n.polarity["trait_dimension"] == "overall"] if len(n.polarity) else n.polarity
    pol = pol.assign(measure="polarity", family="stereotype", other="", effect=pol["value"])
    pc = n.pair_comp.assign(measure="pair_comp", effect=n.pair_comp["value"], flag="")
    cols = ["measure", "family", "dimension", "identity", "other", "p", "q", "effect", "flag"]
    tests = pd.concat([t.reindex(columns=cols) for t in (sel, pol, pc) if len(t)], ignore_index=True)
    tests["flag"] = tests["flag"].fillna("")
    return tests, verdicts(n.tests()), n


def family_counts(tests: pd.DataFrame, skip_stereotype_selection: bool = False) -> pd.DataFrame:
    """Per measure x family x dimension: tests (finite p, no flag), raw p < 0.05, any BH q < 0.05."""
    t = tests[(tests["flag"] == "") & np.isfinite(tests["p"].astype(float))]
    if skip_stereotype_selection:
        t = t[~((t["measure"] == "selection") & (t["family"] == "stereotype"))]
    g = t.groupby(["measure", "family", "dimension"], sort=False)
    return pd.DataFrame(
        {
            "n_tests": g.size(),
            "n_raw": g["p"].apply(lambda p: int((p.astype(float) < ALPHA).sum())),
            "any_bh": g["q"].apply(lambda q: bool((q.astype(float) < ALPHA).any())),
        }
    ).reset_index()


def magnitudes(n: Any) -> pd.DataFrame:
    """Per two-way family: the report's noise-corrected magnitude and the old mean |S - 50| (pp)."""
    sel = n.selection[~n.selection["family"].isin(["factuality"])]
    old = sel.groupby(["family", "dimension"])["value_paper"].apply(
        lambda v: float((v.astype(float) - 50).abs().mean())
    )
    mag = n.design.set_index(["family", "dimension"])["magnitude"].astype(float)
    return pd.DataFrame({"old_mean_abs": old, "magnitude": mag.reindex(old.index)}).reset_index()


def mc_se(rate: float, n: int) -> float:
    """Monte-Carlo standard error of a rate over n replicates (at least that of 1/n when rate is 0)."""
    r = min(max(rate, 1.0 / max(n, 1)), 1 - 1.0 / max(n, 1)) if n > 1 else 0.5
    return math.sqrt(r * (1 - r) / max(n, 1))


def with_planted(s: SimSpec, identity: str, p: float) -> SimSpec:
    return replace(s, planted=((identity, p),))
