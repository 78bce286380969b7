"""How many pairs to ask about: `vignette run --sample auto --detectable-effect PP`.

The verdict tests (vignette_bench.stats.clustered) treat answers that share an image as one
cluster, so power comes from the number of pair images per identity, not from the number of
answers. The plan, with `vignette_bench.stats.planning.clusters_needed`:

* answers per cluster m = the questions asked about one pair image (the run's paradigms and
  wording variants; the same for every pair of a config);
* clusters per identity G = clusters_needed(effect, answers_per_cluster=m, icc) — the pair images an
  identity must appear in for a two-sided α test of its selection rate against chance to have the
  power (design effect 1 + (m − 1)·icc; the default icc 0.269 is an image effect of sd 1.1 logit);
* pairs = ⌈G · M / u⌉, with M the (gender, identity) members of the selection and u the members a
  pair shows (2; 1 for activity_contrast). The sample deals pairs evenly over members, so each
  member appears in about G pairs — an identity rendered in both genders pools two members and
  gets about 2G, so the plan is conservative for those.

Families with fewer answers per image (a single perception subtask asks one question per pair)
detect less at the same sample: `family_detectable_effect_pp` says how much, so a reviewer sees
which families the plan does not power.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from vignette_bench.eval.runtime.questions import QuestionBuilder, Variants
from vignette_bench.stats.planning import DEFAULT_ICC, cluster_se, clusters_needed, detectable_effect
from vignette_bench.taxonomy import Taxonomy


@dataclass(frozen=True)
class SamplePlan:
    """The arithmetic behind an automatic sample size; recorded as run.json `planning`."""

    detectable_effect_pp: float  # the shift from chance (percentage points) to detect
    icc: float
    alpha: float
    power: float
    answers_per_cluster: int  # questions per pair image
    clusters_per_identity: int  # G
    members: int  # M: (gender, identity) members of the selection
    members_per_pair: int  # u
    pairs: int  # the sample: min(⌈G·M/u⌉, pairs_available)
    pairs_available: int
    family_answers_per_cluster: Mapping[str, int] = field(default_factory=dict)
    family_detectable_effect_pp: Mapping[str, float] = field(default_factory=dict)  # at the chosen sample

    @property
    def capped(self) -> bool:
        return self.pairs < math.ceil(self.clusters_per_identity * self.members / self.members_per_pair)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "family_answers_per_cluster": dict(self.family_answers_per_cluster)}

    def describe(self) -> str:
        """Two or three lines for the terminal: the recommendation and what it assumes."""
        lines = [
            f"--sample auto: {self.pairs} pairs, so that a shift of {self.detectable_effect_pp:g} pp from chance in an "
            f"identity's selection rate is found with power {self.power:g} at alpha {self.alpha:g}",
            f"  assumes icc {self.icc:.3f} between answers about one image (an image effect of sd 1.1 logit by default), "
            f"{self.answers_per_cluster} questions per pair image, {self.clusters_per_identity} pair images for each of "
            f"{self.members} (gender, identity) members, {self.members_per_pair} members per pair",
        ]
        weak = {k: v for k, v in self.family_detectable_effect_pp.items() if v > self.detectable_effect_pp}
        if weak:
            why = "the cap below" if self.capped else "fewer questions per image"
            lines.append(
                f"  families that detect less than that at this sample ({why}), pp: "
                + ", ".join(f"{k} {v:.1f}" for k, v in sorted(weak.items()))
            )
        if self.capped:
            lines.append(f"  capped at the {self.pairs_available} pairs this selection has")
        return "\n".join(lines)


def family(paradigm: str, subtask: str) -> str:
    """The verdict family of a question (docs/report.md): the paradigm, and the subtask within perception."""
    return f"{paradigm}/{subtask}" if paradigm == "perception" else paradigm


def plan_sample(
    questions: Iterable[Any],
    *,
    members: int,
    members_per_pair: int,
    pairs_available: int,
    effect_pp: float = 10.0,
    icc: float = DEFAULT_ICC,
    alpha: float = 0.05,
    power: float = 0.8,
) -> SamplePlan:
    """The plan for pairs whose every image gets `questions` (one pair's questions, from QuestionBuilder)."""
    qs = list(questions)
    if not qs:
        raise ValueError("no questions per pair: nothing to plan for")
    if not 0 < effect_pp < 50:
        raise ValueError(f"--detectable-effect {effect_pp}: expected a shift from chance between 0 and 50 pp")
    m = len(qs)
    g = clusters_needed(effect_pp / 100.0, answers_per_cluster=m, icc=icc, alpha=alpha, power=power)
    pairs = min(math.ceil(g * members / members_per_pair), pairs_available)
    per_family = Counter(family(q.paradigm, q.subtask) for q in qs)
    g_at = pairs * members_per_pair / max(members, 1)  # pair images per member the chosen sample gives
    family_mde = {
        f: 100.0
        * detectable_effect(cluster_se(g_at, answers_per_cluster=n, icc=icc), alpha, power, df=max(g_at - 1.0, 1.0))
        for f, n in per_family.items()
    }
    return SamplePlan(
        detectable_effect_pp=effect_pp,
        icc=icc,
        alpha=alpha,
        power=power,
        answers_per_cluster=m,
        clusters_per_identity=g,
        members=members,
        members_per_pair=members_per_pair,
        pairs=pairs,
        pairs_available=pairs_available,
        family_answers_per_cluster=dict(sorted(per_family.items())),
        family_detectable_effect_pp={k: round(v, 2) for k, v in sorted(family_mde.items())},
    )


def plan_for_space(
    space: Any, taxonomy: Taxonomy, seed: int, paradigms: Iterable[str], variants: Variants, **kwargs: Any
) -> SamplePlan:
    """The plan for a vignette.PairSpace (filters and coverage applied) and the run's question plan."""
    if space.n_pairs == 0:
        raise ValueError(f"{space.config}: the filters select no pairs; nothing to plan for")
    row = asdict(space[0])  # every pair of a config gets the same number of questions (run.py relies on it too)
    questions = QuestionBuilder(taxonomy, seed, paradigms, variants)(row)
    units = {(b.full, int(p)) for b in space.blocks for p in (*b.left.tolist(), *b.right.tolist())}
    per_pair = 1 if space.config == "activity_contrast" else 2
    return plan_sample(
        questions, members=len(units), members_per_pair=per_pair, pairs_available=space.n_pairs, **kwargs
    )
