"""Scores of a fitted Potts model against the known structure or parameters (GWG paper Sec. 5.4, Fig. 7, 12,
Appendix H): the k grid of the precision / recall curves, top-L APC precision, and the coupling error
against a known J in the zero-sum gauge.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from gradmc.proteins.contacts import apc, contact_curve, coupling_norms
from gradmc.training.plm import zero_sum_gauge

__all__ = ["k_grid", "top_l_precision_apc", "coupling_rmse"]


def k_grid(L: int, num_candidates: int, max_k_factor: float, num_k: int) -> np.ndarray:
    """The numbers k of top-ranked pairs at which the precision / recall curves are recorded.

    Sorted distinct k in 1..kmax, kmax = min(ceil(max_k_factor * L), num_candidates) (at least 1): ``num_k``
    (at least 2) evenly spaced values (rounded half to even), plus the standard cut-offs L/5, L/2 and L
    (integer division, at least 1) where they are <= kmax.

    Args:
        L: alignment length; num_candidates: ranked pairs available; max_k_factor: curve length in units of L;
        num_k: evenly spaced points.

    Returns:
        (n,) int64, strictly increasing.
    """
    kmax = max(1, min(math.ceil(max_k_factor * L), num_candidates))
    ks = np.rint(np.linspace(1, kmax, max(num_k, 2))).astype(np.int64)
    ks = np.concatenate([ks, [max(1, L // 5), max(1, L // 2), L]])
    return np.unique(ks[(ks >= 1) & (ks <= kmax)])


def top_l_precision_apc(J: torch.Tensor, contacts: np.ndarray, observed: np.ndarray, min_separation: int) -> float:
    """Precision of the top-L pairs ranked by the APC-corrected coupling norms (the PCD training curve).

    Args:
        J: (L, L, q, q) couplings; contacts, observed: (L, L) bool contact map and known-structure mask;
        min_separation: rank only pairs with j - i >= this.

    Returns:
        tp / k at k = min(L, number of candidate pairs); NaN while J = 0 (APC is then undefined, e.g. at
        PCD iteration 0).
    """
    F = coupling_norms(J)
    if not F.any():
        return float("nan")
    curve = contact_curve(apc(F), contacts, min_separation=min_separation, mask=observed)
    return float(curve["precision"].iloc[min(F.shape[0], len(curve)) - 1])


def coupling_rmse(J: torch.Tensor, h: torch.Tensor, true_J: torch.Tensor, true_h: torch.Tensor) -> tuple[float, float]:
    """Error of fitted couplings against the true ones, both moved to the zero-sum gauge first
    (:func:`gradmc.training.plm.zero_sum_gauge`: the gauge in which equal distributions have equal J).

    Args:
        J, true_J: (L, L, q, q) couplings; h, true_h: (L, q) fields (the gauge move mixes h and J).

    Returns:
        (RMSE over every entry of the blocks i < j, RMSE over the blocks' Frobenius norms), in float64.
    """
    _, Jz = zero_sum_gauge(h.double(), J.double())
    _, Jt = zero_sum_gauge(true_h.double(), true_J.double())
    i, j = np.triu_indices(J.shape[0], 1)
    diff = (Jz[i, j] - Jt[i, j]).flatten(1)
    norms = Jz[i, j].flatten(1).norm(dim=1) - Jt[i, j].flatten(1).norm(dim=1)
    return float(diff.pow(2).mean().sqrt()), float(norms.pow(2).mean().sqrt())
