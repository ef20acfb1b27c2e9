"""ACS, automatic cyclical scheduling (Pynadath, Bhattacharya, Hariharan & Zhang, NeurIPS 2024, "Gradient-based
discrete sampling with automatic cyclical scheduling"), binary states.

Binary states x in {0, 1}^D, (C, D) floats; f the unnormalised log-density; d_i(x) = (1 - 2 x_i) grad_i f(x).

The kernel at one schedule position (alpha, beta) (:class:`ACSKernel`): the discrete Langevin proposal
with a balancing constant beta in front of the gradient term,

    q_{alpha,beta}(x'_i | x) ∝ exp(beta grad_i f(x) (x'_i - x_i) - (x'_i - x_i)^2 / (2 alpha)),

coordinatewise and independent, i.e. every bit flips with p_i = sigmoid(beta d_i(x) - 1 / (2 alpha)), then
Metropolis-Hastings with the reverse probabilities of the SAME mask at x' (grad f(x'), the same alpha and
beta). beta = 1/2 is DMALA (locally balanced, g(t) = sqrt(t)); beta = 1 at large alpha approaches the
globally balanced per-bit proposal sigmoid(d_i) (g(t) = t / (1 + t)), which the paper pairs with large
steps. Each position is an exact MH kernel, so every position leaves pi invariant and is reversible.

The cyclical schedule (one cycle of s = ``cycle_length`` steps, position k = 0..s-1):

    alpha_k = max(alpha_max (cos(pi k / s) + 1) / 2, alpha_min)                    (step size)
    beta_k  = 1/2 + (beta_max - 1/2) (alpha_k - alpha_min) / (alpha_max - alpha_min)  (balancing constant)

so a cycle starts with one large, "globally balanced" exploration step (alpha_max, beta_max) and anneals
to small, locally balanced (beta = 1/2) exploitation steps at alpha_min.

Burn-in tuning (``burn_in`` steps, the paper's automatic schedule tuning): the first half tunes alpha_min
with the beta = 1/2 kernel, the second half alpha_max with the beta_max kernel, each toward the target
acceptance rate ``target_acceptance`` (0.5, the authors' ``a_s_cut``) by the Robbins-Monro rule of
:class:`~gradmc.samplers.adaptation.Adapted` on log alpha (the chain runs that one kernel during its
half). As in the authors' tuner, alpha_min can only grow from its initial value and alpha_max only shrink
from its initial value; here alpha_max also stays >= the tuned alpha_min. The bound matters: on many
targets (the D = 32 RBMs tried in the tests) the beta_max kernel's acceptance stays above the target at
every alpha, so an unbounded alpha_max would grow without limit; there alpha_max keeps its initial value.
After burn-in the range is FROZEN: the chain is the fixed, deterministic cycle of exact kernels (positions
counted from the end of burn-in), so pi is invariant under every step and under the whole cycle (no
diminishing-adaptation argument is needed).

Where the definitions come from (the paper's PDF text was not reachable from this project's search tool,
so these are checked against the authors' released code, patrickpynadath1/automatic_cyclical_sampling,
not quoted from the paper):
- the proposal: the code's flip probability exp(beta d - 1/(2 alpha)) / (exp(beta d - 1/(2 alpha)) + 1),
  reverse with the same step size and balancing constant at x' (``AutomaticCyclicalSampler.step``);
- the step sizes: (alpha_max / 2) (cos(pi k / s) + 1), replaced by alpha_min from the first position
  where it falls below alpha_min (``calc_stepsizes`` and ``tuning_alg``);
- the balancing constants: the code's untuned schedule (beta_0 - 1/2) / 2 cos(pi k / s) + (beta_0 + 1/2) / 2
  (``calc_balancing_constants``) equals the linear-in-alpha rule above wherever alpha_k > alpha_min, and
  the code uses 1/2 at the alpha_min positions. DEVIATION: the code's tuner then searches beta per
  position greedily (``estimate_opt_bal``); here beta is tied to alpha by the formula above instead.
- the tuning: the code moves alpha_min multiplicatively toward the acceptance target ``a_s_cut`` with
  beta = 1/2 (``estimate_alpha_min``) and shrinks alpha_max from 5 until the beta_max kernel's acceptance
  reaches ``a_s_cut`` (``estimate_alpha_max``), 100 test steps each (budget 200), on the chains that are
  then sampled. DEVIATION: here both use the Robbins-Monro log-scale update of :mod:`~gradmc.samplers.adaptation`
  (rate / (t + 1)^decay) within the same one-sided bounds, and the 50 DULA warm-up steps the code
  runs before tuning are not done.
Defaults (the authors' RBM-sampling configuration): cycle length 20 (10 000 steps in 500 cycles),
alpha_max from 5, alpha_min from 0.05, beta_max = 0.95, target acceptance 0.5, burn-in 200 steps.

Cost per step: that of the fixed kernel (:class:`~gradmc.samplers.discrete.factorised.IndependentFlipMH`):
one function+gradient evaluation at x' (the cache of f and grad f at x is carried across positions).
Non-finite values: as the factorised kernels (NonFiniteError naming "ACS" for f or grad f NaN/inf at the
current state; non-finite proposals rejected).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.adaptation import Adapted, AdaptedState
from gradmc.samplers.base import Info
from gradmc.samplers.discrete.factorised import LogitFlipMH

__all__ = ["ACS", "ACSKernel", "ACSState", "cyclical_step_size", "balancing_constant", "ACS_CYCLE_LENGTH",
           "ACS_ALPHA_MAX", "ACS_ALPHA_MIN", "ACS_BETA_MAX", "ACS_TARGET_ACCEPTANCE", "ACS_BURN_IN"]

#: steps per cycle s: the authors' RBM sampling runs 10 000 steps in 500 cycles.
ACS_CYCLE_LENGTH = 20
#: initial alpha_max (the code's ``init_big_step``).
ACS_ALPHA_MAX = 5.0
#: initial alpha_min (the code's ``init_small_step``).
ACS_ALPHA_MIN = 0.05
#: balancing constant of the cycle's first (largest) step (the code's ``init_big_bal``).
ACS_BETA_MAX = 0.95
#: acceptance target of the burn-in tuning (the code's ``a_s_cut``).
ACS_TARGET_ACCEPTANCE = 0.5
#: tuning steps (the code's ``burnin_budget``), half for alpha_min, half for alpha_max.
ACS_BURN_IN = 200


def _positive(owner: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{owner} {name} must be a finite number > 0, got {value!r}")
    return float(value)


def _cycle_length(owner: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{owner} cycle_length must be an int >= 1, got {value!r}")
    return value


def cyclical_step_size(position: int, cycle_length: int, alpha_max: float, alpha_min: float) -> float:
    """The step size at ``position`` of the cycle: max(alpha_max (cos(pi k / s) + 1) / 2, alpha_min) with
    k = position mod s (the ACS cosine schedule, module docstring). Position 0 gives alpha_max.

    Raises:
        ValueError: cycle_length not an int >= 1, alpha_max or alpha_min not finite and > 0, or
            alpha_min > alpha_max (the message names the argument).
    """
    s = _cycle_length("cyclical_step_size", cycle_length)
    hi, lo = _positive("cyclical_step_size", "alpha_max", alpha_max), _positive("cyclical_step_size", "alpha_min",
                                                                                 alpha_min)
    if lo > hi:
        raise ValueError(f"cyclical_step_size alpha_min must be <= alpha_max, got alpha_min={lo!r}, alpha_max={hi!r}")
    k = position % s
    return max(hi * (math.cos(math.pi * k / s) + 1.0) / 2.0, lo)


def balancing_constant(alpha: float, alpha_max: float, alpha_min: float, beta_max: float) -> float:
    """beta tied to alpha: 1/2 + (beta_max - 1/2) (alpha - alpha_min) / (alpha_max - alpha_min) (module
    docstring), so beta_max at alpha_max and 1/2 at alpha_min; 1/2 when alpha_max == alpha_min.

    Raises:
        ValueError: beta_max outside [1/2, 1], or alpha outside [alpha_min, alpha_max].
    """
    if isinstance(beta_max, bool) or not isinstance(beta_max, numbers.Real) or not 0.5 <= beta_max <= 1.0:
        raise ValueError(f"balancing_constant beta_max must be in [0.5, 1], got {beta_max!r}")
    if not alpha_min <= alpha <= alpha_max:
        raise ValueError(f"balancing_constant alpha must be in [alpha_min, alpha_max] = [{alpha_min}, {alpha_max}], "
                         f"got {alpha!r}")
    if alpha_max == alpha_min:
        return 0.5
    return 0.5 + (beta_max - 0.5) * (alpha - alpha_min) / (alpha_max - alpha_min)


@dataclass(frozen=True)
class ACSKernel(LogitFlipMH):
    """The ACS kernel at one schedule position: p_i = sigmoid(beta d_i(x) - 1 / (2 alpha)), MH-corrected
    (module docstring; the reverse move uses the same alpha and beta at x'). beta = 1/2 is DMALA.

    States (C, D) floats in {0, 1}; ``step``, ``init`` and ``transition_probabilities`` (the exact one-step
    enumeration over all 2**D masks) as :class:`~gradmc.samplers.discrete.factorised.IndependentFlipMH`.

    Args:
        step_size: alpha > 0.
        balance: beta, finite and > 0 (the schedule uses [1/2, 1]).

    Raises:
        ValueError: step_size or balance not a finite number > 0.
    """

    step_size: float
    balance: float = 0.5

    def __post_init__(self):
        _positive("ACSKernel", "step_size", self.step_size)
        _positive("ACSKernel", "balance", self.balance)

    @property
    def name(self) -> str:
        """"ACS" (so non-finite errors name the registry sampler)."""
        return "ACS"

    def flip_logits(self, x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        """(N, D) logits beta d_i - 1 / (2 alpha), d = (1 - 2x) grad, of the flip probabilities.

        Args:
            x: (N, D) binary states; grad: (N, D) grad f(x).
        """
        d = torch.addcmul(grad, x.to(grad.dtype), grad, value=-2.0)
        return d.mul_(self.balance).sub_(0.5 / self.step_size)


class ACSState(NamedTuple):
    """inner: the fixed kernels' state (FactorisedState: x (C, D), f(x) (C,), the evaluation cache);
    alpha_max, alpha_min: the current range (fixed once ``frozen``); tuning: the Robbins-Monro state of the
    burn-in half in progress (its ``value`` is the alpha being tuned), None once frozen; num_steps: steps
    since ``init``; frozen: burn-in over (the schedule never changes again)."""

    inner: Any
    alpha_max: float
    alpha_min: float
    tuning: AdaptedState | None
    num_steps: int = 0
    frozen: bool = False

    @property
    def x(self) -> torch.Tensor:
        """(C, D) the chains' current states."""
        return self.inner.x


@register_sampler("ACS", family="later", options={"cycle_length": "count", "alpha_max": "positive",
                                                   "alpha_min": "positive", "beta_max": "real", "burn_in": "count0",
                                                   "target_acceptance": "probability", "rate": "positive",
                                                   "decay": "positive"},
                  colour="magenta", order=65, doc="automatic cyclical sampler (Pynadath et al., NeurIPS 2024)")
@dataclass(frozen=True)
class ACS:
    """Automatic cyclical sampler, binary (module docstring): burn-in tuning of (alpha_min, alpha_max), then
    the fixed cosine cycle of :class:`ACSKernel` positions.

    Args:
        cycle_length: steps per cycle s, an int >= 1 (default 20).
        alpha_max: initial (untuned if burn_in = 0) largest step size, > 0 (default 5).
        alpha_min: initial smallest step size, 0 < alpha_min <= alpha_max (default 0.05).
        beta_max: balancing constant at alpha_max, in [1/2, 1] (default 0.95).
        burn_in: tuning steps, an int >= 0 (default 200): the first burn_in // 2 tune alpha_min (upward
            from its initial value), the rest alpha_max (downward); 0 runs the initial schedule untuned.
        target_acceptance: acceptance target of both tunings, in (0, 1) (default 0.5).
        rate, decay: Robbins-Monro gain rate / (t + 1)^decay (as :class:`~gradmc.samplers.adaptation.Adapted`).

    Shapes: x (C, D) floats in {0, 1}; the target is a callable (N, D) -> (N,), differentiable in x. ``step``
    returns the fixed kernel's Info (acceptance_prob (C,), accepted (C,), sites_changed (C,), evaluations).

    Raises:
        ValueError: any argument out of range; the message names it.
    """

    cycle_length: int = ACS_CYCLE_LENGTH
    alpha_max: float = ACS_ALPHA_MAX
    alpha_min: float = ACS_ALPHA_MIN
    beta_max: float = ACS_BETA_MAX
    burn_in: int = ACS_BURN_IN
    target_acceptance: float = ACS_TARGET_ACCEPTANCE
    rate: float = 1.0
    decay: float = 0.6

    def __post_init__(self):
        _cycle_length("ACS", self.cycle_length)
        hi, lo = _positive("ACS", "alpha_max", self.alpha_max), _positive("ACS", "alpha_min", self.alpha_min)
        if lo > hi:
            raise ValueError(f"ACS alpha_min must be <= alpha_max, got alpha_min={lo!r}, alpha_max={hi!r}")
        if isinstance(self.beta_max, bool) or not isinstance(self.beta_max, numbers.Real) \
                or not 0.5 <= self.beta_max <= 1.0:
            raise ValueError(f"ACS beta_max must be in [0.5, 1], got {self.beta_max!r}")
        if isinstance(self.burn_in, bool) or not isinstance(self.burn_in, int) or self.burn_in < 0:
            raise ValueError(f"ACS burn_in must be an int >= 0, got {self.burn_in!r}")
        # the tuners' own checks (target_acceptance, rate, decay), with ACS's names in the message
        try:
            self._tuner("alpha_min", 1)
        except ValueError as err:
            raise ValueError(str(err).replace("Adapted", "ACS", 1)) from None

    @property
    def name(self) -> str:
        """"ACS"."""
        return "ACS"

    @property
    def min_steps(self) -> int:
        """Burn-in steps that tune alpha_min (burn_in // 2); the remaining burn_in - min_steps tune alpha_max."""
        return self.burn_in // 2

    def kernel_at(self, position: int, alpha_max: float, alpha_min: float) -> ACSKernel:
        """The fixed kernel at ``position`` (mod cycle_length) of the cycle over [alpha_min, alpha_max]:
        ACSKernel(alpha_k, beta_k) (:func:`cyclical_step_size`, :func:`balancing_constant`).

        Raises:
            ValueError: alpha_max / alpha_min not > 0 or alpha_min > alpha_max.
        """
        alpha = cyclical_step_size(position, self.cycle_length, alpha_max, alpha_min)
        return ACSKernel(step_size=alpha, balance=balancing_constant(alpha, alpha_max, alpha_min, self.beta_max))

    def cycle(self, alpha_max: float, alpha_min: float) -> list[ACSKernel]:
        """The cycle_length kernels of one cycle, position 0 first (see :meth:`kernel_at`)."""
        return [self.kernel_at(k, alpha_max, alpha_min) for k in range(self.cycle_length)]

    def _tuner(self, which: str, steps: int, alpha_min: float | None = None) -> Adapted:
        """The :class:`Adapted` rule tuning alpha_min (beta = 1/2 kernel, within [initial alpha_min, initial
        alpha_max]) or alpha_max (beta_max kernel, within [tuned ``alpha_min``, initial alpha_max])."""
        if which == "alpha_min":
            balance, lower = 0.5, self.alpha_min
        else:
            balance, lower = self.beta_max, self.alpha_min if alpha_min is None else alpha_min
        return Adapted(factory=lambda a: ACSKernel(step_size=a, balance=balance), initial=getattr(self, which),
                       burn_in=steps, kind="log", target_acceptance=self.target_acceptance, rate=self.rate,
                       decay=self.decay, lower=lower, upper=self.alpha_max, label="ACS")

    def _start(self, which: str, inner) -> AdaptedState:
        return AdaptedState(inner=inner, value=float(getattr(self, which)), theta=math.log(getattr(self, which)))

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> ACSState:
        """Start chains at x (C, D) with the initial range (one evaluation of f and grad f, cached).

        Raises:
            TypeError, ValueError: x not a binary (C, D) floating tensor. NonFiniteError: f(x) NaN or inf.
        """
        inner = ACSKernel(step_size=self.alpha_min).init(x, log_prob, generator)
        if self.burn_in == 0:
            return ACSState(inner=inner, alpha_max=float(self.alpha_max), alpha_min=float(self.alpha_min),
                            tuning=None, frozen=True)
        which = "alpha_min" if self.min_steps > 0 else "alpha_max"
        return ACSState(inner=inner, alpha_max=float(self.alpha_max), alpha_min=float(self.alpha_min),
                        tuning=self._start(which, None))

    def step(self, state: ACSState, log_prob, generator: torch.Generator) -> tuple[ACSState, Info]:
        """One step. During burn-in: one step of the kernel being tuned, then one Robbins-Monro update of its
        alpha (module docstring). After burn-in: the fixed kernel at position (num_steps - burn_in) mod s.

        Returns:
            the new state and the fixed kernel's Info.

        Raises:
            ValueError: log_prob not returning (C,). NonFiniteError: f or grad f NaN/inf at a current state.
        """
        t = state.num_steps
        if state.frozen:
            kernel = self.kernel_at(t - self.burn_in, state.alpha_max, state.alpha_min)
            inner, info = kernel.step(state.inner, log_prob, generator)
            return state._replace(inner=inner, num_steps=t + 1), info
        tuning_min = t < self.min_steps
        which, offset = ("alpha_min", 0) if tuning_min else ("alpha_max", self.min_steps)
        tuner = self._tuner(which, self.min_steps if tuning_min else self.burn_in - self.min_steps, state.alpha_min)
        tuned, info = tuner.step(state.tuning._replace(inner=state.inner, num_steps=t - offset), log_prob, generator)
        new = state._replace(inner=tuned.inner, num_steps=t + 1, **{which: float(tuned.value)},
                             tuning=tuned._replace(inner=None))
        if t + 1 == self.min_steps:  # alpha_min done: tune alpha_max from its initial value
            new = new._replace(tuning=self._start("alpha_max", None))
        if t + 1 >= self.burn_in:  # burn-in over: freeze the range
            new = new._replace(tuning=None, frozen=True)
        return new, info
