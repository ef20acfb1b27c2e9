"""Sequence reweighting for multiple sequence alignments (Morcos et al. 2011; Ekeberg et al. 2013; plmc).

    w_n = 1 / #{m : identity(n, m) >= theta},   identity(n, m) = (1/L) sum_l [x_nl == x_ml],
    Neff = sum_n w_n.

Convention (plmc, EVcouplings ``num_cluster_members``): identity is the fraction of equal positions over all
L match columns, a gap facing a gap counts as equal, and the count includes n itself (so w_n <= 1).
``identity >= theta`` is evaluated as ``matches >= theta * L`` with a 1e-9 tolerance, so exact ties such as
40/50 at theta = 0.8 count as neighbours whatever the floating-point rounding of theta * L.

Implementation: match counts are products of one-hot blocks, (b, L q) @ (L q, b) in float32 (exact for
L < 2**24), computed for the upper block triangle only, block by block, so memory stays O(b L q + b**2) for any N.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from gradmc.proteins.alignment import NUM_STATES

__all__ = ["sequence_weights", "neff", "DEFAULT_THETA"]

DEFAULT_THETA = 0.8


def _block_one_hot(states: torch.Tensor, num_states: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(states, num_states).reshape(states.shape[0], -1).to(torch.float32)


def sequence_weights(states, theta: float = DEFAULT_THETA, *, num_states: int | None = None,
                     block_size: int = 4096, device: str | torch.device = "cpu") -> np.ndarray:
    """Inverse neighbourhood-size weights w (N,) of an alignment (N, L) of integer states.

    Args:
        states: (N, L) integer array/tensor, values in 0..num_states-1.
        theta: identity threshold in (0, 1]; the field's standard is 0.8.
        num_states: q (default 21, the protein alphabet).
        block_size: rows per block of the N x N match-count matrix (memory ~ 4 block_size**2 bytes
            plus 8 block_size L q bytes).
        device: where the block products run (e.g. "cuda").

    Returns:
        (N,) float64 weights in (0, 1]; ``neff(w) = w.sum()``.

    Raises:
        ValueError: states not a non-empty 2-D integer array within 0..q-1, theta outside (0, 1], or a
            block_size < 1.
    """
    s = torch.as_tensor(np.asarray(states))
    if s.dim() != 2 or s.numel() == 0 or s.dtype.is_floating_point or s.dtype == torch.bool:
        raise ValueError(f"states must be a non-empty (N, L) integer array, got {tuple(s.shape)} {s.dtype}")
    q = NUM_STATES if num_states is None else int(num_states)
    if int(s.min()) < 0 or int(s.max()) >= q:
        raise ValueError(f"states must lie in 0..{q - 1}, got range {int(s.min())}..{int(s.max())}")
    if not (0.0 < theta <= 1.0):
        raise ValueError(f"theta must lie in (0, 1], got {theta}")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    n, length = s.shape
    min_matches = math.ceil(theta * length - 1e-9)
    s = s.to(device=device, dtype=torch.long)
    counts = torch.zeros(n, dtype=torch.float64, device=device)
    starts = range(0, n, block_size)
    for a in starts:
        xa = _block_one_hot(s[a:a + block_size], q)
        for b in starts:
            if b < a:  # the match matrix is symmetric: block (a, b) was counted as block (b, a)
                continue
            xb = xa if b == a else _block_one_hot(s[b:b + block_size], q)
            near = (xa @ xb.T) >= min_matches  # (ba, bb); equal-position counts are exact in float32
            counts[a:a + block_size] += near.sum(1, dtype=torch.float64)
            if b != a:
                counts[b:b + block_size] += near.sum(0, dtype=torch.float64)
    return (1.0 / counts).cpu().numpy()


def neff(weights) -> float:
    """Effective number of sequences, Neff = sum_n w_n.

    Raises:
        ValueError: weights not 1-D, empty, or holding negative / non-finite values.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.size == 0 or not np.isfinite(w).all() or (w < 0).any():
        raise ValueError(f"weights must be a non-empty 1-D array of finite values >= 0, got shape {w.shape}")
    return float(w.sum())
