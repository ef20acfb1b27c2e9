"""Exact enumeration of small binary state spaces: the ground truth the samplers are tested against."""

from __future__ import annotations

import torch

__all__ = ["enumerate_binary", "exact_distribution"]


def enumerate_binary(dim: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """All 2**dim binary vectors, shape (2**dim, dim); row k holds the bits of k, most significant first.

    Raises:
        ValueError: if dim > 26 (more than 67M states).
    """
    if not 0 < dim <= 26:
        raise ValueError(f"can enumerate 1..26 binary dimensions, got {dim}")
    k = torch.arange(2**dim)
    shifts = torch.arange(dim - 1, -1, -1)
    return ((k[:, None] >> shifts) & 1).to(dtype)


@torch.no_grad()
def exact_distribution(log_prob, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Normalised probabilities of every binary state under an unnormalised ``log_prob``.

    Returns:
        states: (2**dim, dim) float64 in {0, 1}; probs: (2**dim,) float64 summing to 1.
    """
    states = enumerate_binary(dim, dtype=torch.float64)
    logits = log_prob(states).double()
    return states, torch.softmax(logits, 0)
