"""Gibbs-X: exact block Gibbs updates of X coordinates at a time (GWG paper Sec. 5, baseline).

Block choice (``scan``):

- ``"random"`` (default, the paper's Gibbs-X): each chain consumes its own random permutation of the D
  coordinates block by block; a new permutation is drawn when fewer than X unvisited coordinates remain.
- ``"systematic"``: blocks are the cyclic windows (p, p+1, ..., p+X-1) mod D with p = 0, X, 2X, ... mod D,
  the same for every chain (Gibbs-1: sites 0, 1, ..., D-1, 0, 1, ...).

For the chosen block all 2**X joint values are enumerated and one is drawn from the exact conditional
p(x_block | x_rest). Each block update leaves pi invariant and is reversible (it is a Gibbs step), so
ANY scan order, random or systematic, leaves pi invariant; the composed sweeps need not be reversible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

from gradmc.core.exact import enumerate_binary
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
from gradmc.samplers.discrete.blocks import next_permutation_block, set_block
from gradmc.samplers.enumerate import combinations

__all__ = ["Gibbs", "GibbsState"]

SCANS = ("random", "systematic")


class GibbsState(NamedTuple):
    """x: (C, D) state; order: (C, D) int64 per-chain permutation ((C, 0) before the first random-scan
    step, unused by the systematic scan); position: next unused slot (random) or next window start
    (systematic), a Python int shared by all chains; num_steps: steps taken since ``init``; cache /
    cache_key: the evaluation at x and its key, for targets with incremental evaluations
    (:mod:`gradmc.core.incremental`), else None."""

    x: torch.Tensor
    order: torch.Tensor
    position: int
    num_steps: int = 0
    cache: Evaluation | None = None
    cache_key: CacheKey | None = None


@register_sampler("Gibbs-{block_size}", fixed={"scan": "random"},
                  colour={"Gibbs-1": "tab:blue", "Gibbs-2": "tab:orange"}, order=10, examples=("Gibbs-1", "Gibbs-2"),
                  doc="random-permutation-scan block Gibbs, block size X")
@register_sampler("Gibbs-{block_size}-systematic", fixed={"scan": "systematic"}, colour="steelblue", order=11,
                  examples=("Gibbs-2-systematic",), in_groups=False, doc="block Gibbs with a systematic (cyclic) scan")
@dataclass(frozen=True)
class Gibbs:
    """Block Gibbs with block size X (Gibbs-1, Gibbs-2, ...), random-permutation or systematic scan.

    Args:
        block_size: X >= 1; every step evaluates the target on 2**X candidate states per chain
            (energy_evals = 2**X, grad_evals = 0). Targets with ``eval_flip_candidates`` (RBM, lattice
            Ising) compute them from the cached aux at x (RBM: O(2**X X H) instead of 2**X full passes),
            and Gibbs-1 then reads f at the current value from the cache (energy_evals = 1);
            the first step after ``init`` also counts init's evaluation of x, and a stale cache or its
            periodic refresh evaluates x again (energy_evals + 1 each).
        scan: "random" (random-permutation scan, the paper's) or "systematic" (cyclic windows).

    Raises:
        ValueError: block_size outside 1..16 or an unknown scan (at construction); block_size > D (init).
        NonFiniteError: f NaN/inf at the initial state (init), or NaN/+inf on a candidate of a block's
            conditional, or -inf on all of them (step).
    """

    block_size: int = 1
    scan: str = "random"

    def __post_init__(self):
        if not 1 <= self.block_size <= 16:
            raise ValueError(f"Gibbs block_size must be in 1..16, got {self.block_size}")
        if self.scan not in SCANS:
            raise ValueError(f"Gibbs scan must be one of {SCANS}, got {self.scan!r}")

    @property
    def name(self) -> str:
        """The paper's name, "Gibbs-X" or "Gibbs-X-systematic" (as ``make_sampler`` takes it)."""
        return f"Gibbs-{self.block_size}" + ("-systematic" if self.scan == "systematic" else "")

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> GibbsState:
        """Start chains at x (C, D) floats in {0, 1}. The first random-scan step draws the scan orders."""
        check_binary(x, check_values=True)
        if x.shape[1] < self.block_size:
            raise ValueError(f"block_size {self.block_size} exceeds the dimension {x.shape[1]}")
        ev = evaluate(log_prob, x, grad=False)
        check_finite(self.name, 0, ("log_prob at the current state", ev.log_prob))
        empty = torch.empty(x.shape[0], 0, dtype=torch.long, device=x.device)
        key = cache_key(log_prob) if offers(log_prob, "eval_flip_candidates") else None
        return bind_state(GibbsState(x=x.clone(), order=empty, position=0, cache=ev if key is not None else None,
                                     cache_key=key))

    def conditional(self, x: torch.Tensor, block: torch.Tensor, log_prob) -> tuple[torch.Tensor, torch.Tensor]:
        """The exact conditional of each chain's block: the kernel's only use of the target.

        Args:
            x: (C, D) states; block: (C, X) int64 coordinates.

        Returns:
            candidates: (C, 2**X, D), x with the block set to every joint value;
            logits: (C, 2**X) f(candidates) (one log_prob call on C * 2**X rows), so that
            p(candidate k | x_rest) = softmax(logits)[k].
        """
        C, D = x.shape
        K = 2**self.block_size
        candidates = set_block(x, block, enumerate_binary(self.block_size, x.dtype).to(x.device))
        with torch.no_grad():
            logits = log_prob(candidates.reshape(C * K, D)).reshape(C, K)
        return candidates, logits

    def scan_blocks(self, dim: int) -> torch.Tensor:
        """Blocks the scan visits, each equally often in the long run, shape (num_blocks, X) int64.

        random: all C(D, X) subsets (a fixed slot of a uniform permutation is a uniform X-subset);
        systematic: the windows (p + arange(X)) mod D for p in range(0, D, gcd(D, X)).
        """
        X = self.block_size
        if self.scan == "random":
            return combinations(dim, X)
        starts = torch.arange(0, dim, math.gcd(dim, X))
        return (starts[:, None] + torch.arange(X)[None, :]) % dim

    def step(self, state: GibbsState, log_prob, generator: torch.Generator) -> tuple[GibbsState, Info]:
        """Update one block of X coordinates per chain from its exact conditional."""
        x = state.x
        C, D = x.shape
        X = self.block_size
        if self.scan == "random":
            block, order, position = next_permutation_block(
                state.order, state.position, X, C, D, generator, x.device)  # (C, X)
        else:
            order = state.order
            block = ((state.position + torch.arange(X, device=x.device)) % D).expand(C, X)
            position = (state.position + X) % D
        cache, key, evals = None, None, 2**X
        if offers(log_prob, "eval_flip_candidates"):  # candidates from the cached aux, conditional()'s order
            ev, key, billed = current_evaluation(state, log_prob, x, grad=False)
            current = x.gather(1, block)  # (C, X)
            if X == 1:  # the value x already has is the cached f(x): evaluate the flipped state only
                everything = torch.ones_like(current, dtype=torch.bool)[:, None]  # (C, 1, 1)
                flipped = eval_flip_candidates(log_prob, x, ev, block, everything)
                bit = current[:, 0].bool()
                logits = torch.stack([torch.where(bit, flipped[:, 0], ev.log_prob),
                                      torch.where(bit, ev.log_prob, flipped[:, 0])], 1)  # value order (0, 1)
                evals = 1
            else:
                patterns = enumerate_binary(X, x.dtype).to(x.device)  # (2**X, X)
                masks = patterns[None] != current[:, None, :]  # (C, 2**X, X): flips giving each value
                logits = eval_flip_candidates(log_prob, x, ev, block, masks)
            check_conditional(self.name, state.num_steps + 1, logits)
            choice = sample_categorical(logits, generator)  # (C,)
            mask = (choice[:, None] != current) if X == 1 else masks[torch.arange(C, device=x.device), choice]
            x_new = flip_bits(x, block, mask)
            changed = mask.sum(1)  # the flipped bits (distinct sites)
            if key is not None:
                f_new = logits.gather(1, choice[:, None]).squeeze(1)
                cache = eval_flips(log_prob, x, ev, block, mask, grad=False, known_log_prob=f_new)
            evals += billed
        else:
            candidates, logits = self.conditional(x, block, log_prob)  # (C, 2**X, D), (C, 2**X)
            check_conditional(self.name, state.num_steps + 1, logits)
            choice = sample_categorical(logits, generator)  # (C,)
            x_new = candidates[torch.arange(C, device=x.device), choice]
            changed = (x_new != x).sum(1)
        ones = torch.ones(C, dtype=x.dtype, device=x.device)
        info = Info(acceptance_prob=ones, accepted=torch.ones(C, dtype=torch.bool, device=x.device),
                    sites_changed=changed, energy_evals=evals, grad_evals=0)
        return bind_state(GibbsState(x=x_new, order=order, position=position, num_steps=state.num_steps + 1,
                          cache=cache, cache_key=key)), info

    @torch.no_grad()
    def transition_probabilities(
        self, x: torch.Tensor, log_prob, blocks: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Enumerate one step from each x, the block drawn uniformly from ``blocks``.

        Args:
            x: (C, D) binary states.
            blocks: (B, X) int64 blocks, default :meth:`scan_blocks` (for the random scan, the
                random-scan kernel: a uniformly random X-subset). One block gives that block's update.

        Returns:
            next_states: (C, B * 2**X, D); probs: (C, B * 2**X), rows sum to 1 (duplicates allowed).
            Costs B * 2**X target evaluations per row of x.
        """
        C, D = x.shape
        blocks = self.scan_blocks(D) if blocks is None else blocks
        B = blocks.shape[0]
        blocks = blocks.to(x.device).repeat(C, 1)  # (C * B, X), chain-major
        candidates, logits = self.conditional(x.repeat_interleave(B, 0), blocks, log_prob)
        probs = torch.softmax(logits, -1) / B  # (C * B, 2**X)
        return candidates.reshape(C, -1, D), probs.reshape(C, -1)
