"""Finite enumerations shared by the discrete kernels, and exact transition matrices built from them.

Two uses:

- kernels enumerate small sets of moves (flip patterns inside a Hamming ball, multisets of N draws,
  all blocks of X coordinates) both to *sample* (``step``) and to *enumerate* one step exactly
  (``transition_probabilities``), so the two cannot drift apart;
- tests turn a kernel's ``transition_probabilities(x, log_prob) -> (next_states (C, S, D), probs (C, S))``
  into the full 2**D x 2**D transition matrix P and check pi P = pi and detailed balance
  (EXPERIMENTS.md A0, "Exactness").

Binary states are indexed as in :func:`gradmc.core.exact.enumerate_binary`: row k holds the bits of
k, most significant bit first.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable

import torch

__all__ = [
    "ball_patterns",
    "ball_size",
    "combinations",
    "multisets",
    "state_index",
    "transition_matrix",
    "stationarity_error",
    "detailed_balance_error",
]


def ball_size(size: int, radius: int) -> int:
    """Number of binary vectors of length ``size`` within Hamming distance ``radius`` of a point:
    sum_{k <= radius} C(size, k). HB-10-1: 11; HB-4-2: 11; HB-3-1: 4."""
    return sum(math.comb(size, k) for k in range(min(radius, size) + 1))


def ball_patterns(size: int, radius: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """All flip masks of length ``size`` with at most ``radius`` ones, shape (ball_size, size).

    Row 0 is the zero mask (the centre itself); then weight 1, 2, ... in lexicographic order of the
    flipped positions. XOR-ing a point with every row gives its Hamming ball.

    Raises:
        ValueError: if size < 1 or radius < 0.
    """
    if size < 1 or radius < 0:
        raise ValueError(f"need size >= 1 and radius >= 0, got size={size}, radius={radius}")
    return torch.tensor(_ball_rows(size, radius), dtype=dtype)


@functools.lru_cache(maxsize=64)
def _ball_rows(size: int, radius: int) -> tuple[tuple[float, ...], ...]:
    """The rows of :func:`ball_patterns` as Python tuples (cached: kernels rebuild the masks every step)."""
    rows = []
    for k in range(min(radius, size) + 1):
        for flipped in itertools.combinations(range(size), k):
            rows.append(tuple(1.0 if i in flipped else 0.0 for i in range(size)))
    return tuple(rows)


def combinations(dim: int, size: int) -> torch.Tensor:
    """All C(dim, size) sorted index subsets of range(dim), shape (C(dim, size), size) int64.

    Raises:
        ValueError: unless 1 <= size <= dim.
    """
    if not 1 <= size <= dim:
        raise ValueError(f"need 1 <= size <= dim, got size={size}, dim={dim}")
    return torch.tensor(list(itertools.combinations(range(dim), size)), dtype=torch.long)


def multisets(dim: int, num_draws: int) -> tuple[torch.Tensor, torch.Tensor]:
    """All outcomes of ``num_draws`` i.i.d. draws from a categorical over ``dim`` items, as counts.

    Returns:
        counts: (M, dim) int64, each row sums to num_draws; M = C(dim + num_draws - 1, num_draws).
        log_coef: (M,) float64 log multinomial coefficient log(N! / prod_i n_i!), the number of
            ordered draw sequences that give each multiset. P(counts | q) = exp(log_coef + sum n_i log q_i).

    Raises:
        ValueError: if dim < 1 or num_draws < 1.
    """
    if dim < 1 or num_draws < 1:
        raise ValueError(f"need dim >= 1 and num_draws >= 1, got dim={dim}, num_draws={num_draws}")
    draws = torch.tensor(list(itertools.combinations_with_replacement(range(dim), num_draws)), dtype=torch.long)
    counts = torch.zeros(draws.shape[0], dim, dtype=torch.long)
    counts.scatter_add_(1, draws, torch.ones_like(draws))
    log_coef = math.lgamma(num_draws + 1) - torch.lgamma(counts.double() + 1).sum(1)
    return counts, log_coef


def state_index(x: torch.Tensor) -> torch.Tensor:
    """(..., D) binary states -> (...,) int64 index in enumerate_binary's order (MSB first).

    Raises:
        ValueError: if D > 62 (the index would overflow int64).
    """
    D = x.shape[-1]
    if D > 62:
        raise ValueError(f"state_index supports D <= 62, got {D}")
    weights = 2 ** torch.arange(D - 1, -1, -1, device=x.device)  # int64
    return (x.round().long() * weights).sum(-1)


@torch.no_grad()
def transition_matrix(
    transition_probabilities: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    states: torch.Tensor,
    chunk_size: int = 64,
) -> torch.Tensor:
    """The exact one-step kernel P (S, S) from an enumeration of each row's outcomes.

    Args:
        transition_probabilities: x (c, D) -> (next_states (c, K, D), probs (c, K)); outcomes may
            repeat and include "stay" (next state == x); each row of probs sums to 1. Typically
            ``lambda x: sampler.transition_probabilities(x, target)``.
        states: (S, D) all binary states in enumerate_binary order (S = 2**D).
        chunk_size: rows enumerated per call (bounds memory: c * K * D entries).

    Returns:
        P: (S, S) float64, P[a, b] = probability that one step from states[a] lands on states[b];
        repeated outcomes are summed.

    Raises:
        ValueError: if ``states`` is not the full enumeration in order, or an outcome has a negative
            probability below -max(1e-12, K eps) with eps the machine epsilon of probs' dtype (the round-off of
            1 - sum(moves) over a row's K outcomes is tolerated: about 1e-7 in float32).
    """
    S = states.shape[0]
    if not torch.equal(state_index(states), torch.arange(S, device=states.device)) or S != 2 ** states.shape[1]:
        raise ValueError("states must be enumerate_binary(D): all 2**D states, MSB first")
    P = torch.zeros(S, S, dtype=torch.float64, device=states.device)
    for start in range(0, S, chunk_size):
        x = states[start:start + chunk_size]
        next_states, probs = transition_probabilities(x)
        if next_states.shape[:2] != probs.shape or next_states.shape[0] != x.shape[0]:
            raise ValueError(f"shape mismatch: next_states {tuple(next_states.shape)}, probs {tuple(probs.shape)}")
        tolerance = max(1e-12, probs.shape[1] * torch.finfo(probs.dtype).eps)
        if bool((probs < -tolerance).any()):
            raise ValueError(f"negative transition probability {float(probs.min()):.3g}")
        P[start:start + x.shape[0]].scatter_add_(1, state_index(next_states), probs.double())
    return P


def stationarity_error(P: torch.Tensor, pi: torch.Tensor) -> float:
    """max_b |(pi P)_b - pi_b| for P (S, S) and pi (S,)."""
    return float((pi @ P - pi).abs().max())


def detailed_balance_error(P: torch.Tensor, pi: torch.Tensor) -> float:
    """max_{a,b} |pi_a P_ab - pi_b P_ba|; zero exactly when the kernel is reversible w.r.t. pi."""
    flux = pi[:, None] * P
    return float((flux - flux.T).abs().max())
