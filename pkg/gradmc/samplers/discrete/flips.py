"""Flip proposals over binary states, shared by GWG, GWG-N and random-walk Metropolis.

A flip proposal draws N indices i_1..i_N i.i.d. from a categorical q(. | x) over the D coordinates
(with replacement) and flips every DISTINCT drawn index once. The draws are kept as a count vector
n in N^D (n_i = how often i was drawn, sum n_i = N); the proposed state is x' = x XOR 1[n > 0].

Two valid Metropolis-Hastings scores of such a move (GWG paper Appendix D.2, Eq. 27):

- ``"draws"`` (Eq. 27): log q(draws | x) = sum_n log q(i_n | x) = sum_i n_i log q(i | x), the probability
  of the ordered draw sequence. Drawing the SAME sequence at x' flips the same set back to x, so
  (x, draws) -> (x', draws) is an involution and min(1, pi(x') q(draws|x') / (pi(x) q(draws|x))) is
  Metropolis-Hastings on the joint space of (state, draws); summing over draws, P(x -> x') satisfies
  detailed balance. The multinomial coefficient of the multiset is the same at x and x' and cancels.
- ``"set"``: log Q(A | x), the marginal probability that N draws hit exactly the set A = {i: n_i > 0}
  (a sum over all count vectors with support A). Plain Metropolis-Hastings on x with proposal Q;
  its moves are Peskun-larger (min(sum) >= sum(min)), so its acceptance is never lower.

An index drawn twice flips ONCE (not back): then |A| is the number of distinct draws and the same draws
map x' back to x, as both scores require. Counting multiplicities in one direction only (e.g. scoring
the reverse move by the distinct indices) breaks invariance; the exactness tests show it.
"""

from __future__ import annotations

import functools
import itertools
import math

import torch

from gradmc.samplers.base import sample_categorical

__all__ = [
    "DENSITIES",
    "draw_flip_counts",
    "draw_flips",
    "distinct_draws",
    "apply_flips",
    "log_draws_probability",
    "log_set_probability",
    "log_flip_probability",
]

DENSITIES = ("draws", "set")


def draw_flips(log_q: torch.Tensor, num_draws: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """N i.i.d. draws from q(. | x) per chain, as indices and as counts.

    Args:
        log_q: (C, D) normalised log-probabilities (rows logsumexp to 0); -inf entries are never drawn.
        num_draws: N >= 1.

    Returns:
        draws (C, N) int64 indices in draw order, and counts (C, D) int64 n, each row summing to N.
    """
    C, D = log_q.shape
    idx = sample_categorical(log_q, generator, num_samples=num_draws)  # (C, N): one CDF per chain
    counts = torch.zeros(C, D, dtype=torch.long, device=log_q.device)
    return idx, counts.scatter_add_(1, idx, torch.ones_like(idx))


def draw_flip_counts(log_q: torch.Tensor, num_draws: int, generator: torch.Generator) -> torch.Tensor:
    """The counts (C, D) of :func:`draw_flips` (the same draws from the same generator stream)."""
    return draw_flips(log_q, num_draws, generator)[1]


def distinct_draws(draws: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The set of distinct drawn indices of each chain, as (sites, mask) for the incremental evaluations.

    Args:
        draws: (C, N) int64 indices.

    Returns:
        sites: (C, N) the draws sorted; mask: (C, N) bool, True at the first of each run of equal
        indices, so the True entries of a row are its distinct draws (the flipped set of ``apply_flips``).
    """
    sites = draws.sort(1).values
    mask = torch.ones_like(sites, dtype=torch.bool)
    mask[:, 1:] = sites[:, 1:] != sites[:, :-1]
    return sites, mask


def apply_flips(x: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """x' = x with every coordinate drawn at least once flipped: (..., D), (..., D) -> (..., D)."""
    return torch.where(counts > 0, 1.0 - x, x)


def log_draws_probability(log_q: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """log of the probability of one ordered draw sequence with these counts: sum_i n_i log q_i.

    Args:
        log_q: (..., D); counts: (..., D) int64 (broadcastable). Returns (...,). Undrawn coordinates
        contribute 0 even where log q = -inf.
    """
    return torch.where(counts > 0, counts * log_q, torch.zeros((), dtype=log_q.dtype, device=log_q.device)).sum(-1)


@functools.lru_cache(maxsize=16)
def _compositions(num_draws: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Count vectors c (R, N) with c_0..c_{k-1} >= 1, the rest 0, sum N, for k = 1..N (R = 2**(N-1)).

    Returns c, k (R,) int64 (the number of positive slots) and log N!/prod c_j! (R,) float64.
    """
    rows, ks = [], []
    for k in range(1, num_draws + 1):
        for cuts in itertools.combinations(range(1, num_draws), k - 1):
            edges = (0, *cuts, num_draws)
            parts = [edges[j + 1] - edges[j] for j in range(k)]
            rows.append(parts + [0] * (num_draws - k))
            ks.append(k)
    c = torch.tensor(rows, dtype=torch.long)
    log_coef = math.lgamma(num_draws + 1) - torch.lgamma(c.double() + 1).sum(1)
    return c, torch.tensor(ks), log_coef


def log_set_probability(log_q: torch.Tensor, counts: torch.Tensor, num_draws: int) -> torch.Tensor:
    """log Q(A | x): probability that N i.i.d. draws from q hit exactly the set A = {i: counts_i > 0}.

    Q(A) = sum over count vectors m with support A and sum N of N!/prod m_i! prod q_i^m_i, evaluated
    as a logsumexp over the 2**(N-1) compositions of N (stable; no inclusion-exclusion cancellation).

    Args:
        log_q: (C, D) normalised; counts: (C, D) int64 with 1 <= |A| <= N per row. Returns (C,).
    """
    comp, k_comp, log_coef = (t.to(log_q.device) for t in _compositions(num_draws))  # (R, N), (R,), (R,)
    C, D = log_q.shape
    support = counts > 0
    k = support.sum(1)  # (C,)
    # log q on A first, in any order (Q(A) is symmetric in A's members), then filler: -inf for the
    # slots past |A|, set to 0 below; a composition with k_comp == |A| only touches the first |A| slots
    masked = torch.where(support, log_q, torch.full((), -torch.inf, dtype=log_q.dtype, device=log_q.device))
    top = masked.topk(min(num_draws, D), dim=1).values  # (C, min(N, D))
    top = torch.nn.functional.pad(top.nan_to_num(neginf=0.0), (0, num_draws - top.shape[1]))  # (C, N)
    terms = top @ comp.to(log_q.dtype).T + log_coef.to(log_q.dtype)  # (C, R)
    terms = terms.masked_fill(k_comp[None, :] != k[:, None], -torch.inf)
    return torch.logsumexp(terms, 1)


def log_flip_probability(log_q: torch.Tensor, counts: torch.Tensor, num_draws: int, density: str) -> torch.Tensor:
    """The MH score of a flip move, ``density`` in :data:`DENSITIES` (see the module docstring). (C,)."""
    if density == "draws":
        return log_draws_probability(log_q, counts)
    if density == "set":
        return log_set_probability(log_q, counts, num_draws)
    raise ValueError(f"density must be one of {DENSITIES}, got {density!r}")
