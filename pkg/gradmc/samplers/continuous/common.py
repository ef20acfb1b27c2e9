"""Shared pieces of the continuous kernels: the state, argument checks and a batched leapfrog.

The leapfrog runs every chain with its own step size eps_c and number of steps L_c (drawn per chain
and per transition, independently of the state, so each chain is an exact mixture of reversible
kernels). To avoid a host synchronisation (no ``.item()`` in ``step``) the batched loop always runs
L_max = ``num_steps_range[1]`` iterations and freezes chain c after its L_c-th step: the cost of one
transition is L_max gradient evaluations of the chain batch whatever L_c is. With
``num_steps_range = (L, L)`` nothing is wasted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch

from gradmc.samplers.base import check_finite

__all__ = ["ContinuousState", "check_ranges", "check_positive", "check_current", "draw_step_params", "leapfrog",
           "initial_state"]


class ContinuousState(NamedTuple):
    """State of a continuous chain.

    Attributes:
        x: (C, d) current position.
        log_prob: (C,) log target at x, or, for pseudo-marginal kernels, the log of the unbiased
            estimate attached to x (recycled until the next acceptance).
        num_steps: steps taken since ``init`` (for error messages).
    """

    x: torch.Tensor
    log_prob: torch.Tensor
    num_steps: int = 0


def initial_state(name: str, x: torch.Tensor, log_prob, pseudo_marginal: bool,
                  generator: torch.Generator | None) -> ContinuousState:
    """State at x (C, d): log_prob(x), or, for a pseudo-marginal kernel, the first unbiased estimates
    log_prob(x, generator) (recycled by the kernel afterwards).

    Raises:
        ValueError: pseudo-marginal without a generator (the message names the kernel).
        NonFiniteError: log_prob(x) NaN or inf for some chain; for a pseudo-marginal kernel NaN or +inf
            (a zero estimate, -inf, is allowed: the chain leaves x at the first positive estimate).
    """
    if pseudo_marginal:
        if generator is None:
            raise ValueError(f"pseudo-marginal {name}.init needs a generator for the first estimate")
        f = log_prob(x, generator).detach()
    else:
        f = log_prob(x).detach()
    check_current(name, 0, f, pseudo_marginal)
    return ContinuousState(x=x, log_prob=f)


def check_current(name: str, step: int, f_x: torch.Tensor, pseudo_marginal: bool = False,
                  *extra: tuple[str, torch.Tensor]) -> None:
    """The current-state check of the continuous kernels (one host read, see ``base.check_finite``).

    Args:
        name: the kernel's name. step: 0 at init, else ``state.num_steps + 1``.
        f_x: (C,) log target (or recycled pseudo-marginal log estimate) at the current states.
        pseudo_marginal: allow -inf in f_x (a zero likelihood estimate); NaN and +inf still raise.
        *extra: further (what, tensor) pairs that must be finite, e.g. the gradient at x.

    Raises:
        NonFiniteError: as above.
    """
    what = "log_prob estimate at the current state" if pseudo_marginal else "log_prob at the current state"
    if pseudo_marginal:
        check_finite(name, step, (what, f_x), allow_neg_inf=True)
        if extra:
            check_finite(name, step, *extra)
    else:
        check_finite(name, step, (what, f_x), *extra)


def check_positive(name: str, value: float) -> None:
    """Raise ValueError unless value is a finite float > 0."""
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value}")


def check_ranges(name: str, step_size_range, num_steps_range) -> None:
    """Raise ValueError unless 0 < eps_lo <= eps_hi (finite) and 1 <= L_lo <= L_hi (integers)."""
    lo, hi = step_size_range
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo <= hi):
        raise ValueError(f"{name} step_size_range must satisfy 0 < lo <= hi, got {step_size_range}")
    lo_l, hi_l = num_steps_range
    if int(lo_l) != lo_l or int(hi_l) != hi_l or not 1 <= lo_l <= hi_l:
        raise ValueError(f"{name} num_steps_range must be integers with 1 <= lo <= hi, got {num_steps_range}")


def draw_step_params(step_size_range, num_steps_range, x: torch.Tensor, generator: torch.Generator):
    """Per-chain eps_c ~ U[eps_lo, eps_hi] and L_c ~ U{L_lo, ..., L_hi}: (C, 1) float, (C, 1) int64."""
    c = x.shape[0]
    u = torch.rand((c, 1), generator=generator, dtype=x.dtype, device=x.device)
    eps = step_size_range[0] + (step_size_range[1] - step_size_range[0]) * u
    num = torch.randint(int(num_steps_range[0]), int(num_steps_range[1]) + 1, (c, 1), generator=generator,
                        device=x.device)
    return eps, num


def leapfrog(x: torch.Tensor, p: torch.Tensor, eps: torch.Tensor, num: torch.Tensor, max_steps: int,
             grad_fn: Callable[[torch.Tensor], tuple[torch.Tensor | None, torch.Tensor]], mass: float,
             grad_x: torch.Tensor, path: bool = False):
    """Masked batched leapfrog for H(x, p) = U(x) + p^T p / (2 m), driven by grad_fn (Neal 2011, Eq. 5.18-5.20).

    p += eps/2 g(x); then for i < L_c: {x += eps p / m; g = grad_fn(x); p += eps g (eps/2 if i = L_c - 1)}.
    The final momentum flip is omitted (it leaves the kinetic energy unchanged).

    Number of iterations: on CPU the loop stops after max_c L_c (reading it costs nothing there); on an
    accelerator it always runs ``max_steps`` (no host synchronisation). Chains past their own L_c are
    frozen either way, so the result is the same.

    Args:
        x, p: (C, d) start. eps: (C, 1). num: (C, 1) int64 with 1 <= L_c <= max_steps.
        grad_fn: x (C, d) -> (f or None, grad log target (C, d)).
        mass: scalar m of M = m I. grad_x: (C, d) grad_fn's gradient at the start x.
        path: also return the whole trajectory, the positions and FULL-step momenta at t = 0..S (KMC
            Fig. 2 evaluates H along it). Each step then applies its kick as two half kicks (to the full
            step, recorded, and on to the next half step) and its drift as x + (eps / m) p: the same map,
            rounded as the per-step textbook loop (HMC and KMC use ``path=False``).

    Returns:
        x', p' (new tensors), f from the last grad_fn call (the value at x'; None if grad_fn gives none),
        and the number S of grad_fn calls made (int); with ``path``, also xs and ps, each (S + 1, C, d)
        (row 0 the start; a chain past its L_c repeats its end point).
    """
    steps = max_steps if x.is_cuda else int(num.max())
    index = torch.arange(steps, device=x.device)[:, None, None]  # (S, 1, 1)
    drift = (num[None] > index).to(x.dtype) * (eps / mass)[None]  # (S, C, 1): eps/m while moving, else 0
    if path:
        return _leapfrog_path(x, p, eps, num, index, drift, grad_fn, grad_x, steps)
    kick = torch.where(num[None] - 1 > index, eps[None], torch.where(num[None] - 1 == index, 0.5 * eps[None],
                                                                     torch.zeros_like(eps[None])))  # (S, C, 1)
    p = p + 0.5 * eps * grad_x
    f = None
    for i in range(steps):
        x = torch.addcmul(x, drift[i], p)
        f, g = grad_fn(x)
        p = torch.addcmul(p, kick[i], g)
    return x, p, f, steps


def _leapfrog_path(x, p, eps, num, index, drift, grad_fn, grad_x, steps):
    """The ``path=True`` branch of :func:`leapfrog` (same schedule and masks, full-step momenta recorded)."""
    zero = torch.zeros_like(eps[None])
    half = torch.where(num[None] > index, 0.5 * eps[None], zero)  # (S, C, 1): kick to the full step i + 1
    half_on = torch.where(num[None] > index + 1, 0.5 * eps[None], zero)  # and on, if step i + 2 follows
    xs, ps = [x], [p]
    p = p + 0.5 * eps * grad_x  # the half-step momentum
    f = None
    for i in range(steps):
        x = x + drift[i] * p
        f, g = grad_fn(x)
        p_full = p + half[i] * g
        xs.append(x)
        ps.append(p_full)
        p = p_full + half_on[i] * g
    return x, ps[-1], f, steps, torch.stack(xs), torch.stack(ps)
