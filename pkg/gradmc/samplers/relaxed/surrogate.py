"""The continuous relaxation of a binary target and its tempered surrogate (GWG paper Appendix C; Han et al. 2020).

A binary target p(x), x in {0, 1}^D, becomes a piecewise-smooth density on z in R^D,

    pi(z) = N(z; 0, I) p(Gamma(z)),    Gamma(z) = 1[z > 0]   (Appendix C, "p_c"),

and z ~ pi gives x = Gamma(z) ~ p exactly: N(0, I) puts mass 2^-D on every orthant, so the orthant (the
bits) is drawn from p and, given the bits, each |z_i| is half-normal. pi has zero gradient almost
everywhere, so the samplers move with the gradient of the tempered surrogate

    log pi_lambda(z) = log N(z; 0, I) + log p(sigmoid(z / lambda))   (Appendix C, "p_c^lambda"),

which needs ``log_prob`` to accept relaxed inputs in [0, 1]^D and be differentiable there (an RBM is).
Densities here drop the constant -D/2 log(2 pi): it cancels in every ratio the samplers use.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from gradmc.core.gradients import log_prob_and_grad
from gradmc.core.validation import check_binary
from gradmc.samplers.base import check_finite

__all__ = [
    "RelaxedStart",
    "RelaxedState",
    "bits_from_z",
    "z_from_bits",
    "relaxed_log_prob",
    "surrogate_log_prob",
    "surrogate_log_prob_and_grad",
    "check_temperature",
    "init_relaxed",
]

#: E|N(0, 1)| = sqrt(2 / pi): the magnitude ``init_relaxed`` gives z when no z is passed.
HALF_NORMAL_MEAN = math.sqrt(2.0 / math.pi)


class RelaxedState(NamedTuple):
    """State of R-MALA and R-HMC.

    Attributes:
        x: (C, D) floats in {0, 1}, the bits 1[z > 0] (what the sampler reports).
        z: (C, D) the continuous state the chain actually moves.
        log_prob: (C,) log pi(z) = -||z||^2 / 2 + log p(x) at the last evaluation (diagnostic).
        num_steps: steps taken since ``init`` (for error messages).
    """

    x: torch.Tensor
    z: torch.Tensor
    log_prob: torch.Tensor
    num_steps: int = 0


def bits_from_z(z: torch.Tensor) -> torch.Tensor:
    """Gamma(z) = 1[z > 0]: (C, D) -> (C, D) floats of z's dtype in {0, 1}."""
    return (z > 0).to(z.dtype)


def z_from_bits(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Draw z ~ pi(z | Gamma(z) = x): z = (2x - 1) |xi| with xi ~ N(0, I).

    If x ~ p, the result is an exact draw from pi. This is the paper's initialisation of the relaxed
    samplers and of D-SVGD (bits from the initial Bernoulli, magnitudes half-normal).

    Args:
        x: (C, D) floats in {0, 1}.
        generator: torch.Generator on x's device.

    Returns:
        (C, D) z with 1[z > 0] == x (|z| is clamped away from 0 so a 1-bit never maps to z = 0).

    Raises:
        ValueError, TypeError: if x is not a (C, D) floating tensor of bits.
    """
    check_binary(x, check_values=True)
    xi = torch.randn(x.shape, generator=generator, device=x.device, dtype=x.dtype)
    magnitude = xi.abs().clamp_min(torch.finfo(x.dtype).tiny)
    return (2.0 * x - 1.0) * magnitude


def relaxed_log_prob(log_prob, z: torch.Tensor) -> torch.Tensor:
    """The exact continuous target log pi(z) = -||z||^2 / 2 + log p(1[z > 0]) (Appendix C).

    Args:
        log_prob: the binary target, (C, D) bits -> (C,).
        z: (C, D).

    Returns:
        (C,) detached. Cost: one evaluation of log_prob, no gradient.
    """
    with torch.no_grad():
        return -0.5 * (z * z).sum(-1) + log_prob(bits_from_z(z))


def surrogate_log_prob(log_prob, z: torch.Tensor, temperature: float) -> torch.Tensor:
    """The tempered surrogate log pi_lambda(z) = -||z||^2 / 2 + log p(sigmoid(z / lambda)) (Appendix C).

    Differentiable in z (not detached), so it can be used inside autograd.

    Args:
        log_prob: the binary target, differentiable in relaxed x in [0, 1]^D: (C, D) -> (C,).
        z: (C, D).
        temperature: lambda > 0; small lambda approaches the step function (and its zero gradient).

    Returns:
        (C,).
    """
    return -0.5 * (z * z).sum(-1) + log_prob(torch.sigmoid(z / temperature))


def surrogate_log_prob_and_grad(log_prob, z: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """log pi_lambda(z) and its gradient in z, one forward and one backward pass.

    Returns:
        f: (C,) detached; grad: (C, D) detached.

    Raises:
        ValueError: if log_prob does not return shape (C,).
    """
    return log_prob_and_grad(lambda zz: surrogate_log_prob(log_prob, zz, temperature), z)


def check_temperature(name: str, temperature: float) -> None:
    """Raise ValueError unless the relaxation temperature lambda is a finite number > 0."""
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"{name} temperature (lambda) must be finite and > 0, got {temperature}")


def init_relaxed(x: torch.Tensor, log_prob, z: torch.Tensor | None = None, name: str = "relaxed sampler"
                 ) -> RelaxedState:
    """Build a RelaxedState from bits x and, optionally, the continuous state z.

    Args:
        x: (C, D) floats in {0, 1}.
        log_prob: the binary target.
        z: optional (C, D) finite floats of x's dtype with 1[z > 0] == x, e.g. ``z_from_bits(x, gen)``
            (an exact draw from pi when x ~ p). If None, z = (2x - 1) sqrt(2 / pi): the right orthant at
            the mean half-normal magnitude, deterministic (the chain forgets it after burn-in).
        name: the sampler's name for error messages ("R-MALA", "R-HMC", "D-SVGD").

    Raises:
        ValueError: if x is not binary (C, D), or z has another shape/dtype, is not finite, or its
            signs disagree with x.
        NonFiniteError: if log pi(z) is NaN or inf for some chain (the target at x is not finite).
    """
    check_binary(x, check_values=True)
    if z is None:
        z = (2.0 * x - 1.0) * HALF_NORMAL_MEAN
    else:
        if z.shape != x.shape or z.dtype != x.dtype:
            raise ValueError(f"z must match x's shape {tuple(x.shape)} and dtype {x.dtype}, "
                             f"got {tuple(z.shape)} and {z.dtype}")
        if not bool(torch.isfinite(z).all()):
            raise ValueError("z must be finite")
        if not bool((bits_from_z(z) == x).all()):
            raise ValueError("z must have 1[z > 0] == x (use z_from_bits(x, generator))")
        z = z.detach().clone()
    log_pi = relaxed_log_prob(log_prob, z)
    check_finite(name, 0, ("log_prob at the current state", log_pi))
    return RelaxedState(x=bits_from_z(z), z=z, log_prob=log_pi)


class RelaxedStart:
    """``init`` and ``init_from_z`` of the single-chain relaxed kernels (R-MALA, R-HMC): the kernel contract
    ``init(x, log_prob, generator=None)`` shared by every sampler, plus a start from a given z. The kernel
    class provides ``name``."""

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> RelaxedState:
        """Start chains at bits x (C, D) (the kernel contract shared by every sampler).

        With ``generator``, z = ``z_from_bits(x, generator)`` (half-normal magnitudes: an exact draw from
        pi when x ~ p, the paper's initialisation); without, the deterministic mean magnitude of
        :func:`init_relaxed`. To start from a given z use :meth:`init_from_z`.

        Raises:
            ValueError: as :func:`init_relaxed`; NonFiniteError: log pi(z) NaN or inf for some chain.
        """
        z = None if generator is None else z_from_bits(x, generator)
        return init_relaxed(x, log_prob, z, name=self.name)

    def init_from_z(self, x: torch.Tensor, log_prob, z: torch.Tensor) -> RelaxedState:
        """Start chains at bits x (C, D) and the given continuous state z (C, D), 1[z > 0] == x.

        Raises:
            ValueError: as :func:`init_relaxed` (z of another shape or dtype, non-finite, signs not x);
                NonFiniteError: log pi(z) NaN or inf for some chain.
        """
        return init_relaxed(x, log_prob, z, name=self.name)
