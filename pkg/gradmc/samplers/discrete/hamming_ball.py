"""Hamming-ball samplers HB-X-Y and Block-HB (Titsias & Yau 2017; GWG paper Sec. 5, Appendix G).

One step, for a block b of X coordinates (the rest of x fixed):

1. draw an auxiliary point u uniformly from the Hamming ball of radius Y around x within b
   (|H_Y| = sum_{k <= Y} C(X, k) points);
2. draw x' from the Hamming ball of radius Y around u, with probability proportional to exp f(x').

Steps 1-2 are the two exact Gibbs conditionals of the joint p(x) U(u | x), U uniform on H_Y(x) (the
ball size does not depend on the centre, so u | x and x | u are as above). Hence each block update is
reversible w.r.t. pi, and any rule for choosing blocks that does not look at x keeps pi invariant.

- :class:`HammingBall` (HB-X-Y): blocks from a per-chain random-permutation scan, as Gibbs-X.
- :class:`BlockHammingBall` (Block-HB): blocks given by the target's structure (e.g. the K latent bits
  of one time step of a factorial HMM), one drawn uniformly at random per chain per step.

Cost per step: |H_Y| target evaluations in one call (HB-10-1: 11), no gradients; always "accepted".
Targets with ``eval_flip_candidates`` (RBM, lattice Ising) evaluate the ball from the cached aux at x
(RBM: O(|H_Y| X H) instead of |H_Y| full passes; :mod:`gradmc.core.incremental`); the first step
after ``init`` counts init's evaluation of x, and a stale cache or its periodic refresh adds one more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

import gradmc.core.streams as streams
from gradmc.core.incremental import (
    CacheKey,
    Evaluation,
    bind_state,
    cache_key,
    current_evaluation,
    eval_flip_candidates,
    eval_flips,
    evaluate,
    flip_bits,
    offers,
)
from gradmc.core.validation import check_binary
from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.base import Info, check_conditional, check_finite, sample_categorical
from gradmc.samplers.discrete.blocks import next_permutation_block, xor_block
from gradmc.samplers.enumerate import ball_patterns, ball_size, combinations

__all__ = ["HammingBall", "HammingBallState", "BlockHammingBall", "BlockHammingBallState"]

MAX_BALL = 2**16


class HammingBallState(NamedTuple):
    """x: (C, D) state; order: (C, D) int64 per-chain scan permutation ((C, 0) before the first step);
    position: next unused slot of ``order`` (Python int); num_steps: steps taken since ``init``; cache /
    cache_key: as :class:`~gradmc.samplers.discrete.gibbs.GibbsState`."""

    x: torch.Tensor
    order: torch.Tensor
    position: int
    num_steps: int = 0
    cache: Evaluation | None = None
    cache_key: CacheKey | None = None


class BlockHammingBallState(NamedTuple):
    """x: (C, D) state; num_steps: steps taken since ``init`` (for error messages); cache / cache_key:
    as :class:`~gradmc.samplers.discrete.gibbs.GibbsState`."""

    x: torch.Tensor
    num_steps: int = 0
    cache: Evaluation | None = None
    cache_key: CacheKey | None = None


class _HammingBallKernel:
    """The block update shared by HB-X-Y and Block-HB; subclasses provide ``radius``."""

    def _masks(self, block_size: int, x: torch.Tensor) -> torch.Tensor:
        return ball_patterns(block_size, self.radius, x.dtype).to(x.device)  # (B, X)

    def conditional(self, u: torch.Tensor, block: torch.Tensor, log_prob) -> tuple[torch.Tensor, torch.Tensor]:
        """The ball of radius Y around u within the block, and f on it.

        Args:
            u: (C, D) auxiliary points; block: (C, X) int64.

        Returns:
            candidates: (C, B, D); logits: (C, B) f(candidates) from one log_prob call on C * B rows,
            so that p(x' = candidates[k] | u) = softmax(logits)[k].
        """
        C, D = u.shape
        candidates = xor_block(u, block, self._masks(block.shape[1], u))
        with torch.no_grad():
            logits = log_prob(candidates.reshape(-1, D)).reshape(C, -1)
        return candidates, logits

    def _init_cache(self, x: torch.Tensor, log_prob) -> tuple[Evaluation | None, CacheKey | None]:
        """Check f at the initial states; return the cache and key to start with (None, None if the target
        has no incremental evaluations)."""
        ev = evaluate(log_prob, x, grad=False)
        check_finite(self.name, 0, ("log_prob at the current state", ev.log_prob))
        key = cache_key(log_prob) if offers(log_prob, "eval_flip_candidates") else None
        return (ev if key is not None else None), key

    def _update(self, state, block: torch.Tensor, log_prob, generator: torch.Generator):
        """One block update of ``state.x``; returns (x_new, cache, key, Info)."""
        x, step = state.x, state.num_steps + 1
        C = x.shape[0]
        masks = self._masks(block.shape[1], x)  # (B, X)
        k = streams.randint(masks.shape[0], (C,), generator, device=x.device)
        cache, key, evals = None, None, masks.shape[0]
        if offers(log_prob, "eval_flip_candidates"):  # the ball around u = x ^ masks[k] as flips of x
            ev, key, billed = current_evaluation(state, log_prob, x, grad=False)
            flips = masks[k].bool()[:, None, :] ^ masks.bool()[None]  # (C, B, X)
            logits = eval_flip_candidates(log_prob, x, ev, block, flips)
            check_conditional(self.name, step, logits)  # the ball around u holds x
            choice = sample_categorical(logits, generator)
            mask = flips[torch.arange(C, device=x.device), choice]
            x_new = flip_bits(x, block, mask)
            changed = mask.sum(1)  # the flipped bits (distinct sites)
            if key is not None:
                choice_f = logits.gather(1, choice[:, None]).squeeze(1)
                cache = eval_flips(log_prob, x, ev, block, mask, grad=False, known_log_prob=choice_f)
            evals += billed
        else:
            u = xor_block(x, block, masks[k][:, None, :])[:, 0]  # (C, D), uniform on the ball around x
            candidates, logits = self.conditional(u, block, log_prob)  # (C, B, D), (C, B)
            check_conditional(self.name, step, logits)  # the ball around u holds x
            x_new = candidates[torch.arange(C, device=x.device), sample_categorical(logits, generator)]
            changed = (x_new != x).sum(1)
        ones = torch.ones(C, dtype=x.dtype, device=x.device)
        info = Info(acceptance_prob=ones, accepted=torch.ones(C, dtype=torch.bool, device=x.device),
                    sites_changed=changed, energy_evals=evals, grad_evals=0)
        return x_new, cache, key, info

    def _enumerate(self, x: torch.Tensor, blocks: torch.Tensor, log_prob) -> tuple[torch.Tensor, torch.Tensor]:
        """All (block, u, x') outcomes from each x, block uniform over ``blocks`` (nb, X).

        Returns next_states (C, nb * B * B, D) and probs (C, nb * B * B); B = ball size.
        """
        C, D = x.shape
        nb = blocks.shape[0]
        masks = self._masks(blocks.shape[1], x)
        B = masks.shape[0]
        rows = blocks.to(x.device).repeat(C, 1)  # (C * nb, X), chain-major
        u = xor_block(x.repeat_interleave(nb, 0), rows, masks).reshape(C * nb * B, D)  # every u, (C * nb * B, D)
        candidates, logits = self.conditional(u, rows.repeat_interleave(B, 0), log_prob)  # (C * nb * B, B, ...)
        probs = torch.softmax(logits, -1) / (nb * B)
        return candidates.reshape(C, -1, D), probs.reshape(C, -1)


@register_sampler("HB-{block_size}-{radius}", colour={"HB-10-1": "tab:green"}, order=20, examples=("HB-10-1",),
                  doc="Hamming ball, block X, radius Y")
@dataclass(frozen=True)
class HammingBall(_HammingBallKernel):
    """HB-X-Y: Hamming-ball updates of X coordinates with radius Y, random-permutation block scan.

    Args:
        block_size: X >= 1 (the paper's HB-10-1: 10).
        radius: Y in 1..X (HB-10-1: 1).

    Cost per step: ball_size(X, Y) energy evaluations (HB-10-1: 11, HB-4-2: 11), 0 gradients.

    Raises:
        ValueError: radius outside 1..block_size, or a ball larger than 2**16 (construction);
            block_size > D (init).
        NonFiniteError: f NaN/inf at the initial state (init); NaN/+inf on a candidate of the ball,
            or -inf on all of them (step).
    """

    block_size: int = 10
    radius: int = 1

    def __post_init__(self):
        if not 1 <= self.radius <= self.block_size:
            raise ValueError(f"HammingBall needs 1 <= radius <= block_size, got {self.radius}, {self.block_size}")
        if ball_size(self.block_size, self.radius) > MAX_BALL:
            raise ValueError(f"Hamming ball of {ball_size(self.block_size, self.radius)} points exceeds {MAX_BALL}")

    @property
    def name(self) -> str:
        """The paper's name, "HB-X-Y" (as ``make_sampler`` takes it)."""
        return f"HB-{self.block_size}-{self.radius}"

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> HammingBallState:
        """Start chains at x (C, D) floats in {0, 1}."""
        check_binary(x, check_values=True)
        if x.shape[1] < self.block_size:
            raise ValueError(f"block_size {self.block_size} exceeds the dimension {x.shape[1]}")
        cache, key = self._init_cache(x, log_prob)
        empty = torch.empty(x.shape[0], 0, dtype=torch.long, device=x.device)
        return bind_state(HammingBallState(x=x.clone(), order=empty, position=0, cache=cache, cache_key=key))

    def step(self, state: HammingBallState, log_prob, generator: torch.Generator):
        """One Hamming-ball update of the next scan block of every chain."""
        x = state.x
        C, D = x.shape
        block, order, position = next_permutation_block(
            state.order, state.position, self.block_size, C, D, generator, x.device)  # (C, X)
        x_new, cache, key, info = self._update(state, block, log_prob, generator)
        return bind_state(HammingBallState(x=x_new, order=order, position=position, num_steps=state.num_steps + 1,
                                cache=cache, cache_key=key)), info

    @torch.no_grad()
    def transition_probabilities(self, x: torch.Tensor, log_prob, blocks: torch.Tensor | None = None):
        """Enumerate one step from each x (C, D), the block uniform over ``blocks`` (nb, X).

        Default blocks: all C(D, X) subsets, i.e. the random-scan kernel (each slot of a uniform
        permutation is a uniform X-subset). Returns next_states (C, nb * B**2, D), probs (C, nb * B**2).
        """
        blocks = combinations(x.shape[1], self.block_size) if blocks is None else blocks
        return self._enumerate(x, blocks, log_prob)


@register_sampler("Block-HB", fixed={"radius": 1}, target_args={"blocks": "blocks"}, colour="tab:olive", order=21,
                  doc="Hamming ball on the target's own blocks (needs target.blocks()), radius 1")
@dataclass(frozen=True)
class BlockHammingBall(_HammingBallKernel):
    """Block-HB: Hamming-ball updates on blocks given by the target's structure.

    Args:
        blocks: (num_blocks, block_len) coordinate indices (LongTensor or nested sequence); stored as a
            tuple of tuples. One block is drawn uniformly at random per chain per step. For a factorial
            HMM with x laid out time-major (index t * K + k), ``BlockHammingBall.contiguous(L * K, K)``.
        radius: Y in 1..block_len.

    Cost per step: ball_size(block_len, Y) energy evaluations (K = 10, Y = 1: 11), 0 gradients.

    Raises:
        ValueError: no blocks, ragged blocks, repeated or negative indices in a block, radius outside
            1..block_len (construction); an index >= D (init).
        NonFiniteError: as :class:`HammingBall`.
    """

    blocks: tuple
    radius: int = 1

    def __post_init__(self):
        rows = self.blocks.tolist() if isinstance(self.blocks, torch.Tensor) else [list(b) for b in self.blocks]
        rows = tuple(tuple(int(i) for i in row) for row in rows)
        if not rows or len({len(r) for r in rows}) != 1 or len(rows[0]) == 0:
            raise ValueError("BlockHammingBall needs >= 1 non-empty blocks of equal length")
        if any(len(set(r)) != len(r) or min(r) < 0 for r in rows):
            raise ValueError("BlockHammingBall blocks must hold distinct non-negative indices")
        object.__setattr__(self, "blocks", rows)
        if not 1 <= self.radius <= len(rows[0]):
            raise ValueError(f"BlockHammingBall needs 1 <= radius <= block length, got {self.radius}")
        if ball_size(len(rows[0]), self.radius) > MAX_BALL:
            raise ValueError(f"Hamming ball of {ball_size(len(rows[0]), self.radius)} points exceeds {MAX_BALL}")

    name = "Block-HB"  # the paper's name (a class attribute, not a field)

    @classmethod
    def contiguous(cls, dim: int, block_len: int, radius: int = 1) -> BlockHammingBall:
        """Blocks (0..K-1), (K..2K-1), ...: the K bits of each time step of a time-major (L, K) layout.

        Raises:
            ValueError: if block_len does not divide dim.
        """
        if block_len < 1 or dim % block_len:
            raise ValueError(f"block_len {block_len} must divide dim {dim}")
        return cls(blocks=torch.arange(dim).reshape(-1, block_len), radius=radius)

    def block_tensor(self, device=None) -> torch.Tensor:
        """(num_blocks, block_len) int64 blocks."""
        return torch.tensor(self.blocks, dtype=torch.long, device=device)

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> BlockHammingBallState:
        """Start chains at x (C, D) floats in {0, 1}."""
        check_binary(x, check_values=True)
        top = max(max(r) for r in self.blocks)
        if top >= x.shape[1]:
            raise ValueError(f"block index {top} out of range for dimension {x.shape[1]}")
        cache, key = self._init_cache(x, log_prob)
        return bind_state(BlockHammingBallState(x=x.clone(), cache=cache, cache_key=key))

    def step(self, state: BlockHammingBallState, log_prob, generator: torch.Generator):
        """One Hamming-ball update of a uniformly random block per chain."""
        x = state.x
        blocks = self.block_tensor(x.device)  # (nb, X)
        choice = streams.randint(blocks.shape[0], (x.shape[0],), generator, device=x.device)
        x_new, cache, key, info = self._update(state, blocks[choice], log_prob, generator)
        return bind_state(BlockHammingBallState(x=x_new, num_steps=state.num_steps + 1, cache=cache,
                                                cache_key=key)), info

    @torch.no_grad()
    def transition_probabilities(self, x: torch.Tensor, log_prob):
        """Enumerate one step from each x (C, D): block uniform over ``blocks``, then u, then x'.

        Returns next_states (C, nb * B**2, D), probs (C, nb * B**2), B = ball size.
        """
        return self._enumerate(x, self.block_tensor(x.device), log_prob)
