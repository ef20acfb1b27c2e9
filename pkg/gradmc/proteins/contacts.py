"""Contact prediction from Potts couplings (GWG paper Sec. 5.4, Fig. 7, 12, 13; Marks et al. 2011).

Score of a pair (i, j): the Frobenius norm ||J_ij||_F of its q x q coupling block (the paper's metric:
all q states, raw J as trained, no gauge change), optionally without one state (e.g. the gap), optionally
in the zero-sum gauge, optionally APC-corrected (Dunn et al. 2008). Pairs i < j with j - i >= s
(``min_separation``; 6 is the usual "medium + long range") are ranked by score; precision(k) = TP(k)/k
and recall(k) = TP(k)/#contacts among the ranked pairs. A contact is a pair whose distance is < cutoff
(5 A, strict, as in the GWG release code).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

__all__ = ["coupling_norms", "apc", "contact_map", "rank_pairs", "contact_curve", "precision_at_k",
           "DEFAULT_CUTOFF", "DEFAULT_MIN_SEPARATION"]

DEFAULT_CUTOFF = 5.0
DEFAULT_MIN_SEPARATION = 6


def _square(a, name: str) -> np.ndarray:
    m = np.asarray(a.detach().cpu() if isinstance(a, torch.Tensor) else a, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 2:
        raise ValueError(f"{name} must be a square (L, L) matrix with L >= 2, got shape {m.shape}")
    return m


def coupling_norms(J, *, exclude_state: int | None = None, zero_sum: bool = False) -> np.ndarray:
    """Frobenius norms F (L, L) of the coupling blocks J_ij, zero diagonal.

    Args:
        J: (L, L, q, q) couplings (torch tensor or array), e.g. ``Potts.J`` or ``PLMResult.J``.
        exclude_state: drop this state's row and column from every block before the norm (e.g.
            ``alignment.GAP`` for proteins); default None keeps all q states, the GWG paper's ||J_ij||.
        zero_sum: first move each block to the zero-sum (Ising) gauge, J_ij(a, b) - J_ij(., b) -
            J_ij(a, .) + J_ij(., .) (means over the kept states), the plmc / Ekeberg et al. 2013 score.

    Returns:
        (L, L) float64, symmetric when J is (J_ji = J_ij^T), diagonal set to 0.

    Raises:
        ValueError: J not of shape (L, L, q, q), or exclude_state outside 0..q-1.
    """
    j = np.asarray(J.detach().cpu() if isinstance(J, torch.Tensor) else J, dtype=np.float64)
    if j.ndim != 4 or j.shape[0] != j.shape[1] or j.shape[2] != j.shape[3]:
        raise ValueError(f"J must have shape (L, L, q, q), got {j.shape}")
    q = j.shape[2]
    if exclude_state is not None:
        if not 0 <= exclude_state < q:
            raise ValueError(f"exclude_state must lie in 0..{q - 1}, got {exclude_state}")
        keep = np.arange(q) != exclude_state
        j = j[:, :, keep][:, :, :, keep]
    if zero_sum:
        j = j - j.mean(2, keepdims=True) - j.mean(3, keepdims=True) + j.mean((2, 3), keepdims=True)
    f = np.sqrt((j**2).sum((2, 3)))
    np.fill_diagonal(f, 0.0)
    return f


def apc(F) -> np.ndarray:
    """Average product correction: F_ij - F_i. F_.j / F_.. (Dunn et al. 2008).

    Means run over off-diagonal entries only: F_i. = sum_{j != i} F_ij / (L - 1), F_.. = sum_{i != j} F_ij /
    (L (L - 1)) (the plmDCA convention; EVcouplings divides by L and L**2 instead, which only rescales the
    correction). The diagonal of the result is 0.

    Raises:
        ValueError: F not square (L >= 3), not symmetric, or with a zero off-diagonal mean.
    """
    f = _square(F, "F").copy()
    L = f.shape[0]
    if L < 3:
        raise ValueError(f"APC needs L >= 3 positions, got {L}")
    if not np.allclose(f, f.T, rtol=1e-10, atol=1e-12):
        raise ValueError("F must be symmetric (scores of unordered pairs)")
    np.fill_diagonal(f, 0.0)
    row = f.sum(1) / (L - 1)
    total = f.sum() / (L * (L - 1))
    if total == 0:
        raise ValueError("APC is undefined when every off-diagonal score is 0")
    out = f - np.outer(row, row) / total
    np.fill_diagonal(out, 0.0)
    return out


def contact_map(distances, cutoff: float = DEFAULT_CUTOFF) -> np.ndarray:
    """Boolean contact map (L, L): distance < cutoff (angstrom), off-diagonal; NaN (unknown) -> False.

    Raises:
        ValueError: distances not square or not symmetric (NaN positions must match), or cutoff <= 0.
    """
    d = _square(distances, "distances")
    if not cutoff > 0:
        raise ValueError(f"cutoff must be > 0 angstrom, got {cutoff}")
    if not np.array_equal(np.isnan(d), np.isnan(d.T)) or not np.allclose(np.nan_to_num(d), np.nan_to_num(d.T)):
        raise ValueError("distances must be a symmetric matrix")
    c = np.nan_to_num(d, nan=np.inf) < cutoff
    np.fill_diagonal(c, False)
    return c


def _candidates(L: int, min_separation: int, mask) -> tuple[np.ndarray, np.ndarray]:
    if min_separation < 1:
        raise ValueError(f"min_separation must be >= 1, got {min_separation}")
    i, j = np.triu_indices(L, k=min_separation)
    if mask is not None:
        m = np.asarray(mask, dtype=bool)
        if m.shape != (L, L):
            raise ValueError(f"mask must have shape ({L}, {L}), got {m.shape}")
        keep = m[i, j]
        i, j = i[keep], j[keep]
    return i, j


def rank_pairs(scores, *, min_separation: int = DEFAULT_MIN_SEPARATION, mask=None) -> pd.DataFrame:
    """Pairs i < j with j - i >= min_separation (and mask[i, j] when given), best score first.

    Ties keep (i, j) lexicographic order (stable sort), so rankings are deterministic.

    Returns:
        DataFrame with int64 columns ``i``, ``j`` (0-based positions) and float64 ``score``.

    Raises:
        ValueError: scores not square, min_separation < 1, or a mask of the wrong shape.
    """
    s = _square(scores, "scores")
    i, j = _candidates(s.shape[0], int(min_separation), mask)
    order = np.argsort(-s[i, j], kind="stable")
    return pd.DataFrame({"i": i[order].astype(np.int64), "j": j[order].astype(np.int64),
                         "score": s[i, j][order]})


def contact_curve(scores, contacts, *, min_separation: int = DEFAULT_MIN_SEPARATION, mask=None,
                  max_k: int | None = None) -> pd.DataFrame:
    """Precision and recall of the top-k ranked pairs for k = 1..K (Fig. 7 / Fig. 12 curves).

    Args:
        scores: (L, L) pair scores (e.g. ``coupling_norms`` or its ``apc``).
        contacts: (L, L) boolean / 0-1 contact map (``contact_map`` or a given matrix C).
        min_separation: rank only pairs with j - i >= this.
        mask: optional (L, L) boolean, pairs with known structure; others are neither ranked nor counted.
        max_k: keep the first max_k rows (default all candidate pairs).

    Returns:
        DataFrame, one row per rank: ``k`` (1-based), ``i``, ``j``, ``score``, ``contact`` (bool),
        ``tp`` (true positives among the top k), ``precision`` = tp / k, ``recall`` = tp / #contacts among
        candidate pairs (NaN when there are none).

    Raises:
        ValueError: shapes differ, contacts not symmetric, or max_k < 1.
    """
    ranked = rank_pairs(scores, min_separation=min_separation, mask=mask)
    c = np.asarray(contacts)
    if c.shape != np.shape(scores):
        raise ValueError(f"contacts must have shape {np.shape(scores)} like scores, got {c.shape}")
    c = c.astype(bool)
    if not np.array_equal(c, c.T):
        raise ValueError("contacts must be a symmetric matrix")
    hit = c[ranked["i"].to_numpy(), ranked["j"].to_numpy()]
    tp = np.cumsum(hit)
    k = np.arange(1, hit.size + 1)
    total = int(hit.sum())
    out = ranked.assign(contact=hit, tp=tp.astype(np.int64), precision=tp / k,
                        recall=tp / total if total else np.full(hit.size, np.nan))
    out.insert(0, "k", k.astype(np.int64))
    if max_k is not None:
        if max_k < 1:
            raise ValueError(f"max_k must be >= 1, got {max_k}")
        out = out.iloc[:max_k].reset_index(drop=True)
    return out


def precision_at_k(scores, contacts, k: int, *, min_separation: int = DEFAULT_MIN_SEPARATION, mask=None) -> float:
    """Fraction of true contacts among the k best-scoring pairs (e.g. k = L for "top-L precision").

    Raises:
        ValueError: k < 1 or larger than the number of candidate pairs, or bad inputs (see contact_curve).
    """
    curve = contact_curve(scores, contacts, min_separation=min_separation, mask=mask)
    if not 1 <= k <= len(curve):
        raise ValueError(f"k must lie in 1..{len(curve)} (candidate pairs), got {k}")
    return float(curve["precision"].iloc[k - 1])
