"""Gibbs-X: exact block Gibbs updates of X coordinates at a time (GWG paper Sec. 5, baseline).

Each chain consumes its own random permutation of the D coordinates block by block; a new
permutation is drawn when fewer than X unvisited coordinates remain. For the chosen block all 2**X
joint values are enumerated and one is drawn from the exact conditional p(x_block | x_rest).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from gradmc.samplers.base import Info, sample_categorical
from gradmc.targets.exact import enumerate_binary
from gradmc.targets.validation import check_binary

__all__ = ["Gibbs", "GibbsState"]


class GibbsState(NamedTuple):
    """x: (C, D) state; order: (C, D) int64 per-chain permutation; position: next unused slot."""

    x: torch.Tensor
    order: torch.Tensor
    position: int


def _random_orders(num_chains: int, dim: int, generator: torch.Generator, device) -> torch.Tensor:
    keys = torch.rand(num_chains, dim, generator=generator, device=device, dtype=torch.float64)  # no ties
    return torch.argsort(keys, dim=1)  # (C, D) independent uniform permutations


@dataclass(frozen=True)
class Gibbs:
    """Random-permutation-scan block Gibbs with block size X (Gibbs-1, Gibbs-2, ...).

    Args:
        block_size: X >= 1; every step evaluates the target on 2**X candidate states per chain
            (energy_evals = 2**X, grad_evals = 0).
    """

    block_size: int = 1

    def __post_init__(self):
        if not 1 <= self.block_size <= 16:
            raise ValueError(f"Gibbs block_size must be in 1..16, got {self.block_size}")

    def init(self, x: torch.Tensor, log_prob) -> GibbsState:
        """Start chains at x (C, D) floats in {0, 1}. The first step draws the scan orders."""
        check_binary(x, check_values=True)
        if x.shape[1] < self.block_size:
            raise ValueError(f"block_size {self.block_size} exceeds the dimension {x.shape[1]}")
        empty = torch.empty(x.shape[0], 0, dtype=torch.long, device=x.device)
        return GibbsState(x=x.clone(), order=empty, position=0)

    def step(self, state: GibbsState, log_prob, generator: torch.Generator) -> tuple[GibbsState, Info]:
        """Update one block of X coordinates per chain from its exact conditional."""
        x = state.x
        C, D = x.shape
        X = self.block_size
        order, position = state.order, state.position
        if position + X > order.shape[1]:
            order, position = _random_orders(C, D, generator, x.device), 0
        block = order[:, position:position + X]  # (C, X)
        patterns = enumerate_binary(X, x.dtype).to(x.device)  # (2**X, X)
        candidates = x[:, None, :].repeat(1, 2**X, 1)  # (C, 2**X, D)
        index = block[:, None, :].expand(C, 2**X, X)
        candidates.scatter_(2, index, patterns[None].expand(C, -1, -1))
        with torch.no_grad():
            logits = log_prob(candidates.reshape(C * 2**X, D)).reshape(C, 2**X)
        choice = sample_categorical(logits, generator)  # (C,)
        x_new = candidates[torch.arange(C, device=x.device), choice]
        ones = torch.ones(C, dtype=x.dtype, device=x.device)
        info = Info(acceptance_prob=ones, accepted=torch.ones(C, dtype=torch.bool, device=x.device),
                    sites_changed=(x_new != x).sum(1), energy_evals=2**X, grad_evals=0)
        return GibbsState(x=x_new, order=order, position=position + X), info

