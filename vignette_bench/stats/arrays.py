"""Small array helpers the measures share: guarded division, sparse sums, columnar output."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sparse


def safe_div(num: np.ndarray, den: np.ndarray, fill: float = np.nan) -> np.ndarray:
    """num / den, `fill` where den == 0 (NaN by default: callers flag those)."""
    return np.divide(num, den, out=np.full(np.broadcast(num, den).shape, fill), where=den > 0)


def right_sparse(dense: np.ndarray, mat: Any) -> np.ndarray:
    """dense (B, n) @ sparse (n, m) -> dense (B, m)."""
    return np.asarray((mat.T @ dense.T).T)


def indicator(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> Any:
    """Sparse 0/1 matrix of `shape` with ones at (rows[i], cols[i]): maps cells onto the outputs they feed."""
    return sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=shape)


def to_lists(frame: pd.DataFrame) -> dict[str, list[Any]]:
    """Columnar plain-Python output (pd.DataFrame(result[...]) rebuilds the table)."""
    return {c: frame[c].tolist() for c in frame.columns}
