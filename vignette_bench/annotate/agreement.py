"""Inter-annotator agreement: raw agreement, Cohen's kappa (two annotators), Fleiss' kappa (more).

Each function takes one label per (item, annotator) as an items x annotators array of strings
("" = not answered: the item is dropped for that criterion). Intervals are percentile bootstraps
over items (items are the independent units: each was labelled once by each annotator), seeded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import numpy as np


def _complete(labels: np.ndarray) -> np.ndarray:
    labels = np.asarray(labels, dtype=object)
    if labels.ndim != 2 or labels.shape[1] < 2:
        raise ValueError("labels must be items x annotators with at least two annotators")
    return labels[(labels != "").all(axis=1) & np.array([all(isinstance(v, str) for v in r) for r in labels], bool)]


def _codes(labels: np.ndarray, categories: Sequence[str]) -> np.ndarray:
    index = {c: i for i, c in enumerate(categories)}
    unknown = sorted({v for v in labels.ravel() if v not in index})
    if unknown:
        raise ValueError(f"labels {unknown} are not among the categories {list(categories)}")
    return np.vectorize(index.__getitem__, otypes=[np.int64])(labels) if labels.size else labels.astype(np.int64)


def observed_agreement(codes: np.ndarray) -> float:
    """Share of items on which every annotator gave the same label."""
    return float((codes == codes[:, :1]).all(axis=1).mean()) if len(codes) else float("nan")


def cohen_kappa(codes: np.ndarray, k: int) -> float:
    """(p_o - p_e) / (1 - p_e) with p_e from each annotator's own marginals (Cohen 1960)."""
    a, b = codes[:, 0], codes[:, 1]
    n = len(a)
    if n == 0:
        return float("nan")
    po = float((a == b).mean())
    pe = float(np.dot(np.bincount(a, minlength=k) / n, np.bincount(b, minlength=k) / n))
    return float("nan") if pe >= 1.0 else (po - pe) / (1.0 - pe)


def fleiss_kappa(codes: np.ndarray, k: int) -> float:
    """Fleiss (1971): mean pairwise agreement per item vs agreement expected from pooled category shares."""
    n_items, m = codes.shape
    if n_items == 0:
        return float("nan")
    counts = np.stack([(codes == c).sum(axis=1) for c in range(k)], axis=1).astype(float)
    p_item = ((counts * (counts - 1)).sum(axis=1)) / (m * (m - 1))
    p_cat = counts.sum(axis=0) / (n_items * m)
    pe = float((p_cat**2).sum())
    return float("nan") if pe >= 1.0 else (float(p_item.mean()) - pe) / (1.0 - pe)


def kappa(codes: np.ndarray, k: int) -> float:
    return cohen_kappa(codes, k) if codes.shape[1] == 2 else fleiss_kappa(codes, k)


def bootstrap_ci(codes: np.ndarray, k: int, stat, n_boot: int = 2000, seed: int = 0, alpha: float = 0.05):
    """Percentile interval of ``stat(codes, k)`` over items resampled with replacement."""
    if len(codes) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    values = np.array([stat(codes[rng.integers(0, len(codes), len(codes))], k) for _ in range(n_boot)])
    values = values[np.isfinite(values)]
    if not len(values):
        return float("nan"), float("nan")
    lo, hi = np.quantile(values, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


class Agreement(TypedDict):
    n_items: int
    counts: list[list[int]]  # [category][annotator]
    joint: list[float]  # per category: share of items where every annotator chose it
    agreement: float
    agreement_ci: tuple[float, float]
    kappa: float
    kappa_ci: tuple[float, float]


def agreement_table(labels: np.ndarray, categories: Sequence[str], seed: int = 0) -> Agreement:
    """Counts per annotator and category, per-category joint agreement (every annotator chose it, as a share
    of the items: the paper's table 9), overall agreement and kappa with bootstrap CIs."""
    done = _complete(np.asarray(labels, dtype=object))
    codes = _codes(done, categories)
    k = len(categories)
    codes = codes.reshape(len(done), -1) if len(done) else np.zeros((0, np.asarray(labels).shape[1]), np.int64)
    return {
        "n_items": int(len(codes)),
        "counts": [[int((codes[:, j] == c).sum()) for j in range(codes.shape[1])] for c in range(k)],
        "joint": [float((codes == c).all(axis=1).mean()) if len(codes) else float("nan") for c in range(k)],
        "agreement": observed_agreement(codes),
        "agreement_ci": bootstrap_ci(codes, k, lambda x, _k: observed_agreement(x), seed=seed),
        "kappa": kappa(codes, k),
        "kappa_ci": bootstrap_ci(codes, k, kappa, seed=seed),
    }
