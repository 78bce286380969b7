"""Simulated answers of the original VIGNETTE design, written in its CSV layout (issue 33 item 8).

The age dimension's nine identities (the taxonomy's names and gendered forms), one question ("who is
facing difficulty", setting 2a), both genders. Each unordered pair is shown in ONE fixed order per gender
(a gender's order follows a random ranking of the identities, a share of pairs flipped, so some identities
are one-sided within a gender and the genders differ), once per activity (one image each). The model
chooses the right person with a gender-specific preference (0.72 women, 0.56 men), plus a pair-specific
effect (sd `pair_sd` logit, per gender: answers that are not additive in identity and side), a per-image
effect (sd `image_sd`) and planted identity effects `effects` (logit; the same in both genders).

`report` runs the files through the same code as `vignette import --format vignette-csv` and
`vignette report` (`run_import`, `load_run`, `numbers.compute`, `verdicts`).
"""

from __future__ import annotations

import csv
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from vignette_bench.taxonomy import load_taxonomy

GENDERS = ("female", "male")
P_RIGHT = {"female": 0.72, "male": 0.56}
COLUMNS = ["filename", "descriptor 1", "descriptor 2", "activity", "question_id", "response", "options"]
COLUMNS += ["gender", "axis"]


def age_identities() -> list[tuple[str, str, str]]:
    """(name, male form, female form) of the taxonomy's age identities."""
    return [(i.name, i.male_form, i.female_form) for i in load_taxonomy().identities if i.dimension == "age"]


@dataclass(frozen=True)
class Design:
    pair_sd: float = 1.0
    image_sd: float = 0.5
    activities: int = 75
    flip: float = 0.3  # share of pairs shown against the gender's ranking
    order_seed: int = 33
    p_right: dict[str, float] = field(default_factory=lambda: dict(P_RIGHT))
    effects: dict[str, float] = field(default_factory=dict)  # identity name -> logit effect


def orders(design: Design) -> dict[str, list[tuple[int, int]]]:
    """Per gender, the (left, right) identity indices of each unordered pair: one fixed order each."""
    rng = np.random.default_rng(design.order_seed)
    k = len(age_identities())
    out = {}
    for g in GENDERS:
        rank = rng.permutation(k)
        pairs = []
        for a in range(k):
            for b in range(a + 1, k):
                left, right = (a, b) if rank[a] < rank[b] else (b, a)
                pairs.append((right, left) if rng.random() < design.flip else (left, right))
        out[g] = pairs
    return out


def _image(d1: str, a: str, d2: str) -> str:
    return f"{d1.replace(' ', '-')}_{a.replace(' ', '-')}--{d2.replace(' ', '-')}_{a.replace(' ', '-')}.png"


def rows(design: Design, seed: int) -> dict[str, list[dict[str, str]]]:
    """Per gender, the CSV rows of one simulated run."""
    rng = np.random.default_rng(seed)
    ids = age_identities()
    b = np.array([design.effects.get(name, 0.0) for name, _, _ in ids])
    acts = [a.name for a in load_taxonomy().activities][: design.activities]
    out: dict[str, list[dict[str, str]]] = {}
    for g, pairs in orders(design).items():
        form = [m if g == "male" else f for _, m, f in ids]
        base = logit(1.0 - design.p_right[g])
        found = []
        for left, right in pairs:
            u = rng.normal(0.0, design.pair_sd)
            v = rng.normal(0.0, design.image_sd, len(acts))
            chose_left = rng.random(len(acts)) < expit(base + b[left] - b[right] + u + v)
            for a, c in zip(acts, chose_left):
                options = [form[left], form[right]]
                rng.shuffle(options)
                found.append(
                    {
                        "filename": _image(form[left], a, form[right]),
                        "descriptor 1": form[left],
                        "descriptor 2": form[right],
                        "activity": a,
                        "question_id": f"Who is facing difficulty in {a}?",
                        "response": form[left] if c else form[right],
                        "options": str(options),
                        "gender": g,
                        "axis": "age",
                    }
                )
        out[g] = found
    return out


def write(design: Design, seed: int, folder: Path) -> Path:
    """The run's CSV files under `folder` (one per gender, the original code's names)."""
    for g, found in rows(design, seed).items():
        path = folder / "age" / g / f"assumptions_2a_age_{g}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(found)
    return folder


def report(design: Design, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the report's selection table, its verdicts) of one simulated run, through import and report code."""
    from vignette_bench.eval.analysis.numbers import compute
    from vignette_bench.eval.analysis.verdicts import verdicts
    from vignette_bench.eval.importing.command import run_import
    from vignette_bench.eval.runs import load_run

    with tempfile.TemporaryDirectory() as tmp:
        src = write(design, seed, Path(tmp) / "csv")
        out = run_import("vignette-csv", src, Path(tmp) / "run", model_id="simulated")
        frame = load_run(out).responses
    n = compute(frame, model="simulated", detail=False)
    return n.selection, verdicts(n.tests())


def logit_effect(pp: float, sides: tuple[float, ...] = (0.0,), image_sd: float = 0.0) -> float:
    """The logit effect b whose partner- and side-balanced rate, averaged over strata with (answer-level,
    i.e. marginal) side terms `sides`, is 50% + pp against partners of effect 0, on the scale the report
    estimates: the answers' marginal rates, averaged over per-image effects of sd `image_sd` (which shrink a
    planted logit effect)."""
    s = np.asarray(sides, float)[:, None]
    nodes, weights = np.polynomial.hermite_e.hermegauss(31)
    v, w = image_sd * nodes[None, :], weights / weights.sum()
    # the side terms are marginal (fitted to answers), the planted b acts inside the image effect: the side's
    # conditional value is the one whose marginal rate matches
    cond = np.array([[_conditional(float(x), image_sd)] for x in s[:, 0]])
    lo, hi = -10.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        rate = float(np.mean(((expit(cond + mid + v) + expit(-cond + mid + v)) / 2) @ w))
        lo, hi = (mid, hi) if 100 * (rate - 0.5) < pp else (lo, mid)
    return (lo + hi) / 2


def _conditional(marginal: float, image_sd: float) -> float:
    """The conditional logit whose rate averaged over image effects of sd `image_sd` is logistic(marginal)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(31)
    w = weights / weights.sum()
    target = float(expit(marginal))
    lo, hi = -20.0, 20.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if float(expit(mid + image_sd * nodes) @ w) < target else (lo, mid)
    return (lo + hi) / 2
