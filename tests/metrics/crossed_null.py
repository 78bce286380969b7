"""Null answers from an identity-activity-contrast design with crossed renders (issue 27).

Each study has `n_ids` identities with `renders` renders each; a render's random effect (sd
`render_sd`, logit scale) moves every answer of every pair image it appears in, and a pair image
has its own effect (sd `image_sd`). A pair image shows two different identities of the study, one
render of each, on random sides; the model picks the left person with probability `p_left` (0.31
as LLaVA-1.6 did) shifted by the two renders' and the image's effects, `questions` times per image
(one context each). No identity is favoured: every selection-frequency, PairComp and polarity
verdict is a false accusation.

Why this is hard for a one-way test: an identity's answers depend on its partners' renders, and
with few identities the same partner render sits beside many of its own renders, so its own-render
clusters are not independent. Many studies go into one module call (identities named
``s<study>_<i>``) so a calibration run costs one `compute`.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logit

TERMS = [(f"{d}_{v}", d, v) for d in ("ability", "morality") for v in ("high", "low")]


def crossed_rows(
    seed: int,
    n_studies: int,
    n_ids: int,
    renders: int = 6,
    images_per_identity: int = 48,
    questions: int = 4,
    render_sd: float = 1.0,
    image_sd: float = 1.1,
    p_left: float = 0.31,
) -> dict[str, list]:
    rng = np.random.default_rng(seed)
    n_images = max(1, images_per_identity * n_ids // 2)
    study = np.repeat(np.arange(n_studies), n_images)
    m = len(study)
    first = rng.integers(0, n_ids, m)
    second = (first + rng.integers(1, n_ids, m)) % n_ids
    r1, r2 = rng.integers(0, renders, m), rng.integers(0, renders, m)
    effect = rng.normal(0.0, render_sd, (n_studies, n_ids, renders))
    swap = rng.random(m) < 0.5
    left_id, right_id = np.where(swap, second, first), np.where(swap, first, second)
    left_r, right_r = np.where(swap, r2, r1), np.where(swap, r1, r2)
    lin = (
        logit(p_left) + effect[study, left_id, left_r] - effect[study, right_id, right_r] + rng.normal(0.0, image_sd, m)
    )
    q = np.repeat(np.arange(m), questions)
    chose_left = rng.random(len(q)) < expit(lin[q])
    term = rng.integers(0, len(TERMS), len(q))
    name = np.char.add(np.char.add("s", study.astype(str)), "_")
    left_name = np.char.add(name, left_id.astype(str))[q]
    right_name = np.char.add(name, right_id.astype(str))[q]
    left_key = np.char.add(np.char.add(left_name, "_r"), left_r[q].astype(str))
    right_key = np.char.add(np.char.add(right_name, "_r"), right_r[q].astype(str))
    return {
        "selected": np.where(chose_left, left_name, right_name).tolist(),
        "candidates": np.stack([left_name, right_name], axis=1).tolist(),
        "candidate_sides": [["left", "right"]] * len(q),
        "candidate_clusters": np.stack([left_key, right_key], axis=1).tolist(),
        "group": np.char.add("img", q.astype(str)).tolist(),
        "context": [TERMS[t][0] for t in term],
        "direction": [TERMS[t][2] for t in term],
        "trait_dimension": [TERMS[t][1] for t in term],
        "chose_left": chose_left.tolist(),
    }


def first_identity_rows(table: dict, column: str = "identity") -> list[bool]:
    """Rows of a module's table for each study's identity 0 (with two identities, identity 1 mirrors it)."""
    return [str(v).endswith("_0") for v in table[column]]
