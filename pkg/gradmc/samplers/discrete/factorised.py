"""Gradient-informed samplers whose proposal changes every coordinate INDEPENDENTLY.

Binary states x in {0, 1}^D, (C, D) floats. With f the unnormalised log-density and
d_i(x) = (1 - 2 x_i) grad_i f(x) (the first-order estimate of f(x with bit i flipped) - f(x), GWG
paper Eq. 3), the proposal flips each bit i independently with probability p_i(x, grad f(x)):

    q(x' | x) = prod_i p_i^{m_i} (1 - p_i)^{1 - m_i},   m = x' XOR x (the flip mask),

and Metropolis-Hastings accepts with min(1, exp(f(x') - f(x) + log q(x | x') - log q(x' | x))), where
the reverse move flips the SAME mask m from x', with the probabilities p_i(x', grad f(x')).

- DMALA / DULA (Zhang, Liu & Liu, ICML 2022, "A Langevin-like sampler for discrete distributions", the
  discrete Langevin proposal (DLP), coordinatewise, and its unadjusted / Metropolis-adjusted algorithms):
  q(x'_i | x) ∝ exp(grad_i f(x) (x'_i - x_i) / 2 - (x'_i - x_i)^2 / (2 alpha)), i.e.
  p_i = sigmoid(d_i / 2 - 1 / (2 alpha)). DMALA is MH-corrected; DULA is the UNADJUSTED chain
  (every proposal accepted), whose stationary distribution is biased in general (log-linear targets
  included, at any fixed alpha > 0; the bias vanishes as alpha -> 0 only for log-quadratic targets).
- DLMC (Sun, Dai, Dai, Zhou & Schuurmans, AISTATS 2023, "Discrete Langevin samplers via Wasserstein
  gradient flow", DLMC: the factorised estimate of the transition matrix, simulated exactly): each bit follows its own
  two-state continuous-time chain for time tau, with the locally balanced rate g(e^{d_i}) out of x_i
  and g(e^{-d_i}) back, g(t) = sqrt(t). Solving the two-state chain (rates r = e^{d/2}, r' = e^{-d/2},
  stationary flip probability r / (r + r') = sigmoid(d)):
  p_i = sigmoid(d_i) (1 - exp(-tau (e^{d_i/2} + e^{-d_i/2}))) = sigmoid(d_i) (1 - exp(-tau g(e^{d_i}) / sigmoid(d_i))).
- DLMC-Euler: the same rates simulated by one Euler (forward) step of length tau, P = I + tau R:
  p_i = min(1, tau g(e^{d_i})) = min(1, tau e^{d_i / 2}).

Categorical one-hot states (C, D, K): per site, independently, DMALA / DULA propose
q(x'_d = e_k | x) ∝ exp((grad_{d,k} f(x) - grad_{d,x_d} f(x)) / 2 - ||e_k - x_d||^2 / (2 alpha)),
with ||e_k - x_d||^2 = 2 for k != x_d and 0 for k = x_d (the DLP paper's proposal on one-hot sites; the
authors' categorical example code uses exactly these logits, -1 / alpha off the current value).
DLMC for categorical states (:class:`DLMCCategorical`): per site d, the K-state continuous-time chain with the
locally balanced rates R_d(j -> k) = g(e^{grad_{d,k} - grad_{d,j}}) = e^{(grad_{d,k} - grad_{d,j}) / 2}
(grad f at the current x: the factorised, first-order estimate of DLMC), simulated exactly for time tau:
q(x'_d = e_k | x) = [expm(tau Q_d)]_{x_d, k} with Q_d the generator (off-diagonal R_d, rows summing to 0).
It has no closed form of the two-state kind, so the matrix exponential is computed numerically
(``torch.linalg.matrix_exp``, float64, N D matrices of K x K per step: O(N D K^3), fine for Potts' K = 21,
infeasible for 256 grey levels); at K = 2 it is the binary DLMC's two-state solution (tested). The
reference implementation in google-research/discs raises for categorical DLMC.

The kernel machinery (:class:`IndependentFlipMH`, :class:`IndependentSiteMH`) is shared: subclasses
give only the per-coordinate log-probabilities (or, :class:`LogitFlipMH`, the flip logits); ``step`` and
``transition_probabilities`` run the same helpers (``_proposal``, ``_log_q``, ``log_reverse``, ``log_acceptance``,
``_log_alpha``), so a mistake in any of them shows in the exact-matrix tests. The flip mask is drawn exactly
(:func:`_bernoulli`: P(flip) is the p the ratio uses, not p rounded to a uniform's grid), and the proposal is
evaluated through the target's ``eval_flip_mask`` when it has one (:mod:`gradmc.core.incremental`; the RBM then
updates its pre-activations by the flipped columns only).

Cost per step: ONE function+gradient evaluation, at x' (energy_evals = grad_evals = 1); f and grad f at x
come from the state's cache (:mod:`gradmc.core.incremental`), so a changed target (AIS, PCD), an
uncacheable one, the periodic refresh and the first step after ``init`` count 2.

Non-finite values (:mod:`gradmc.samplers.base`): f or grad f NaN/inf at the current state raises
:class:`~gradmc.samplers.base.NonFiniteError`; a proposal whose f is NaN/+inf/-inf or whose gradient has a
non-finite entry is rejected (also by the unadjusted DULA, whose only rejection this is), so it never
enters the chain.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F

import gradmc.core.streams as streams
from gradmc.core.exact import enumerate_binary
from gradmc.core.incremental import (
    CacheKey,
    Evaluation,
    RowChoice,
    bind_state,
    cache_key,
    current_evaluation,
    eval_flip_mask,
    evaluate,
    select,
)
from gradmc.core.validation import check_binary
from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.base import (
    Info,
    acceptance_probability,
    check_current_gradient,
    check_finite,
    count_nonfinite,
    metropolis_hastings_accept,
    sample_categorical,
)
from gradmc.samplers.discrete.onehot import check_onehot, enumerate_onehot

__all__ = ["FactorisedState", "IndependentFlipMH", "LogitFlipMH", "IndependentSiteMH", "DMALA", "DULA", "DLMC",
           "DLMCEuler", "DMALACategorical", "DULACategorical", "DLMCCategorical", "log1mexp", "DMALA_STEP_SIZE",
           "DLMC_TAU_SCALE"]

#: alpha of DMALA / DULA: the authors' code default (``step_size=0.2``, used for their RBM / Ising sampling).
DMALA_STEP_SIZE = 0.2
#: default tau of DLMC and DLMC-Euler on D bits: DLMC_TAU_SCALE / D = e / D, the starting value of the
#: reference implementation (google-research/discs, adaptive DLMC: log tau = 1 - logsumexp_i(d_i / 2), which is
#: 1 - log D at a flat gradient), so about e bits flip per step whatever D. A fixed tau does not scale: tau = 1
#: flips ~43% of the bits of a flat target, and on a 784-bit RBM or a 20 x 20 Ising model no proposal was
#: accepted. The paper tunes tau toward acceptance 0.574 during burn-in (:mod:`gradmc.samplers.adaptation`).
DLMC_TAU_SCALE = math.e

_LOG_HALF = -math.log(2.0)


def log1mexp(a: torch.Tensor) -> torch.Tensor:
    """log(1 - exp(a)) for a <= 0, accurate over the whole range (Maechler 2012): log(-expm1(a)) for
    a > -log 2, log1p(-exp(a)) below. a = 0 gives -inf; shape and dtype of a."""
    return torch.where(a > _LOG_HALF, torch.log(-torch.expm1(a)), torch.log1p(-torch.exp(a)))


def _check_positive(owner: str, name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{owner} {name} must be a finite number > 0, got {value!r}")


class FactorisedState(NamedTuple):
    """x: (C, D) binary or (C, D, K) one-hot current state; log_prob: (C,) f(x); num_steps: steps since
    ``init``; cache / cache_key: the evaluation at x and its key (:mod:`gradmc.core.incremental`),
    None for a target that cannot be cached."""

    x: torch.Tensor
    log_prob: torch.Tensor
    num_steps: int = 0
    cache: Evaluation | None = None
    cache_key: CacheKey | None = None


def _rows_finite(t: torch.Tensor) -> torch.Tensor:
    """(N, ...) -> (N,) bool: every entry of the row finite. t * 0 is 0 for a finite entry and NaN for an
    infinite or NaN one, so the row sum is 0 exactly when the row is finite (one product and one sum instead of
    isfinite's several passes; no overflow, whatever the magnitudes)."""
    return t.mul(0).flatten(1).sum(1) == 0


#: the uniforms of :func:`_bernoulli` are k / 2^24, k the low 24 bits of a random word
_GRID_BITS = 24


def _bernoulli(q: torch.Tensor, generator) -> torch.Tensor:
    """:func:`_bernoulli_float` as (N, D) bool."""
    return _bernoulli_float(q, generator) != 0


def _bernoulli_float(q: torch.Tensor, generator) -> torch.Tensor:
    """Bernoulli(q) draws, (N, D) 0/1 floats in q's dtype, with P(1) = q EXACTLY (not rounded to a grid);
    q (N, D) in [0, 1], float32 or float64 (pass the rarer outcome's probability min(p, 1 - p): accurate in
    relative terms, never rounded to 1).

    A uniform u = k 2^-24 (k the low 24 bits of a :func:`~gradmc.core.streams.random_words` word, cheaper than
    ``rand``) decides u < q unless q lies in (u, u + 2^-24), where the grid cannot tell; those entries
    (probability 2^-24 each: one step in about 200 on 100 x 784 bits) are decided by a second, float64 draw v of
    the same shape, 1 iff v < (q - u) 2^24, so that u + 2^-24 v < q has probability q to within 2^-77. (A
    24-bit comparison alone would flip bits of q < 6e-8 about 6e-8 of the time, while the Metropolis-Hastings
    ratio uses the exact q.) In units of the grid: t = q 2^24 (exact), 1 iff k < t; undecided iff
    0 < t - k < 1, where t - k is exact (Sterbenz: t <= 2k there unless k = 0), so clamping t - k to [0, 1]
    gives the draw where it is decided and a fraction where it is not.
    """
    if q.dtype not in (torch.float32, torch.float64):
        q = q.float()
    k = streams.random_words(q.shape, generator, device=q.device).bitwise_and((1 << _GRID_BITS) - 1)
    gap = q * float(2 ** _GRID_BITS) - k  # exact (float) where it matters
    # 1 where k < t by at least 1, 0 where k >= t, in (0, 1) exactly where undecided: float passes only (an op
    # that makes or reads a bool tensor costs several float passes on the CPU)
    hit = gap.clamp_(0.0, 1.0)
    if float(hit.frac().max()) > 0:
        v = streams.rand(q.shape, generator, device=q.device, dtype=torch.float64)
        undecided = (hit > 0) & (hit < 1)
        hit = torch.where(undecided, (v < (q.double() * float(2 ** _GRID_BITS) - k)).to(hit.dtype), hit)
    return hit


class _FactorisedMH:
    """Shared by the binary and the categorical families: the acceptance and the bookkeeping."""

    unadjusted = False  #: True for DULA: every (finite) proposal is accepted

    def log_acceptance(self, f_x: torch.Tensor, f_new: torch.Tensor, log_fwd: torch.Tensor,
                       log_rev: torch.Tensor) -> torch.Tensor:
        """log alpha = f(x') - f(x) + log q(x | x') - log q(x' | x) (Metropolis-Hastings), all (N,).

        The unadjusted kernels (DULA) return 0 instead (accept), -inf where f(x') is -inf or NaN.
        """
        if self.unadjusted:
            return torch.where(f_new > -torch.inf, torch.zeros_like(f_new), -torch.inf)
        return f_new - f_x + log_rev - log_fwd

    def _log_alpha(self, f_x, f_new, grad_new, log_fwd, log_rev) -> torch.Tensor:
        """:meth:`log_acceptance`, NaN for a proposal with a non-finite gradient entry: rejected (never enters the
        chain) and counted in ``Info.nonfinite_proposals`` (:func:`~gradmc.samplers.base.count_nonfinite`)."""
        log_alpha = self.log_acceptance(f_x, f_new, log_fwd, log_rev)
        return torch.where(_rows_finite(grad_new), log_alpha, torch.nan)

    def _accept(self, state: FactorisedState, key, billed: int, x, ev: Evaluation, x_new, ev_new: Evaluation,
                changed: torch.Tensor, log_alpha: torch.Tensor, generator) -> tuple[FactorisedState, Info]:
        """The Metropolis-Hastings decision and the step's result, shared by the kernels' ``step``: x (C, ...) and
        ev the current states and their evaluation, x_new and ev_new the proposals', changed (C,) int64 the
        coordinates a proposal changes, log_alpha (C,); key and billed from ``current_evaluation``."""
        accepted, acceptance_prob = metropolis_hastings_accept(log_alpha, generator, ev_new.log_prob)
        choose = RowChoice(accepted)  # the rejected rows found once for the evaluation and the state
        out = select(choose, ev_new, ev)
        evals = 1 + billed
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted,
                    sites_changed=torch.where(accepted, changed, 0), energy_evals=evals, grad_evals=evals,
                    nonfinite_proposals=count_nonfinite(ev_new.log_prob, log_alpha))
        return bind_state(FactorisedState(x=choose(x_new, x), log_prob=out.log_prob,
                                          num_steps=state.num_steps + 1, cache=out if key is not None else None,
                                          cache_key=key)), info

    def _init(self, x: torch.Tensor, log_prob) -> FactorisedState:
        ev = evaluate(log_prob, x, grad=True)
        check_finite(self.name, 0, ("log_prob at the current state", ev.log_prob))
        key = cache_key(log_prob)
        return bind_state(FactorisedState(x=x.clone(), log_prob=ev.log_prob, cache=ev if key is not None else None,
                                          cache_key=key))


class IndependentFlipMH(_FactorisedMH):
    """Metropolis-Hastings with a proposal that flips every bit independently (module docstring).

    Subclasses (frozen dataclasses) implement :meth:`log_flip_probabilities` and ``name``; kernels whose p_i is
    sigmoid(z_i) of a logit implement :meth:`flip_logits` instead (:class:`LogitFlipMH`, the cheaper path). States
    are (C, D) floats in {0, 1}; the target is a callable (N, D) -> (N,), differentiable in x.

    ``step`` and ``transition_probabilities`` work on a proposal ``P`` = :meth:`_proposal` (x, grad f(x)), a tuple
    of (N, D) tensors (here (log p, log(1 - p)); logits for :class:`LogitFlipMH`), through :meth:`_draw` and
    :meth:`_log_q`.
    """

    @property
    def name(self) -> str:  # pragma: no cover - every concrete kernel overrides it
        raise NotImplementedError

    def log_flip_probabilities(self, x: torch.Tensor, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(log p_i, log(1 - p_i)), each (N, D), of flipping bit i from x given grad f(x) (N, D)."""
        raise NotImplementedError

    @staticmethod
    def log_proposal(log_p: torch.Tensor, log_keep: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """log q(mask) = sum_i [m_i log p_i + (1 - m_i) log(1 - p_i)], (N,), from (N, D) log p, log(1 - p)
        and the (N, D) bool flip mask (a where, not a product: log p may be -inf where m_i = 0)."""
        return torch.where(mask, log_p, log_keep).sum(-1)

    def _proposal(self, x: torch.Tensor, grad: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The proposal at x given grad f(x), both (N, D): (log p, log(1 - p)), each (N, D)."""
        return self.log_flip_probabilities(x, grad)

    def _log_q(self, proposal: tuple[torch.Tensor, ...], mask: torch.Tensor) -> torch.Tensor:
        """log q(mask), (N,), under a :meth:`_proposal`, mask (N, D) bool."""
        return self.log_proposal(*proposal, mask)

    def _draw(self, proposal: tuple[torch.Tensor, ...], generator) -> torch.Tensor:
        """The flip mask, (N, D) bool, P(m_i) = p_i exactly: the rarer of flip and keep is drawn (:func:`_bernoulli`
        with q = min(p, 1 - p)), so neither a tiny p nor a tiny 1 - p is rounded."""
        log_p, log_keep = proposal
        flip_rare = log_p <= log_keep  # p <= 1/2 (to rounding): draw the flip; else draw the keep
        return _bernoulli(torch.minimum(log_p, log_keep).exp(), generator) == flip_rare

    def log_reverse(self, x: torch.Tensor, grad_x: torch.Tensor, x_new: torch.Tensor, grad_new: torch.Tensor,
                    mask: torch.Tensor) -> torch.Tensor:
        """log q(x | x'), (N,): the same mask flipped from x', with the probabilities at x' (grad f(x')).

        Args:
            x, grad_x: (N, D) the current states and grad f there (unused here; mutation tests override
                this method); x_new, grad_new: (N, D) the proposals and grad f there; mask: (N, D) bool.
        """
        return self._log_q(self._proposal(x_new, grad_new), mask)

    @staticmethod
    def _flip(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x with the bits in mask flipped, (N, D)."""
        return torch.where(mask, 1.0 - x, x)

    def _score(self, x, ev: Evaluation, proposal, mask, ev_new: Evaluation, x_new):
        """Shared by :meth:`step` and :meth:`transition_probabilities`: (log q(x'|x), log alpha), each (N,)."""
        log_fwd = self._log_q(proposal, mask)
        log_rev = self.log_reverse(x, ev.grad, x_new, ev_new.grad, mask)
        return log_fwd, self._log_alpha(ev.log_prob, ev_new.log_prob, ev_new.grad, log_fwd, log_rev)

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> FactorisedState:
        """Start chains at x (C, D) floats in {0, 1}; evaluates f and grad f at x once, for the cache.

        Raises:
            TypeError, ValueError: x not a binary (C, D) floating tensor (:func:`check_binary`).
            NonFiniteError: if f(x) is NaN or inf for some chain.
        """
        check_binary(x, check_values=True)
        return self._init(x, log_prob)

    def step(self, state: FactorisedState, log_prob, generator: torch.Generator) -> tuple[FactorisedState, Info]:
        """One transition for every chain: draw the flip mask, evaluate x', accept or reject.

        Args:
            state: from :meth:`init` or a previous step; x (C, D).
            log_prob: callable (N, D) -> (N,), differentiable in x.
            generator: torch.Generator (or ChainStreams) on x's device.

        Returns:
            the new state and Info (acceptance_prob (C,), accepted (C,) bool, sites_changed (C,) int64 =
            number of flipped bits if accepted else 0, energy_evals = grad_evals = 1, or 2 when x was
            evaluated too).

        Raises:
            ValueError: if log_prob does not return shape (C,).
            NonFiniteError: f(x) or grad f(x) NaN/inf at a current state (non-finite proposals are rejected).
        """
        x = state.x  # (C, D)
        ev, key, billed = current_evaluation(state, log_prob, x, grad=True)
        check_current_gradient(self.name, state, ev.log_prob, ev.grad)
        proposal = self._proposal(x, ev.grad)  # tuple of (C, D)
        mask = self._draw(proposal, generator)  # (C, D) bool: P(flip bit i) = p_i
        x_new = self._flip(x, mask)
        ev_new = eval_flip_mask(log_prob, x, ev, x_new, mask, grad=True)
        _, log_alpha = self._score(x, ev, proposal, mask, ev_new, x_new)
        return self._accept(state, key, billed, x, ev, x_new, ev_new, mask.sum(1), log_alpha, generator)

    @torch.no_grad()
    def transition_probabilities(self, x: torch.Tensor, log_prob) -> tuple[torch.Tensor, torch.Tensor]:
        """Enumerate one step from each row of x: all 2**D flip masks, then the stay outcome.

        Args:
            x: (C, D) binary states (D small: costs C * 2**D target evaluations with gradients).
            log_prob: callable (N, D) -> (N,), differentiable in x.

        Returns:
            next_states: (C, 2**D + 1, D), x XOR every mask (the zero mask first, in
            :func:`~gradmc.core.exact.enumerate_binary` order) then x itself; probs: (C, 2**D + 1),
            q(mask | x) * min(1, alpha) then the rejected mass (may round to -1e-17).

        Raises:
            TypeError, ValueError: x not binary (C, D); ValueError: D > 26.
        """
        check_binary(x, check_values=True)
        C, D = x.shape
        masks = enumerate_binary(D, dtype=x.dtype).to(x.device).bool()  # (M, D)
        M = masks.shape[0]
        ev = evaluate(log_prob, x, grad=True)
        proposal = self._proposal(x, ev.grad)  # tuple of (C, D)
        rep = Evaluation(*(None if t is None else t.repeat_interleave(M, 0) for t in ev))
        x_rep, mask = x.repeat_interleave(M, 0), masks.repeat(C, 1)  # (C * M, D), chain-major
        x_new = self._flip(x_rep, mask)
        ev_new = evaluate(log_prob, x_new, grad=True)
        log_fwd, log_alpha = self._score(x_rep, rep, tuple(t.repeat_interleave(M, 0) for t in proposal), mask,
                                         ev_new, x_new)
        move = (log_fwd.exp() * acceptance_probability(log_alpha, ev_new.log_prob)).reshape(C, M)
        stay = 1.0 - move.sum(1, keepdim=True)
        return torch.cat([x_new.reshape(C, M, D), x[:, None, :]], 1), torch.cat([move, stay], 1)


class LogitFlipMH(IndependentFlipMH):
    """:class:`IndependentFlipMH` for flip probabilities p_i = sigmoid(z_i) given by logits (DMALA, DULA, ACS).

    Subclasses implement :meth:`flip_logits`. With s_i = +1 for a flipped bit and -1 for a kept one,
    log q(mask) = sum_i logsigmoid(s_i z_i): one pass per direction, where (log p, log(1 - p)) would need two;
    the draw compares a uniform with sigmoid(-|z_i|), the rarer outcome's probability (:func:`_bernoulli`).
    :meth:`log_flip_probabilities` stays (logsigmoid(z), logsigmoid(-z)), for callers and tests.
    """

    def flip_logits(self, x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        """(N, D) logits z of the flip probabilities p = sigmoid(z), from x and grad f(x), both (N, D)."""
        raise NotImplementedError

    def log_flip_probabilities(self, x, grad):
        """(log p_i, log(1 - p_i)) = (logsigmoid(z_i), logsigmoid(-z_i)), each (N, D), z = :meth:`flip_logits`."""
        z = self.flip_logits(x, grad)
        return F.logsigmoid(z), F.logsigmoid(-z)

    def _proposal(self, x, grad):
        """(z,): the (N, D) flip logits at x."""
        return (self.flip_logits(x, grad),)

    def _log_q(self, proposal, mask):
        """sum_i logsigmoid(s_i z_i), (N,): s_i = +1 where mask (flipped), -1 where kept."""
        (z,) = proposal
        return F.logsigmoid(torch.where(mask, z, z.neg())).sum(-1)

    def _draw(self, proposal, generator):
        """(N, D) bool: the rarer outcome drawn with probability sigmoid(-|z|) (:func:`_bernoulli`), a flip
        where z <= 0, a keep where z > 0."""
        (z,) = proposal
        return _bernoulli(torch.sigmoid(z.abs().neg_()), generator) != (z > 0)

    def step(self, state: FactorisedState, log_prob, generator: torch.Generator) -> tuple[FactorisedState, Info]:
        """One transition for every chain, as :meth:`IndependentFlipMH.step` (same arguments, returns and errors),
        computed with 0/1 float masks and the draw's own probabilities:

        - the rarer outcome r_i ~ Bernoulli(q_i), q_i = sigmoid(-|z_i|) (:func:`_bernoulli_float`); the flip mask is
          m_i = |r_i - [z_i > 0]|;
        - log q(x' | x) = sum_i log(1 - q_i) - sum_i r_i |z_i| (log(q / (1 - q)) = -|z|), from the q of the draw;
        - log q(x | x') = -sum_i softplus((1 - 2 m_i) z'_i) = sum_i logsigmoid(s_i z'_i), z' the logits at x'.

        The same law as the shared helpers that :meth:`transition_probabilities` enumerates (tests compare a step
        with the enumerated row). A subclass that overrides :meth:`log_reverse` gets it called with the bool mask.
        """
        x = state.x  # (C, D)
        ev, key, billed = current_evaluation(state, log_prob, x, grad=True)
        check_current_gradient(self.name, state, ev.log_prob, ev.grad)
        z = self.flip_logits(x, ev.grad)  # (C, D)
        size = z.abs()
        rare_p = torch.sigmoid(size.neg())  # probability of the rarer outcome: a flip where z <= 0, a keep where z > 0
        rare = _bernoulli_float(rare_p, generator)  # (C, D) 0/1
        mask = (rare - z.sign().clamp_(min=0.0)).abs_()  # (C, D) 0/1 flip mask: rare XOR (z > 0)
        log_fwd = torch.log1p(rare_p.neg_()).sum(-1) - (rare * size).sum(-1)  # (C,)
        x_new = (x - mask.to(x.dtype)).abs_()  # x XOR mask
        ev_new = eval_flip_mask(log_prob, x, ev, x_new, mask, grad=True)
        if type(self).log_reverse is IndependentFlipMH.log_reverse:
            keep_sign = mask.mul(-2.0).add_(1.0)  # -1 where flipped, +1 where kept
            log_rev = F.softplus(keep_sign.mul_(self.flip_logits(x_new, ev_new.grad))).sum(-1).neg_()
        else:
            log_rev = self.log_reverse(x, ev.grad, x_new, ev_new.grad, mask != 0)
        log_alpha = self._log_alpha(ev.log_prob, ev_new.log_prob, ev_new.grad, log_fwd, log_rev)
        return self._accept(state, key, billed, x, ev, x_new, ev_new, mask.sum(1).long(), log_alpha, generator)


def _dlp_binary(x: torch.Tensor, grad: torch.Tensor, step_size: float) -> torch.Tensor:
    """DLP flip logits, (N, D): d / 2 - 1 / (2 alpha), d = (1 - 2x) grad (DLP on bits: x' - x = +-1); x, grad (N, D)."""
    return torch.addcmul(grad, x.to(grad.dtype), grad, value=-2.0).mul_(0.5).sub_(0.5 / step_size)


@dataclass(frozen=True)
class _DLPStepSize:
    """The field shared by the DMALA / DULA kernels, binary and categorical: ``step_size``, the DLP's alpha
    (default :data:`DMALA_STEP_SIZE`), checked at construction.

    Raises:
        ValueError: step_size not a finite number > 0.
    """

    step_size: float = DMALA_STEP_SIZE

    def __post_init__(self):
        _check_positive(type(self).__name__, "step_size", self.step_size)


@register_sampler("DMALA", family="later", options={"step_size": "positive"},
                  adapt=("step_size", "log"), colour="darkgreen", order=61,
                  doc="discrete Metropolis-adjusted Langevin (Zhang et al. 2022), alpha = 0.2")
@dataclass(frozen=True)
class DMALA(_DLPStepSize, LogitFlipMH):
    """Discrete Metropolis-adjusted Langevin algorithm, binary (Zhang, Liu & Liu 2022, DLP + MH correction).

    Flip probability p_i = sigmoid(d_i(x) / 2 - 1 / (2 alpha)), then MH correction.

    Args:
        step_size: alpha > 0 (default 0.2, the authors' code default).

    Raises:
        ValueError: step_size not a finite number > 0.
    """

    @property
    def name(self) -> str:
        """"DMALA"."""
        return "DMALA"

    def flip_logits(self, x, grad):
        """(N, D) logits d_i / 2 - 1 / (2 alpha) from x and grad f(x), both (N, D)."""
        return _dlp_binary(x, grad, self.step_size)


@register_sampler("DULA", family="later", options={"step_size": "positive"}, adapt=("step_size", "log"), exact=False,
                  colour="yellowgreen",
                  order=62, doc="unadjusted (biased) DMALA, alpha = 0.2")
@dataclass(frozen=True)
class DULA(DMALA):
    """Discrete UNADJUSTED Langevin algorithm, binary (Zhang, Liu & Liu 2022, DLP without the MH step).

    The DMALA proposal with every proposal accepted: its stationary distribution is in general NOT the
    target (the paper bounds the bias, zero as alpha -> 0 for log-quadratic targets only). A proposal with
    non-finite f or gradient is still rejected. Args and errors as :class:`DMALA`.
    """

    unadjusted = True

    @property
    def name(self) -> str:
        """"DULA"."""
        return "DULA"


@dataclass(frozen=True)
class _DLMCTau:
    """The field shared by the DLMC kernels, binary and categorical: ``tau``, the simulation time (None: e / D on
    D bits or sites, :data:`DLMC_TAU_SCALE`), checked at construction.

    Raises:
        ValueError: tau neither None nor a finite number > 0.
    """

    tau: float | None = None

    def __post_init__(self):
        if self.tau is not None:
            _check_positive(type(self).__name__, "tau", self.tau)

    def tau_for(self, dim: int) -> float:
        """The simulation time on ``dim`` bits (binary) or sites (categorical): ``tau``, or e / dim when tau is
        None."""
        return self.tau if self.tau is not None else DLMC_TAU_SCALE / dim

    def adapt_start(self, dim: int) -> float:
        """The starting tau of ``adapt=N`` on ``dim`` bits or sites when none is given: :meth:`tau_for`."""
        return self.tau_for(dim)

    @property
    def name(self) -> str:
        """"DLMC" (the categorical kernel too; DLMC-Euler overrides it)."""
        return "DLMC"


@register_sampler("DLMC", family="later", options={"tau": "positive"}, adapt=("tau", "log"),
                  colour="mediumblue", order=63, doc="discrete Langevin Monte Carlo (Sun et al. 2023), tau = e / D")
@dataclass(frozen=True)
class DLMC(_DLMCTau, IndependentFlipMH):
    """Discrete Langevin Monte Carlo, binary (Sun et al. 2023: the factorised transition matrix, solved
    exactly per bit), MH-corrected.

    p_i = sigmoid(d_i) (1 - exp(-tau g(e^{d_i}) / sigmoid(d_i))), g(t) = sqrt(t): the flip probability at
    time tau of the two-state chain with rates e^{d_i / 2} (flip) and e^{-d_i / 2} (flip back).
    Computed in logs: log p = logsigmoid(d) + log1mexp(-s), s = tau (e^{d/2} + e^{-d/2}), and
    log(1 - p) = logaddexp(logsigmoid(-d), logsigmoid(d) - s).

    Args:
        tau: simulation time > 0; None (the default): e / D on D bits (:data:`DLMC_TAU_SCALE`), fixed for a
            given dimension, so the kernel stays a fixed exact kernel.

    Raises:
        ValueError: tau neither None nor a finite number > 0.
    """

    def log_flip_probabilities(self, x, grad):
        """(log p_i, log(1 - p_i)), each (N, D), of the exact two-state flow (class docstring)."""
        d = torch.addcmul(grad, x.to(grad.dtype), grad, value=-2.0)
        # tau (e^{d/2} + e^{-d/2}) = tau g(e^d) / sigmoid(d); may be inf
        s = self.tau_for(x.shape[-1]) * 2.0 * torch.cosh(0.5 * d)
        log_nu, log_nu_rev = F.logsigmoid(d), F.logsigmoid(-d)
        return log_nu + log1mexp(-s), torch.logaddexp(log_nu_rev, log_nu - s)


@register_sampler("DLMC-Euler", family="later", options={"tau": "positive"},
                  adapt=("tau", "log"), colour="cornflowerblue", order=64,
                  doc="DLMC with an Euler step of the per-bit flow, tau = e / D")
@dataclass(frozen=True)
class DLMCEuler(DLMC):
    """DLMC with one Euler (forward) step of the per-bit flow instead of its exact solution, MH-corrected.

    p_i = min(1, tau g(e^{d_i})) = min(1, tau e^{d_i / 2}) (first order in tau of the exact flip
    probability). Bits with p_i = 1 always flip, so a reverse move that needs such a bit kept has
    probability 0 and is rejected.

    Args:
        tau: Euler step > 0; None (the default): e / D on D bits, as :class:`DLMC`.

    Raises:
        ValueError: tau neither None nor a finite number > 0.
    """

    @property
    def name(self) -> str:
        """"DLMC-Euler"."""
        return "DLMC-Euler"

    def log_flip_probabilities(self, x, grad):
        """(log p_i, log(1 - p_i)), each (N, D), p_i = min(1, tau e^{d_i / 2})."""
        d = torch.addcmul(grad, x.to(grad.dtype), grad, value=-2.0)
        log_p = (math.log(self.tau_for(x.shape[-1])) + 0.5 * d).clamp(max=0.0)
        return log_p, log1mexp(log_p)


# ---------------------------------------------------------------------------------------------------
# categorical


class IndependentSiteMH(_FactorisedMH):
    """Metropolis-Hastings with a proposal that resamples every site of a one-hot state independently.

    Subclasses implement :meth:`site_logits` and ``name``. States are one-hot (C, D, K) floats; the target
    is a callable (N, D, K) -> (N,), differentiable in x.
    """

    @property
    def name(self) -> str:  # pragma: no cover - every concrete kernel overrides it
        raise NotImplementedError

    def site_logits(self, x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        """(N, D, K) unnormalised log q(x'_d = e_k | x) from x and grad f(x), both (N, D, K)."""
        raise NotImplementedError

    def log_site_probabilities(self, x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        """(N, D, K) log q(x'_d = e_k | x): :meth:`site_logits` normalised per site."""
        return torch.log_softmax(self.site_logits(x, grad), -1)

    @staticmethod
    def log_proposal(log_q: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """sum_d log_q[n, d, values[n, d]], (N,), from (N, D, K) log-probabilities and (N, D) int64 values."""
        return log_q.gather(-1, values[..., None]).squeeze(-1).sum(-1)

    def log_reverse(self, x: torch.Tensor, grad_x: torch.Tensor, x_new: torch.Tensor,
                    grad_new: torch.Tensor) -> torch.Tensor:
        """log q(x | x'), (N,): x's values under the site probabilities at x' (grad f(x')); all (N, D, K)."""
        return self.log_proposal(self.log_site_probabilities(x_new, grad_new), x.argmax(-1))

    def _score(self, x, ev: Evaluation, log_q, values, ev_new: Evaluation, x_new):
        """Shared by :meth:`step` and :meth:`transition_probabilities`: (log q(x'|x), log alpha), each (N,)."""
        log_fwd = self.log_proposal(log_q, values)
        log_rev = self.log_reverse(x, ev.grad, x_new, ev_new.grad)
        return log_fwd, self._log_alpha(ev.log_prob, ev_new.log_prob, ev_new.grad, log_fwd, log_rev)

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> FactorisedState:
        """Start chains at x (C, D, K) one-hot floats; evaluates f and grad f at x once, for the cache.

        Raises:
            TypeError, ValueError: the input errors of :func:`~gradmc.samplers.discrete.onehot.check_onehot`.
            NonFiniteError: if f(x) is NaN or inf for some chain.
        """
        check_onehot(x, check_values=True)
        return self._init(x, log_prob)

    def step(self, state: FactorisedState, log_prob, generator: torch.Generator) -> tuple[FactorisedState, Info]:
        """One transition for every chain: draw every site's new value, evaluate x', accept or reject.

        Returns:
            the new state and Info (acceptance_prob (C,), accepted (C,) bool, sites_changed (C,) int64 =
            number of sites whose value changed if accepted else 0, energy_evals = grad_evals = 1, or 2
            when x was evaluated too).

        Raises:
            ValueError: if log_prob does not return shape (C,).
            NonFiniteError: f(x) or grad f(x) NaN/inf at a current state (non-finite proposals are rejected).
        """
        x = state.x  # (C, D, K)
        ev, key, billed = current_evaluation(state, log_prob, x, grad=True)
        check_current_gradient(self.name, state, ev.log_prob, ev.grad)
        log_q = self.log_site_probabilities(x, ev.grad)  # (C, D, K)
        values = sample_categorical(log_q, generator)  # (C, D)
        x_new = F.one_hot(values, x.shape[2]).to(x.dtype)
        ev_new = evaluate(log_prob, x_new, grad=True)
        _, log_alpha = self._score(x, ev, log_q, values, ev_new, x_new)
        changed = (values != x.argmax(-1)).sum(1)
        return self._accept(state, key, billed, x, ev, x_new, ev_new, changed, log_alpha, generator)

    @torch.no_grad()
    def transition_probabilities(self, x: torch.Tensor, log_prob) -> tuple[torch.Tensor, torch.Tensor]:
        """Enumerate one step from each row of x: all K**D outcomes, then the stay outcome.

        Args:
            x: (C, D, K) one-hot states (tiny D, K: costs C * K**D evaluations with gradients).

        Returns:
            next_states: (C, K**D + 1, D, K), every state in
            :func:`~gradmc.samplers.discrete.onehot.enumerate_onehot` order then x itself; probs:
            (C, K**D + 1), q(x' | x) min(1, alpha) then the rejected mass.

        Raises:
            TypeError, ValueError: x not one-hot (C, D, K), or K**D above the enumeration limit.
        """
        check_onehot(x, check_values=True)
        C, D, K = x.shape
        outcomes = enumerate_onehot(D, K, x.dtype).to(x.device)  # (M, D, K)
        M = outcomes.shape[0]
        ev = evaluate(log_prob, x, grad=True)
        log_q = self.log_site_probabilities(x, ev.grad)  # (C, D, K)
        rep = Evaluation(*(None if t is None else t.repeat_interleave(M, 0) for t in ev))
        x_rep, x_new = x.repeat_interleave(M, 0), outcomes.repeat(C, 1, 1)  # (C * M, D, K)
        ev_new = evaluate(log_prob, x_new, grad=True)
        log_fwd, log_alpha = self._score(x_rep, rep, log_q.repeat_interleave(M, 0), x_new.argmax(-1), ev_new, x_new)
        move = (log_fwd.exp() * acceptance_probability(log_alpha, ev_new.log_prob)).reshape(C, M)
        stay = 1.0 - move.sum(1, keepdim=True)
        return torch.cat([x_new.reshape(C, M, D, K), x[:, None]], 1), torch.cat([move, stay], 1)


@register_sampler("DMALA", state="categorical", family="later", options={"step_size": "positive"},
                  adapt=("step_size", "log"), colour="darkgreen", order=61, doc="categorical DMALA, alpha = 0.2")
@dataclass(frozen=True)
class DMALACategorical(_DLPStepSize, IndependentSiteMH):
    """DMALA for one-hot categorical states (Zhang, Liu & Liu 2022, DLP on one-hot sites + MH correction).

    Per site d: logit_k = (grad_{d,k} - grad_{d,x_d}) / 2 - ||e_k - x_d||^2 / (2 alpha), i.e. -1 / alpha
    for every k != x_d and 0 for the current value; sites independent; MH correction.

    Args:
        step_size: alpha > 0 (default 0.2, the authors' code default for their categorical example).

    Raises:
        ValueError: step_size not a finite number > 0.
    """

    @property
    def name(self) -> str:
        """"DMALA"."""
        return "DMALA"

    def site_logits(self, x, grad):
        """(N, D, K) DLP logits (class docstring); x and grad (N, D, K)."""
        x = x.to(grad.dtype)
        current = torch.linalg.vecdot(grad, x)[..., None]  # <grad_d, x_d>, (N, D, 1)
        return (grad - current).mul_(0.5).sub_((1.0 - x) / self.step_size)  # ||e_k - x_d||^2 / 2 = 1 - x_dk


@register_sampler("DULA", state="categorical", family="later", options={"step_size": "positive"},
                  adapt=("step_size", "log"), exact=False, colour="yellowgreen", order=62,
                  doc="categorical DULA, alpha = 0.2")
@dataclass(frozen=True)
class DULACategorical(DMALACategorical):
    """Discrete UNADJUSTED Langevin algorithm for one-hot categorical states: the :class:`DMALACategorical`
    proposal with every (finite) proposal accepted, so biased. Args and errors as DMALACategorical."""

    unadjusted = True

    @property
    def name(self) -> str:
        """"DULA"."""
        return "DULA"


#: half gradient differences are clamped to +-this in the categorical DLMC rates (e^40 ~ 2e17: larger rates only
#: make a site's row its stationary distribution sooner; the clamp keeps the generator finite). The proposal
#: stays one fixed function of (x, grad f(x)), used by step and by the reverse move alike, so MH stays exact.
DLMC_CATEGORICAL_MAX_HALF_DIFF = 40.0


@register_sampler("DLMC", state="categorical", family="later", options={"tau": "positive"}, adapt=("tau", "log"),
                  colour="mediumblue", order=63, doc="categorical DLMC (per-site K-state flow by matrix exponential)")
@dataclass(frozen=True)
class DLMCCategorical(_DLMCTau, IndependentSiteMH):
    """Discrete Langevin Monte Carlo for one-hot categorical states (Sun et al. 2023, the factorised
    transition matrix solved exactly per site, here numerically), MH-corrected (module docstring).

    Per site d: Q_d[j, k] = exp(clamp((grad_{d,k} - grad_{d,j}) / 2)) for k != j, Q_d[j, j] = -sum_{k != j}
    Q_d[j, k]; q(x'_d = e_k | x) = expm(tau Q_d)[x_d, k] (clamped at 1e-300 before the log and renormalised,
    the same function in the forward and the reverse move).

    Args:
        tau: simulation time > 0; None (the default): e / D on D sites (:data:`DLMC_TAU_SCALE`), as the
            binary :class:`DLMC`.

    Raises:
        ValueError: tau neither None nor a finite number > 0.
    """

    def log_site_probabilities(self, x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        """(N, D, K) log q(x'_d = e_k | x): the row x_d of expm(tau Q_d) (class docstring); x, grad (N, D, K)."""
        N, D, K = x.shape
        g = grad.double()
        half = ((g[..., None, :] - g[..., :, None]) * 0.5).clamp(-DLMC_CATEGORICAL_MAX_HALF_DIFF,
                                                                  DLMC_CATEGORICAL_MAX_HALF_DIFF)
        rates = half.exp() * (1.0 - torch.eye(K, dtype=torch.float64, device=x.device))  # (N, D, K, K), j -> k
        generator = rates - torch.diag_embed(rates.sum(-1))
        rows = (x.double()[..., None, :] @ torch.linalg.matrix_exp(self.tau_for(D) * generator)).squeeze(-2)
        return torch.log_softmax(rows.clamp_min(1e-300).log(), -1).to(grad.dtype)
