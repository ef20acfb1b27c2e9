"""Block bookkeeping shared by the block samplers (Gibbs-X, HB-X-Y, Block-HB).

- random-permutation scan: each chain consumes its own uniform random permutation of the D coordinates
  X at a time; a new permutation is drawn when fewer than X unvisited coordinates remain. Marginally
  every block is a uniformly random X-subset; consecutive blocks are disjoint within a permutation.
- candidate construction: write (or XOR) a set of patterns into one block of every chain's state.
"""

from __future__ import annotations

import torch

import gradmc.core.streams as streams

__all__ = ["random_orders", "next_permutation_block", "set_block", "xor_block"]


def random_orders(num_chains: int, dim: int, generator: torch.Generator, device) -> torch.Tensor:
    """(C, D) int64: an independent uniform random permutation of range(D) per chain."""
    keys = streams.rand((num_chains, dim), generator, device=device, dtype=torch.float64)  # no ties
    return torch.argsort(keys, dim=1)


def next_permutation_block(
    order: torch.Tensor, position: int, block_size: int, num_chains: int, dim: int, generator: torch.Generator, device
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Take the next block of a random-permutation scan.

    Args:
        order: (C, D) current permutations, or (C, 0) before the first step.
        position: next unused slot of ``order`` (a Python int, identical for all chains).

    Returns:
        block: (C, X) int64 coordinates; order: (C, D), possibly freshly drawn; position after the block.
    """
    if position + block_size > order.shape[1]:
        order, position = random_orders(num_chains, dim, generator, device), 0
    return order[:, position:position + block_size], order, position + block_size


def set_block(x: torch.Tensor, block: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Copies of x with its block overwritten by each of K value patterns.

    Args:
        x: (C, D) states; block: (C, X) int64 coordinates; values: (K, X) or (C, K, X) patterns.

    Returns:
        (C, K, D): out[c, k] = x[c] with x[c, block[c, j]] = values[(c,) k, j].
    """
    C, D = x.shape
    K, X = values.shape[-2:]
    out = x[:, None, :].repeat(1, K, 1)  # (C, K, D)
    out.scatter_(2, block[:, None, :].expand(C, K, X), values.to(x.dtype).expand(C, K, X))
    return out


def xor_block(x: torch.Tensor, block: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Copies of binary x with the bits of its block flipped where each of K masks is 1.

    Args:
        x: (C, D) in {0, 1}; block: (C, X) int64; masks: (K, X) or (C, K, X) in {0, 1}.

    Returns:
        (C, K, D) states; with the masks of a Hamming ball of radius Y, the ball around x within the block.
    """
    current = x.gather(1, block)[:, None, :]  # (C, 1, X)
    return set_block(x, block, (current - masks.to(x.dtype)).abs())
