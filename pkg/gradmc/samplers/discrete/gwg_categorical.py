"""Gibbs-With-Gradients for categorical states (GWG paper Eq. 4-6 and Algorithm 1, categorical case).

States are one-hot (C, D, K). Eq. 4: d_ij(x) = grad_ij f(x) - <grad_i f(x), x_i> estimates
f(x with site i set to value j) - f(x) to first order. The proposal is ONE softmax over all D * K
(site, value) pairs, q(i, j | x) = softmax(d(x) / T) with the current value of every site masked out
(logit -inf), so every proposal changes exactly one site. Set site i to j to get x'; the reverse move
sets site i back to its old value v and is scored under the logits at x'. Accept with
min(1, exp(f(x') - f(x)) q(i, v | x') / q(i, j | x)).
"""

from __future__ import annotations

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
    evaluate,
    select,
)
from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.base import (
    Info,
    acceptance_probability,
    check_finite,
    count_nonfinite,
    log_normaliser,
    log_softmax,
    metropolis_hastings_accept,
    sample_categorical,
)
from gradmc.samplers.discrete.onehot import check_onehot

__all__ = ["GWGCategorical", "GWGCategoricalState", "MASKED_LOGIT"]

#: The proposal logit of a site's current value: far below any real logit, so its weight is exactly 0.
MASKED_LOGIT = -1e30


class GWGCategoricalState(NamedTuple):
    """x: (C, D, K) current one-hot state; log_prob: (C,) f(x); num_steps: steps taken since ``init``;
    cache / cache_key: the evaluation at x and its key (:mod:`gradmc.core.incremental`), None for a
    target that cannot be cached."""

    x: torch.Tensor
    log_prob: torch.Tensor
    num_steps: int = 0
    cache: Evaluation | None = None
    cache_key: CacheKey | None = None


@register_sampler("GWG", state="categorical", fixed={"temperature": 2.0}, colour="tab:red", order=30,
                  doc="categorical Gibbs-With-Gradients (Eq. 4)")
@dataclass(frozen=True)
class GWGCategorical:
    """Gibbs-With-Gradients on one-hot categorical states, one site changed per step.

    Args:
        temperature: T in q(i, j | x) = softmax(d(x) / T); the paper's locally balanced choice is 2.

    Cost per step: ONE function+gradient evaluation, at x' (energy_evals = grad_evals = 1), computed by
    the target's ``eval_change`` where it has one (dense and lattice Potts: no product at all); f and
    grad f at x come from the state's cache, checked against the target at every step. A changed target
    (AIS, PCD), an uncacheable one or the periodic refresh evaluates x too (energy_evals = grad_evals = 2);
    the first step after ``init`` counts init's evaluation of x (2 as well).

    Raises:
        ValueError: temperature <= 0 (``__post_init__``); the input errors of
            :func:`~gradmc.samplers.discrete.onehot.check_onehot` (``init``).
        NonFiniteError: f or grad f NaN/inf at a current state (``init``, ``step``); a proposal of
            NaN/inf f is rejected instead.
    """

    name = "GWG"  # the paper's name (a class attribute, not a field)

    temperature: float = 2.0

    def __post_init__(self):
        if not self.temperature > 0:
            raise ValueError(f"GWGCategorical temperature must be > 0, got {self.temperature}")

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> GWGCategoricalState:
        """Start chains at x (C, D, K) one-hot floats."""
        check_onehot(x, check_values=True)
        ev = evaluate(log_prob, x, grad=True)
        check_finite(self.name, 0, ("log_prob at the current state", ev.log_prob))
        key = cache_key(log_prob)
        return bind_state(GWGCategoricalState(x=x.clone(), log_prob=ev.log_prob, cache=ev if key is not None else None,
                                   cache_key=key))

    def proposal_logits(self, x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        """Logits of q(i, j | x), shape (C, D * K), flattened site-major (index i * K + j).

        d_ij / T with d_ij = grad_ij - <grad_i, x_i> (Eq. 4). The current value of each site gets
        :data:`MASKED_LOGIT` (-1e30) instead: a weight of exactly 0 in the proposal (below the floor of
        :func:`~gradmc.samplers.base.exp_below_max`), so it is never proposed, as with -inf, but built by
        one fused pass (a -inf mask costs 3-4 times the whole logit computation on CPU).
        """
        x = x.to(grad.dtype)  # a float64 model with float32 states, or the reverse
        current = torch.linalg.vecdot(grad, x)[..., None]  # <grad_i, x_i>, (C, D, 1)
        logits = torch.addcmul(grad, x, grad.new_tensor(MASKED_LOGIT * self.temperature)).sub_(current)
        return logits.div_(self.temperature).flatten(1)

    def _reverse_log_q(self, x_new: torch.Tensor, grad_new: torch.Tensor, rev_idx: torch.Tensor) -> torch.Tensor:
        """(N,) log q(rev_idx | x') of the reverse move: the same proposal, evaluated at x', at one index per
        chain (its logit minus the row's log-normaliser: the full log-softmax is never built)."""
        logits = self.proposal_logits(x_new, grad_new)  # (N, D * K)
        return logits.gather(1, rev_idx[:, None]).squeeze(1) - log_normaliser(logits)

    @staticmethod
    def _apply_move(x: torch.Tensor, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Set site idx // K of each chain to value idx % K.

        Args:
            x: (N, D, K) one-hot; idx: (N,) int64 flat (site, value) indices.

        Returns:
            x_new (N, D, K); rev_idx (N,) the flat index of the reverse move (same site, old value).
        """
        K = x.shape[2]
        rows = torch.arange(x.shape[0], device=x.device)
        site, value = idx // K, idx % K
        old_value = x[rows, site].argmax(-1)  # (N,)
        x_new = x.clone()
        x_new[rows, site] = 0.0
        x_new[rows, site, value] = 1.0
        return x_new, site * K + old_value

    @staticmethod
    def _log_alpha(f_x, f_new, log_q_fwd, log_q_rev) -> torch.Tensor:
        """(N,) log MH ratio f(x') - f(x) + log q(rev | x') - log q(fwd | x)."""
        return f_new - f_x + log_q_rev - log_q_fwd

    def _propose_and_score(self, x, ev: Evaluation, log_q_fwd, idx, log_prob):
        """Shared by :meth:`step` and :meth:`transition_probabilities`: move x by idx, evaluate x'.

        Args:
            x: (N, D, K); ev: the evaluation at x; log_q_fwd: (N,) forward log q(idx | x); idx: (N,) int64.

        Returns:
            x_new (N, D, K), ev_new (the evaluation at x'), log_q_fwd (N,), log_alpha (N,). One f+grad
            evaluation, by :func:`~gradmc.core.incremental.eval_change`.
        """
        K = x.shape[2]
        x_new, rev_idx = self._apply_move(x, idx)
        ev_new = eval_change(log_prob, x, ev, idx // K, idx % K, grad=True)
        log_q_rev = self._reverse_log_q(x_new, ev_new.grad, rev_idx)
        return x_new, ev_new, log_q_fwd, self._log_alpha(ev.log_prob, ev_new.log_prob, log_q_fwd, log_q_rev)

    def step(
        self, state: GWGCategoricalState, log_prob, generator: torch.Generator
    ) -> tuple[GWGCategoricalState, Info]:
        """One categorical GWG transition for every chain.

        Args:
            state: from :meth:`init` or a previous step; x (C, D, K).
            log_prob: callable (N, D, K) -> (N,), differentiable in x.
            generator: torch.Generator on x's device.

        Returns:
            the new state and Info (acceptance_prob (C,), accepted (C,) bool, sites_changed (C,) int64
            in {0, 1}, energy_evals = grad_evals = 1, or 2 when x was evaluated too).

        Raises:
            ValueError: if log_prob does not return shape (C,).
            NonFiniteError: f(x) or grad f(x) NaN/inf at a current state.
        """
        x = state.x  # (C, D, K)
        ev, key, billed = current_evaluation(state, log_prob, x, grad=True)
        check_finite(self.name, state.num_steps + 1, ("log_prob at the current state", ev.log_prob),
                     ("gradient of log_prob at the current state", ev.grad))
        # one pass draws idx and gives log q(idx | x): the (C, D * K) log-softmax is never built
        idx, log_q_fwd = sample_categorical(self.proposal_logits(x, ev.grad), generator, return_log_prob=True)
        x_new, ev_new, _, log_alpha = self._propose_and_score(x, ev, log_q_fwd, idx, log_prob)
        accepted, acceptance_prob = metropolis_hastings_accept(log_alpha, generator, ev_new.log_prob)
        x_out = torch.where(accepted[:, None, None], x_new, x)
        out = select(accepted, ev_new, ev)
        evals = 1 + billed
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted, sites_changed=accepted.long(),
                    energy_evals=evals, grad_evals=evals,
                    nonfinite_proposals=count_nonfinite(ev_new.log_prob, log_alpha))
        return bind_state(GWGCategoricalState(x=x_out, log_prob=out.log_prob, num_steps=state.num_steps + 1,
                                   cache=out if key is not None else None, cache_key=key)), info

    def transition_probabilities(self, x: torch.Tensor, log_prob) -> tuple[torch.Tensor, torch.Tensor]:
        """Enumerate one step of the kernel from each state in x, through the same helpers as :meth:`step`.

        Every (site, value) index is scored; the current-value indices have q = 0 and hence probability 0
        (their move leaves x unchanged and gets draw probability exp(MASKED_LOGIT - ...) = 0). The last
        entry is x itself with the rejected mass, 1 - sum of the move probabilities (may round to -1e-17).

        Args:
            x: (C, D, K) one-hot states.
            log_prob: callable (N, D, K) -> (N,), differentiable in x.

        Returns:
            next_states: (C, D * K + 1, D, K); probs: (C, D * K + 1) summing to 1.

        Cost: f+grad on C states, then ``eval_change`` on C * D * K (the target's incremental path).
        """
        check_onehot(x, check_values=True)
        C, D, K = x.shape
        M = D * K
        ev = evaluate(log_prob, x, grad=True)
        log_q_x = log_softmax(self.proposal_logits(x, ev.grad))  # (C, M)
        idx = torch.arange(M, device=x.device).repeat(C)  # (C * M,): chain-major
        repeated = Evaluation(*(None if t is None else t.repeat_interleave(M, 0) for t in ev))
        x_new, _, log_q_fwd, log_alpha = self._propose_and_score(
            x.repeat_interleave(M, 0), repeated, log_q_x.reshape(-1), idx, log_prob
        )
        acceptance_prob = acceptance_probability(log_alpha)  # what metropolis_hastings_accept accepts with
        move = (log_q_fwd.exp() * acceptance_prob).reshape(C, M)
        stay = 1.0 - move.sum(1, keepdim=True)
        next_states = torch.cat([x_new.reshape(C, M, D, K), x[:, None]], 1)
        return next_states, torch.cat([move, stay], 1)
