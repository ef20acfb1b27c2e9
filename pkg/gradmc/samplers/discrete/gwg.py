"""Gibbs-With-Gradients for binary states (GWG paper Sec. 3-4, Eq. 3, 5, 6 and Algorithm 1).

Proposal: d(x) = (1 - 2x) * grad f(x) estimates f(x with bit i flipped) - f(x) to first order (Eq. 3);
q(i | x) = softmax(d(x) / T) with temperature T = 2 (Eq. 5-6); flip bit i to get x';
accept with min(1, exp(f(x') - f(x)) q(i | x') / q(i | x)).

The kernel machinery (:class:`GradientFlipMH`) is shared with the multi-sample variant GWG-N
(``gwg_multi.py``): GWG is GWG-N with N = 1, where both MH scores of ``flips.py`` coincide.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import torch

from gradmc.core.gradients import log_prob_and_grad
from gradmc.core.incremental import (
    CacheKey,
    Evaluation,
    RowChoice,
    bind_state,
    cache_key,
    current_evaluation,
    eval_flips,
    evaluate,
    select,
)
from gradmc.core.validation import check_binary
from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.base import (
    EXP_FLOOR,
    Info,
    acceptance_probability,
    check_current_gradient,
    check_finite,
    count_nonfinite,
    draw_from_weights,
    log_softmax,
    metropolis_hastings_accept,
)
from gradmc.samplers.discrete.flips import (
    apply_flips,
    distinct_draws,
    draw_flips,
    log_draws_probability,
    log_flip_probability,
)
from gradmc.samplers.enumerate import multisets

__all__ = ["GWG", "GWGState", "FlipProposal", "GradientFlipMH", "flip_proposal"]


class GWGState(NamedTuple):
    """x: (C, D) current binary state; log_prob: (C,) f(x); num_steps: steps taken since ``init`` (for
    error messages and the cache refresh); cache: the :class:`~gradmc.core.incremental.Evaluation`
    at x (f, grad f, the target's aux) and cache_key its :class:`~gradmc.core.incremental.CacheKey`,
    both None for a target that cannot be cached (see :mod:`gradmc.core.incremental`)."""

    x: torch.Tensor
    log_prob: torch.Tensor
    num_steps: int = 0
    cache: Evaluation | None = None
    cache_key: CacheKey | None = None
    proposal: FlipProposal | None = None


class FlipProposal(NamedTuple):
    """GWG's proposal at a state, kept with the state's cache so the next step need not rebuild it (the reverse
    proposal of an accepted move is the next forward one): temperature T; logits (C, D) = d(x) / T; top (C, 1)
    their row maxima; weights (C, D) = exp(max(logits - top, EXP_FLOOR)), the unnormalised q(i | x)."""

    temperature: float
    logits: torch.Tensor
    top: torch.Tensor
    weights: torch.Tensor


class GradientFlipMH:
    """Metropolis-Hastings with the gradient-informed flip proposal; subclasses are frozen dataclasses
    providing ``temperature`` (T > 0), ``num_draws`` (N >= 1) and ``density`` ("draws" or "set", see
    ``flips.py``).

    ``step`` and ``transition_probabilities`` share every piece of the kernel: ``log_proposal`` (log q at
    a state), ``flips.apply_flips`` and ``log_acceptance``.

    Cost per step: ONE function+gradient evaluation, at x' (energy_evals = grad_evals = 1): f(x) and
    grad f(x) come from the state's cache (:mod:`gradmc.core.incremental`), which is checked against
    the target at every step. When the target changed since the cache was made (AIS, PCD), it has no
    cache, or at the periodic refresh, x is evaluated too (energy_evals = grad_evals = 2); the first step
    after ``init`` counts init's evaluation of x (2 as well).
    """

    def _validate(self) -> None:
        if not self.temperature > 0:
            raise ValueError(f"{type(self).__name__} temperature must be > 0, got {self.temperature}")

    @property
    def name(self) -> str:
        """The paper's name, "GWG-N" (as :func:`~gradmc.samplers.discrete.make_sampler` takes it)."""
        return f"GWG-{self.num_draws}"

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> GWGState:
        """Start chains at x (C, D) floats in {0, 1}; evaluates f and grad f at x once, for the cache.

        Raises:
            NonFiniteError: if f(x) is NaN or inf for some chain.
        """
        check_binary(x, check_values=True)
        ev = evaluate(log_prob, x, grad=True)
        check_finite(self.name, 0, ("log_prob at the current state", ev.log_prob))
        key = cache_key(log_prob)
        return bind_state(GWGState(x=x.clone(), log_prob=ev.log_prob, cache=ev if key is not None else None,
                                   cache_key=key))

    def proposal_logits(self, x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        """Logits of q(i | x): d(x) / T = (1 - 2x) * grad f(x) / T (Eq. 3, 5), shape (C, D)."""
        return torch.addcmul(grad, x, grad, value=-2.0).div_(self.temperature)  # (1 - 2x) grad / T, exact on bits

    def log_proposal(self, x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        """log q(i | x) = log_softmax(d(x) / T), shape (C, D)."""
        return log_softmax(self.proposal_logits(x, grad))

    def log_acceptance(self, f_x: torch.Tensor, log_q_x: torch.Tensor, f_new: torch.Tensor,
                       log_q_new: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """log alpha = f(x') - f(x) + log q(draws | x') - log q(draws | x) (Eq. 1, 6; Eq. 27 for N > 1).

        Args:
            f_x, f_new: (C,); log_q_x, log_q_new: (C, D) log q at x and at x'; counts: (C, D) draws.

        Returns:
            (C,) log acceptance ratio (the reverse move draws the same indices under q(. | x')).
        """
        log_fwd = log_flip_probability(log_q_x, counts, self.num_draws, self.density)
        log_rev = log_flip_probability(log_q_new, counts, self.num_draws, self.density)
        return f_new - f_x + log_rev - log_fwd

    def step(self, state: GWGState, log_prob, generator: torch.Generator) -> tuple[GWGState, Info]:
        """One transition for every chain. Returns the new state and per-chain Info
        (sites_changed = number of distinct flipped indices if accepted, else 0).

        Raises:
            NonFiniteError: f(x) or grad f(x) NaN/inf at a current state (proposals of NaN/inf f are
                rejected instead)."""
        x = state.x  # (C, D)
        ev, key, billed = current_evaluation(state, log_prob, x, grad=True)
        check_current_gradient(self.name, state, ev.log_prob, ev.grad)
        log_q_x = self.log_proposal(x, ev.grad)  # (C, D)
        draws, counts = draw_flips(log_q_x, self.num_draws, generator)  # (C, N), (C, D)
        sites, mask = distinct_draws(draws)
        x_new = apply_flips(x, counts)
        ev_new = eval_flips(log_prob, x, ev, sites, mask, grad=True)
        log_alpha = self.log_acceptance(ev.log_prob, log_q_x, ev_new.log_prob,
                                        self.log_proposal(x_new, ev_new.grad), counts)
        accepted, acceptance_prob = metropolis_hastings_accept(log_alpha, generator, ev_new.log_prob)
        x_out = torch.where(accepted[:, None], x_new, x)
        out = select(accepted, ev_new, ev)
        sites = torch.where(accepted, (counts > 0).sum(1), torch.zeros_like(accepted, dtype=torch.long))
        evals = 1 + billed
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted, sites_changed=sites, energy_evals=evals,
                    grad_evals=evals, nonfinite_proposals=count_nonfinite(ev_new.log_prob, log_alpha))
        return bind_state(GWGState(x=x_out, log_prob=out.log_prob, num_steps=state.num_steps + 1,
                        cache=out if key is not None else None, cache_key=key)), info

    @torch.no_grad()
    def transition_probabilities(self, x: torch.Tensor, log_prob) -> tuple[torch.Tensor, torch.Tensor]:
        """Enumerate one step from each x: every multiset of N draws, then the stay outcome.

        Args:
            x: (C, D) binary states.

        Returns:
            next_states: (C, M + 1, D), the M = C(D + N - 1, N) proposals then x itself;
            probs: (C, M + 1), P(draws) * min(1, alpha) then the rejected mass. Costs M + 1 target
            evaluations with gradients per row of x.
        """
        C, D = x.shape
        counts, log_coef = multisets(D, self.num_draws)  # (M, D), (M,)
        counts, log_coef = counts.to(x.device), log_coef.to(device=x.device, dtype=x.dtype)
        M = counts.shape[0]
        f_x, grad_x = log_prob_and_grad(log_prob, x)
        log_q_x = self.log_proposal(x, grad_x)  # (C, D)
        x_new = apply_flips(x[:, None, :], counts[None])  # (C, M, D)
        f_new, grad_new = log_prob_and_grad(log_prob, x_new.reshape(C * M, D))
        log_alpha = self.log_acceptance(
            f_x.repeat_interleave(M), log_q_x.repeat_interleave(M, 0), f_new,
            self.log_proposal(x_new.reshape(C * M, D), grad_new), counts.repeat(C, 1),
        ).reshape(C, M)
        p_draws = torch.exp(log_coef + log_draws_probability(log_q_x[:, None, :], counts[None]))  # (C, M)
        move = p_draws * acceptance_probability(log_alpha)
        stay = 1.0 - move.sum(1, keepdim=True)
        return torch.cat([x_new, x[:, None, :]], 1), torch.cat([move, stay], 1)


@register_sampler("GWG", fixed={"temperature": 2.0}, colour="tab:red", order=30,
                  doc="Gibbs-With-Gradients, one flip per step, temperature 2")
@dataclass(frozen=True)
class GWG(GradientFlipMH):
    """Gibbs-With-Gradients, binary, one flip per step (the paper's GWG).

    Args:
        temperature: T in q(i|x) = softmax(d(x) / T); the paper's locally balanced choice is 2.

    Raises:
        ValueError: if temperature <= 0.
    """

    temperature: float = 2.0
    num_draws: ClassVar[int] = 1
    density: ClassVar[str] = "draws"

    def __post_init__(self):
        self._validate()

    @property
    def name(self) -> str:
        """The paper's name, "GWG"."""
        return "GWG"

    def step(self, state: GWGState, log_prob, generator: torch.Generator) -> tuple[GWGState, Info]:
        """One GWG transition per chain, specialised to a single flip: the proposal and reverse terms are
        read at the drawn index only (O(C) beyond the two (C, D) logit passes), and the state is updated
        by index, never by a full (C, D) select. f and grad f at x come from the cache; at x' they are
        computed by :func:`~gradmc.core.incremental.eval_flips`, from the target's aux where it
        offers ``eval_flips`` (RBM: one (C, H) x (H, D) product; lattice Ising: O(C) beyond the
        gradient pass). Same kernel as the general ``GradientFlipMH.step`` with N = 1 (the exactness
        tests compare it with ``transition_probabilities`` and with exact enumeration).

        Raises:
            NonFiniteError: f(x) or grad f(x) NaN/inf at a current state (proposals of NaN/inf f are
                rejected instead)."""
        x = state.x  # (C, D)
        rows = torch.arange(x.shape[0], device=x.device)
        ev, key, billed = current_evaluation(state, log_prob, x, grad=True)
        check_current_gradient(self.name, state, ev.log_prob, ev.grad)
        fwd = state.proposal
        if fwd is None or ev is not state.cache or fwd.temperature != self.temperature:
            fwd = self._flip_proposal(x, ev.grad)
        idx, total = draw_from_weights(fwd.weights, generator)  # (C, 1), (C, 1)
        idx = idx.squeeze(1)
        log_q_fwd = (fwd.logits[rows, idx] - fwd.top.squeeze(1)) - total.squeeze(1).log().to(fwd.logits.dtype)
        sites = idx[:, None]
        ev_new = eval_flips(log_prob, x, ev, sites, torch.ones_like(sites, dtype=torch.bool), grad=True)
        old_bit = x[rows, idx]
        x_new = x.clone()
        x_new[rows, idx] = 1.0 - old_bit
        rev = self._flip_proposal(x_new, ev_new.grad)
        log_z_rev = rev.top.squeeze(1) + rev.weights.sum(-1).log()
        log_q_rev = rev.logits[rows, idx] - log_z_rev
        log_alpha = ev_new.log_prob - ev.log_prob + log_q_rev - log_q_fwd
        accepted, acceptance_prob = metropolis_hastings_accept(log_alpha, generator, ev_new.log_prob)
        x_new[rows, idx] = torch.where(accepted, 1.0 - old_bit, old_bit)  # undo rejected flips
        choose = RowChoice(accepted)  # the rejected rows found once for the evaluation and the proposal
        out = select(choose, ev_new, ev)
        kept = None
        if key is not None:
            kept = FlipProposal(self.temperature, *(choose(a, b) for a, b in zip(rev[1:], fwd[1:], strict=True)))
        evals = 1 + billed
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted, sites_changed=accepted.long(),
                    energy_evals=evals, grad_evals=evals,
                    nonfinite_proposals=count_nonfinite(ev_new.log_prob, log_alpha))
        return bind_state(GWGState(x=x_new, log_prob=out.log_prob, num_steps=state.num_steps + 1,
                                   cache=out if key is not None else None, cache_key=key, proposal=kept)), info

    def _flip_proposal(self, x: torch.Tensor, grad: torch.Tensor) -> FlipProposal:
        """The :class:`FlipProposal` at x (C, D) given grad f(x) (C, D) (:func:`flip_proposal`)."""
        return flip_proposal(self.proposal_logits(x, grad), self.temperature)


def flip_proposal(logits: torch.Tensor, temperature: float) -> FlipProposal:
    """The :class:`FlipProposal` of (C, D) ``logits`` d(x) / T at temperature T. Weights below exp(EXP_FLOOR) =
    1.8e-35 of the row maximum are raised to it (the CPU's exp is slow below about -87): such an entry is drawn
    with probability at most D 1.8e-35 where its exact q is smaller, far below any Monte Carlo resolution."""
    top = logits.amax(-1, keepdim=True)
    return FlipProposal(temperature, logits, top, (logits - top).clamp_(min=EXP_FLOOR).exp_())

