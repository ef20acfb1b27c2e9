"""Burn-in adaptation of one kernel hyper-parameter toward a target acceptance rate (DISCS style).

DISCS (Goshvadi et al., NeurIPS 2023 benchmark) tunes the samplers' step size / path length so that the
average Metropolis-Hastings acceptance probability approaches 0.574, the optimal rate of MALA-type
kernels (Roberts & Rosenthal 1998). :class:`Adapted` does this for any kernel built by a factory from one
parameter value, during the first ``burn_in`` steps only, and then FREEZES the value: every step after
burn-in is the fixed, exact (pi-invariant) kernel ``factory(value)``, so post-burn-in samples come from
one Markov chain with a fixed kernel (no diminishing-adaptation argument is needed).

Update (Robbins-Monro, Andrieu & Thoms 2008 Sec. 5; the same step as
:func:`~gradmc.samplers.continuous.rwm.adapt_log_scale`), on an unconstrained parameter theta:

    theta_{t+1} = theta_t + gamma_t (abar_t - target),   gamma_t = rate / (t + 1)^decay,

where abar_t is the acceptance probability of step t averaged over ALL chains (one scalar: the
adaptation state is shared across chains, and every chain runs the same kernel).

- kind "log" (a step size alpha or tau > 0): theta = log value, value = exp(theta);
- kind "int" (a path length R >= 1): theta is the real-valued parameter, value = round(theta) clipped to
  [lower, upper] (DISCS's PAS radius update r <- clip(r + abar - target, 1, D) is this rule with
  rate 1 and decay 0).

The rule assumes acceptance DEcreases as the parameter grows (larger steps / longer paths are accepted
less often): a rate above target raises the parameter.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from gradmc.samplers.base import Info
from gradmc.samplers.continuous.rwm import adapt_log_scale

__all__ = ["Adapted", "AdaptedState", "KINDS"]

KINDS = ("log", "int")
#: |log value| cap of an unbounded "log" parameter: exp(700) is finite in float64 (exp(710) overflows)
_LOG_LIMIT = 700.0


class AdaptedState(NamedTuple):
    """inner: the wrapped kernel's state; value: the parameter the NEXT step uses (float for "log", int
    for "int"); theta: the unconstrained Robbins-Monro iterate (log value, or the real path length);
    num_steps: steps since ``init``; frozen: whether burn-in is over (value never changes again); upper: the
    value's upper bound on these chains (``Adapted.upper`` and ``upper_for(D)``, the smaller)."""

    inner: Any
    value: float | int
    theta: float
    num_steps: int = 0
    frozen: bool = False
    upper: float = math.inf

    @property
    def x(self):
        """The chains' current states: the inner kernel's ``x`` (so experiments read an adapted chain as any)."""
        return self.inner.x


@dataclass(frozen=True)
class Adapted:
    """A kernel whose one hyper-parameter is adapted toward ``target_acceptance`` during burn-in, then frozen.

    Args:
        factory: value -> kernel (e.g. ``lambda r: PAS(path_length=r)``, ``lambda a: DMALA(step_size=a)``);
            the kernels it builds share one state type (the inner state is carried across value changes,
            so e.g. GWG-type caches of f and grad f at x stay valid).
        initial: the starting value (> 0; an int >= 1 for kind "int"), or None to take
            ``initial_for(D)`` when the chains start (D = ``x.shape[1]``, bits or sites).
        initial_for: D -> starting value, for a kernel whose default depends on the dimension (DLMC's
            tau = e / D); required when ``initial`` is None.
        burn_in: number of adapted steps (>= 0); from step ``burn_in`` on, the value is fixed.
        kind: "log" (positive real, adapted on the log scale) or "int" (integer >= lower).
        target_acceptance: in (0, 1); 0.574 as in DISCS.
        rate, decay: gain gamma_t = rate / (t + 1)^decay; rate > 0, decay in [0, 1].
        lower, upper: bounds of the value (kind "int": lower defaults to 1; "log": optional, > 0). Give an
            "int" parameter an upper bound where its cost grows with it (a PAS path length: e.g. D).
        upper_for: D -> upper bound of the value on chains of D bits or sites, for a kernel that cannot take
            more (PAS-L-wor flips L distinct bits: L <= D); the value stays below both it and ``upper``.
        label: the kernel's ``name`` (default "Adapted(<name of factory(initial)>)").

    Shapes: x (C, D) (or whatever the inner kernel takes); Info as the inner kernel's step returns it.
    The current value is ``state.value`` (an experiment reads it after burn-in to report it).

    Raises:
        ValueError: burn_in not an int >= 0, target_acceptance not in (0, 1), initial not > 0 (or not an
            int >= 1 for "int"; checked at ``init`` when it comes from ``initial_for``), an unknown kind,
            rate <= 0, decay outside [0, 1], or bad bounds; the message names the argument.
    """

    factory: Callable[[float | int], Any]
    initial: float | int | None
    burn_in: int
    kind: str = "log"
    target_acceptance: float = 0.574
    rate: float = 1.0
    decay: float = 0.6
    lower: float | None = None
    upper: float | None = None
    label: str | None = None
    initial_for: Callable[[int], float | int] | None = None
    upper_for: Callable[[int], float] | None = None

    def __post_init__(self):
        if not (isinstance(self.burn_in, int) and not isinstance(self.burn_in, bool) and self.burn_in >= 0):
            raise ValueError(f"Adapted burn_in must be an int >= 0, got {self.burn_in!r}")
        if not (isinstance(self.target_acceptance, (int, float)) and 0.0 < self.target_acceptance < 1.0):
            raise ValueError(f"Adapted target_acceptance must be in (0, 1), got {self.target_acceptance!r}")
        if self.kind not in KINDS:
            raise ValueError(f"Adapted kind must be one of {KINDS}, got {self.kind!r}")
        if not (math.isfinite(self.rate) and self.rate > 0):
            raise ValueError(f"Adapted rate must be finite and > 0, got {self.rate!r}")
        if not 0.0 <= self.decay <= 1.0:
            raise ValueError(f"Adapted decay must be in [0, 1], got {self.decay!r}")
        if self.initial is None:
            if self.initial_for is None:
                raise ValueError("Adapted needs initial or initial_for")
        else:
            self._check_initial(self.initial)

    def _check_initial(self, initial, upper: float = math.inf) -> None:
        if not (isinstance(initial, (int, float)) and math.isfinite(initial) and initial > 0):
            raise ValueError(f"Adapted initial must be finite and > 0, got {initial!r}")
        if self.kind == "int" and not (isinstance(initial, int) and not isinstance(initial, bool)):
            raise ValueError(f"Adapted initial must be an int >= 1 for kind 'int', got {initial!r}")
        lo, hi = self._bounds(upper)
        if not (lo <= initial <= hi) or (self.kind == "log" and lo < 0):
            raise ValueError(f"Adapted lower/upper must satisfy 0 <= lower <= initial <= upper, "
                             f"got lower={self.lower!r}, initial={initial!r}, upper={hi!r}")

    def _bounds(self, upper: float = math.inf) -> tuple[float, float]:
        """(lower, upper) of the value: ``lower`` (default 1 for "int", 0 for "log") and the smaller of ``upper``
        and the given bound (a state's ``upper``)."""
        lo = self.lower if self.lower is not None else (1 if self.kind == "int" else 0.0)
        return lo, min(self.upper if self.upper is not None else math.inf, upper)

    @property
    def name(self) -> str:
        """``label``, or "Adapted(<name of the initial kernel>)"."""
        if self.label:
            return self.label
        return f"Adapted({self.factory(self.initial).name})" if self.initial is not None else "Adapted"

    def value_of(self, theta: float, upper: float = math.inf) -> float | int:
        """The parameter value for the unconstrained iterate theta (exp, or round; clipped to the bounds, the
        upper one also to ``upper``)."""
        lo, hi = self._bounds(upper)
        if self.kind == "log":
            return min(max(math.exp(theta), lo), hi)
        return int(min(max(round(theta), lo), hi))

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> AdaptedState:
        """Start chains at x with the inner kernel ``factory(initial)`` (its ``init``; same errors), the initial
        value from ``initial_for(x.shape[1])`` when ``initial`` is None, and the upper bound of these chains from
        ``upper_for(x.shape[1])``.

        Raises:
            ValueError: the initial value outside the bounds (the message names them).
        """
        upper = math.inf if self.upper_for is None else self.upper_for(int(x.shape[1]))
        initial = self.initial
        if initial is None:
            initial = self.initial_for(int(x.shape[1]))
        self._check_initial(initial, upper)
        inner = self.factory(initial).init(x, log_prob, generator)
        theta = math.log(initial) if self.kind == "log" else float(initial)
        return AdaptedState(inner=inner, value=initial, theta=theta, frozen=self.burn_in == 0, upper=upper)

    def step(self, state: AdaptedState, log_prob, generator: torch.Generator) -> tuple[AdaptedState, Info]:
        """One step of ``factory(state.value)``; during burn-in, then one Robbins-Monro update of the value
        from the chains' mean acceptance probability (module docstring). After ``burn_in`` steps the value
        is frozen: the step is exactly the fixed kernel's step (same draws from ``generator``).

        Returns:
            the new state and the inner kernel's Info. Raises whatever the inner kernel raises.
        """
        inner, info = self.factory(state.value).step(state.inner, log_prob, generator)
        t = state.num_steps
        if state.frozen:
            return state._replace(inner=inner, num_steps=t + 1), info
        mean_acc = info.acceptance_prob.double().mean()
        theta = float(adapt_log_scale(torch.tensor(state.theta, dtype=torch.float64), mean_acc, t,
                                      target=self.target_acceptance, rate=self.rate, decay=self.decay))
        lo, hi = self._bounds(state.upper)
        if self.kind == "int":  # keep theta within half a unit of the bounds, so it cannot wind up
            theta = min(max(theta, lo - 0.5), hi + 0.5)
        else:  # the bounds on the log scale; unbounded sides stop at exp(+-700), so exp(theta) never overflows
            low = math.log(lo) if lo > 0 else -_LOG_LIMIT
            theta = min(max(theta, low), math.log(hi) if hi < math.inf else _LOG_LIMIT)
        return AdaptedState(inner=inner, value=self.value_of(theta, state.upper), theta=theta, num_steps=t + 1,
                            frozen=t + 1 >= self.burn_in, upper=state.upper), info
