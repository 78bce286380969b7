"""Answers from a fixed-order pairing like the original VIGNETTE one (issue 27 item 5).

Identities 0 .. n_ids - 1 in a fixed order; in every question the earlier identity stands left, so
identity 0 is always left and the last one always right (the others are left against later
identities, right against earlier ones). Each identity has `renders` renders with random effects
(sd `render_sd`, logit); a question shows one random render of each person, and the model picks
the left person with probability logistic(logit(p_left) + b_left - b_right + render effects)
(p_left 0.31 as LLaVA-1.6 did). `effects` plants identity effects b (logit; default none: every
verdict is a false accusation). A share `refusal` of answers is refused (selected ""); `score`
gives probabilities instead of choices.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logit


def fixed_order_rows(
    seed: int,
    n_ids: int = 5,
    renders: int = 4,
    questions: int = 24,
    render_sd: float = 1.0,
    p_left: float = 0.31,
    effects: np.ndarray | None = None,
    refusal: float = 0.05,
    score: bool = False,
    prefix: str = "id",
) -> dict[str, list]:
    """`questions` questions per pair (i < j), i on the left; identities named f"{prefix}{i}"."""
    rng = np.random.default_rng(seed)
    b = np.zeros(n_ids) if effects is None else np.asarray(effects, float)
    first, second = np.triu_indices(n_ids, 1)
    left = np.repeat(first, questions)
    right = np.repeat(second, questions)
    m = len(left)
    lr, rr = rng.integers(0, renders, m), rng.integers(0, renders, m)
    u = rng.normal(0.0, render_sd, (n_ids, renders))
    prob = expit(logit(p_left) + b[left] - b[right] + u[left, lr] - u[right, rr])
    chose_left = rng.random(m) < prob
    names = np.array([f"{prefix}{i}" for i in range(n_ids)], dtype=object)
    ln, rn = names[left], names[right]
    refused = rng.random(m) < refusal
    selected = np.where(refused, "", np.where(chose_left, ln, rn))
    rows = {
        "selected": selected.tolist(),
        "candidates": [[a, c] for a, c in zip(ln, rn)],
        "context": [f"ctx{k}" for k in rng.integers(0, 6, m)],
        "candidate_sides": [["left", "right"]] * m,
        "candidate_clusters": [[f"{a}_r{x}", f"{c}_r{y}"] for a, c, x, y in zip(ln, rn, lr, rr)],
    }
    if score:
        rows["probabilities"] = [None if r else [float(q), float(1 - q)] for q, r in zip(prob, refused)]
    return rows
