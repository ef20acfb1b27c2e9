"""Gibbs-X for categorical states: exact block updates of X sites at a time (GWG paper Sec. 2, baseline).

States are one-hot (C, D, K) floats. Each chain consumes its own random permutation of the D sites
block by block (as the binary :class:`~gradmc.samplers.discrete.gibbs.Gibbs` does); a new permutation
is drawn when fewer than X unvisited sites remain. For the chosen block all K**X joint values are
enumerated (the current one included) and one is drawn from the exact conditional
p(x_block | x_rest) proportional to exp f. The paper's Gibbs-1 costs K evaluations of f per step.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

from gradmc.core.incremental import (
    CacheKey,
    Evaluation,
    bind_state,
    cache_key,
    current_evaluation,
    eval_change,
    eval_change_candidates,
    evaluate,
    offers,
)
from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.base import Info, check_conditional, check_finite, sample_categorical
from gradmc.samplers.discrete.blocks import random_orders
from gradmc.samplers.discrete.onehot import check_onehot, enumerate_onehot

__all__ = ["CategoricalGibbs", "CategoricalGibbsState"]

#: Largest number of candidates K**X per chain and step.
MAX_CANDIDATES = 2**16


class CategoricalGibbsState(NamedTuple):
    """x: (C, D, K) one-hot state; order: (C, D) int64 per-chain permutation; position: next unused slot;
    num_steps: steps taken since ``init``; cache / cache_key: the evaluation at x and its key for targets
    with incremental evaluations (Gibbs-1 only; :mod:`gradmc.core.incremental`), else None."""

    x: torch.Tensor
    order: torch.Tensor
    position: int
    num_steps: int = 0
    cache: Evaluation | None = None
    cache_key: CacheKey | None = None


@register_sampler("Gibbs-{block_size}", state="categorical", colour={"Gibbs-1": "tab:blue", "Gibbs-2": "tab:orange"},
                  order=10, examples=("Gibbs-1",), doc="categorical block Gibbs (K**X evaluations per step)")
@dataclass(frozen=True)
class CategoricalGibbs:
    """Random-permutation-scan block Gibbs on one-hot categorical states (Gibbs-1, Gibbs-2, ...).

    Args:
        block_size: X >= 1 sites updated jointly per step.

    Cost per step: one ``log_prob`` call on a (C * K**X, D, K) batch, reported as energy_evals = K**X,
    grad_evals = 0. For Gibbs-1 on targets with ``eval_change_candidates`` (dense and lattice Potts) the K
    candidates come from the cached evaluation at x instead (O(C K) plus the cache update; the first step
    counts init's evaluation of x, and a stale cache or its periodic refresh adds one evaluation of x).
    The step always "accepts" (acceptance_prob = 1); sites_changed counts the sites whose value changed.

    Raises (from ``__post_init__`` / ``init``):
        ValueError: block_size < 1, block_size > D, or K**block_size > MAX_CANDIDATES.
        NonFiniteError: f NaN/inf at the initial state (init); NaN/+inf on a candidate of a block's
            conditional, or -inf on all of them (step).
    """

    block_size: int = 1

    def __post_init__(self):
        if not (isinstance(self.block_size, int) and self.block_size >= 1):
            raise ValueError(f"CategoricalGibbs block_size must be an integer >= 1, got {self.block_size!r}")

    @property
    def name(self) -> str:
        """The paper's name, "Gibbs-X" (``make_sampler("Gibbs-X", state="categorical")``)."""
        return f"Gibbs-{self.block_size}"

    def _check_sizes(self, x: torch.Tensor) -> None:
        _, D, K = x.shape
        if self.block_size > D:
            raise ValueError(f"block_size {self.block_size} exceeds the number of sites {D}")
        if K**self.block_size > MAX_CANDIDATES:
            raise ValueError(
                f"block_size {self.block_size} with {K} categories needs {K}**{self.block_size} candidates "
                f"per chain (limit {MAX_CANDIDATES})"
            )

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> CategoricalGibbsState:
        """Start chains at x (C, D, K) one-hot floats. The first step draws the scan orders.

        Raises:
            TypeError / ValueError: from :func:`~gradmc.samplers.discrete.onehot.check_onehot`, and
                the size errors listed on the class.
        """
        check_onehot(x, check_values=True)
        self._check_sizes(x)
        ev = evaluate(log_prob, x, grad=False)
        check_finite(self.name, 0, ("log_prob at the current state", ev.log_prob))
        empty = torch.empty(x.shape[0], 0, dtype=torch.long, device=x.device)
        key = cache_key(log_prob) if self._incremental(log_prob) else None
        return bind_state(CategoricalGibbsState(x=x.clone(), order=empty, position=0,
                                                cache=ev if key is not None else None, cache_key=key))

    def _incremental(self, log_prob) -> bool:
        return self.block_size == 1 and offers(log_prob, "eval_change_candidates")

    def _block_candidates(self, x: torch.Tensor, block: torch.Tensor) -> torch.Tensor:
        """x (C, D, K) and block (C, X) distinct site indices -> (C, K**X, D, K): x with the block set to
        each of the K**X joint values (``enumerate_onehot`` order), every other site unchanged."""
        C, D, K = x.shape
        X = block.shape[1]
        patterns = enumerate_onehot(X, K, x.dtype).to(x.device)  # (K**X, X, K)
        M = patterns.shape[0]
        candidates = x[:, None].repeat(1, M, 1, 1)  # (C, M, D, K)
        index = block[:, None, :, None].expand(C, M, X, K)
        candidates.scatter_(2, index, patterns[None].expand(C, M, X, K))
        return candidates

    @staticmethod
    def _conditional_logits(candidates: torch.Tensor, log_prob) -> torch.Tensor:
        """(C, M, D, K) candidates -> (C, M) f(candidate): logits of p(x_block | x_rest) in ONE call."""
        C, M, D, K = candidates.shape
        with torch.no_grad():
            return log_prob(candidates.reshape(C * M, D, K)).reshape(C, M)

    def step(
        self, state: CategoricalGibbsState, log_prob, generator: torch.Generator
    ) -> tuple[CategoricalGibbsState, Info]:
        """Update one block of X sites per chain from its exact conditional.

        Args:
            state: from :meth:`init` or a previous step; x (C, D, K).
            log_prob: callable (N, D, K) -> (N,).
            generator: torch.Generator on x's device.

        Returns:
            the new state and Info (acceptance_prob (C,) ones, accepted (C,) True, sites_changed (C,)
            int64, energy_evals = K**X, grad_evals = 0).

        Raises:
            NonFiniteError: NaN/+inf on a candidate of the block's conditional, or -inf on all of them.
        """
        x = state.x  # (C, D, K)
        C, D, K = x.shape
        X = self.block_size
        order, position = state.order, state.position
        if position + X > order.shape[1]:
            order, position = random_orders(C, D, generator, x.device), 0
        block = order[:, position:position + X]  # (C, X)
        rows = torch.arange(C, device=x.device)
        cache, key, evals = None, None, K**X
        if self._incremental(log_prob):  # Gibbs-1: the K values of the site from the cache, in value order
            ev, key, billed = current_evaluation(state, log_prob, x, grad=False)
            logits = eval_change_candidates(log_prob, x, ev, block[:, 0])  # (C, K)
            check_conditional(self.name, state.num_steps + 1, logits)
            choice = sample_categorical(logits, generator)  # (C,)
            x_new = x.clone()
            x_new[rows, block[:, 0]] = torch.nn.functional.one_hot(choice, K).to(x.dtype)
            changed = (choice != x[rows, block[:, 0]].argmax(-1)).long()  # (C,): 0 or 1
            if key is not None:
                f_new = logits.gather(1, choice[:, None]).squeeze(1)
                cache = eval_change(log_prob, x, ev, block[:, 0], choice, grad=False, known_log_prob=f_new)
            evals += billed
        else:
            candidates = self._block_candidates(x, block)  # (C, K**X, D, K)
            logits = self._conditional_logits(candidates, log_prob)  # (C, K**X)
            check_conditional(self.name, state.num_steps + 1, logits)
            choice = sample_categorical(logits, generator)  # (C,)
            x_new = candidates[rows, choice]  # (C, D, K)
            changed = (x_new != x).any(-1).sum(1)
        ones = torch.ones(C, dtype=x.dtype, device=x.device)
        info = Info(acceptance_prob=ones, accepted=torch.ones(C, dtype=torch.bool, device=x.device),
                    sites_changed=changed, energy_evals=evals, grad_evals=0)
        return bind_state(CategoricalGibbsState(x=x_new, order=order, position=position + X,
                                                num_steps=state.num_steps + 1, cache=cache, cache_key=key)), info

    def transition_probabilities(self, x: torch.Tensor, log_prob) -> tuple[torch.Tensor, torch.Tensor]:
        """Enumerate one step of the kernel from each state in x: the randomness is the block and the draw.

        The marginal kernel of one step is the average, over a uniformly random X-subset B of the D
        sites, of the block update P_B(x, y) = p(y_B | x_rest) [y_rest = x_rest]: every block of a
        uniform random permutation is marginally a uniform X-subset. Each P_B leaves pi invariant and is
        reversible, so their average is too, and so is any composition of them, i.e. the permutation
        scan that :meth:`step` actually runs. Uses the same candidate and conditional helpers as
        :meth:`step`.

        Args:
            x: (C, D, K) one-hot states.
            log_prob: callable (N, D, K) -> (N,).

        Returns:
            next_states: (C, S, D, K) with S = binom(D, X) * K**X (states may repeat, e.g. x itself once
            per block); probs: (C, S) summing to 1 over S.

        Cost: one ``log_prob`` call on C * S states.
        """
        check_onehot(x, check_values=True)
        self._check_sizes(x)
        C, D, K = x.shape
        blocks = torch.tensor(list(itertools.combinations(range(D), self.block_size)), device=x.device)  # (B, X)
        B = blocks.shape[0]
        x_rep = x.repeat_interleave(B, 0)  # (C * B, D, K): chain-major
        candidates = self._block_candidates(x_rep, blocks.repeat(C, 1))  # (C * B, M, D, K)
        logits = self._conditional_logits(candidates, log_prob)  # (C * B, M)
        probs = torch.softmax(logits, -1) / math.comb(D, self.block_size)
        M = candidates.shape[1]
        return candidates.reshape(C, B * M, D, K), probs.reshape(C, B * M)
