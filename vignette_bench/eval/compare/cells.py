"""Two-way answers as cells for the cluster-robust engine: who was chosen, on which side, in which cluster.

One row per (family, dimension, identity, render, image, side): ``y`` = times the identity was chosen
(score mode: its summed probabilities), ``n`` = valid offers. The cluster of an answer about an identity
is the render it was shown in (``key_left``/``key_right``); ``image`` (the pair image, orders merged) is
filled for the stereotype family, whose clusters are pair images when every identity has one portrait.
Used by `vignette compare` and by the calibration harness.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from vignette_bench.eval.analysis.numbers import _render_keys as render_keys
from vignette_bench.stats.counts import SIDE_LEFT, SIDE_RIGHT

TWO_WAY = ("perception", "decision", "stereotype")
CELL_KEYS = ["family", "dimension", "target", "render", "image", "side"]


def pair_image(pair_id: str) -> str:
    """The pair image of a pair id: the side suffix dropped and people sorted, so both orders are one."""
    parts = re.sub(r"/L[01]$", "", pair_id).split("/")
    return "/".join("+".join(sorted(p.split("+"))) if "+" in p else p for p in parts)


def family_of(rows: pd.DataFrame) -> np.ndarray:
    """perception/<subtask>, decision or stereotype."""
    paradigm = rows["paradigm"].to_numpy(object)
    return np.where(paradigm == "perception", "perception/" + rows["subtask"].astype(str).to_numpy(object), paradigm)


def choice_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells (``CELL_KEYS`` + y, n) of the two-way answers of a responses frame."""
    two = frame[frame["paradigm"].isin(TWO_WAY)]
    valid = two["valid"].to_numpy(bool)
    chose_left = two["chose_left"].to_numpy(object)
    probs = two["probabilities"].to_numpy(object) if "probabilities" in two else np.full(len(two), None)
    score = np.array([p is not None for p in probs], dtype=bool)
    p_left = np.array([p[0] if p is not None else np.nan for p in probs], dtype=float)
    y_left = np.where(score, p_left, chose_left == True)  # noqa: E712 (object column: True, False or None)
    stereotype = (two["paradigm"] == "stereotype").to_numpy()
    # one pair_image per distinct pair id (each is asked many times)
    ids = two["pair_id"].to_numpy(object)[stereotype]
    images = np.full(len(two), "", dtype=object)
    images[stereotype] = list(map({p: pair_image(p) for p in set(ids)}.__getitem__, ids))
    family = family_of(two)
    parts = []
    for side, ident, y in ((SIDE_LEFT, "identity_left", y_left), (SIDE_RIGHT, "identity_right", 1.0 - y_left)):
        parts.append(
            pd.DataFrame(
                {
                    "family": family,
                    "dimension": two["dimension"].to_numpy(object),
                    "target": two[ident].to_numpy(object),
                    # an import without render keys (a table): the render its row must have shown, as the report
                    # clusters it; a null key was a null group key, and every such answer was dropped
                    "render": render_keys(two, ident.removeprefix("identity_")),
                    "image": images,
                    "side": side,
                    "y": np.where(valid, y.astype(float), 0.0),
                    "n": valid.astype(float),
                }
            )
        )
    cells = pd.concat(parts, ignore_index=True)
    return cells.groupby(CELL_KEYS, as_index=False, sort=False)[["y", "n"]].sum()


def one_look(cells: pd.DataFrame) -> bool:
    """Stereotype cells where every identity was shown in a single render (one portrait, k = 1): then the
    cluster must be the pair image, and a verdict is about that portrait, not the identity."""
    return bool(len(cells)) and int(cells.groupby("target")["render"].nunique().max()) <= 1
