"""The kernel API shared by every sampler, and the one Metropolis-Hastings acceptance step.

A sampler is a small frozen dataclass of hyper-parameters with two pure methods (after BlackJAX):

- ``init(x, log_prob) -> State``
- ``step(state, log_prob, generator) -> (State, Info)``

The target ``log_prob(x) -> (C,)`` is passed at call time, so annealing (AIS), tempering and PCD reuse
the same kernels unchanged. ``State`` is a NamedTuple specific to each sampler (always with ``x``);
``Info`` below is common to all of them. Chains are the leading dimension of every tensor.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["Info", "metropolis_hastings_accept", "sample_categorical", "log_prob_and_grad"]


class Info(NamedTuple):
    """Per-step diagnostics of a transition kernel.

    Attributes:
        acceptance_prob: (C,) float, the Metropolis-Hastings acceptance probability min(1, alpha);
            1 for Gibbs-type kernels that always accept.
        accepted: (C,) bool, whether the proposal was taken.
        sites_changed: (C,) int64, number of coordinates of x that differ after the step.
        energy_evals: int, evaluations of the target per step, counted per chain-batch call
            (one call of ``log_prob`` on a (C, D) batch counts as 1, on a (C * 2**X, D) batch
            as 2**X), including those that come with a gradient.
        grad_evals: int, gradient evaluations of the target per step, counted the same way.
    """

    acceptance_prob: torch.Tensor
    accepted: torch.Tensor
    sites_changed: torch.Tensor
    energy_evals: int
    grad_evals: int


def metropolis_hastings_accept(
    log_alpha: torch.Tensor, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Accept each chain's proposal with probability min(1, exp(log_alpha)).

    Args:
        log_alpha: (C,) log acceptance ratio log[pi(x') q(x|x') / (pi(x) q(x'|x))]. NaN counts as
            -inf (the proposal is rejected), so a broken proposal never enters the chain.
        generator: torch.Generator on log_alpha's device.

    Returns:
        accepted: (C,) bool; acceptance_prob: (C,) float in [0, 1].
    """
    log_alpha = torch.nan_to_num(log_alpha, nan=-torch.inf)
    acceptance_prob = torch.exp(torch.clamp(log_alpha, max=0.0))
    u = torch.rand(log_alpha.shape, generator=generator, device=log_alpha.device, dtype=log_alpha.dtype)
    accepted = u < acceptance_prob
    return accepted, acceptance_prob


def sample_categorical(logits: torch.Tensor, generator: torch.Generator, return_log_prob: bool = False):
    """Draw one index per row from softmax(logits) by inverting the cumulative distribution.

    One uniform per row (not one per entry as with the Gumbel-max trick: on CPU the generator, not
    the arithmetic, dominates a GWG step). The CDF is accumulated in float64, so the bias from
    rounding is far below Monte Carlo resolution.

    Args:
        logits: (..., K) unnormalised log-probabilities; -inf entries are never drawn (rows must have
            at least one finite entry).
        generator: torch.Generator on logits' device.
        return_log_prob: also return log softmax(logits) at the drawn index.

    Returns:
        (...,) int64 indices in [0, K); with return_log_prob, also (...,) their log-probabilities.
    """
    log_probs = torch.log_softmax(logits, -1)  # (..., K)
    cdf = log_probs.exp().cumsum(-1, dtype=torch.float64)
    total = cdf[..., -1:].contiguous()
    u = torch.rand((*logits.shape[:-1], 1), generator=generator, device=logits.device, dtype=torch.float64)
    idx = torch.searchsorted(cdf, u * total, right=True)
    # u * total can round up to total: the first index where the CDF reaches its total is the last
    # entry of positive probability, so clipping to it never returns a zero-probability entry
    idx = torch.minimum(idx, torch.searchsorted(cdf, total, right=False))
    if return_log_prob:
        return idx.squeeze(-1), log_probs.gather(-1, idx).squeeze(-1)
    return idx.squeeze(-1)


def log_prob_and_grad(log_prob, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Evaluate f(x) and grad_x f(x): one forward and one backward pass, or the target's closed form.

    Targets that know their gradient in closed form (RBM, Ising, Potts, FHMM posterior) offer
    ``log_prob.log_prob_and_grad(x) -> (f, grad)``; it is used when present and must return the same
    values as autograd (each target's tests check this). Otherwise autograd computes the gradient.

    Args:
        log_prob: callable (C, ...) -> (C,), differentiable in x.
        x: (C, ...) state (binary floats or one-hot).

    Returns:
        f: (C,) detached; grad: same shape as x, detached.

    Raises:
        ValueError: if log_prob does not return shape (C,).
    """
    closed_form = getattr(log_prob, "log_prob_and_grad", None)
    if closed_form is not None:
        f, grad = closed_form(x)
    else:
        with torch.enable_grad():
            x_req = x.detach().requires_grad_(True)
            f = log_prob(x_req)
            if f.shape == x.shape[:1]:
                (grad,) = torch.autograd.grad(f.sum(), x_req)
    if f.shape != x.shape[:1]:
        raise ValueError(f"log_prob must return shape ({x.shape[0]},), got {tuple(f.shape)}")
    return f.detach(), grad.detach()
