"""Adaptive Metropolis (Haario, Saksman & Tamminen 2001; KMC baseline, B0).

Proposal x' ~ N(x, Sigma_t) with Sigma_t = s0^2 I for the first t0 steps and afterwards

    Sigma_t = s_d (Cov(x_0, ..., x_t) + eps I),   s_d = 2.38^2 / d                    (Haario et al., Eq. 2.1)

computed from each chain's OWN history (a running Welford mean and scatter matrix carried in the state).
The proposal is symmetric given Sigma_t, so it is accepted with min(1, pi(x') / pi(x)).

This is an ADAPTIVE algorithm, not a fixed Markov kernel: Sigma_t depends on the whole past, so
one step does not leave pi invariant in general; Haario et al. prove ergodicity (the empirical averages
converge to E_pi) for targets with bounded support and density, the eps I term keeping Sigma_t
non-degenerate. To obtain an exact pi-invariant kernel, adapt during burn-in only and then keep the
final Sigma fixed (a plain Gaussian random-walk MH kernel).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from gradmc.samplers.base import Info, count_nonfinite, metropolis_hastings_accept
from gradmc.samplers.continuous.common import check_current, check_positive

__all__ = ["AdaptiveMetropolis", "AMState"]


class AMState(NamedTuple):
    """Adaptive Metropolis state.

    Attributes:
        x: (C, d) position. log_prob: (C,) log pi(x).
        count: (C,) float, number of history points (x_0 .. x_t) seen.
        mean: (C, d) running mean of the history. scatter: (C, d, d) sum of (x_i - mean)(x_i - mean)^T.
        num_steps: steps taken since ``init`` (for error messages).
    """

    x: torch.Tensor
    log_prob: torch.Tensor
    count: torch.Tensor
    mean: torch.Tensor
    scatter: torch.Tensor
    num_steps: int = 0


@dataclass(frozen=True)
class AdaptiveMetropolis:
    """Haario et al. (2001) adaptive Metropolis, batched over independent chains.

    Args:
        initial_scale: s0 > 0, isotropic proposal scale before adaptation starts.
        adapt_start: t0 >= 2, history length from which the empirical covariance is used.
        epsilon: eps > 0 added to the covariance diagonal.

    Cost per step: target at x and x' on 2C rows (energy_evals = 2, grad_evals = 0); O(C d^3) for the
    Cholesky factor of Sigma_t, O(C d^2) for the history update.

    Raises:
        ValueError: at construction, on non-positive initial_scale or epsilon, or adapt_start < 2.
        NonFiniteError: log_prob NaN/inf at a current state (init, step); a proposal of NaN/inf
            log_prob is rejected instead.
    """

    name = "AM"  # a class attribute, not a field

    initial_scale: float = 1.0
    adapt_start: int = 100
    epsilon: float = 1e-6

    def __post_init__(self):
        check_positive("AdaptiveMetropolis initial_scale", self.initial_scale)
        check_positive("AdaptiveMetropolis epsilon", self.epsilon)
        if int(self.adapt_start) != self.adapt_start or self.adapt_start < 2:
            raise ValueError(f"AdaptiveMetropolis adapt_start must be an integer >= 2, got {self.adapt_start}")

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> AMState:
        """Start chains at x (C, d); the history is {x}. ``generator`` is unused (the kernel contract: every
        kernel takes one).

        Raises:
            NonFiniteError: log_prob(x) NaN or inf for some chain.
        """
        c, d = x.shape
        f = log_prob(x).detach()
        check_current(self.name, 0, f)
        return AMState(x=x, log_prob=f, count=torch.ones(c, dtype=x.dtype, device=x.device),
                       mean=x.clone(), scatter=torch.zeros((c, d, d), dtype=x.dtype, device=x.device))

    def proposal_cov(self, state: AMState) -> torch.Tensor:
        """Sigma_t: (C, d, d)."""
        d = state.x.shape[1]
        eye = torch.eye(d, dtype=state.x.dtype, device=state.x.device)
        emp = state.scatter / (state.count - 1).clamp(min=1)[:, None, None]
        adapted = (2.38**2 / d) * (emp + self.epsilon * eye)
        use = (state.count >= self.adapt_start)[:, None, None]
        return torch.where(use, adapted, self.initial_scale**2 * eye)

    def step(self, state: AMState, log_prob, generator: torch.Generator) -> tuple[AMState, Info]:
        """One adaptive Metropolis step for every chain, then the history update with the new x.

        Raises:
            NonFiniteError: log_prob NaN/inf at a current state.
        """
        x = state.x  # (C, d)
        chol = torch.linalg.cholesky(self.proposal_cov(state))  # (C, d, d)
        z = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device)
        x_new = x + (chol @ z[:, :, None])[:, :, 0]
        f_both = log_prob(torch.cat([x, x_new])).detach()  # (2C,)
        f_x, f_new = f_both[: x.shape[0]], f_both[x.shape[0]:]
        check_current(self.name, state.num_steps + 1, f_x)
        accepted, acceptance_prob = metropolis_hastings_accept(f_new - f_x, generator, f_new)
        x_out = torch.where(accepted[:, None], x_new, x)
        count = state.count + 1
        delta = x_out - state.mean
        mean = state.mean + delta / count[:, None]
        scatter = state.scatter + delta[:, :, None] * (x_out - mean)[:, None, :]
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted, sites_changed=(x_out != x).sum(-1),
                    energy_evals=2, grad_evals=0,
                    nonfinite_proposals=count_nonfinite(f_new))
        new = AMState(x=x_out, log_prob=torch.where(accepted, f_new, f_x), count=count, mean=mean, scatter=scatter,
                      num_steps=state.num_steps + 1)
        return new, info
